#include "pkg/controller/cache/cache.h"

#include <gtest/gtest.h>

#include "pkg/controller/names.h"

namespace egress::controller {
namespace {

core::Pod podWithEverything() {
  core::Pod pod;
  pod.metadata.name = "web-1";
  pod.metadata.namespace_ = "shop";
  pod.metadata.uid = "6f1c2f0e-3b7a-4d1e-9c55-0a8f3e2d1b90";
  pod.metadata.labels = {{"app", "web"}};
  pod.metadata.annotations = {{"note", "kept out"},
                              {"egressgateway.dev/egress-ips", "198.51.100.7"}};
  pod.metadata.ownerReferences.push_back(
      {"apps/v1", "ReplicaSet", "web-5d4f", "uid-1", true, true});
  pod.metadata.ownerReferences.push_back({"v1", "ConfigMap", "other", "uid-2", {}, {}});
  pod.metadata.finalizers = {"example.com/hold"};
  pod.spec.nodeName = "node-1";
  pod.status.phase = "Running";
  pod.status.podIPs = {"10.244.1.5", "fd00:10:244:1::5"};
  pod.status.conditions = {{"PodScheduled", "True"}, {"Ready", "True"}, {"Initialized", "True"}};
  return pod;
}

TEST(StripPod, KeepsWhatTheOperatorReadsOfASourcePod) {
  core::Pod pod = podWithEverything();
  stripPod(pod);
  EXPECT_EQ(pod.metadata.name, "web-1");
  EXPECT_EQ(pod.metadata.labels.at("app"), "web");
  EXPECT_TRUE(pod.metadata.annotations.empty())
      << "no annotation is proof of anything: the holder record is the policy's status";
  EXPECT_TRUE(pod.metadata.ownerReferences.empty()) << "a source pod's owners are never read";
  EXPECT_TRUE(pod.metadata.uid.empty()) << "nor its uid";
  EXPECT_TRUE(pod.metadata.finalizers.empty());
  EXPECT_EQ(pod.spec.nodeName, "node-1");
  EXPECT_EQ(pod.status.podIPs.size(), 2u);
  EXPECT_TRUE(core::isPodReady(pod));
  EXPECT_EQ(pod.status.conditions.size(), 1u) << "only Ready is kept";
}

TEST(StripPod, AGatewayPodKeepsItsController) {
  core::Pod pod = podWithEverything();
  pod.metadata.labels.emplace(std::string(kPolicyLabel), "prod");
  stripPod(pod);
  ASSERT_EQ(pod.metadata.ownerReferences.size(), 1u);
  EXPECT_FALSE(pod.metadata.uid.empty());
  EXPECT_EQ(pod.metadata.ownerReferences[0].kind, "ReplicaSet");
  EXPECT_EQ(pod.metadata.ownerReferences[0].name, "web-5d4f");
}

// Nothing of the annotations' storage may stay behind.
TEST(StripPod, KeepsNoAnnotationStorage) {
  core::Pod pod = podWithEverything();
  ASSERT_GT(pod.metadata.annotations.capacity(), 0u);
  stripPod(pod);
  EXPECT_EQ(pod.metadata.annotations.capacity(), 0u);
}

// A ReplicaSet's pods carry the same labels: the cache keeps one copy of them, not one per pod.
TEST(StripPod, PodsWithEqualLabelsShareOneLabelBlock) {
  core::Pod a = podWithEverything();
  core::Pod b = podWithEverything();
  b.metadata.name = "web-2";
  core::Pod other = podWithEverything();
  other.metadata.labels = {{"app", "db"}};
  ASSERT_FALSE(a.metadata.labels.sharesStorageWith(b.metadata.labels));
  stripPod(a);
  stripPod(b);
  stripPod(other);
  EXPECT_TRUE(a.metadata.labels.sharesStorageWith(b.metadata.labels));
  EXPECT_FALSE(a.metadata.labels.sharesStorageWith(other.metadata.labels));
  // A reconciler's working copy may relabel its pod; the cached ones keep theirs.
  core::Pod copy = b;
  copy.metadata.labels.insert_or_assign("app", "moved");
  EXPECT_EQ(a.metadata.labels.at("app"), "web");
  EXPECT_EQ(b.metadata.labels.at("app"), "web");
}

// The chain of owners, by uid, from the pod up to the policy. Each link a namespace editor could
// forge (a name, a label, a hand-made pod, ReplicaSet or Deployment) breaks it.
TEST(GatewayPod, OnlyTheChainOfOwnerUidsUpToThePolicyProvesOne) {
  apps::Deployment deployment;
  deployment.metadata.name = "egw-web";
  deployment.metadata.namespace_ = "shop";
  deployment.metadata.uid = "uid-deployment";
  deployment.metadata.ownerReferences.push_back(
      {std::string(kApiVersion), std::string(kPolicyKind), "web", "uid-policy", true, true});
  apps::ReplicaSet rs;
  rs.metadata.name = "web-5d4f";
  rs.metadata.namespace_ = "shop";
  rs.metadata.uid = "uid-1";  // podWithEverything's controller
  rs.metadata.ownerReferences.push_back(
      {"apps/v1", "Deployment", "egw-web", "uid-deployment", true, true});
  const core::Pod pod = podWithEverything();
  EXPECT_TRUE(provenGateway(pod, &rs, &deployment, "uid-policy"));

  EXPECT_FALSE(provenGateway(pod, &rs, &deployment, "uid-other-policy"))
      << "a policy re-created under the same name is another policy";
  EXPECT_FALSE(provenGateway(pod, nullptr, &deployment, "uid-policy")) << "ReplicaSet not seen";
  EXPECT_FALSE(provenGateway(pod, &rs, nullptr, "uid-policy")) << "Deployment not seen";

  core::Pod bare = pod;
  bare.metadata.ownerReferences.clear();
  EXPECT_FALSE(provenGateway(bare, &rs, &deployment, "uid-policy")) << "a pod made by hand";
  core::Pod named = pod;  // the right ReplicaSet's name, another uid: a copy of it
  named.metadata.ownerReferences[0].uid = "uid-copy";
  EXPECT_FALSE(provenGateway(named, &rs, &deployment, "uid-policy"));
  core::Pod notController = pod;
  notController.metadata.ownerReferences[0].controller = false;
  EXPECT_FALSE(provenGateway(notController, &rs, &deployment, "uid-policy"));

  apps::ReplicaSet copiedRs = rs;  // a ReplicaSet made by hand, owned by nothing
  copiedRs.metadata.ownerReferences.clear();
  EXPECT_FALSE(provenGateway(pod, &copiedRs, &deployment, "uid-policy"));
  apps::ReplicaSet otherDeployments = rs;
  otherDeployments.metadata.ownerReferences[0].uid = "uid-copied-deployment";
  EXPECT_FALSE(provenGateway(pod, &otherDeployments, &deployment, "uid-policy"));

  apps::Deployment copiedDeployment = deployment;  // owned by nothing, or by another kind
  copiedDeployment.metadata.ownerReferences.clear();
  EXPECT_FALSE(provenGateway(pod, &rs, &copiedDeployment, "uid-policy"));
  copiedDeployment.metadata.ownerReferences.push_back(
      {"v1", "ConfigMap", "web", "uid-policy", true, true});
  EXPECT_FALSE(provenGateway(pod, &rs, &copiedDeployment, "uid-policy"));

  apps::Deployment otherGroup = deployment;  // the kind's name in another API group
  otherGroup.metadata.ownerReferences[0].apiVersion = "example.com/v1";
  EXPECT_FALSE(provenGateway(pod, &rs, &otherGroup, "uid-policy"));
  apps::Deployment newerVersion = deployment;  // the policy's API in a later version
  newerVersion.metadata.ownerReferences[0].apiVersion = "networking.egressgateway.dev/v1";
  EXPECT_TRUE(provenGateway(pod, &rs, &newerVersion, "uid-policy"));

  apps::ReplicaSet elsewhere = rs;  // owner references never cross namespaces
  elsewhere.metadata.namespace_ = "evil";
  EXPECT_FALSE(provenGateway(pod, &elsewhere, &deployment, "uid-policy"));
}

TEST(StripReplicaSet, KeepsIdentityAndController) {
  apps::ReplicaSet rs;
  rs.metadata.name = "egw-web-5d4f";
  rs.metadata.uid = "uid-rs";
  rs.metadata.labels = {{"a", "b"}};
  rs.metadata.annotations = {{"deployment.kubernetes.io/revision", "3"}};
  rs.metadata.ownerReferences.push_back({"v1", "ConfigMap", "x", "u", false, false});
  rs.metadata.ownerReferences.push_back({"apps/v1", "Deployment", "egw-web", "u-d", true, true});
  stripReplicaSet(rs);
  EXPECT_EQ(rs.metadata.uid, "uid-rs");
  EXPECT_TRUE(rs.metadata.labels.empty());
  EXPECT_TRUE(rs.metadata.annotations.empty());
  ASSERT_EQ(rs.metadata.ownerReferences.size(), 1u);
  EXPECT_EQ(rs.metadata.ownerReferences[0].uid, "u-d");
}

// The operator writes the readiness gate; it must see what it wrote to not write it again.
TEST(StripPod, AGatewayPodKeepsItsReadinessGate) {
  core::Pod pod = podWithEverything();
  pod.status.conditions.push_back({std::string(kIPProgrammedCondition), "True"});
  core::Pod source = pod;
  pod.metadata.labels.emplace(std::string(kPolicyLabel), "prod");
  stripPod(pod);
  ASSERT_EQ(pod.status.conditions.size(), 2u);
  EXPECT_EQ(pod.status.conditions[1].type, kIPProgrammedCondition);
  EXPECT_EQ(pod.status.conditions[1].status, "True");
  stripPod(source);
  EXPECT_EQ(source.status.conditions.size(), 1u) << "a source pod's is not kept";
}

// With the agent's readiness gate a gateway pod without an egress IP is never Ready; whether
// its containers are decides whether it may take over a stale holder's entry.
TEST(StripPod, AGatewayPodKeepsContainersReadyASourcePodDoesNot) {
  core::Pod pod = podWithEverything();
  pod.status.conditions = {{"Ready", "False"}, {"ContainersReady", "True"}};
  core::Pod source = pod;
  pod.metadata.labels.emplace(std::string(kPolicyLabel), "prod");
  stripPod(pod);
  ASSERT_EQ(pod.status.conditions.size(), 1u);
  EXPECT_EQ(pod.status.conditions[0].type, "ContainersReady");
  EXPECT_FALSE(core::isPodReady(pod));
  stripPod(source);
  EXPECT_TRUE(source.status.conditions.empty());
}

TEST(StripPod, AnUnreadyPodKeepsNoCondition) {
  core::Pod pod = podWithEverything();
  pod.status.conditions[1].status = "False";
  stripPod(pod);
  EXPECT_TRUE(pod.status.conditions.empty());
  EXPECT_FALSE(core::isPodReady(pod));
}

}  // namespace
}  // namespace egress::controller
