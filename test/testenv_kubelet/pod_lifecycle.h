// File: pod_lifecycle.h
//
// What the test kubelet does with a pod, decided from the cached object alone: a pod bound to
// one of its nodes that is not Running and Ready is made so (one merge patch of its status, as a
// kubelet posts it once the containers run), a pod with a deletionTimestamp is deleted with
// grace period 0 (there are no containers to stop), anything else is left alone. Pods in a
// terminal phase (Succeeded, Failed) stay as they are: a real kubelet never revives them.
//
// Also the informer's transform: the cache keeps only what these decisions and the patch need.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

#include "pkg/apis/core/pod.h"
#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/time.h"

namespace egress::testenv {

struct Container {
  std::string name;
  std::string image;

  bool operator==(const Container&) const = default;
};

// A pod as the kubelet reads it: core::Pod (what the operator reads) and what only a kubelet
// needs to post a running status: the containers and the start time.
struct KubeletPod : core::Pod {
  std::vector<Container> containers;    // spec.containers[].name, .image
  std::optional<meta::Time> startTime;  // status.startTime

  bool operator==(const KubeletPod&) const = default;
};

meta::Decoded<KubeletPod> decodeKubeletPod(const rapidjson::Value& v);

enum class PodAction {
  kNone,
  kRun,     // patch the status: Running, Ready, addresses, container statuses
  kDelete,  // DELETE with gracePeriodSeconds=0 and the pod's UID as precondition
};

// For a pod on node i (nodeIndex(pod.spec.nodeName, nodes) != 0).
PodAction nextAction(const core::Pod& pod, int nodes);

// The merge patch of the status subresource that makes `pod` Running and Ready at `podIP` on the
// node at `hostIP`: phase, hostIP, podIP/podIPs, startTime (kept if set), one running and ready
// status per container, and the conditions Initialized, Ready, ContainersReady and PodScheduled,
// which change at `now`. It also carries the pod's UID, which the API server refuses to change
// (422), so a patch computed for a pod never lands on a new pod of the same name.
std::string runningStatusPatch(const KubeletPod& pod, std::string_view podIP,
                               std::string_view hostIP, meta::Time now);

// The informer's transform: drops labels, annotations, owners, finalizers, podIPs and every
// condition but Ready; a pod on none of the kubelet's nodes keeps only its identity and node
// name.
void trimPod(KubeletPod& pod);

}  // namespace egress::testenv
