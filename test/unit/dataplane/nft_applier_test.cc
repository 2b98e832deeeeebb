// Runs in its own network namespace (netns_main.cc): programs egw's nftables table into a real
// kernel and reads it back.
#include "pkg/dataplane/nft_applier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pkg/dataplane/desired_state.h"
#include "test/unit/dataplane/topology.h"

namespace egress::dataplane {
namespace {

using ::testing::HasSubstr;

NftTable table(const std::string& self) {
  DataplaneConfig c;
  c.uplink = "eth0";
  auto s = computeDesiredState(testing::dualStackTopology(self), c);
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
