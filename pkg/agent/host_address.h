// File: host_address.h
//
// egw-agent runs in the host's network namespace, so its endpoints must not listen on every
// address the node has; the chart binds /metrics to the node's own address through the
// downward API (`--metrics-bind-address=$(HOST_IP):9402`). The downward API cannot bracket an
// IPv6 address, and a bind address is host:port with an IPv6 host bracketed (Go's
// net.SplitHostPort, which the Manager follows), so the agent brackets it first.
#pragma once

#include <string>

namespace egress::agent {

// "fd00::11:9402" -> "[fd00::11]:9402" when what precedes the last colon is an IPv6 address;
// anything else (bracketed, IPv4, ":9402", "0") unchanged.
std::string bracketIPv6Host(const std::string& bindAddress);

}  // namespace egress::agent
