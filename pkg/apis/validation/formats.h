// File: formats.h
//
// The string formats the CRD schemas declare (OpenAPI `format`), checked the way the API server
// checks them (Go's net.ParseIP / net.ParseCIDR): dotted-quad IPv4 without leading zeros,
// RFC 4291 IPv6 text (including an embedded IPv4 tail), and address/prefix pairs whose host bits
// may be set (as ParseCIDR allows). No zone suffixes ("%eth0").
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace egress::validation {

bool isIPv4(std::string_view s);
bool isIPv6(std::string_view s);
bool isIP(std::string_view s);
// "a.b.c.d/n" with n in [0, 32] or "ipv6/n" with n in [0, 128].
bool isCIDR(std::string_view s);
bool isIPOrCIDR(std::string_view s);

// An address range: an IP (a /32 or /128) or a CIDR, host bits cleared.
struct IPPrefix {
  bool v6 = false;
  std::array<uint8_t, 16> bytes{};  // IPv4 in the first 4
  int bits = 0;

  bool overlaps(const IPPrefix& other) const;
  bool contains(const IPPrefix& other) const;
};
std::optional<IPPrefix> parseIPOrCIDR(std::string_view s);
// "203.0.113.0/24", "2001:db8::/64" (inet_ntop's canonical text).
std::string formatPrefix(const IPPrefix& p);
// A CIDR whose address has bits set beyond its prefix length ("203.0.113.5/24").
bool hasHostBits(std::string_view cidr);

}  // namespace egress::validation
