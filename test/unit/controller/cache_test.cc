#include "pkg/controller/cache/cache.h"

#include <gtest/gtest.h>

#include "pkg/controller/names.h"

namespace egress::controller {
namespace {

core::Pod podWithEverything() {
  core::Pod pod;
  pod.metadata.name = "web-1";
  pod.metadata.namespace_ = "shop";
  pod.metadata.labels = {{"app", "web"}};
  pod.metadata.annotations = {{"note", "kept out"},
                              {std::string(kEgressIPsAnnotation), "198.51.100.7"}};
  pod.metadata.ownerReferences.push_back(
      {"apps/v1", "ReplicaSet", "web-5d4f", "uid-1", true, true});
  pod.metadata.ownerReferences.push_back({"v1", "ConfigMap", "other", "uid-2", {}, {}});
  pod.metadata.finalizers = {"example.com/hold"};
  pod.spec.nodeName = "node-1";
  pod.status.phase = "Running";
  pod.status.podIP = "10.244.1.5";
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
  EXPECT_EQ(pod.metadata.ownerReferences[0].kind, "ReplicaSet");
  EXPECT_EQ(pod.metadata.ownerReferences[0].name, "web-5d4f");
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
