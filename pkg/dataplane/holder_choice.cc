#include "pkg/dataplane/holder_choice.h"

#include <algorithm>

#include "pkg/base/fnv1a.h"

namespace egress::dataplane {
namespace {

// FNV-1a over the node's name and the address's family and bytes, then splitmix64's finaliser
// (as rendezvous.cc): the same on every node, and well spread for names that differ in one
// character (node-1, node-2).
uint64_t nodeScore(const std::string& node, const ipam::Address& e) {
  uint64_t h = fnv1a(node);
  h ^= static_cast<uint64_t>(e.family);
  h *= 1099511628211ULL;
  for (int shift = 120; shift >= 0; shift -= 8) {
    h ^= static_cast<uint64_t>((e.value >> shift) & 0xff);
    h *= 1099511628211ULL;
  }
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

}  // namespace

std::vector<std::string> rankCandidates(const ipam::Address& egressIP, const std::string& slotNode,
                                        std::vector<std::string> nodes) {
  std::erase(nodes, slotNode);
  std::vector<std::pair<uint64_t, std::string>> scored;
  scored.reserve(nodes.size());
  for (auto& n : nodes) {
    scored.emplace_back(nodeScore(n, egressIP), std::move(n));
  }
  std::sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<std::string> out;
  out.reserve(scored.size() + 1);
  if (!slotNode.empty()) {
    out.push_back(slotNode);
  }
  for (auto& [score, n] : scored) {
    out.push_back(std::move(n));
  }
  return out;
}

HolderChoice chooseHolder(const ipam::Address& egressIP, const std::vector<std::string>& ranked,
                          const std::string& self, bool selfLive, bool selfHolds,
                          const PeerLiveness& peers) {
  const auto others = peers.claimants(egressIP);
  HolderChoice out;
  for (const auto& c : others) {
    if (std::find(ranked.begin(), ranked.end(), c) == ranked.end()) {
      out.holder = c;  // the first such, by name (claimants() lists them in order)
      return out;
    }
  }
  auto claims = [&](const std::string& n) {
    return n == self ? selfHolds && selfLive
                     : std::find(others.begin(), others.end(), n) != others.end();
  };
  auto alive = [&](const std::string& n) { return n == self ? selfLive : !peers.dead(n); };
  for (const auto& n : ranked) {
    if (claims(n)) {
      out.holder = n;
      out.held = n == self;
      return out;
    }
  }
  // Nobody holds it: the first live candidate takes it. Without a lease this node is not live
  // to itself, although its peers may not have certified it dead yet: they send its traffic
  // here, where it is refused, until they do.
  for (const auto& n : ranked) {
    if (alive(n)) {
      out.holder = n;
      break;
    }
  }
  if (out.holder == self) {
    out.held = std::all_of(ranked.begin(), ranked.end(), [&](const std::string& n) {
      return n == self || peers.dead(n) || peers.current(n);
    });
  }
  return out;
}

}  // namespace egress::dataplane
