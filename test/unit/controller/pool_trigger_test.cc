// poolUpdateMattersToPolicies and operatorConfigUpdateMattersToPolicies (controller.h): which
// IPAMPool updates queue the pool's policies and the other pools (usage counts alone do not;
// spec, identity, labels, deletion and condition changes do), and which OperatorConfig updates
// queue every policy (its spec, identity and deletion; not its status summary).
#include <chrono>
#include <functional>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "pkg/controller/controller.h"
#include "pkg/controller/update_filters.h"

namespace egress::controller {
namespace {

v1alpha1::IPAMPool pool() {
  v1alpha1::IPAMPool p;
  p.metadata.name = "blue";
  p.metadata.uid = "u1";
  p.metadata.generation = 1;
  p.metadata.resourceVersion = "10";
  p.spec.cidrs = {"192.0.2.0/24"};
  p.status.ipv4 = v1alpha1::IPFamilyCounts{.total = 256, .allocated = 3, .free = 253};
  p.status.allocated = 3;
  p.status.observedGeneration = 1;
  meta::Condition ready;
  ready.type = "Ready";
  ready.status = "True";
  ready.reason = "Valid";
  ready.message = "3 of 256 allocated";
  p.status.conditions = {ready};
  return p;
}

TEST(PoolUpdateMattersToPolicies, UsageCountsAloneDoNot) {
  const auto before = pool();
  auto after = before;
  after.metadata.resourceVersion = "11";
  after.status.ipv4->allocated = 4;
  after.status.ipv4->free = 252;
  after.status.allocated = 4;
  // A condition's message and transition time are not what a policy reads.
  after.status.conditions[0].message = "4 of 256 allocated";
  after.status.conditions[0].lastTransitionTime = std::chrono::system_clock::now();
  EXPECT_FALSE(poolUpdateMattersToPolicies(before, after));
}

TEST(PoolUpdateMattersToPolicies, SpecIdentityLabelsDeletionAndConditionsDo) {
  const auto before = pool();
  std::vector<std::pair<const char*, std::function<void(v1alpha1::IPAMPool&)>>> changes = {
      {"cidrs", [](auto& p) { p.spec.cidrs.push_back("2001:db8::/120"); }},
      {"exclude", [](auto& p) { p.spec.exclude = {"192.0.2.1"}; }},
      {"disabled", [](auto& p) { p.spec.disabled = true; }},
      {"namespaceSelector", [](auto& p) { p.spec.namespaceSelector = meta::LabelSelector{}; }},
      {"generation", [](auto& p) { p.metadata.generation = 2; }},
      {"uid", [](auto& p) { p.metadata.uid = "u2"; }},
      {"labels", [](auto& p) { p.metadata.labels["tier"] = "gold"; }},
      {"deletion",
       [](auto& p) { p.metadata.deletionTimestamp = std::chrono::system_clock::now(); }},
      {"condition status", [](auto& p) { p.status.conditions[0].status = "False"; }},
      {"condition reason", [](auto& p) { p.status.conditions[0].reason = "Invalid"; }},
      {"condition added",
       [](auto& p) {
         meta::Condition overlapping;
         overlapping.type = "Overlapping";
         overlapping.status = "True";
         overlapping.reason = "OverlapsOlderPool";
         p.status.conditions.push_back(overlapping);
       }},
      {"condition removed", [](auto& p) { p.status.conditions.clear(); }},
  };
  for (const auto& [what, change] : changes) {
    auto after = before;
    after.metadata.resourceVersion = "11";
    change(after);
    EXPECT_TRUE(poolUpdateMattersToPolicies(before, after)) << what;
  }
}

v1alpha1::OperatorConfig config() {
  v1alpha1::OperatorConfig c;
  c.metadata.name = "default";
  c.metadata.uid = "c1";
  c.metadata.generation = 3;
  c.metadata.resourceVersion = "20";
  c.spec.gatewayImage = "example.invalid/gw:1";
  c.spec.clusterCIDRs = {"10.244.0.0/16"};
  c.status.policies = 10;
  c.status.readyPolicies = 9;
  c.status.observedGeneration = 3;
  return c;
}

TEST(OperatorConfigUpdateMattersToPolicies, ItsStatusSummaryDoesNot) {
  const auto before = config();
  auto after = before;
  after.metadata.resourceVersion = "21";
  after.status.readyPolicies = 10;
  after.status.pools = 2;
  meta::Condition ready;
  ready.type = "Ready";
  ready.status = "True";
  ready.reason = "Valid";
  after.status.conditions = {ready};
  EXPECT_FALSE(operatorConfigUpdateMattersToPolicies(before, after));
}

TEST(OperatorConfigUpdateMattersToPolicies, SpecIdentityAndDeletionDo) {
  const auto before = config();
  std::vector<std::pair<const char*, std::function<void(v1alpha1::OperatorConfig&)>>> changes = {
      {"gatewayImage", [](auto& c) { c.spec.gatewayImage = "example.invalid/gw:2"; }},
      {"gatewayCommand", [](auto& c) { c.spec.gatewayCommand = {"/usr/local/bin/egw-gateway"}; }},
      {"clusterCIDRs", [](auto& c) { c.spec.clusterCIDRs.push_back("10.96.0.0/12"); }},
      {"generation", [](auto& c) { c.metadata.generation = 4; }},
      {"uid", [](auto& c) { c.metadata.uid = "c2"; }},
      {"deletion",
       [](auto& c) { c.metadata.deletionTimestamp = std::chrono::system_clock::now(); }},
  };
  for (const auto& [what, change] : changes) {
    auto after = before;
    after.metadata.resourceVersion = "21";
    change(after);
    EXPECT_TRUE(operatorConfigUpdateMattersToPolicies(before, after)) << what;
  }
}

// A pod update queues its policies only when what the pod cache keeps of it changed: a kubelet's
// status write that only touches what stripPod drops (here: a container's restart, a probe's
// time) arrives as an update with equal views and queues nothing.
TEST(PodUpdateMattersToPolicies, OnlyWhatTheCacheKeepsOfThePodCounts) {
  core::Pod before;
  before.metadata.name = "web-1";
  before.metadata.namespace_ = "shop";
  before.metadata.uid = "u1";
  before.metadata.resourceVersion = "10";
  before.metadata.labels = {{"app", "web"}};
  before.spec.nodeName = "node-1";
  before.status.phase = "Running";
  before.status.podIPs = {"10.244.1.5"};
  before.status.conditions = {{"Ready", "True"}};
  auto after = before;
  after.metadata.resourceVersion = "11";
  after.metadata.generation = 2;  // stripped to 0 in the cache; any difference here is noise
  EXPECT_FALSE(podUpdateMattersToPolicies(before, after));
  // Nor does an annotation, whatever it says: the cache keeps none.
  after.metadata.annotations = {{"egressgateway.dev/egress-ips", "192.0.2.1"}};
  EXPECT_FALSE(podUpdateMattersToPolicies(before, after));

  std::vector<std::pair<const char*, std::function<void(core::Pod&)>>> changes = {
      {"labels",
       [](core::Pod& p) {
         p.metadata.labels = {{"app", "db"}};
       }},
      {"deletion",
       [](core::Pod& p) { p.metadata.deletionTimestamp = meta::Time(std::chrono::seconds(1)); }},
      {"uid", [](core::Pod& p) { p.metadata.uid = "u2"; }},
      {"controller",
       [](core::Pod& p) {
         p.metadata.ownerReferences.push_back({"apps/v1", "ReplicaSet", "rs", "u-rs", true, true});
       }},
      {"node", [](core::Pod& p) { p.spec.nodeName = "node-2"; }},
      {"hostNetwork", [](core::Pod& p) { p.spec.hostNetwork = true; }},
      {"phase", [](core::Pod& p) { p.status.phase = "Succeeded"; }},
      {"address", [](core::Pod& p) { p.status.podIPs = {"10.244.1.6"}; }},
      {"readiness",
       [](core::Pod& p) {
         p.status.conditions = {{"Ready", "False"}};
       }},
  };
  for (const auto& [what, change] : changes) {
    auto changed = after;
    change(changed);
    EXPECT_TRUE(podUpdateMattersToPolicies(before, changed)) << what;
  }
}

}  // namespace
}  // namespace egress::controller
