#include "pkg/controller/egressgateway/deployment_processor.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "pkg/apis/meta/encode.h"
#include "pkg/controller/conditions.h"
#include "pkg/controller/egressgateway/holder_moves.h"
#include "pkg/controller/egressgateway/render.h"
#include "pkg/controller/egressgateway/status.h"
#include "pkg/controller/egressgateway/view.h"
#include "pkg/controller/names.h"
#include "pkg/controller/resource_version.h"

namespace egress::controller {
namespace {

using controllerruntime::ReconcileResult;

// How often a re-created policy looks again for its predecessor's Deployment to be gone, in
// case the delete event is missed (a relist); the event itself is what normally wakes it.
constexpr std::chrono::seconds kPredecessorWait{5};

bool carriesHash(const meta::ObjectMeta& meta, const std::string& hash) {
  auto it = meta.annotations.find(std::string(kAppliedHashAnnotation));
  return it != meta.annotations.end() && it->second == hash;
}

// `resourceVersion`, if not null, receives the applied object's.
net::awaitable<ReconcileResult> applyObject(kube::RestClient& client, kube::Resource resource,
                                            std::string ns, Rendered rendered, std::string what,
                                            std::string* resourceVersion = nullptr) {
  kube::WriteOptions opts;
  opts.fieldManager = std::string(kFieldManager);
  opts.force = true;
  auto applied = co_await client.apply(std::move(resource), std::move(ns), rendered.name,
                                       std::move(rendered.body), std::move(opts), std::string());
  if (!applied) {
    co_return ReconcileResult::error("applying " + what + " " + rendered.name + ": " +
                                     applied.error().message());
  }
  if (resourceVersion != nullptr) {
    resourceVersion->clear();
    if (const auto md = applied->FindMember("metadata");
        md != applied->MemberEnd() && md->value.IsObject()) {
      if (const auto rv = md->value.FindMember("resourceVersion");
          rv != md->value.MemberEnd() && rv->value.IsString()) {
        resourceVersion->assign(rv->value.GetString(), rv->value.GetStringLength());
      }
    }
  }
  co_return ReconcileResult::done();
}

}  // namespace

net::awaitable<Result<Ok, std::string>> deleteSlices(kube::RestClient& client,
                                                     const std::vector<SlicePtr>& slices) {
  for (const auto& s : slices) {
    kube::DeleteOptions opts;
    opts.preconditionUid = s->metadata.uid;
    std::string name = s->metadata.name;
    auto removed =
        co_await client.remove(slicesResource(), std::string(), std::move(name), std::move(opts));
    if (!removed && !removed.error().isNotFound() && !removed.error().isConflict()) {
      co_return "deleting EgressPolicySlice " + s->metadata.name + ": " + removed.error().message();
    }
  }
  co_return Ok{};
}

std::string readinessGatePatch(bool programmed, const std::string& node, meta::Time now) {
  rapidjson::StringBuffer buf;
  meta::JsonWriter w(buf);
  w.StartObject();
  meta::writeKey(w, "status");
  w.StartObject();
  meta::writeKey(w, "conditions");
  w.StartArray();
  w.StartObject();
  meta::writeField(w, "type", kIPProgrammedCondition);
  meta::writeField(w, "status", programmed ? "True" : "False");
  meta::writeField(w, "reason", programmed ? kReasonProgrammed : kReasonNotProgrammed);
  meta::writeField(w, "message",
                   programmed ? "egw-agent on " + node + " reports the pod's egress IPs programmed"
                              : "egw-agent on " + node +
                                    " does not report the pod's egress IPs programmed (or its "
                                    "Lease is stale)");
  meta::writeField(w, "lastTransitionTime", meta::formatRfc3339(now));
  w.EndObject();
  w.EndArray();
  w.EndObject();
  w.EndObject();
  return {buf.GetString(), buf.GetSize()};
}

net::awaitable<ReconcileResult> DeploymentProcessor::applySlices(
    const EgressGatewayPolicyInfo& info, const v1alpha1::EgressGatewayPolicy& policy,
    const LedgerPlan& ledger) {
  const auto gateway = sliceGateway(policy, ledger.entries,
                                    viewHolders(info, ledger, ctx_.agents.claims(ctx_.clock.now())),
                                    info.config->spec.clusterCIDRs);
  auto sources = sliceSources(policy, info.sourcePods);
  auto leaving = sliceSources(policy, info.leavingSourcePods);
  sources.insert(sources.end(), leaving.begin(), leaving.end());
  const auto plan = planSlices(policy, gateway, sources, info.deployment.slices);
  // Writes before deletes, the first slice first: a source moving between slices is listed
  // twice for a moment, never nowhere, and an agent never sees sources without the gateway part.
  for (const auto& slice : plan.write) {
    std::string written;
    auto r = co_await applyObject(ctx_.client, slicesResource(), std::string(), renderSlice(slice),
                                  "EgressPolicySlice", &written);
    if (!r.isDone()) {
      co_return r;
    }
    if (slice.spec.gateway) {
      ViewWrite& w = viewWritten_[info.key];
      w.slice = slice.metadata.name;
      w.resourceVersion = std::move(written);
      w.addresses = sliceAddresses(slice);
    }
  }
  auto removed = co_await deleteSlices(ctx_.client, plan.remove);
  if (!removed) {
    co_return ReconcileResult::error(removed.error());
  }
  co_return ReconcileResult::done();
}

net::awaitable<ReconcileResult> DeploymentProcessor::writeReadinessGates(
    const EgressGatewayPolicyInfo& info, const LedgerPlan& plan) {
  const auto now = ctx_.clock.now();
  const auto holders = viewHolders(info, plan, ctx_.agents.claims(now));
  const auto& ledger = plan.entries;
  auto& written = gatesWritten_[info.key];
  std::string failure;
  for (const auto& [name, p] : info.egressPods) {
    if (p.terminating) {
      continue;  // it goes; its gate no longer matters
    }
    const std::string& node = p.pod->spec.nodeName;
    // Programmed: the view names this pod as a holder, its node's agent is live and reports
    // every address of the pod's entry.
    bool programmed = false;
    for (size_t i = 0; i < ledger.size(); ++i) {
      if (holders[i] && holders[i]->podUID == p.pod->metadata.uid && ctx_.agents.live(node, now)) {
        const auto& reported = ctx_.agents.programmed(node);
        programmed = std::all_of(ledger[i].begin(), ledger[i].end(),
                                 [&](const ipam::Address& a) { return reported.contains(a); });
      }
    }
    // A pod that never had the gate is left alone until it is programmed: a missing condition
    // keeps it not Ready already.
    const bool write = programmed ? p.programmed != true : p.programmed == true;
    const std::pair<bool, std::string> decision{programmed, p.pod->metadata.resourceVersion};
    auto done = written.find(p.pod->metadata.uid);
    if (!write || (done != written.end() && done->second == decision)) {
      continue;
    }
    kube::WriteOptions opts;
    opts.fieldManager = std::string(kFieldManager);
    std::string ns = info.ns;
    std::string podName = name;
    auto patched = co_await ctx_.client.patch(
        podsResource(), std::move(ns), std::move(podName), kube::PatchType::StrategicMerge,
        readinessGatePatch(programmed, node, meta::truncateToSeconds(ctx_.clock.wallNow())),
        std::move(opts), std::string("status"));
    if (!patched) {
      if (!patched.error().isNotFound() && failure.empty()) {
        failure = "setting " + std::string(kIPProgrammedCondition) + " of gateway pod " + name +
                  ": " + patched.error().message();
      }
      continue;
    }
    written[p.pod->metadata.uid] = decision;
    spdlog::info("egressgateway: policy {}: gateway pod {} on {}: {} {}", info.key, name, node,
                 kIPProgrammedCondition, programmed ? "True" : "False");
  }
  // Pods that are gone are forgotten.
  std::erase_if(written, [&](const auto& kv) {
    return std::none_of(info.egressPods.begin(), info.egressPods.end(),
                        [&](const auto& pod) { return pod.second.pod->metadata.uid == kv.first; });
  });
  if (!failure.empty()) {
    co_return ReconcileResult::error(failure);
  }
  co_return ReconcileResult::done();
}

void DeploymentProcessor::forget(const std::string& key) {
  gatesWritten_.erase(key);
  viewWritten_.erase(key);
}

void DeploymentProcessor::useOwnViewWrites(EgressGatewayPolicyInfo& info) {
  auto it = viewWritten_.find(info.key);
  if (it == viewWritten_.end()) {
    return;
  }
  const ViewWrite& w = it->second;
  auto cached = std::find_if(info.deployment.slices.begin(), info.deployment.slices.end(),
                             [&](const SlicePtr& s) { return s->metadata.name == w.slice; });
  if (!w.resourceVersion.empty() &&
      (cached == info.deployment.slices.end() ||
       versionBefore((*cached)->metadata.resourceVersion, w.resourceVersion))) {
    info.viewInFlight.insert(w.addresses.begin(), w.addresses.end());
    return;
  }
  viewWritten_.erase(it);  // the cache shows it (or a later version)
}

bool DeploymentProcessor::isOwnViewWrite(const v1alpha1::EgressPolicySlice& slice) const {
  auto it = viewWritten_.find(slice.spec.policy.namespace_ + "/" + slice.spec.policy.name);
  return it != viewWritten_.end() && it->second.slice == slice.metadata.name &&
         !it->second.resourceVersion.empty() &&
         it->second.resourceVersion == slice.metadata.resourceVersion;
}

DeploymentProcessor::Outcome DeploymentProcessor::failed(
    const v1alpha1::EgressGatewayPolicy& policy, ReconcileResult r) {
  // Once per failure: retries back off with the same error, and the status says it meanwhile.
  if (conditionReason(policy.status.conditions, kConditionGatewayAvailable) != kReasonApplyFailed) {
    ctx_.recorder.event(referenceTo(kPolicyKind, policy.metadata), core::kEventTypeWarning,
                        kReasonApplyFailed, r.message());
  }
  std::string message = r.message();
  return Outcome{std::move(r), std::move(message)};
}

const std::string& DeploymentProcessor::name() const {
  static const std::string kName = "DeploymentProcessor";
  return kName;
}

net::awaitable<DeploymentProcessor::Outcome> DeploymentProcessor::process(
    const EgressGatewayPolicyInfo& info, const v1alpha1::EgressGatewayPolicy& policy,
    const LedgerPlan& ledger) {
  if (info.config == nullptr) {
    co_return Outcome{};
  }
  // The data-plane view first and whatever else fails: its sources follow the pods, or a
  // finished pod's address, handed by the CNI to a pod of another namespace, would keep
  // leaving as this policy. So also while the spec is invalid or the namespace is going.
  if (auto r = co_await applySlices(info, policy, ledger); !r.isDone()) {
    co_return failed(policy, std::move(r));
  }
  if (!ledger.invalid.empty() || !ledger.assignment || info.config->spec.gatewayImage.empty()) {
    co_return Outcome{};
  }
  if (info.policyNamespace && info.policyNamespace->phase == "Terminating") {
    // Nothing new may be made in it, and the policy goes with it.
    co_return Outcome{};
  }
  const auto replicas = static_cast<int32_t>(ledger.entries.size());

  const auto* cachedDeployment = info.deployment.deployment.get();
  if (const auto* owner =
          cachedDeployment == nullptr ? nullptr : meta::controllerOf(cachedDeployment->metadata);
      owner != nullptr && owner->kind == kPolicyKind && owner->uid != policy.metadata.uid) {
    // The gateway of a deleted policy of the same name, which the garbage collector is about to
    // delete. An apply would adopt it (server-side apply replaces the owner reference it wrote),
    // and with it the old pods and the addresses they carry; its deletion brings us back.
    spdlog::info(
        "egressgateway: policy {}: waiting for Deployment {} of the previous policy of "
        "this name (uid {}) to be deleted",
        info.key, cachedDeployment->metadata.name, owner->uid);
    co_return Outcome{ReconcileResult::requeueAfter(kPredecessorWait), std::string()};
  }
  Rendered deployment = renderDeployment(policy, gatewayShape(policy, info.config.get()), replicas);
  if (cachedDeployment == nullptr || !carriesHash(cachedDeployment->metadata, deployment.hash) ||
      cachedDeployment->spec.replicas.value_or(1) != replicas) {
    auto r = co_await applyObject(ctx_.client, deploymentsResource(), info.ns,
                                  std::move(deployment), "Deployment");
    if (!r.isDone()) {
      co_return failed(policy, std::move(r));
    }
  }

  const bool policyV1 = ctx_.cache.policyV1();
  const auto* cachedPdb = info.deployment.podDisruptionBudget.get();
  if (replicas > 1) {
    Rendered pdb = renderPodDisruptionBudget(policy, policyV1);
    if (cachedPdb == nullptr || !carriesHash(cachedPdb->metadata, pdb.hash)) {
      auto r = co_await applyObject(ctx_.client, podDisruptionBudgetsResource(policyV1), info.ns,
                                    std::move(pdb), "PodDisruptionBudget");
      if (!r.isDone()) {
        co_return failed(policy, std::move(r));
      }
    }
  } else if (cachedPdb != nullptr) {
    // One gateway: a budget of maxUnavailable 1 would let a drain take it anyway, and one of 0
    // would block every drain of its node.
    kube::DeleteOptions opts;
    opts.preconditionUid = cachedPdb->metadata.uid;
    std::string ns = info.ns;
    auto removed =
        co_await ctx_.client.remove(podDisruptionBudgetsResource(policyV1), std::move(ns),
                                    gatewayName(info.name), std::move(opts));
    if (!removed && !removed.error().isNotFound()) {
      co_return failed(
          policy, ReconcileResult::error("deleting PodDisruptionBudget " + gatewayName(info.name) +
                                         ": " + removed.error().message()));
    }
  }
  if (agentEnabled(info.config.get())) {
    // Not co_await inside the braces: g++ 12 miscompiles that (a bad free in ~Outcome).
    auto gates = co_await writeReadinessGates(info, ledger);
    co_return Outcome{std::move(gates), std::string()};
  }
  co_return Outcome{};
}

}  // namespace egress::controller
