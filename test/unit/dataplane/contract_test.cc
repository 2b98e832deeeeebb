// The agent parses exactly what the operator renders: the ConfigMap of gatewayData and the pod
// annotation of entryText.
#include <gtest/gtest.h>

#include "pkg/controller/egressgateway/render.h"
#include "pkg/controller/names.h"
#include "pkg/dataplane/cluster_view.h"

namespace egress::dataplane {
namespace {

TEST(Contract, NamesMatchTheOperators) {
  EXPECT_EQ(kEgressIPsAnnotation, controller::kEgressIPsAnnotation);
  EXPECT_EQ(kIPProgrammedCondition, controller::kIPProgrammedCondition);
  EXPECT_EQ(kPolicyLabel, controller::kPolicyLabel);
  EXPECT_EQ(kAgentLeasePrefix, controller::kAgentLeasePrefix);
  EXPECT_EQ(std::string(kConfigMapPrefix) + "web", controller::gatewayName("web"));
}

TEST(Contract, ConfigMapRenderedByTheOperatorParses) {
  networking::v1alpha1::EgressGatewayPolicy policy;
  policy.metadata.name = "web";
  policy.metadata.namespace_ = "shop";
  policy.spec.egressIP.ipFamily = "DualStack";
  policy.spec.destinationCIDRs = {"192.168.50.96/28", "2001:db8::/32"};
  policy.spec.excludedCIDRs = {"192.168.50.101/32"};
  auto pod = std::make_shared<core::Pod>();
  pod->spec.nodeName = "n3";
  pod->status.podIPs = {"10.244.3.2", "fd00:244:3::2"};
  std::vector<ipam::Entry> ledger{
      {*ipam::parseAddress("192.168.50.200"), *ipam::parseAddress("fd00:50::200")}};
  auto data =
      controller::configMapData(controller::gatewayData(policy, ledger, {"10.244.0.0/16"}, {pod}));
  core::ConfigMap cm;
  cm.metadata.name = controller::gatewayName("web");
  cm.metadata.namespace_ = "shop";
  cm.data = data;
  std::vector<std::string> problems;
  auto v = policyView(cm, &problems);
  ASSERT_TRUE(v);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(v->key, "shop/web");
  ASSERT_EQ(v->egressIPs.size(), 2U);
  EXPECT_EQ(v->egressIPs[0].toString(), "192.168.50.200");
  EXPECT_EQ(v->egressIPs[1].toString(), "fd00:50::200");
  ASSERT_EQ(v->destinations.size(), 2U);
  ASSERT_EQ(v->excluded.size(), 2U);  // the policy's and the cluster's
  ASSERT_EQ(v->sources.size(), 2U);
  EXPECT_EQ(v->sources[0].ip.toString(), "10.244.3.2");
  EXPECT_EQ(v->sources[0].node, "n3");
  EXPECT_EQ(v->sources[1].ip.toString(), "fd00:244:3::2");
}

TEST(Contract, AnnotationWrittenByTheOperatorParses) {
  core::Pod pod;
  pod.metadata.namespace_ = "shop";
  pod.metadata.name = "egw-web-x";
  pod.spec.nodeName = "n1";
  pod.metadata.annotations[std::string(controller::kEgressIPsAnnotation)] = controller::entryText(
      {*ipam::parseAddress("192.168.50.200"), *ipam::parseAddress("fd00:50::200")});
  auto g = gatewayPodView(pod);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->key, "shop/egw-web-x");
  EXPECT_EQ(g->node, "n1");
  ASSERT_EQ(g->egressIPs.size(), 2U);
  EXPECT_FALSE(g->terminating);
  pod.status.phase = "Failed";
  EXPECT_TRUE(gatewayPodView(pod)->terminating);
  pod.spec.nodeName.clear();
  EXPECT_FALSE(gatewayPodView(pod));
}

TEST(Contract, BadLinesAreReportedAndSkipped) {
  core::ConfigMap cm;
  cm.metadata.name = "egw-x";
  cm.metadata.namespace_ = "ns";
  cm.data["egress-ips"] = "192.168.50.200\nnot-an-ip\n";
  cm.data["sources"] = "10.244.3.2@n3\n10.244.3.3\n10.244.3.4@\n";
  std::vector<std::string> problems;
  auto v = policyView(cm, &problems);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->egressIPs.size(), 1U);
  EXPECT_EQ(v->sources.size(), 1U);
  EXPECT_EQ(problems.size(), 3U);
  cm.metadata.name = "other";
  EXPECT_FALSE(policyView(cm, &problems));
}

TEST(Contract, AgentLease) {
  coordination::Lease l;
  l.metadata.name = "egw-agent-n1";
  EXPECT_FALSE(leaseView(l));
  l.spec.renewTime = meta::Time{} + std::chrono::seconds(100);
  l.spec.leaseDurationSeconds = 6;
  auto v = leaseView(l);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->node, "n1");
  EXPECT_TRUE(v->freshAt(meta::Time{} + std::chrono::seconds(105)));
  EXPECT_FALSE(v->freshAt(meta::Time{} + std::chrono::seconds(106)));
}

}  // namespace
}  // namespace egress::dataplane
