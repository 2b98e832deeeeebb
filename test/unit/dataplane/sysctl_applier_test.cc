// Runs in its own network namespace (netns_main.cc, whose /proc/sys/net is its own): sets the
// sysctls a node's desired state names, reads them back, and checks that a second pass writes
// nothing, that a parameter the kernel lacks is an error naming it, and that with /proc/sys
// read-only (an unprivileged container) the tunnel's rp_filter is still set.
#include "pkg/dataplane/sysctl_applier.h"

#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pkg/dataplane/link_applier.h"
#include "test/unit/dataplane/kernel_test_util.h"

namespace egress::dataplane {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

using testing::sh;

// Undoes what a test made however it ends (a failed ASSERT returns early), so that the next test
// in this process starts clean.
struct Cleanup {
  ~Cleanup() {
    std::system(
        "umount /proc/sys 2>/dev/null; ip link del egw0 2>/dev/null; "
        "ip link del eth0 2>/dev/null");
  }
};

TEST(SysctlApplier, SetsWhatTheNodeNeedsOnceAndReadsItBack) {
  Cleanup cleanup;
  sh("ip link add eth0 type veth peer name eth0-peer && ip link set eth0 up");
  sh("ip addr add 192.168.50.13/24 dev eth0");
  auto want = testing::desiredOf(testing::dualStackTopology("n3"));
  ASSERT_TRUE(LinkApplier().apply(want.kernel).ok());  // the tunnel's rp_filter needs egw0
  EXPECT_THAT(testing::sorted(want.kernel.sysctls), Contains("net/ipv4/ip_forward = 1"));
  EXPECT_THAT(testing::sorted(want.kernel.sysctls), Contains("net/ipv4/conf/egw0/rp_filter = 2"));
  sh("sysctl -qw net.ipv4.ip_forward=0 net.ipv4.conf.egw0.rp_filter=0");
  SysctlApplier s;
  auto first = s.apply(want.kernel.sysctls);
  ASSERT_TRUE(first.ok()) << first.error();
  EXPECT_GE(*first, 2);
  for (const auto& w : want.kernel.sysctls) {
    EXPECT_EQ(*s.read(w.path), w.value) << w.path;
  }
  EXPECT_EQ(testing::output("sysctl -n net.ipv4.conf.egw0.rp_filter"), "2\n");
  EXPECT_EQ(testing::output("sysctl -n net.ipv6.conf.eth0.proxy_ndp"), "1\n");
  auto again = s.apply(want.kernel.sysctls);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(*again, 0);
  // A value the kernel refuses is an error, never set another way (rtnetlink would take it).
  auto bad = s.apply({{"net/ipv4/conf/egw0/rp_filter", "4294967295"}});  // above INT_MAX
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error(), HasSubstr("Invalid argument"));
  EXPECT_EQ(*s.read("net/ipv4/conf/egw0/rp_filter"), "2");
  ASSERT_TRUE(LinkApplier().removeAll().ok());
}

TEST(SysctlApplier, WithProcSysReadOnlyTheTunnelsRpFilterIsSetThroughRtnetlink) {
  // The chart's agent container: NET_ADMIN, /proc/sys read-only. This binary runs in its own
  // mount namespace (netns_main.cc), so the read-only bind mount ends with it.
  Cleanup cleanup;
  sh("ip link add eth0 type veth peer name eth0-peer && ip link set eth0 up");
  sh("ip addr add 192.168.50.13/24 dev eth0");
  auto want = testing::desiredOf(testing::dualStackTopology("n3"));
  ASSERT_TRUE(LinkApplier().apply(want.kernel).ok());
  sh("sysctl -qw net.ipv4.conf.egw0.rp_filter=0 net.ipv4.ip_forward=1");
  sh("mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys");
  ASSERT_NE(std::system("sysctl -qw net.ipv4.conf.egw0.rp_filter=1 2>/dev/null"), 0)
      << "/proc/sys is not read-only";
  SysctlApplier s;
  auto set = s.apply({{"net/ipv4/conf/egw0/rp_filter", "2"}, {"net/ipv4/ip_forward", "1"}});
  ASSERT_TRUE(set.ok()) << set.error();
  EXPECT_EQ(*set, 1);
  EXPECT_EQ(*s.read("net/ipv4/conf/egw0/rp_filter"), "2");
  // What rtnetlink cannot set is named, and does not stop the others.
  auto partly = s.apply({{"net/ipv4/ip_forward", "0"}, {"net/ipv4/conf/egw0/rp_filter", "1"}});
  ASSERT_FALSE(partly.ok());
  EXPECT_THAT(partly.error(), HasSubstr("net/ipv4/ip_forward = 0"));
  EXPECT_THAT(partly.error(), HasSubstr("Read-only file system"));
  EXPECT_EQ(*s.read("net/ipv4/conf/egw0/rp_filter"), "1");
  EXPECT_EQ(*s.read("net/ipv4/ip_forward"), "1");
  ASSERT_TRUE(LinkApplier().removeAll().ok());
}

TEST(SysctlApplier, AParameterTheKernelLacksIsAnErrorNamingIt) {
  auto r = SysctlApplier().apply({{"net/ipv4/conf/nosuch0/rp_filter", "2"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error(), HasSubstr("net/ipv4/conf/nosuch0/rp_filter"));
}

}  // namespace
}  // namespace egress::dataplane
