#include "pkg/agent/pod_readiness.h"

#include <algorithm>
#include <set>

#include <boost/asio/co_spawn.hpp>
#include <spdlog/spdlog.h>

#include "pkg/apis/meta/encode.h"
#include "pkg/base/clock.h"
#include "pkg/dataplane/cluster_view.h"

namespace egress::agent {

std::vector<ReadinessWrite> readinessWrites(
    const std::vector<std::shared_ptr<const core::Pod>>& pods, const std::string& node,
    const std::vector<std::string>& readyPods) {
  std::vector<ReadinessWrite> out;
  for (const auto& pod : pods) {
    if (pod->spec.nodeName != node || pod->metadata.deletionTimestamp) {
      continue;
    }
    const std::string key = pod->metadata.namespace_ + "/" + pod->metadata.name;
    const bool programmed = std::binary_search(readyPods.begin(), readyPods.end(), key);
    const auto& conditions = pod->status.conditions;
    auto it = std::find_if(conditions.begin(), conditions.end(), [](const core::PodCondition& c) {
      return c.type == dataplane::kIPProgrammedCondition;
    });
    const bool isTrue = it != conditions.end() && it->status == "True";
    const bool written = it != conditions.end();
    if (programmed ? !isTrue : (written && it->status != "False")) {
      out.push_back({pod->metadata.namespace_, pod->metadata.name, programmed,
                     pod->metadata.resourceVersion});
    }
  }
  return out;
}

std::string readinessPatch(const ReadinessWrite& write, const std::string& node, meta::Time now) {
  rapidjson::StringBuffer buf;
  meta::JsonWriter w(buf);
  w.StartObject();
  meta::writeKey(w, "status");
  w.StartObject();
  meta::writeKey(w, "conditions");
  w.StartArray();
  w.StartObject();
  meta::writeField(w, "type", dataplane::kIPProgrammedCondition);
  meta::writeField(w, "status", write.programmed ? "True" : "False");
  meta::writeField(w, "reason", write.programmed ? "Programmed" : "NotProgrammed");
  meta::writeField(w, "message",
                   write.programmed
                       ? "egw-agent on " + node + " holds the pod's egress IPs"
                       : "egw-agent on " + node + " does not hold the pod's egress IPs");
  meta::writeField(w, "lastTransitionTime", meta::formatRfc3339(now));
  w.EndObject();
  w.EndArray();
  w.EndObject();
  w.EndObject();
  return {buf.GetString(), buf.GetSize()};
}

ReadinessWriter::ReadinessWriter(kube::RestClient& client, std::string node)
    : client_(client), node_(std::move(node)) {}

void ReadinessWriter::update(const net::any_io_executor& executor,
                             const std::vector<std::shared_ptr<const core::Pod>>& pods,
                             const std::vector<std::string>& readyPods, meta::Time now) {
  if (busy_) {
    return;
  }
  std::set<std::string> present;
  for (const auto& pod : pods) {
    present.insert(pod->metadata.namespace_ + "/" + pod->metadata.name);
  }
  std::erase_if(written_, [&](const auto& kv) { return !present.contains(kv.first); });
  std::vector<ReadinessWrite> writes;
  for (auto& write : readinessWrites(pods, node_, readyPods)) {
    auto it = written_.find(write.ns + "/" + write.name);
    if (it == written_.end() || it->second != std::pair{write.programmed, write.resourceVersion}) {
      writes.push_back(std::move(write));
    }
  }
  if (writes.empty()) {
    return;
  }
  busy_ = true;
  net::co_spawn(executor, run(shared_from_this(), std::move(writes), now), rethrowUnhandled);
}

net::awaitable<void> ReadinessWriter::run(std::shared_ptr<ReadinessWriter> self,
                                          std::vector<ReadinessWrite> writes, meta::Time now) {
  const kube::Resource pods{"", "v1", "pods", true};
  for (const auto& write : writes) {
    const std::string key = write.ns + "/" + write.name;
    kube::Resource resource = pods;
    std::string ns = write.ns;
    std::string name = write.name;
    std::string body = readinessPatch(write, self->node_, now);
    kube::WriteOptions opts;
    opts.fieldManager = "egw-agent";
    std::string subresource = "status";
    auto patched = co_await self->client_.patch(std::move(resource), std::move(ns), std::move(name),
                                                kube::PatchType::StrategicMerge, std::move(body),
                                                std::move(opts), std::move(subresource));
    if (!patched) {
      if (!patched.error().isNotFound()) {
        spdlog::warn("egw-agent: pod {}: setting {}: {}", key, dataplane::kIPProgrammedCondition,
                     patched.error().message());
      }
      continue;  // a later batch tries again
    }
    self->written_[key] = {write.programmed, write.resourceVersion};
    spdlog::info("egw-agent: pod {}: {} {}", key, dataplane::kIPProgrammedCondition,
                 write.programmed ? "True" : "False");
  }
  self->busy_ = false;
}

}  // namespace egress::agent
