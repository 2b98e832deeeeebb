#include "pkg/agent/host_address.h"

#include <arpa/inet.h>

namespace egress::agent {

std::string bracketIPv6Host(const std::string& bindAddress) {
  const auto colon = bindAddress.rfind(':');
  if (bindAddress.empty() || bindAddress.front() == '[' || colon == std::string::npos) {
    return bindAddress;
  }
  const std::string host = bindAddress.substr(0, colon);
  unsigned char buf[16];
  if (host.find(':') == std::string::npos || inet_pton(AF_INET6, host.c_str(), buf) != 1) {
    return bindAddress;
  }
  return "[" + host + "]" + bindAddress.substr(colon);
}

}  // namespace egress::agent
