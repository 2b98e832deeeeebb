// Runs in its own network namespace (netns_main.cc): programs egw's nftables table into a real
// kernel and reads it back.
#include "pkg/dataplane/nft_applier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pkg/dataplane/desired_state.h"

namespace egress::dataplane {
namespace {

using ::testing::HasSubstr;

ipam::Address ip(const char* text) {
  return *ipam::parseAddress(text);
}
ipam::Prefix cidr(const char* text) {
  return *ipam::parseAddressOrCIDR(text);
}

const meta::Time kNow = meta::Time{} + std::chrono::hours(1000);

// Dual-stack version of dataplane.md §3's topology; the gateway pod on n1 holds both addresses.
ClusterView topology(const std::string& self) {
  ClusterView v;
  v.self = self;
  v.now = kNow;
  v.nodes = {{"n1", ip("192.168.50.11"), ip("fd00:50::11")},
             {"n3", ip("192.168.50.13"), ip("fd00:50::13")}};
  PolicyView p;
  p.key = "default/web";
  p.egressIPs = {ip("192.168.50.200"), ip("fd00:50::200")};
  p.destinations = {cidr("192.168.50.96/28"), cidr("0.0.0.0/0"), cidr("fd00:50::/64")};
  p.excluded = {cidr("10.244.0.0/16"), cidr("192.168.50.101/32"), cidr("fd00:244::/48")};
  p.sources = {{ip("10.244.1.2"), "n1"}, {ip("10.244.3.2"), "n3"}, {ip("fd00:244:3::2"), "n3"}};
  v.policies = {p};
  v.gateways = {{"default/egw-web-a", "n1", p.egressIPs, false, false}};
  for (const char* n : {"n1", "n3"}) {
    v.leases.push_back({n, kNow, std::chrono::seconds(6)});
  }
  return v;
}

NftTable table(const std::string& self) {
  DataplaneConfig c;
  c.uplink = "eth0";
  auto s = computeDesiredState(topology(self), c);
  EXPECT_TRUE(s.ok());
  return s.ok() ? s->kernel.nft : NftTable{};
}

class NftApplierTest : public ::testing::Test {
 protected:
  void TearDown() override { ASSERT_TRUE(NftApplier().remove("egw").ok()); }
};

TEST_F(NftApplierTest, TheKernelTakesTheHoldersTableAndReportsItsDigest) {
  NftApplier nft;
  auto t = table("n1");
  auto r = nft.apply(t);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(*r);
  EXPECT_EQ(nft.appliedDigest("egw"), renderNftJson(t).digest);
  auto listing = nft.list("egw");
  ASSERT_TRUE(listing.ok());
  EXPECT_THAT(*listing, HasSubstr(R"("snat": {"family": "ip", "addr": "192.168.50.200"})"));
  EXPECT_THAT(*listing, HasSubstr(R"("snat": {"family": "ip6", "addr": "fd00:50::200"})"));
  EXPECT_THAT(*listing, HasSubstr(R"("prio": -90)"));
}

TEST_F(NftApplierTest, ApplyingAgainOrAfterARestartChangesNothing) {
  auto t = table("n3");
  {
    NftApplier nft;
    ASSERT_TRUE(*nft.apply(t));
    EXPECT_FALSE(*nft.apply(t));
  }
  NftApplier restarted;
  auto before = restarted.list("egw");
  ASSERT_TRUE(restarted.apply(t).ok());
  EXPECT_FALSE(*restarted.apply(t));
  // Not replaced: the kernel's handles are the same as before.
  EXPECT_EQ(*restarted.list("egw"), *before);
}

TEST_F(NftApplierTest, AChangedStateReplacesTheTableInOneTransaction) {
  NftApplier nft;
  ASSERT_TRUE(*nft.apply(table("n1")));
  auto moved = table("n3");  // the same cluster seen from a source node: no SNAT to held IPs
  ASSERT_TRUE(*nft.apply(moved));
  EXPECT_EQ(nft.appliedDigest("egw"), renderNftJson(moved).digest);
  EXPECT_THAT(*nft.list("egw"), ::testing::Not(HasSubstr(R"("addr": "192.168.50.200")")));
}

TEST_F(NftApplierTest, RemoveLeavesNoTableAndIsIdempotent) {
  NftApplier nft;
  ASSERT_TRUE(*nft.apply(table("n1")));
  ASSERT_TRUE(nft.remove("egw").ok());
  EXPECT_FALSE(nft.list("egw").ok());
  EXPECT_EQ(nft.appliedDigest("egw"), std::nullopt);
  EXPECT_TRUE(nft.remove("egw").ok());
}

}  // namespace
}  // namespace egress::dataplane
