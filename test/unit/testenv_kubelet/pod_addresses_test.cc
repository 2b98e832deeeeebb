#include "test/testenv_kubelet/pod_addresses.h"

#include <map>
#include <random>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "pkg/ipam/address.h"

namespace egress::testenv {
namespace {

bool inCidr(const std::string& ip, const std::string& cidr) {
  auto a = ipam::parseAddress(ip);
  auto p = ipam::parseCIDR(cidr);
  return a && p && a->value >= p->first() && a->value <= p->last();
}

TEST(PodAddresses, PodsGetTheLowestFreeAddressOfTheirNode) {
  PodAddresses addresses(3);
  auto a = addresses.assign(1, "ns/a");
  auto b = addresses.assign(2, "ns/b");
  auto c = addresses.assign(1, "ns/c");
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->ip, "10.244.1.1");
  EXPECT_EQ(b->ip, "10.244.2.1");
  EXPECT_EQ(c->ip, "10.244.1.2");
  EXPECT_FALSE(a->overflow || b->overflow || c->overflow);
  EXPECT_EQ(addresses.held(1), 2u);
  EXPECT_EQ(addresses.held(2), 1u);
  EXPECT_EQ(addresses.held(3), 0u);
}

TEST(PodAddresses, AssignAgainReturnsTheAddressTheOwnerHolds) {
  PodAddresses addresses(1);
  auto first = addresses.assign(1, "ns/a");
  auto again = addresses.assign(1, "ns/a");
  ASSERT_TRUE(first && again);
  EXPECT_EQ(first->ip, again->ip);
  EXPECT_EQ(addresses.held(1), 1u);
  EXPECT_EQ(addresses.addressOf("ns/a"), first->ip);
}

TEST(PodAddresses, A254thPodFillsThePodCidrAndThe255thOverflows) {
  PodAddresses addresses(2);
  std::set<std::string> seen;
  for (int i = 0; i < 254; ++i) {
    auto a = addresses.assign(2, "ns/p-" + std::to_string(i));
    ASSERT_TRUE(a) << i;
    EXPECT_TRUE(inCidr(a->ip, "10.244.2.0/24")) << a->ip;
    EXPECT_FALSE(a->overflow) << a->ip;
    EXPECT_TRUE(seen.insert(a->ip).second) << a->ip << " handed out twice";
  }
  EXPECT_EQ(seen.count("10.244.2.0"), 0u);    // network
  EXPECT_EQ(seen.count("10.244.2.255"), 0u);  // broadcast
  auto over = addresses.assign(2, "ns/one-too-many");
  ASSERT_TRUE(over);
  EXPECT_EQ(over->ip, "10.245.2.1");
  EXPECT_TRUE(over->overflow);
}

TEST(PodAddresses, AReleasedAddressIsTheOnlyOneHandedOutAgain) {
  PodAddresses addresses(1);
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(addresses.assign(1, "ns/p-" + std::to_string(i)));
  }
  const std::string freed = addresses.addressOf("ns/p-4");
  addresses.release("ns/p-4");
  EXPECT_EQ(addresses.addressOf("ns/p-4"), "");
  auto next = addresses.assign(1, "ns/new");
  ASSERT_TRUE(next);
  EXPECT_EQ(next->ip, freed);
  auto after = addresses.assign(1, "ns/newer");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->ip, "10.244.1.11");
  addresses.release("ns/unknown");  // no-op
  EXPECT_EQ(addresses.held(1), 11u);
}

TEST(PodAddresses, EveryRangeFullMeansNoAddress) {
  PodAddresses addresses(1);
  // The podCIDR and the eleven overflow /24s, 254 usable each.
  constexpr int kCapacity = 12 * 254;
  std::set<std::string> seen;
  for (int i = 0; i < kCapacity; ++i) {
    auto a = addresses.assign(1, "ns/p-" + std::to_string(i));
    ASSERT_TRUE(a) << i;
    ASSERT_TRUE(seen.insert(a->ip).second) << a->ip;
  }
  EXPECT_EQ(addresses.assign(1, "ns/p-full"), std::nullopt);
  addresses.release("ns/p-0");
  auto a = addresses.assign(1, "ns/p-full");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->ip, "10.244.1.1");
}

