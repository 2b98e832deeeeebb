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

struct SpecialBlock {
  Prefix prefix;
  std::string_view name;
};

constexpr Uint128 v6High(uint64_t high16) {
  return Uint128{high16} << 112;
}

// The blocks of address.h, per family, in its order. Built once, never destroyed (a static with
// a destructor would run at exit while another thread may still call specialUse()).
const std::array<std::vector<SpecialBlock>, 2>& specialBlocks() {
  static const auto* const blocks = new std::array<std::vector<SpecialBlock>, 2>{{
      {
          {{{Family::kIPv4, 0x00000000}, 8}, "this network"},
          {{{Family::kIPv4, 0x7F000000}, 8}, "loopback"},
          {{{Family::kIPv4, 0xA9FE0000}, 16}, "link-local"},
          {{{Family::kIPv4, 0xE0000000}, 4}, "multicast"},
          {{{Family::kIPv4, 0xF0000000}, 4}, "reserved"},
      },
      {
          {{{Family::kIPv6, 0}, 128}, "unspecified"},
          {{{Family::kIPv6, 1}, 128}, "loopback"},
          {{{Family::kIPv6, v6High(0xfe80)}, 10}, "link-local"},
          {{{Family::kIPv6, v6High(0xff00)}, 8}, "multicast"},
          {{{Family::kIPv6, Uint128{0xffff} << 32}, 96}, "IPv4-mapped"},
      },
  }};
  return *blocks;
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

std::optional<std::string_view> specialUse(const Address& address) {
  for (const SpecialBlock& b : specialBlocks()[static_cast<size_t>(address.family)]) {
    if (address.value >= b.prefix.first() && address.value <= b.prefix.last()) {
      return b.name;
    }
  }
  return std::nullopt;
}

const std::vector<Prefix>& specialUsePrefixes(Family family) {
  static const auto* const prefixes = [] {
    auto* out = new std::array<std::vector<Prefix>, 2>;
    for (size_t f = 0; f < 2; ++f) {
      for (const SpecialBlock& b : specialBlocks()[f]) {
        (*out)[f].push_back(b.prefix);
      }
    }
    return out;
  }();
  return (*prefixes)[static_cast<size_t>(family)];
}

std::string specialUsePhrase(std::string_view name) {
  const bool vowel =
      !name.empty() && std::string_view("aeiouAEIOU").find(name[0]) != std::string_view::npos;
  const bool words = name.find(' ') != std::string_view::npos;
  std::string out = vowel ? "an " : "a ";
  if (words) {
    out += "\"" + std::string(name) + "\"";
  } else {
    out += name;
  }
  return out + " address";
}

std::ostream& operator<<(std::ostream& out, const Address& address) {
  return out << address.toString();
}

std::ostream& operator<<(std::ostream& out, Family family) {
  return out << familyName(family);
}

}  // namespace egress::ipam
