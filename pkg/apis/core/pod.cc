#include "pkg/apis/core/pod.h"

namespace egress::core {
namespace {

meta::Decoded<PodSpec> decodePodSpec(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  PodSpec s;
  r.read("nodeName", s.nodeName);
  r.read("hostNetwork", s.hostNetwork);
  return r.finish(std::move(s));
}

meta::Decoded<PodCondition> decodePodCondition(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  PodCondition c;
  r.read("type", c.type);
  r.read("status", c.status);
  return r.finish(std::move(c));
}

meta::Decoded<std::string> decodePodIP(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  std::string ip;
  r.read("ip", ip);
  return r.finish(std::move(ip));
}

meta::Decoded<PodStatus> decodePodStatus(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  PodStatus s;
  r.read("phase", s.phase);
  std::string podIP;
  r.read("podIP", podIP);
  r.list("podIPs", s.podIPs, decodePodIP);
  if (s.podIPs.empty() && !podIP.empty()) {
    s.podIPs.push_back(std::move(podIP));
  }
  r.list("conditions", s.conditions, decodePodCondition);
  return r.finish(std::move(s));
}

}  // namespace

meta::Decoded<Pod> decodePod(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  Pod p;
  r.object("metadata", p.metadata, meta::decodeObjectMeta);
  r.object("spec", p.spec, decodePodSpec);
  r.object("status", p.status, decodePodStatus);
  return r.finish(std::move(p));
}

bool isPodReady(const Pod& pod) {
  for (const auto& c : pod.status.conditions) {
    if (c.type == "Ready") {
      return c.status == "True";
    }
  }
  return false;
}

}  // namespace egress::core
