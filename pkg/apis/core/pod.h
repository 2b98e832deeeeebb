// File: pod.h
//
// core/v1 Pod as the operator reads it: where a pod runs (node, host network), whether it is
// ready and at which IPs -- what the egress routes are programmed from. Only these fields: every
// cached pod pays for each one (the operator caches every pod of the cluster), and a field the
// operator never reads (containers, service account, host IP, start time) is not decoded.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/object_meta.h"
#include "pkg/apis/meta/time.h"

namespace egress::core {

struct PodSpec {
  std::string nodeName;
  bool hostNetwork = false;

  bool operator==(const PodSpec&) const = default;
};

// Pod and Node conditions carry more (probe and transition times); the operator only asks
// "is it Ready".
struct PodCondition {
  std::string type;
  std::string status;

  bool operator==(const PodCondition&) const = default;
};

struct PodStatus {
  std::string phase;  // Pending, Running, Succeeded, Failed, Unknown
  // status.podIPs[].ip, the pod's addresses (one per family). status.podIP, which only repeats the
  // first, is not kept (32 bytes per cached pod); from a server that sends podIP alone (before
  // 1.16), it becomes the one entry.
  std::vector<std::string> podIPs;
  std::vector<PodCondition> conditions;

  bool operator==(const PodStatus&) const = default;
};

struct Pod {
  meta::ObjectMeta metadata;
  PodSpec spec;
  PodStatus status;

  bool operator==(const Pod&) const = default;
};

meta::Decoded<Pod> decodePod(const rapidjson::Value& v);

// The Ready condition is True (podutil.IsPodReady).
bool isPodReady(const Pod& pod);

}  // namespace egress::core
