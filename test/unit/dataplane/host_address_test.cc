#include "pkg/agent/host_address.h"

#include <gtest/gtest.h>

#include "pkg/controllerruntime/bind_address.h"

namespace egress::agent {
namespace {

TEST(HostAddress, AnIPv6NodeAddressIsBracketedForTheManager) {
  EXPECT_EQ(bracketIPv6Host("fd00:50::11:9402"), "[fd00:50::11]:9402");
  EXPECT_EQ(bracketIPv6Host("2001:db8::1:9403"), "[2001:db8::1]:9403");
  auto parsed = controllerruntime::parseBindAddress(bracketIPv6Host("fd00:50::11:9402"));
  ASSERT_TRUE(parsed) << parsed.error();
  ASSERT_TRUE(*parsed);
  EXPECT_EQ((*parsed)->port, 9402);
  EXPECT_EQ((*parsed)->host->to_string(), "fd00:50::11");
}

TEST(HostAddress, EverythingElseIsLeftAlone) {
  for (const char* same : {"192.168.50.11:9402", "[fd00::11]:9402", ":9402", "0", "",
                           "127.0.0.1:9403", "localhost:9402", "not-an-address:1", "fd00::11"}) {
    EXPECT_EQ(bracketIPv6Host(same), same);
  }
}

}  // namespace
}  // namespace egress::agent
