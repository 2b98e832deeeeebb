#include "pkg/apis/validation/formats.h"

#include <algorithm>
#include <charconv>
#include <string>

#include <arpa/inet.h>

namespace egress::validation {
namespace {

// Go's ParseIP rejects IPv4 octets with leading zeros (octal or decimal?), and so does glibc's
// inet_pton, which accepts nothing Go rejects: it is the whole check.
bool parses(int family, std::string_view s) {
  if (s.empty() || s.size() > 45) {
    return false;
  }
  const std::string z(s);
  unsigned char buf[16];
  return inet_pton(family, z.c_str(), buf) == 1;
}

}  // namespace

bool isIPv4(std::string_view s) {
  return parses(AF_INET, s);
}

bool isIPv6(std::string_view s) {
  return s.find(':') != std::string_view::npos && parses(AF_INET6, s);
}

bool isIP(std::string_view s) {
  return isIPv4(s) || isIPv6(s);
}

bool isCIDR(std::string_view s) {
  const auto slash = s.find('/');
  if (slash == std::string_view::npos) {
    return false;
  }
  const auto addr = s.substr(0, slash);
  const auto bits = s.substr(slash + 1);
  if (bits.empty() || bits.size() > 3 || (bits.size() > 1 && bits[0] == '0')) {
    return false;
  }
  int n = -1;
  const auto [end, ec] = std::from_chars(bits.data(), bits.data() + bits.size(), n);
  if (ec != std::errc() || end != bits.data() + bits.size()) {
    return false;
  }
  if (isIPv4(addr)) {
    return n >= 0 && n <= 32;
  }
  return isIPv6(addr) && n >= 0 && n <= 128;
}

bool isIPOrCIDR(std::string_view s) {
  return isIP(s) || isCIDR(s);
}

namespace {

// Do the first `bits` bits of a and b agree?
bool samePrefix(const std::array<uint8_t, 16>& a, const std::array<uint8_t, 16>& b, int bits) {
  for (int i = 0; i < bits; ++i) {
    const int mask = 0x80 >> (i % 8);
    if ((a[static_cast<size_t>(i / 8)] & mask) != (b[static_cast<size_t>(i / 8)] & mask)) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool IPPrefix::overlaps(const IPPrefix& other) const {
  return v6 == other.v6 && samePrefix(bytes, other.bytes, std::min(bits, other.bits));
}

bool IPPrefix::contains(const IPPrefix& other) const {
  return v6 == other.v6 && bits <= other.bits && samePrefix(bytes, other.bytes, bits);
}

std::optional<IPPrefix> parseIPOrCIDR(std::string_view s) {
  if (!isIPOrCIDR(s)) {
    return std::nullopt;
  }
  const auto slash = s.find('/');
  const std::string addr(s.substr(0, slash));
  IPPrefix p;
  p.v6 = addr.find(':') != std::string::npos;
  inet_pton(p.v6 ? AF_INET6 : AF_INET, addr.c_str(), p.bytes.data());
  p.bits = p.v6 ? 128 : 32;
  if (slash != std::string_view::npos) {
    std::from_chars(s.data() + slash + 1, s.data() + s.size(), p.bits);
  }
  for (int i = p.bits; i < 128; ++i) {
    p.bytes[static_cast<size_t>(i / 8)] &= static_cast<uint8_t>(~(0x80 >> (i % 8)));
  }
  return p;
}

std::string formatPrefix(const IPPrefix& p) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(p.v6 ? AF_INET6 : AF_INET, p.bytes.data(), buf, sizeof(buf));
  return std::string(buf) + "/" + std::to_string(p.bits);
}

bool hasHostBits(std::string_view cidr) {
  const auto slash = cidr.find('/');
  if (!isCIDR(cidr) || slash == std::string_view::npos) {
    return false;
  }
  const std::string addr(cidr.substr(0, slash));
  std::array<uint8_t, 16> raw{};
  inet_pton(addr.find(':') != std::string::npos ? AF_INET6 : AF_INET, addr.c_str(), raw.data());
  return parseIPOrCIDR(cidr)->bytes != raw;
}

}  // namespace egress::validation
