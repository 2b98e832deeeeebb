#include "pkg/controllerruntime/bind_address.h"

#include <charconv>

namespace egress::controllerruntime {

namespace {

using Parsed = Result<std::optional<BindAddress>, std::string>;

Parsed invalid(std::string_view text, const std::string& why) {
  return "invalid bind address \"" + std::string(text) + "\": " + why;
}

}  // namespace

Parsed parseBindAddress(std::string_view text) {
  if (text.empty() || text == "0") {
    return std::optional<BindAddress>();
  }
  // host:port, the host bracketed when it is an IPv6 address (net.SplitHostPort).
  std::string_view host;
  std::string_view port;
  if (text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) {
      return invalid(text, "missing ']' in address");
    }
    if (close + 1 >= text.size() || text[close + 1] != ':') {
      return invalid(text, "missing port in address");
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return invalid(text, "missing port in address (\":8080\" listens on every interface)");
    }
    host = text.substr(0, colon);
    if (host.find(':') != std::string_view::npos) {
      return invalid(text, "too many colons in address (bracket an IPv6 address: \"[::1]:8080\")");
    }
    port = text.substr(colon + 1);
  }

  unsigned number = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), number);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || number > 65535) {
    return invalid(text, "the port must be a number from 0 to 65535");
  }
  BindAddress address;
  address.text = std::string(text);
  address.port = static_cast<unsigned short>(number);
  if (host.empty()) {
    return std::optional<BindAddress>(std::move(address));
  }
  if (host == "localhost") {
    // What Go's listener resolves it to: the IPv4 loopback first.
    address.host = boost::asio::ip::make_address_v4("127.0.0.1");
    return std::optional<BindAddress>(std::move(address));
  }
  boost::system::error_code bad;
  const auto ip = boost::asio::ip::make_address(std::string(host), bad);
  if (bad) {
    return invalid(text, "the host must be an IP address or localhost");
  }
  if (ip.is_v6() != (text.front() == '[')) {
    return invalid(text, ip.is_v6() ? "an IPv6 address must be bracketed"
                                    : "only IPv6 addresses are bracketed");
  }
  address.host = ip;
  return std::optional<BindAddress>(std::move(address));
}

}  // namespace egress::controllerruntime
