// File: address.h
//
// IP addresses and prefixes as pkg/ipam computes with them: a family and a 128-bit unsigned
// value (IPv4 in the low 32 bits), so IPv4 and IPv6 share one arithmetic and the ends of a range
// are plain integers. Text is read as the API server reads it (Go's net.ParseIP / ParseCIDR):
// dotted-quad IPv4 without leading zeros, RFC 4291 IPv6 text, no zone suffix; the family is the
// text's (anything with a ':' is IPv6, "::ffff:203.0.113.5" included, as the CRDs' CEL rules
// decide it). A CIDR may have host bits set ("203.0.113.5/24" is 203.0.113.0/24), as ParseCIDR
// allows. Printing is inet_ntop's canonical text; compare Address values, not strings.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace egress::ipam {

using Uint128 = unsigned __int128;
inline constexpr Uint128 kUint128Max = ~Uint128{0};

enum class Family : uint8_t { kIPv4 = 0, kIPv6 = 1 };

// "IPv4" / "IPv6", the API's spelling (EgressIPSpec.ipFamily).
std::string_view familyName(Family family);
// 32 or 128.
int familyBits(Family family);

struct Address {
  Family family = Family::kIPv4;
  Uint128 value = 0;

  bool operator==(const Address&) const = default;
  // IPv4 addresses sort before IPv6 ones, then by value: the order allocation hands them out in.
  // (Not a defaulted <=>: clang-tidy 14 reports a bogus modernize-use-nullptr inside one.)
  bool operator<(const Address& other) const {
    return family != other.family ? family < other.family : value < other.value;
  }

  std::string toString() const;
};

// An address in text, or nothing if the text is not one.
std::optional<Address> parseAddress(std::string_view text);

// A CIDR: the first address (host bits cleared) and the prefix length.
struct Prefix {
  Address address;
  int bits = 0;

  bool operator==(const Prefix&) const = default;

  Uint128 first() const { return address.value; }
  Uint128 last() const;
  std::string toString() const;
};

// "a.b.c.d/n" or "ipv6/n" (the CRDs' `cidr` format); nothing for anything else.
std::optional<Prefix> parseCIDR(std::string_view text);
// A CIDR, or a bare address as its /32 or /128 (the `ip-or-cidr` format of IPAMPool.exclude).
std::optional<Prefix> parseAddressOrCIDR(std::string_view text);

// Special-use addresses (RFC 6890's registries) that can never be an egress IP: a node answers
// for an egress IP by proxy ARP / NDP, and no host answers for these that way, or may. IPv4:
// "this network" 0.0.0.0/8 (0.0.0.0 included), "loopback" 127.0.0.0/8, "link-local"
// 169.254.0.0/16, "multicast" 224.0.0.0/4, "reserved" 240.0.0.0/4 (255.255.255.255 included).
// IPv6: "unspecified" ::/128, "loopback" ::1/128, "link-local" fe80::/10, "multicast" ff00::/8,
// "IPv4-mapped" ::ffff:0:0/96 (an IPv4 address in IPv6 text: never on the wire as such).
// Documentation ranges (192.0.2.0/24, 2001:db8::/32, ...) and private ones are not here: tests,
// demos and clusters use them on purpose.
//
// The name of the block `address` lies in ("link-local", ...), or nothing.
std::optional<std::string_view> specialUse(const Address& address);
// The blocks of `family`, in the order above.
const std::vector<Prefix>& specialUsePrefixes(Family family);
// "a link-local address", "an IPv4-mapped address", "a \"this network\" address": a block's name
// (specialUse()) as the end of a sentence "X is ...", for messages.
std::string specialUsePhrase(std::string_view name);

// For test failure messages.
std::ostream& operator<<(std::ostream& out, const Address& address);
std::ostream& operator<<(std::ostream& out, Family family);

}  // namespace egress::ipam
