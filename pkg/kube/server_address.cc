#include "pkg/kube/server_address.h"

#include <algorithm>

#include <boost/asio/ip/address.hpp>

namespace egress::kube {

std::vector<std::string> serverAddresses(std::string_view server, std::string_view serviceHost) {
  std::vector<std::string> out;
  auto add = [&](std::string_view host) {
    if (host.size() > 1 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    boost::system::error_code bad;
    const auto ip = boost::asio::ip::make_address(std::string(host), bad);
    if (!bad && std::find(out.begin(), out.end(), ip.to_string()) == out.end()) {
      out.push_back(ip.to_string());
    }
  };
  if (auto scheme = server.find("://"); scheme != std::string_view::npos) {
    server.remove_prefix(scheme + 3);
  }
  server = server.substr(0, server.find('/'));
  if (!server.empty() && server.front() == '[') {
    add(server.substr(0, server.find(']') + 1));
  } else {
    const auto colon = server.rfind(':');
    add(colon == std::string_view::npos ? server : server.substr(0, colon));
  }
  add(serviceHost);
  return out;
}

}  // namespace egress::kube
