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
                              {std::string(kEgressIPsAnnotation), "198.51.100.7"}};
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
  ASSERT_EQ(pod.metadata.annotations.size(), 1u);
  EXPECT_EQ(pod.metadata.annotations.at(std::string(kEgressIPsAnnotation)), "198.51.100.7");
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

// Most pods carry annotations and none of ours: nothing of their storage may stay behind.
TEST(StripPod, APodWithoutOurAnnotationKeepsNoAnnotationStorage) {
  core::Pod pod = podWithEverything();
  pod.metadata.annotations.erase(std::string(kEgressIPsAnnotation));
  ASSERT_GT(pod.metadata.annotations.capacity(), 0u);
  stripPod(pod);
  EXPECT_TRUE(pod.metadata.annotations.empty());
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

TEST(GatewayPod, OnlyAReplicaSetOfTheGatewayDeploymentMakesOne) {
  core::Pod pod = podWithEverything();  // controlled by ReplicaSet web-5d4f
  pod.metadata.labels.insert_or_assign("pod-template-hash", "5d4f");
  EXPECT_TRUE(controlledByGatewayReplicaSet(pod, "web"));
  EXPECT_FALSE(controlledByGatewayReplicaSet(pod, "we")) << "another Deployment's ReplicaSet";
  pod.metadata.labels.insert_or_assign("pod-template-hash", "0000");
  EXPECT_FALSE(controlledByGatewayReplicaSet(pod, "web")) << "not the pod's own template";
  pod.metadata.labels.erase("pod-template-hash");
  EXPECT_FALSE(controlledByGatewayReplicaSet(pod, "web"));
  core::Pod bare = podWithEverything();
  bare.metadata.ownerReferences.clear();
  bare.metadata.labels.insert_or_assign("pod-template-hash", "5d4f");
  EXPECT_FALSE(controlledByGatewayReplicaSet(bare, "web")) << "a labelled pod made by hand";
  core::Pod job = bare;
  job.metadata.ownerReferences.push_back({"batch/v1", "Job", "web-5d4f", "uid-3", true, true});
  EXPECT_FALSE(controlledByGatewayReplicaSet(job, "web"));
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
