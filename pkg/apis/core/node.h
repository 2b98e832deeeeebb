// File: node.h
//
// core/v1 Node: where gateway pods may be scheduled (cordon, taints), the addresses egress
// traffic leaves from, the pod CIDRs the cluster gives it (never an egress IP, never a
// destination that leaves through a gateway), and readiness.
#pragma once

#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/object_meta.h"

namespace egress::core {

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute

  bool operator==(const Taint&) const = default;
};

struct NodeAddress {
  std::string type;  // InternalIP, ExternalIP, Hostname, ...
  std::string address;

  bool operator==(const NodeAddress&) const = default;
};

struct NodeCondition {
  std::string type;
  std::string status;

  bool operator==(const NodeCondition&) const = default;
};

struct Node {
  meta::ObjectMeta metadata;
  bool unschedulable = false;             // spec.unschedulable (cordoned)
  std::vector<Taint> taints;              // spec.taints
  std::vector<std::string> podCIDRs;      // spec.podCIDRs (spec.podCIDR where that is all)
  std::vector<NodeAddress> addresses;     // status.addresses
  std::vector<NodeCondition> conditions;  // status.conditions

  bool operator==(const Node&) const = default;
};

meta::Decoded<Node> decodeNode(const rapidjson::Value& v);

// The Ready condition is True.
bool isNodeReady(const Node& node);

// The first address of `type` ("InternalIP"); "" if none.
std::string nodeAddress(const Node& node, std::string_view type);

}  // namespace egress::core
