// File: pod.h
//
// core/v1 Pod as the operator reads it: where a gateway pod runs (node, host network), what it
// runs, and whether it is ready and at which IPs -- what the egress routes are programmed from.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/object_meta.h"
#include "pkg/apis/meta/time.h"

namespace egress::core {

struct Container {
  std::string name;
  std::string image;

  bool operator==(const Container&) const = default;
};

struct PodSpec {
  std::string nodeName;
  std::string serviceAccountName;
  bool hostNetwork = false;
  std::vector<Container> containers;

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
  std::string podIP;
  std::vector<std::string> podIPs;  // status.podIPs[].ip; the first equals podIP
  std::string hostIP;
  std::vector<PodCondition> conditions;
  std::optional<meta::Time> startTime;

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
