#include "test/testenv_kubelet/fake_node.h"

#include <charconv>

#include "pkg/apis/meta/encode.h"

namespace egress::testenv {
namespace {

using meta::JsonWriter;
using meta::writeField;
using meta::writeKey;

std::string finish(const rapidjson::StringBuffer& buf) {
  return {buf.GetString(), buf.GetSize()};
}

void writeResources(JsonWriter& w, std::string_view key) {
  writeKey(w, key);
  w.StartObject();
  writeField(w, "cpu", "16");
  writeField(w, "memory", "64Gi");
  writeField(w, "pods", "250");
  writeField(w, "ephemeral-storage", "100Gi");
  w.EndObject();
}

void writeAddress(JsonWriter& w, std::string_view type, const std::string& address) {
  w.StartObject();
  writeField(w, "type", type);
  writeField(w, "address", address);
  w.EndObject();
}

void writeCondition(JsonWriter& w, std::string_view type, std::string_view status,
                    std::string_view reason, std::string_view message, const std::string& now) {
  w.StartObject();
  writeField(w, "type", type);
  writeField(w, "status", status);
  writeField(w, "reason", reason);
  if (!message.empty()) {
    writeField(w, "message", message);
  }
  writeField(w, "lastHeartbeatTime", now);
  writeField(w, "lastTransitionTime", now);
  w.EndObject();
}

void writeTest(JsonWriter& w, const std::string& path, std::string_view value) {
  w.StartObject();
  writeField(w, "op", "test");
  writeField(w, "path", path);
  writeField(w, "value", value);
  w.EndObject();
}

}  // namespace

std::string nodeName(int node) {
  return std::string(kNodePrefix) + std::to_string(node);
}

std::string nodePodCidr(int node) {
  return "10.244." + std::to_string(node) + ".0/24";
}

std::string nodeInternalIp(int node) {
  return "127.0.1." + std::to_string(node);
}

int nodeIndex(std::string_view name, int nodes) {
  if (!name.starts_with(kNodePrefix)) {
    return 0;
  }
  const std::string_view digits = name.substr(kNodePrefix.size());
  int index = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  // "egress-node-01" is not node 1: only the names we register count.
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.starts_with('0') ||
      index < 1 || index > nodes) {
    return 0;
  }
  return index;
}

std::string nodeApplyBody(int node) {
  const std::string name = nodeName(node);
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  writeField(w, "apiVersion", "v1");
  writeField(w, "kind", "Node");
  writeKey(w, "metadata");
  w.StartObject();
  writeField(w, "name", name);
  writeField(w, "labels",
             meta::StringMap{{"kubernetes.io/hostname", name},
                             {"kubernetes.io/os", "linux"},
                             {"kubernetes.io/arch", "amd64"},
                             {"egress.testenv/fake", "true"}});
  w.EndObject();
  writeKey(w, "spec");
  w.StartObject();
  writeField(w, "podCIDR", nodePodCidr(node));
  writeField(w, "podCIDRs", std::vector<std::string>{nodePodCidr(node)});
  w.EndObject();
  w.EndObject();
  return finish(buf);
}

std::string nodeStatusPatch(int node, meta::Time now) {
  const std::string t = meta::formatRfc3339(now);
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  writeKey(w, "status");
  w.StartObject();
  writeResources(w, "capacity");
  writeResources(w, "allocatable");
  writeKey(w, "addresses");
  w.StartArray();
  writeAddress(w, "InternalIP", nodeInternalIp(node));
  writeAddress(w, "Hostname", nodeName(node));
  w.EndArray();
  writeKey(w, "conditions");
  w.StartArray();
  writeCondition(w, "Ready", "True", "KubeletReady", "egress test kubelet", t);
  writeCondition(w, "MemoryPressure", "False", "KubeletHasSufficientMemory", "", t);
  writeCondition(w, "DiskPressure", "False", "KubeletHasNoDiskPressure", "", t);
  writeCondition(w, "PIDPressure", "False", "KubeletHasSufficientPID", "", t);
  w.EndArray();
  writeKey(w, "nodeInfo");
  w.StartObject();
  writeField(w, "kubeletVersion", "v1.20.0-egress-testenv");
  writeField(w, "operatingSystem", "linux");
  writeField(w, "architecture", "amd64");
  writeField(w, "containerRuntimeVersion", "fake://0");
  writeField(w, "kernelVersion", "");
  writeField(w, "osImage", "egress testenv");
  writeField(w, "kubeProxyVersion", "");
  writeField(w, "machineID", "");
  writeField(w, "systemUUID", "");
  writeField(w, "bootID", "");
  w.EndObject();
  w.EndObject();
  w.EndObject();
  return finish(buf);
}

std::string removeNotReadyTaintPatch(const core::Node& node) {
  for (size_t i = 0; i < node.taints.size(); ++i) {
    const core::Taint& t = node.taints[i];
    if (t.key != kNotReadyTaint || t.effect != "NoSchedule") {
      continue;
    }
    const std::string path = "/spec/taints/" + std::to_string(i);
    rapidjson::StringBuffer buf;
    JsonWriter w(buf);
    w.StartArray();
    writeTest(w, path + "/key", kNotReadyTaint);
    writeTest(w, path + "/effect", "NoSchedule");
    w.StartObject();
    writeField(w, "op", "remove");
    writeField(w, "path", path);
    w.EndObject();
    w.EndArray();
    return finish(buf);
  }
  return "";
}

}  // namespace egress::testenv
