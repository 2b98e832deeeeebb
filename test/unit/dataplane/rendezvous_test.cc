#include "pkg/dataplane/rendezvous.h"

#include <map>

#include <gtest/gtest.h>

namespace egress::dataplane {
namespace {

ipam::Address ip(const char* text) {
  return *ipam::parseAddress(text);
}

std::vector<ipam::Address> sources(int n) {
  std::vector<ipam::Address> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(ipam::Address{ipam::Family::kIPv4, (ipam::Uint128{10} << 24) + 0x10000 + i});
  }
  return out;
}

TEST(Rendezvous, RemovingAnEgressIPMovesOnlyThePodsThatWereOnIt) {
  const auto a = ip("192.0.2.1"), b = ip("192.0.2.2"), c = ip("192.0.2.3");
  int moved = 0;
  for (const auto& s : sources(3000)) {
    auto before = pickEgressIP(s, {a, b, c});
    auto after = pickEgressIP(s, {a, c});
    ASSERT_TRUE(before && after);
    if (*before != b) {
      EXPECT_EQ(*before, *after) << s;
    } else {
      ++moved;
    }
  }
  EXPECT_GT(moved, 0);
}

TEST(Rendezvous, AddingAnEgressIPMovesPodsOnlyOntoIt) {
  const auto a = ip("192.0.2.1"), b = ip("192.0.2.2"), d = ip("192.0.2.4");
  int onD = 0;
  for (const auto& s : sources(3000)) {
    auto before = pickEgressIP(s, {a, b});
    auto after = pickEgressIP(s, {a, b, d});
    if (*after == d) {
      ++onD;
    } else {
      EXPECT_EQ(*before, *after) << s;
    }
  }
  EXPECT_GT(onD, 0);
}

TEST(Rendezvous, OrderOfCandidatesDoesNotMatter) {
  const auto a = ip("192.0.2.1"), b = ip("192.0.2.2"), c = ip("192.0.2.3");
  for (const auto& s : sources(500)) {
    EXPECT_EQ(pickEgressIP(s, {a, b, c}), pickEgressIP(s, {c, a, b}));
  }
}

TEST(Rendezvous, SpreadsNeighbouringPodIPsOverAllEgressIPs) {
  const std::vector<ipam::Address> eips{ip("192.0.2.1"), ip("192.0.2.2"), ip("192.0.2.3")};
  std::map<ipam::Address, int> count;
  for (const auto& s : sources(3000)) {
    ++count[*pickEgressIP(s, eips)];
  }
  ASSERT_EQ(count.size(), 3U);
  for (const auto& [e, n] : count) {
    EXPECT_GT(n, 800) << e;  // a fair share is 1000; a skewed hash gives far fewer
  }
}

TEST(Rendezvous, OnlyCandidatesOfTheSourcesFamily) {
  const auto v4 = ip("192.0.2.1"), v6 = ip("2001:db8::1");
  EXPECT_EQ(pickEgressIP(ip("10.0.0.1"), {v6, v4}), v4);
  EXPECT_EQ(pickEgressIP(ip("fd00::1"), {v6, v4}), v6);
  EXPECT_EQ(pickEgressIP(ip("fd00::1"), {v4}), std::nullopt);
  EXPECT_EQ(pickEgressIP(ip("10.0.0.1"), {}), std::nullopt);
}

TEST(Rendezvous, ScoreIsAFixedFunctionOfTheAddresses) {
  // Pinned: every agent (and every version of it) must pick the same egress IP for a pod, or
  // the source node routes to one holder while the holder SNATs to another.
  EXPECT_EQ(rendezvousScore(ip("10.244.1.2"), ip("192.168.50.200")), 17917905395285182085ULL);
  EXPECT_NE(rendezvousScore(ip("10.244.1.2"), ip("192.168.50.200")),
            rendezvousScore(ip("10.244.1.3"), ip("192.168.50.200")));
}

}  // namespace
}  // namespace egress::dataplane
