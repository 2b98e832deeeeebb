#include "pkg/ipam/address.h"

#include <array>
#include <charconv>
#include <ostream>

#include <arpa/inet.h>

namespace egress::ipam {
namespace {

// Longer than any address text (45 is the longest IPv6 with an IPv4 tail).
constexpr size_t kMaxAddressText = 45;

// The low `hostBits` bits set.
Uint128 hostMask(int hostBits) {
  return hostBits >= 128 ? kUint128Max : (Uint128{1} << hostBits) - 1;
}

// The prefix length after the '/': decimal, no sign, no leading zero, at most `max`.
std::optional<int> parseBits(std::string_view text, int max) {
  if (text.empty() || text.size() > 3 || (text.size() > 1 && text[0] == '0')) {
    return std::nullopt;
  }
  int bits = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), bits);
  if (ec != std::errc() || end != text.data() + text.size() || bits < 0 || bits > max) {
    return std::nullopt;
  }
  return bits;
}

}  // namespace

std::string_view familyName(Family family) {
  return family == Family::kIPv4 ? "IPv4" : "IPv6";
}

int familyBits(Family family) {
  return family == Family::kIPv4 ? 32 : 128;
}

std::string Address::toString() const {
  std::array<unsigned char, 16> bytes{};
  const size_t n = family == Family::kIPv4 ? 4 : 16;
  for (size_t i = 0; i < n; ++i) {
    bytes[i] = static_cast<unsigned char>(value >> (8 * (n - 1 - i)));
  }
  char buf[INET6_ADDRSTRLEN];
  if (inet_ntop(family == Family::kIPv4 ? AF_INET : AF_INET6, bytes.data(), buf, sizeof buf) ==
      nullptr) {
    return "";
  }
  return buf;
}

// glibc's inet_pton accepts exactly what Go's ParseIP does for these texts (no leading zeros in
// IPv4, no zones), so it is the whole parser; the family comes from the text, as in the CRDs.
std::optional<Address> parseAddress(std::string_view text) {
  if (text.empty() || text.size() > kMaxAddressText) {
    return std::nullopt;
  }
  const std::string z(text);
  const bool v6 = text.find(':') != std::string_view::npos;
  std::array<unsigned char, 16> bytes{};
  if (inet_pton(v6 ? AF_INET6 : AF_INET, z.c_str(), bytes.data()) != 1) {
    return std::nullopt;
  }
  Address a{v6 ? Family::kIPv6 : Family::kIPv4, 0};
  for (size_t i = 0; i < (v6 ? 16u : 4u); ++i) {
    a.value = (a.value << 8) | bytes[i];
  }
  return a;
}

Uint128 Prefix::last() const {
  return address.value | hostMask(familyBits(address.family) - bits);
}

std::string Prefix::toString() const {
  return address.toString() + "/" + std::to_string(bits);
}

std::optional<Prefix> parseCIDR(std::string_view text) {
  const auto slash = text.find('/');
  if (slash == std::string_view::npos) {
    return std::nullopt;
  }
  auto address = parseAddress(text.substr(0, slash));
  if (!address) {
    return std::nullopt;
  }
  auto bits = parseBits(text.substr(slash + 1), familyBits(address->family));
  if (!bits) {
    return std::nullopt;
  }
  address->value &= ~hostMask(familyBits(address->family) - *bits);
  return Prefix{*address, *bits};
}

std::optional<Prefix> parseAddressOrCIDR(std::string_view text) {
  if (text.find('/') != std::string_view::npos) {
    return parseCIDR(text);
  }
  auto address = parseAddress(text);
  if (!address) {
    return std::nullopt;
  }
  return Prefix{*address, familyBits(address->family)};
}

std::ostream& operator<<(std::ostream& out, const Address& address) {
  return out << address.toString();
}

std::ostream& operator<<(std::ostream& out, Family family) {
  return out << familyName(family);
}

}  // namespace egress::ipam
