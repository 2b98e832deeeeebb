#include "pkg/apis/core/node.h"

namespace egress::core {
namespace {

meta::Decoded<Taint> decodeTaint(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  Taint t;
  r.read("key", t.key);
  r.read("value", t.value);
  r.read("effect", t.effect);
  return r.finish(std::move(t));
}

meta::Decoded<NodeAddress> decodeNodeAddress(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  NodeAddress a;
  r.read("type", a.type);
  r.read("address", a.address);
  return r.finish(std::move(a));
}

meta::Decoded<NodeCondition> decodeNodeCondition(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  NodeCondition c;
  r.read("type", c.type);
  r.read("status", c.status);
  return r.finish(std::move(c));
}

}  // namespace

meta::Decoded<Node> decodeNode(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  Node n;
  r.object("metadata", n.metadata, meta::decodeObjectMeta);
  std::string podCIDR;
  r.nested("spec", [&](meta::FieldReader& spec) {
    spec.read("unschedulable", n.unschedulable);
    spec.list("taints", n.taints, decodeTaint);
    spec.read("podCIDR", podCIDR);
    spec.read("podCIDRs", n.podCIDRs);
  });
  // Servers before 1.16 set only spec.podCIDR; later ones set both, podCIDRs[0] == podCIDR.
  if (n.podCIDRs.empty() && !podCIDR.empty()) {
    n.podCIDRs.push_back(std::move(podCIDR));
  }
  r.nested("status", [&](meta::FieldReader& status) {
    status.list("addresses", n.addresses, decodeNodeAddress);
    status.list("conditions", n.conditions, decodeNodeCondition);
  });
  return r.finish(std::move(n));
}

bool isNodeReady(const Node& node) {
  for (const auto& c : node.conditions) {
    if (c.type == "Ready") {
      return c.status == "True";
    }
  }
  return false;
}

std::string nodeAddress(const Node& node, std::string_view type) {
  for (const auto& a : node.addresses) {
    if (a.type == type) {
      return a.address;
    }
  }
  return {};
}

}  // namespace egress::core
