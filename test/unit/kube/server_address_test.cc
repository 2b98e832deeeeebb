#include "pkg/kube/server_address.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace egress::kube {
namespace {

using ::testing::ElementsAre;

TEST(ServerAddresses, FromTheConfigsHostAndTheServiceHost) {
  EXPECT_THAT(serverAddresses("https://192.168.50.1:6443", ""), ElementsAre("192.168.50.1"));
  EXPECT_THAT(serverAddresses("https://[fd00::1]:6443/prefix", "10.96.0.1"),
              ElementsAre("fd00::1", "10.96.0.1"));
  EXPECT_THAT(serverAddresses("https://10.96.0.1:443", "10.96.0.1"), ElementsAre("10.96.0.1"));
  EXPECT_THAT(serverAddresses("https://10.0.0.1", ""), ElementsAre("10.0.0.1"));
  EXPECT_THAT(serverAddresses("https://[FD00:0::1]", ""), ElementsAre("fd00::1"));
}

TEST(ServerAddresses, NamesAreNotAddresses) {
  EXPECT_TRUE(serverAddresses("https://api.example.com:6443", "").empty());
  EXPECT_TRUE(serverAddresses("", "kubernetes.default").empty());
}

}  // namespace
}  // namespace egress::kube
