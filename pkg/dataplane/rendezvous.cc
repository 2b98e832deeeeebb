#include "pkg/dataplane/rendezvous.h"

namespace egress::dataplane {
namespace {

void mix(uint64_t& h, const ipam::Address& a) {
  h ^= static_cast<uint64_t>(a.family);
  h *= 1099511628211ULL;  // FNV-1a prime
  for (int shift = 120; shift >= 0; shift -= 8) {
    h ^= static_cast<uint64_t>((a.value >> shift) & 0xff);
    h *= 1099511628211ULL;
  }
}

// splitmix64's finaliser: FNV-1a alone leaves the high bits poorly mixed for inputs that differ
// only in their last byte (neighbouring pod IPs), which would skew the choice.
uint64_t finalise(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

uint64_t rendezvousScore(const ipam::Address& source, const ipam::Address& egressIP) {
  uint64_t h = 14695981039346656037ULL;
  mix(h, source);
  mix(h, egressIP);
  return finalise(h);
}

std::optional<ipam::Address> pickEgressIP(const ipam::Address& source,
                                          const std::vector<ipam::Address>& candidates) {
  std::optional<ipam::Address> best;
  uint64_t bestScore = 0;
  for (const auto& c : candidates) {
    if (c.family != source.family) {
      continue;
    }
    uint64_t s = rendezvousScore(source, c);
    if (!best || s > bestScore || (s == bestScore && c < *best)) {
      best = c;
      bestScore = s;
    }
  }
  return best;
}

}  // namespace egress::dataplane
