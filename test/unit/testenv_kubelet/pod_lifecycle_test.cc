#include "test/testenv_kubelet/pod_lifecycle.h"

#include <string>

#include <gtest/gtest.h>

#include "pkg/apis/meta/decode.h"
#include "test/unit/testenv_kubelet/json.h"

namespace egress::testenv {
namespace {

// A pod as the API server returns it once the scheduler bound it (trimmed to what matters, but
// with the fields the transform must drop).
const char* const kBoundPod = R"({
  "metadata": {"name": "web-1", "namespace": "shop", "uid": "uid-1", "resourceVersion": "42",
               "labels": {"app": "web"}, "annotations": {"note": "x"},
               "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                    "name": "web-5d8f", "uid": "rs-1", "controller": true}],
               "finalizers": ["example.com/keep"]},
  "spec": {"nodeName": "egress-node-2", "serviceAccountName": "default",
           "containers": [{"name": "app", "image": "example.invalid/app:1"},
                          {"name": "sidecar", "image": "example.invalid/sidecar:2"}]},
  "status": {"phase": "Pending", "conditions": [
    {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-02T03:04:00Z"}]}
})";

KubeletPod decode(const std::string& json) {
  auto pod = meta::parseAndDecode(json, decodeKubeletPod);
  EXPECT_TRUE(pod) << pod.error().toString();
  return pod ? *pod : KubeletPod{};
}

KubeletPod boundPod() {
  return decode(kBoundPod);
}

TEST(PodLifecycle, APendingPodOnOneOfOurNodesIsRun) {
  EXPECT_EQ(nextAction(boundPod(), 2), PodAction::kRun);
}

TEST(PodLifecycle, PodsOnOtherNodesAreLeftAlone) {
  KubeletPod pod = boundPod();
  EXPECT_EQ(nextAction(pod, 1), PodAction::kNone);  // egress-node-2 is not registered
  pod.spec.nodeName = "worker-2";
  EXPECT_EQ(nextAction(pod, 3), PodAction::kNone);
  pod.spec.nodeName = "";
  EXPECT_EQ(nextAction(pod, 3), PodAction::kNone);
  pod.metadata.deletionTimestamp = meta::Time{};
  EXPECT_EQ(nextAction(pod, 3), PodAction::kNone);  // not ours to delete either
}

TEST(PodLifecycle, RunningAndReadyNeedsNothingRunningButNotReadyIsRunAgain) {
  KubeletPod pod = boundPod();
  pod.status.phase = "Running";
  pod.status.conditions = {{"Ready", "True"}};
  EXPECT_EQ(nextAction(pod, 2), PodAction::kNone);
  pod.status.conditions = {{"Ready", "False"}};
  EXPECT_EQ(nextAction(pod, 2), PodAction::kRun);
  pod.status.conditions.clear();
  EXPECT_EQ(nextAction(pod, 2), PodAction::kRun);
}

TEST(PodLifecycle, TerminalPodsStayAsTheyAre) {
  KubeletPod pod = boundPod();
  pod.status.phase = "Succeeded";
  EXPECT_EQ(nextAction(pod, 2), PodAction::kNone);
  pod.status.phase = "Failed";
  EXPECT_EQ(nextAction(pod, 2), PodAction::kNone);
}

TEST(PodLifecycle, APodBeingDeletedIsDeletedWhateverItsPhase) {
  KubeletPod pod = boundPod();
  pod.metadata.deletionTimestamp = meta::Time{};
  EXPECT_EQ(nextAction(pod, 2), PodAction::kDelete);
  pod.status.phase = "Running";
  pod.status.conditions = {{"Ready", "True"}};
  EXPECT_EQ(nextAction(pod, 2), PodAction::kDelete);
  pod.status.phase = "Failed";
  EXPECT_EQ(nextAction(pod, 2), PodAction::kDelete);
}

TEST(PodLifecycle, StatusPatchMakesThePodRunningAndReadyAtItsAddresses) {
  const auto now = *meta::parseRfc3339("2026-01-02T03:04:05Z");
  auto d = parse(runningStatusPatch(boundPod(), "10.244.2.7", "127.0.1.2", now));
  EXPECT_EQ(str(d["metadata"]["uid"]), "uid-1");
  EXPECT_EQ(d["metadata"].MemberCount(), 1u);
  const auto& s = d["status"];
  EXPECT_EQ(str(s["phase"]), "Running");
  EXPECT_EQ(str(s["hostIP"]), "127.0.1.2");
  EXPECT_EQ(str(s["podIP"]), "10.244.2.7");
  ASSERT_EQ(s["podIPs"].Size(), 1u);
  EXPECT_EQ(str(s["podIPs"][0]["ip"]), "10.244.2.7");
  EXPECT_EQ(str(s["startTime"]), "2026-01-02T03:04:05Z");
  const auto& containers = s["containerStatuses"];
  ASSERT_EQ(containers.Size(), 2u);
  const char* names[] = {"app", "sidecar"};
  const char* images[] = {"example.invalid/app:1", "example.invalid/sidecar:2"};
  for (rapidjson::SizeType i = 0; i < 2; ++i) {
    EXPECT_EQ(str(containers[i]["name"]), names[i]);
    EXPECT_EQ(str(containers[i]["image"]), images[i]);
    EXPECT_EQ(str(containers[i]["imageID"]), "");
    EXPECT_TRUE(containers[i]["ready"].IsTrue());
    EXPECT_TRUE(containers[i]["started"].IsTrue());
    EXPECT_EQ(containers[i]["restartCount"].GetInt64(), 0);
    EXPECT_EQ(str(containers[i]["state"]["running"]["startedAt"]), "2026-01-02T03:04:05Z");
  }
  const auto& conditions = s["conditions"];
  ASSERT_EQ(conditions.Size(), 4u);
  const char* types[] = {"Initialized", "Ready", "ContainersReady", "PodScheduled"};
  for (rapidjson::SizeType i = 0; i < 4; ++i) {
    EXPECT_EQ(str(conditions[i]["type"]), types[i]);
    EXPECT_EQ(str(conditions[i]["status"]), "True");
    EXPECT_EQ(str(conditions[i]["lastTransitionTime"]), "2026-01-02T03:04:05Z");
  }
}

TEST(PodLifecycle, StatusPatchKeepsAStartTimeThePodHas) {
  KubeletPod pod = boundPod();
  pod.startTime = *meta::parseRfc3339("2026-01-01T00:00:00Z");
  const auto now = *meta::parseRfc3339("2026-01-02T03:04:05Z");
  auto d = parse(runningStatusPatch(pod, "10.244.2.7", "127.0.1.2", now));
  EXPECT_EQ(str(d["status"]["startTime"]), "2026-01-01T00:00:00Z");
}

TEST(PodLifecycle, TrimKeepsWhatTheDecisionsAndThePatchUse) {
  KubeletPod full = boundPod();
  KubeletPod trimmed = full;
  trimPod(trimmed);
  EXPECT_TRUE(trimmed.metadata.labels.empty());
  EXPECT_TRUE(trimmed.metadata.annotations.empty());
  EXPECT_TRUE(trimmed.metadata.ownerReferences.empty());
  EXPECT_TRUE(trimmed.metadata.finalizers.empty());
  EXPECT_TRUE(trimmed.status.conditions.empty());  // PodScheduled is not Ready
  EXPECT_EQ(trimmed.metadata.name, "web-1");
  EXPECT_EQ(trimmed.metadata.namespace_, "shop");
  EXPECT_EQ(trimmed.metadata.uid, "uid-1");
  EXPECT_EQ(trimmed.containers, full.containers);
  EXPECT_EQ(trimmed.containers.size(), 2u);

  const auto now = *meta::parseRfc3339("2026-01-02T03:04:05Z");
  // Every state the kubelet tells apart is told apart the same way after the transform.
  for (const char* phase : {"", "Pending", "Running", "Succeeded", "Failed"}) {
    for (const char* ready : {"", "True", "False"}) {
      for (bool deleting : {false, true}) {
        KubeletPod p = full;
        p.status.phase = phase;
        if (*ready != '\0') {
          p.status.conditions.push_back({"Ready", ready});
        }
        if (deleting) {
          p.metadata.deletionTimestamp = now;
        }
        KubeletPod t = p;
        trimPod(t);
        EXPECT_EQ(nextAction(t, 2), nextAction(p, 2)) << phase << "/" << ready << "/" << deleting;
        EXPECT_EQ(runningStatusPatch(t, "10.244.2.7", "127.0.1.2", now),
                  runningStatusPatch(p, "10.244.2.7", "127.0.1.2", now));
      }
    }
  }
}

TEST(PodLifecycle, TrimLeavesOnlyIdentityOfPodsOnOtherNodes) {
  KubeletPod pod = boundPod();
  pod.spec.nodeName = "worker-1";
  pod.status.phase = "Running";
  pod.status.podIPs = {"10.0.0.5"};
  trimPod(pod);
  EXPECT_EQ(pod.metadata.name, "web-1");
  EXPECT_EQ(pod.spec.nodeName, "worker-1");
  EXPECT_TRUE(pod.containers.empty());
  EXPECT_EQ(pod.status.phase, "");
  EXPECT_TRUE(pod.status.podIPs.empty());
}

}  // namespace
}  // namespace egress::testenv