TEST(PodAddresses, ObservedAddressesAreNotHandedToNewPods) {
  // A restarted kubelet first learns what its pods already show.
  PodAddresses addresses(1);
  EXPECT_EQ(addresses.observe(1, "ns/old-1", "10.244.1.1"), "");
  EXPECT_EQ(addresses.observe(1, "ns/old-3", "10.244.1.3"), "");
  EXPECT_EQ(addresses.observe(1, "ns/old-1", "10.244.1.1"), "");  // again: no change
  auto a = addresses.assign(1, "ns/new-a");
  auto b = addresses.assign(1, "ns/new-b");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->ip, "10.244.1.2");
  EXPECT_EQ(b->ip, "10.244.1.4");
  auto old = addresses.assign(1, "ns/old-3");  // made Running again: keeps its address
  ASSERT_TRUE(old);
  EXPECT_EQ(old->ip, "10.244.1.3");
}

TEST(PodAddresses, ObservingAnotherPodsAddressIsRefused) {
  PodAddresses addresses(1);
  auto a = addresses.assign(1, "ns/a");
  ASSERT_TRUE(a);
  const std::string refused = addresses.observe(1, "ns/b", a->ip);
  EXPECT_NE(refused, "");
  EXPECT_NE(refused.find("ns/a"), std::string::npos) << refused;
  EXPECT_EQ(addresses.addressOf("ns/b"), "");
  EXPECT_EQ(addresses.addressOf("ns/a"), a->ip);
  auto b = addresses.assign(1, "ns/b");
  ASSERT_TRUE(b);
  EXPECT_NE(b->ip, a->ip);
}

TEST(PodAddresses, ObservingAnAddressOutsideTheNodesRangesIsRefused) {
  PodAddresses addresses(2);
  EXPECT_NE(addresses.observe(1, "ns/a", "192.168.0.7"), "");
  EXPECT_NE(addresses.observe(1, "ns/a", "10.244.2.7"), "");  // node 2's
  EXPECT_NE(addresses.observe(1, "ns/a", "not-an-ip"), "");
  EXPECT_EQ(addresses.held(1), 0u);
  EXPECT_EQ(addresses.addressOf("ns/a"), "");
}

TEST(PodAddresses, WhatAPodShowsReplacesWhatItHeld) {
  PodAddresses addresses(2);
  auto a = addresses.assign(1, "ns/a");
  ASSERT_TRUE(a);
  EXPECT_EQ(addresses.observe(1, "ns/a", "10.244.1.9"), "");
  EXPECT_EQ(addresses.addressOf("ns/a"), "10.244.1.9");
  EXPECT_EQ(addresses.held(1), 1u);
  auto b = addresses.assign(1, "ns/b");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->ip, a->ip);  // freed by the observation
}

TEST(PodAddresses, AKeyOnAnotherNodeIsANewPod) {
  PodAddresses addresses(2);
  ASSERT_TRUE(addresses.assign(1, "ns/a"));
  auto moved = addresses.assign(2, "ns/a");
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->ip, "10.244.2.1");
  EXPECT_EQ(addresses.held(1), 0u);
  EXPECT_EQ(addresses.held(2), 1u);
}

// Random assign / observe / release sequences: no two live owners ever hold one address, and
// every address stays inside its node's ranges.
TEST(PodAddresses, RandomSequencesNeverShareAnAddress) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    PodAddresses addresses(3);
    std::map<std::string, std::pair<int, std::string>> live;  // owner -> node, address
    for (int step = 0; step < 3000; ++step) {
      const std::string owner = "ns/p-" + std::to_string(rng() % 400);
      const int node = 1 + static_cast<int>(rng() % 3);
      const unsigned dice = rng() % 10;
      if (dice < 6) {
        auto a = addresses.assign(node, owner);
        ASSERT_TRUE(a);
        live[owner] = {node, a->ip};
      } else if (dice < 8) {
        const std::string ip =
            "10.244." + std::to_string(node) + "." + std::to_string(1 + rng() % 254);
        if (addresses.observe(node, owner, ip).empty()) {
          live[owner] = {node, ip};
        } else {
          live.erase(owner);  // refused: it holds nothing now
        }
      } else {
        addresses.release(owner);
        live.erase(owner);
      }
      ASSERT_EQ(addresses.addressOf(owner), live.count(owner) ? live[owner].second : "")
          << "seed " << seed << " step " << step;
    }
    std::set<std::string> seen;
    size_t perNode[4] = {0, 0, 0, 0};
    for (const auto& [owner, held] : live) {
      EXPECT_TRUE(seen.insert(held.second).second) << held.second << " shared, seed " << seed;
      EXPECT_TRUE(inCidr(held.second, "10.244." + std::to_string(held.first) + ".0/24") ||
                  inCidr(held.second, "10.245." + std::to_string(held.first) + ".0/24"))
          << held.second;
      ++perNode[held.first];
    }
    for (int node = 1; node <= 3; ++node) {
      EXPECT_EQ(addresses.held(node), perNode[node]) << "seed " << seed;
    }
  }
}

}  // namespace
}  // namespace egress::testenv
