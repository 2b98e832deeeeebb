#include "test/testenv_kubelet/pod_lifecycle.h"

#include <algorithm>

#include "pkg/apis/meta/encode.h"
#include "test/testenv_kubelet/fake_node.h"

namespace egress::testenv {
namespace {

using meta::JsonWriter;
using meta::writeField;
using meta::writeKey;

template <class C>
void release(C& c) {
  C().swap(c);
}

meta::Decoded<Container> decodeContainer(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  Container c;
  r.read("name", c.name);
  r.read("image", c.image);
  return r.finish(std::move(c));
}

meta::Decoded<std::vector<Container>> decodeContainers(const rapidjson::Value& spec) {
  meta::FieldReader r(spec);
  std::vector<Container> containers;
  r.list("containers", containers, decodeContainer);
  return r.finish(std::move(containers));
}

meta::Decoded<std::optional<meta::Time>> decodeStartTime(const rapidjson::Value& status) {
  meta::FieldReader r(status);
  std::optional<meta::Time> t;
  r.read("startTime", t);
  return r.finish(t);
}

}  // namespace

meta::Decoded<KubeletPod> decodeKubeletPod(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  KubeletPod pod;
  auto base = core::decodePod(v);
  if (!base) {
    return base.error();
  }
  static_cast<core::Pod&>(pod) = std::move(*base);
  r.object("spec", pod.containers, decodeContainers);
  r.object("status", pod.startTime, decodeStartTime);
  return r.finish(std::move(pod));
}

PodAction nextAction(const core::Pod& pod, int nodes) {
  if (nodeIndex(pod.spec.nodeName, nodes) == 0) {
    return PodAction::kNone;
  }
  if (pod.metadata.deletionTimestamp) {
    return PodAction::kDelete;
  }
  const std::string& phase = pod.status.phase;
  if (phase == "Succeeded" || phase == "Failed") {
    return PodAction::kNone;
  }
  if (phase == "Running" && core::isPodReady(pod)) {
    return PodAction::kNone;
  }
  return PodAction::kRun;
}

std::string runningStatusPatch(const KubeletPod& pod, std::string_view podIP,
                               std::string_view hostIP, meta::Time now) {
  const std::string t = meta::formatRfc3339(now);
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  writeKey(w, "metadata");
  w.StartObject();
  writeField(w, "uid", pod.metadata.uid);
  w.EndObject();
  writeKey(w, "status");
  w.StartObject();
  writeField(w, "phase", "Running");
  writeField(w, "hostIP", hostIP);
  writeField(w, "podIP", podIP);
  writeKey(w, "podIPs");
  w.StartArray();
  w.StartObject();
  writeField(w, "ip", podIP);
  w.EndObject();
  w.EndArray();
  writeField(w, "startTime", pod.startTime ? meta::formatRfc3339(*pod.startTime) : t);
  writeKey(w, "containerStatuses");
  w.StartArray();
  for (const auto& c : pod.containers) {
    w.StartObject();
    writeField(w, "name", c.name);
    writeField(w, "image", c.image);
    writeField(w, "imageID", "");
    writeField(w, "ready", true);
    writeField(w, "started", true);
    writeField(w, "restartCount", int32_t{0});
    writeKey(w, "state");
    w.StartObject();
    writeKey(w, "running");
    w.StartObject();
    writeField(w, "startedAt", t);
    w.EndObject();
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  writeKey(w, "conditions");
  w.StartArray();
  for (const char* type : {"Initialized", "Ready", "ContainersReady", "PodScheduled"}) {
    w.StartObject();
    writeField(w, "type", type);
    writeField(w, "status", "True");
    writeField(w, "lastTransitionTime", t);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  w.EndObject();
  return {buf.GetString(), buf.GetSize()};
}

void trimPod(KubeletPod& pod) {
  release(pod.metadata.labels);
  release(pod.metadata.annotations);
  release(pod.metadata.ownerReferences);
  release(pod.metadata.finalizers);
  std::erase_if(pod.status.conditions,
                [](const core::PodCondition& c) { return c.type != "Ready"; });
  pod.status.conditions.shrink_to_fit();
  // Not one of ours (the node count is not known here; any name without the prefix is not).
  if (!pod.spec.nodeName.starts_with(kNodePrefix)) {
    release(pod.containers);
    release(pod.status.phase);
    release(pod.status.podIPs);
    release(pod.status.conditions);
    pod.startTime.reset();
  }
}

}  // namespace egress::testenv
