// The agent's reading of the operator's EgressPolicySlices: grouped by the policy's uid, the
// head (the slice with the gateway) chosen, what cannot be used skipped and named.
#include "pkg/dataplane/cluster_view.h"

#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace egress::dataplane {
namespace {

using networking::v1alpha1::EgressPolicySlice;
using networking::v1alpha1::SliceGateway;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

using Slices = std::vector<std::shared_ptr<const EgressPolicySlice>>;

EgressPolicySlice slice(const std::string& name, const std::string& ns, const std::string& policy,
                        const std::string& uid) {
  EgressPolicySlice s;
  s.metadata.name = name;
  s.spec.policy = {ns, policy, uid};
  return s;
}

SliceGateway gateway() {
  SliceGateway g;
  g.egressIPs = {{{"192.168.50.200", "fd00:50::200"}, "n1", "egw-web-a", "pod-a"},
                 {{"192.168.50.201"}, "", "", ""}};
  g.destinationCIDRs = {"0.0.0.0/0", "::/0"};
  g.excludedCIDRs = {"10.244.0.0/16"};
  return g;
}

std::vector<std::string> texts(const std::vector<SourceView>& sources) {
  std::vector<std::string> out;
  for (const auto& s : sources) {
    out.push_back(s.ip.toString() + "@" + s.node);
  }
  return out;
}

TEST(ClusterView, SlicesOfOnePolicyMergeIntoOneView) {
  auto head = slice("shop.web.0", "shop", "web", "uid-1");
  head.spec.gateway = gateway();
  head.spec.sources = {{"p1", "n1", {"10.244.1.2", "fd00:244:1::2"}}};
  auto more = slice("shop.web.1", "shop", "web", "uid-1");
  more.spec.sources = {{"p3", "n3", {"10.244.3.2"}}};
  // Listed in any order: the informer's is a map's.
  Slices slices{std::make_shared<EgressPolicySlice>(more),
                std::make_shared<EgressPolicySlice>(head)};
  std::vector<Problem> problems;
  auto views = policyViews(slices, &problems);
  EXPECT_THAT(problems, IsEmpty());
  ASSERT_EQ(views.size(), 1U);
  const auto& v = views[0];
  EXPECT_EQ(v.key, "shop/web");
  EXPECT_EQ(v.uid, "uid-1");
  ASSERT_EQ(v.slots.size(), 2U);
  EXPECT_EQ(v.slots[0].ips, (std::vector<ipam::Address>{*ipam::parseAddress("192.168.50.200"),
                                                        *ipam::parseAddress("fd00:50::200")}));
  EXPECT_EQ(v.slots[0].node, "n1");
  EXPECT_EQ(v.slots[0].pod, "egw-web-a");
  EXPECT_EQ(v.slots[0].podUID, "pod-a");
  EXPECT_EQ(v.slots[1].node, "");
  ASSERT_EQ(v.destinations.size(), 2U);
  EXPECT_EQ(v.destinations[1].toString(), "::/0");
  ASSERT_EQ(v.excluded.size(), 1U);
  EXPECT_THAT(texts(v.sources), ElementsAre("10.244.1.2@n1", "fd00:244:1::2@n1", "10.244.3.2@n3"));
}

// A policy deleted and re-created under the same name is another uid: two views, never one
// merged from both (the old one's slots are not the new one's).
TEST(ClusterView, SlicesAreGroupedByUIDNotByName) {
  auto oldHead = slice("shop.web.0", "shop", "web", "uid-old");
  oldHead.spec.gateway = gateway();
  auto newHead = slice("shop.web.0x", "shop", "web", "uid-new");
  newHead.spec.gateway = SliceGateway{};
  newHead.spec.gateway->egressIPs = {{{"192.168.50.210"}, "n2", "", ""}};
  auto other = slice("api.api.0", "api", "api", "uid-api");
  other.spec.gateway = SliceGateway{};
  std::vector<Problem> problems;
  auto views = policyViews(
      {std::make_shared<EgressPolicySlice>(oldHead), std::make_shared<EgressPolicySlice>(newHead),
       std::make_shared<EgressPolicySlice>(other)},
      &problems);
  EXPECT_THAT(problems, IsEmpty());
  ASSERT_EQ(views.size(), 3U);
  // By key, then uid.
  EXPECT_EQ(views[0].key, "api/api");
  EXPECT_EQ(views[1].uid, "uid-new");
  EXPECT_EQ(views[2].uid, "uid-old");
  EXPECT_EQ(views[1].slots.size(), 1U);
  EXPECT_EQ(views[2].slots.size(), 2U);
}

TEST(ClusterView, OfTwoHeadsTheLowestNameWinsAndTheOtherIsAProblem) {
  auto a = slice("shop.web.0", "shop", "web", "uid-1");
  a.spec.gateway = gateway();
  auto b = slice("shop.web.1", "shop", "web", "uid-1");
  b.spec.gateway = SliceGateway{};
  b.spec.gateway->egressIPs = {{{"192.168.50.250"}, "n3", "", ""}};
  b.spec.sources = {{"p3", "n3", {"10.244.3.2"}}};
  std::vector<Problem> problems;
  auto views = policyViews(
      {std::make_shared<EgressPolicySlice>(b), std::make_shared<EgressPolicySlice>(a)}, &problems);
  ASSERT_EQ(views.size(), 1U);
  ASSERT_EQ(views[0].slots.size(), 2U);
  EXPECT_EQ(views[0].slots[0].ips[0].toString(), "192.168.50.200");
  ASSERT_EQ(problems.size(), 1U);
  EXPECT_THAT(problems[0].message, HasSubstr("shop.web.1"));
  // Its sources are still the policy's.
  EXPECT_THAT(texts(views[0].sources), ElementsAre("10.244.3.2@n3"));
}

TEST(ClusterView, SlicesWithoutAHeadAreIgnoredAndNamed) {
  auto tail = slice("shop.web.1", "shop", "web", "uid-1");
  tail.spec.sources = {{"p3", "n3", {"10.244.3.2"}}};
  auto noUID = slice("x.y.0", "x", "y", "");
  noUID.spec.gateway = gateway();
  std::vector<Problem> problems;
  auto views = policyViews(
      {std::make_shared<EgressPolicySlice>(tail), std::make_shared<EgressPolicySlice>(noUID)},
      &problems);
  EXPECT_THAT(views, IsEmpty());
  ASSERT_EQ(problems.size(), 2U);
  EXPECT_THAT(problems[0].message, HasSubstr("x.y.0"));
  EXPECT_THAT(problems[1].message, HasSubstr("uid-1"));
  EXPECT_THAT(problems[1].message, HasSubstr("shop.web.1"));
}

TEST(ClusterView, AddressesThatDoNotParseAreSkippedAndNamed) {
  auto head = slice("shop.web.0", "shop", "web", "uid-1");
  head.spec.gateway = SliceGateway{};
  head.spec.gateway->egressIPs = {{{"192.168.50.200", "not-an-ip"}, "n1", "", ""}};
  head.spec.gateway->destinationCIDRs = {"0.0.0.0/0", "10.0.0.0/33"};
  head.spec.gateway->excludedCIDRs = {"bad", "10.244.0.0/16"};
  head.spec.sources = {{"p1", "n1", {"10.244.1.2", "10.244.1"}}, {"p2", "n2", {"x"}}};
  std::vector<Problem> problems;
  auto views = policyViews({std::make_shared<EgressPolicySlice>(head)}, &problems);
  ASSERT_EQ(views.size(), 1U);
  const auto& v = views[0];
  ASSERT_EQ(v.slots.size(), 1U);
  EXPECT_EQ(v.slots[0].ips, std::vector<ipam::Address>{*ipam::parseAddress("192.168.50.200")});
  EXPECT_EQ(v.destinations.size(), 1U);
  EXPECT_EQ(v.excluded.size(), 1U);
  EXPECT_THAT(texts(v.sources), ElementsAre("10.244.1.2@n1"));
  ASSERT_EQ(problems.size(), 5U);
  EXPECT_THAT(problems[0].message, HasSubstr("\"not-an-ip\""));
  EXPECT_THAT(problems[1].message, HasSubstr("\"10.0.0.0/33\""));
  EXPECT_THAT(problems[2].message, HasSubstr("\"bad\""));
  EXPECT_THAT(problems[3].message, HasSubstr("p1"));
  EXPECT_THAT(problems[4].message, HasSubstr("p2"));
  // Without a problems list, the same views.
  EXPECT_EQ(policyViews({std::make_shared<EgressPolicySlice>(head)}, nullptr).size(), 1U);
}

TEST(ClusterView, AStrippedNodeGivesTheSameView) {
  core::Node node;
  node.metadata.name = "n1";
  node.metadata.labels = meta::StringMap({{"topology.kubernetes.io/zone", "a"}});
  node.metadata.annotations = meta::StringMap({{"node.alpha.kubernetes.io/ttl", "0"}});
  node.unschedulable = true;
  node.taints = {{"dedicated", "egress", "NoSchedule"}};
  node.conditions = {{"Ready", "True"}};
  node.podCIDRs = {"10.244.1.0/24", "fd00:244:1::/64"};
  node.addresses = {{"Hostname", "n1"},
                    {"InternalIP", "192.168.1.11"},
                    {"ExternalIP", "203.0.113.11"},
                    {"InternalDNS", "n1.internal"},
                    {"InternalIP", "fd00:1::11"}};
  auto stripped = node;
  stripNode(stripped);
  EXPECT_TRUE(stripped.metadata.labels.empty());
  EXPECT_TRUE(stripped.metadata.annotations.empty());
  EXPECT_THAT(stripped.taints, IsEmpty());
  EXPECT_THAT(stripped.conditions, IsEmpty());
  EXPECT_EQ(stripped.addresses.size(), 3U);
  EXPECT_EQ(nodeView(stripped), nodeView(node));
  EXPECT_EQ(nodeView(stripped).addresses.size(), 3U);
  EXPECT_EQ(nodeView(stripped).podCIDRs.size(), 2U);
}

TEST(ClusterView, AStrippedSliceGivesTheSameViewAndProblems) {
  auto head = slice("shop.web.0", "shop", "web", "uid-1");
  head.metadata.labels = meta::StringMap({{"egressgateway.dev/policy", "web"}});
  head.metadata.annotations = meta::StringMap({{"note", "anything"}});
  head.metadata.finalizers = {"example.com/keep"};
  head.metadata.ownerReferences = {{"v1", "ConfigMap", "cm", "cm-uid", true, false}};
  head.spec.gateway = gateway();
  head.spec.sources = {{"web-7d9c8b6f5d-x2x7k-long-enough", "n1", {"10.244.1.2", "fd00::2"}},
                       {"web-7d9c8b6f5d-badaddress-pod", "n2", {"10.244.2.3", "10.244.2"}}};
  auto stripped = head;
  stripSlice(stripped);
  EXPECT_TRUE(stripped.metadata.labels.empty());
  EXPECT_TRUE(stripped.metadata.annotations.empty());
  EXPECT_THAT(stripped.metadata.finalizers, IsEmpty());
  EXPECT_THAT(stripped.metadata.ownerReferences, IsEmpty());
  // Only the source whose address does not parse keeps its name: its problem names it.
  EXPECT_EQ(stripped.spec.sources[0].pod, "");
  EXPECT_EQ(stripped.spec.sources[1].pod, "web-7d9c8b6f5d-badaddress-pod");
  EXPECT_EQ(stripped.metadata.name, head.metadata.name);
  EXPECT_EQ(stripped.spec.gateway, head.spec.gateway);

  std::vector<Problem> before;
  std::vector<Problem> after;
  auto original = policyViews({std::make_shared<EgressPolicySlice>(head)}, &before);
  auto fromStripped = policyViews({std::make_shared<EgressPolicySlice>(stripped)}, &after);
  ASSERT_EQ(original.size(), 1U);
  ASSERT_EQ(fromStripped.size(), 1U);
  EXPECT_EQ(texts(fromStripped[0].sources), texts(original[0].sources));
  EXPECT_EQ(fromStripped[0].slots.size(), original[0].slots.size());
  EXPECT_EQ(after, before);
  ASSERT_EQ(after.size(), 1U);
  EXPECT_THAT(after[0].message, HasSubstr("web-7d9c8b6f5d-badaddress-pod"));
}

TEST(ClusterView, AgentLeaseNames) {
  EXPECT_EQ(agentLeaseNode("egw-agent-n1"), "n1");
  EXPECT_EQ(agentLeaseNode("egw-agent-"), std::nullopt);
  EXPECT_EQ(agentLeaseNode("egress-operator"), std::nullopt);
}

TEST(ClusterView, ProgrammedAnnotationIsSortedCanonicalText) {
  EXPECT_EQ(programmedAnnotation({}), "");
  EXPECT_EQ(programmedAnnotation({*ipam::parseAddress("fd00:50:0::200"),
                                  *ipam::parseAddress("192.168.50.201"),
                                  *ipam::parseAddress("192.168.50.200")}),
            "192.168.50.200,192.168.50.201,fd00:50::200");
}

}  // namespace
}  // namespace egress::dataplane
