#include "pkg/controller/reserved.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace egress::controller {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> lines(const std::vector<ipam::Reservation>& rs) {
  std::vector<std::string> out;
  for (const auto& r : rs) {
    out.push_back(r.prefix.toString() + " " + r.why);
  }
  return out;
}

TEST(Reserved, NodesClusterCIDRsAndTheApiServerAreReserved) {
  auto node = std::make_shared<core::Node>();
  node->metadata.name = "n1";
  node->addresses = {{"InternalIP", "192.168.50.11"},
                     {"InternalIP", "fd00:50::11"},
                     {"ExternalIP", "203.0.113.7"},
                     {"Hostname", "n1"},
                     {"InternalIP", "not-an-ip"}};
  node->podCIDRs = {"10.244.1.0/24", "bogus"};
  networking::v1alpha1::OperatorConfig config;
  config.spec.clusterCIDRs = {"10.96.0.0/12", "10.244.0.0/16"};
  auto rs = clusterReservations({node}, &config, {"10.96.0.1"});
  EXPECT_THAT(
      lines(rs),
      ElementsAre("10.96.0.0/12 in the cluster CIDR 10.96.0.0/12 (OperatorConfig "
                  "spec.clusterCIDRs)",
                  "10.96.0.1/32 the API server's address",
                  "10.244.0.0/16 in the cluster CIDR 10.244.0.0/16 (OperatorConfig "
                  "spec.clusterCIDRs)",
                  "10.244.1.0/24 in node n1's pod CIDR 10.244.1.0/24",
                  "192.168.50.11/32 node n1's InternalIP", "203.0.113.7/32 node n1's ExternalIP",
                  "fd00:50::11/128 node n1's InternalIP"));
  EXPECT_TRUE(clusterReservations({}, nullptr, {}).empty());
}

}  // namespace
}  // namespace egress::controller
