#include "pkg/dataplane/fence.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/unit/dataplane/topology.h"

namespace egress::dataplane {
namespace {

using ::testing::HasSubstr;
using testing::ip;
using ::testing::Not;

TEST(Fence, HeldAddressesTimeOutAtTheAgentsFenceTime) {
  FenceState s;
  s.known = {ip("192.168.50.200"), ip("192.168.50.201"), ip("fd00:50::200")};
  s.held = {ip("192.168.50.200"), ip("fd00:50::200")};
  s.remaining = std::chrono::milliseconds(3456);
  const auto t = renderFence(s);
  EXPECT_THAT(t, HasSubstr("add element inet egw_fence held4 { 192.168.50.200 timeout 3456ms }\n"));
  EXPECT_THAT(t, HasSubstr("add element inet egw_fence held6 { fd00:50::200 timeout 3456ms }\n"));
  // The NA's target, as the raw 128-bit payload the nd gate reads.
  EXPECT_THAT(t, HasSubstr("add element inet egw_fence heldnd { "
                           "0xfd000050000000000000000000000200 timeout 3456ms }\n"));
  EXPECT_THAT(t, HasSubstr("add element arp egw_fence held { 192.168.50.200 timeout 3456ms }\n"));
  EXPECT_THAT(t, HasSubstr("add element inet egw_fence known4 { 192.168.50.200, "
                           "192.168.50.201 }\n"));
  // Each set is replaced whole: what is no longer held goes at once, not at its timeout.
  EXPECT_THAT(t, HasSubstr("flush set inet egw_fence held4\n"));
  EXPECT_THAT(t, HasSubstr("flush set arp egw_fence held\n"));
  EXPECT_THAT(t, HasSubstr("ip saddr @known4 ip saddr != @held4 counter name \"fenced\" drop"));
  EXPECT_THAT(t, HasSubstr("arp operation reply arp saddr ip @known arp saddr ip != @held"));
}

TEST(Fence, WithNoFreshnessLeftNothingIsHeld) {
  FenceState s;
  s.known = {ip("192.168.50.200")};
  s.held = {ip("192.168.50.200")};
  s.remaining = std::chrono::milliseconds(0);
  const auto t = renderFence(s);
  EXPECT_THAT(t, HasSubstr("flush set inet egw_fence held4\n"));
  EXPECT_THAT(t, Not(HasSubstr("add element inet egw_fence held4")));
  EXPECT_THAT(t, Not(HasSubstr("add element arp egw_fence held ")));
  EXPECT_THAT(t, HasSubstr("add element arp egw_fence known { 192.168.50.200 }"));
}

TEST(Fence, NothingKnownIsNoElementAtAll) {
  const auto t = renderFence(FenceState{});
  EXPECT_THAT(t, Not(HasSubstr("add element")));
  EXPECT_THAT(removeFence(), HasSubstr("delete table inet egw_fence\n"));
  EXPECT_THAT(removeFence(), HasSubstr("delete table arp egw_fence\n"));
}

}  // namespace
}  // namespace egress::dataplane
