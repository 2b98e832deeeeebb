// File: bind_address.h
//
// Listen addresses in the form controller-runtime's --metrics-bind-address and
// --health-probe-bind-address take them (Go's net.Listen("tcp", addr)):
//
//   ":8080"            every interface, IPv6 and IPv4 (IPv4 only where the machine has no IPv6)
//   "127.0.0.1:8080"   one IPv4 address;  "[::1]:8080": one IPv6 address
//   "localhost:8080"   127.0.0.1, as Go resolves it for a listener
//   "0" (or "")        the server is disabled
//
// Port 0 asks the kernel for a free port (tests read it back from the server). Host names other
// than localhost are refused: a daemon should not depend on DNS to open its probe port.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/ip/address.hpp>

#include "pkg/base/result.h"

namespace egress::controllerruntime {

struct BindAddress {
  // The text it was parsed from, for messages.
  std::string text;
  // Empty: every interface.
  std::optional<boost::asio::ip::address> host;
  unsigned short port = 0;
};

// nullopt when the address disables the server ("0" or ""). An error quotes the address and
// says what is wrong with it.
Result<std::optional<BindAddress>, std::string> parseBindAddress(std::string_view text);

}  // namespace egress::controllerruntime
