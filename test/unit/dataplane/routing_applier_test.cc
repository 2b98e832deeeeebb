// Runs in its own network namespace (netns_main.cc): programs egw's rules and routes into a real
// kernel, reads them back, and checks that a second pass and a fresh applier change nothing and
// that what others own is never touched.
#include "pkg/dataplane/routing_applier.h"

#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pkg/dataplane/desired_state.h"
#include "test/unit/dataplane/kernel_test_util.h"

namespace egress::dataplane {
namespace {

using ::testing::Contains;
using ::testing::IsEmpty;

using testing::sh;
using testing::sorted;

DesiredState desired(const std::string& self) {
  return testing::desiredOf(testing::dualStackTopology(self));
}

class RoutingApplierTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // The devices the routes name; links are not this applier's.
    sh("ip link set lo up");
    sh("ip link add eth0 type veth peer name eth0-peer");
    sh("ip addr add 192.168.50.99/24 dev eth0 && ip link set eth0 up && ip link set eth0-peer up");
    sh("ip link add egw0 type vxlan id 4242 dstport 4799 local 192.168.50.99 dev eth0 nolearning");
    sh("ip link set egw0 up");
    sh("ip link add egw-eip0 type ifb && ip link set egw-eip0 up");
    // Someone else's rule and route: never touched.
    sh("ip rule add fwmark 0x4000/0x4000 lookup 100 pref 50");
    sh("ip route add 198.51.100.0/24 dev eth0 table 100");
  }
  void TearDown() override { ASSERT_TRUE(RoutingApplier().removeAll().ok()); }

  static void expectOthersIntact() {
    EXPECT_EQ(std::system("ip rule show pref 50 | grep -q 'fwmark 0x4000/0x4000 lookup 100'"), 0);
    EXPECT_EQ(std::system("ip route show table 100 | grep -q '198.51.100.0/24 dev eth0'"), 0);
  }
};

TEST_F(RoutingApplierTest, ProgramsTheHolderAndReadsItBack) {
  RoutingApplier rt;
  auto want = desired("n1");
  auto changes = rt.apply(want.kernel.rules, want.kernel.routes);
  ASSERT_TRUE(changes.ok()) << changes.error();
  EXPECT_EQ(*changes, static_cast<int>(want.kernel.rules.size() + want.kernel.routes.size()));
  EXPECT_EQ(sorted(*rt.readRules()), sorted(want.kernel.rules));
  EXPECT_EQ(sorted(*rt.readRoutes()), sorted(want.kernel.routes));
  EXPECT_THAT(sorted(*rt.readRoutes()),
              Contains("192.168.50.200/32 dev egw-eip0 table 254 metric 0"));
  expectOthersIntact();
}

TEST_F(RoutingApplierTest, ASecondPassAndARestartChangeNothing) {
  auto want = desired("n3");
  {
    RoutingApplier rt;
    auto first = rt.apply(want.kernel.rules, want.kernel.routes);
    ASSERT_TRUE(first.ok()) << first.error();
    ASSERT_GT(*first, 0);
    EXPECT_EQ(*rt.apply(want.kernel.rules, want.kernel.routes), 0);
  }
  RoutingApplier restarted;
  auto again = restarted.apply(want.kernel.rules, want.kernel.routes);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(*again, 0);
}

TEST_F(RoutingApplierTest, TakeoverAndFailClosedChangeOnlyTheDifference) {
  RoutingApplier rt;
  auto source = desired("n3");
  auto first = rt.apply(source.kernel.rules, source.kernel.routes);
  ASSERT_TRUE(first.ok()) << first.error();
  // The holder's Lease goes stale: the table of its mark goes, its rules (IPv4 and IPv6) and
  // routes (unreachable and via, each family), and nothing else: 6. (Its sources' picks turn to
  // the refuse mark in the nft table.)
  auto v = testing::dualStackTopology("n3");
  testing::setLive(v, "n1", false);
  DataplaneConfig c;
  c.uplink = "eth0";
  auto closed = *computeDesiredState(v, c);
  auto changes = rt.apply(closed.kernel.rules, closed.kernel.routes);
  ASSERT_TRUE(changes.ok()) << changes.error();
  EXPECT_EQ(*changes, 6);
  EXPECT_EQ(sorted(*rt.readRoutes()), sorted(closed.kernel.routes));
  auto programmed = rt.readRoutes();
  ASSERT_TRUE(programmed.ok());
  for (const auto& r : *programmed) {
    // Only the refusal is left: no route leads anywhere.
    EXPECT_EQ(r.table, 7254U) << r.toString();
    EXPECT_EQ(r.type, Route::Type::kUnreachable) << r.toString();
  }
  // This node takes the IPs over: rules for them go, host routes come.
  auto holder = desired("n1");
  ASSERT_TRUE(rt.apply(holder.kernel.rules, holder.kernel.routes).ok());
  EXPECT_EQ(sorted(*rt.readRules()), sorted(holder.kernel.rules));
  EXPECT_EQ(sorted(*rt.readRoutes()), sorted(holder.kernel.routes));
  expectOthersIntact();
}

TEST_F(RoutingApplierTest, RemoveAllLeavesNothingOfOursAndEverythingElse) {
  RoutingApplier rt;
  auto want = desired("n1");
  ASSERT_TRUE(rt.apply(want.kernel.rules, want.kernel.routes).ok());
  ASSERT_TRUE(rt.removeAll().ok());
  auto rules = rt.readRules();
  auto routes = rt.readRoutes();
  ASSERT_TRUE(rules.ok() && routes.ok());
  EXPECT_THAT(*rules, IsEmpty());
  EXPECT_THAT(*routes, IsEmpty());
  EXPECT_NE(std::system("ip route show table all | grep -q 'proto 240'"), 0);
  expectOthersIntact();
}

}  // namespace
}  // namespace egress::dataplane
