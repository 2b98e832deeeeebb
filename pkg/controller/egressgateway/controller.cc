#include "pkg/controller/egressgateway/controller.h"

#include <spdlog/spdlog.h>

#include "pkg/controller/egressgateway/deployment_processor.h"
#include "pkg/controller/names.h"
#include "pkg/controllerruntime/event_handlers.h"
#include "pkg/controllerruntime/processor.h"

namespace egress::controller {

using controllerruntime::ReconcileResult;

EgressGatewayController::EgressGatewayController(Options options, Context& ctx)
    : Subcontroller(std::move(options), ctx), ipPool_(ctx), deployment_(ctx), status_(ctx) {}

Result<Ok, std::string> EgressGatewayController::addEventHandlers() {
  using controllerruntime::enqueueMapped;
  Cache* cache = &ctx_.cache;
  const auto policies = enqueuer();
  std::vector<std::string> failed;
  auto check = [&](auto reg) {
    if (!reg) {
      failed.push_back(reg.error().message());
    }
  };
  // The echo of this process's own status write queues nothing: the reconcile that wrote it
  // already went on from the written object (useOwnWrite). Anyone else's write of the status
  // (a deposed leader's late one, a user's) is a new version and queues the policy.
  Context* ctx = &ctx_;
  // What the other subcontrollers, and this one's reconciles of other policies, find for it.
  ctx_.policies.connect(policies);
  check(cache->policies().addEventHandler(enqueueMapped<v1alpha1::EgressGatewayPolicy>(
      policies,
      [](const v1alpha1::EgressGatewayPolicy& p) {
        return std::vector<std::string>{cache::objectKey(p.metadata)};
      },
      [ctx](const v1alpha1::EgressGatewayPolicy&, const v1alpha1::EgressGatewayPolicy& p) {
        auto it = ctx->policyStatusWrites.find(cache::objectKey(p.metadata));
        if (it == ctx->policyStatusWrites.end() || it->second != p.metadata.resourceVersion) {
          return true;
        }
        ctx->policyStatusWrites.erase(it);
        return false;
      })));
  check(cache->pools().addEventHandler(enqueueMapped<v1alpha1::IPAMPool>(
      policies,
      [cache](const v1alpha1::IPAMPool& p) { return cache->policyKeysUsingPool(p.metadata.name); },
      poolUpdateMattersToPolicies)));
  check(cache->operatorConfigs().addEventHandler(enqueueMapped<v1alpha1::OperatorConfig>(
      policies, [cache](const v1alpha1::OperatorConfig&) { return cache->allPolicyKeys(); },
      operatorConfigUpdateMattersToPolicies)));
  check(cache->namespaces().addEventHandler(
      enqueueMapped<core::Namespace>(policies, [cache](const core::Namespace& ns) {
        return cache->policyKeysInNamespace(ns.metadata.name);
      })));
  check(cache->pods().addEventHandler(enqueueMapped<core::Pod>(
      policies, [cache](const core::Pod& pod) { return cache->policyKeysForPod(pod); },
      podUpdateMattersToPolicies)));
  auto byLabel = [](const meta::ObjectMeta& m) {
    auto it = m.labels.find(std::string(kPolicyLabel));
    return it == m.labels.end() ? std::vector<std::string>{}
                                : std::vector<std::string>{m.namespace_ + "/" + it->second};
  };
  check(cache->deployments().addEventHandler(enqueueMapped<apps::Deployment>(
      policies, [byLabel](const apps::Deployment& d) { return byLabel(d.metadata); })));
  check(cache->podDisruptionBudgets().addEventHandler(enqueueMapped<policy::PodDisruptionBudget>(
      policies, [byLabel](const policy::PodDisruptionBudget& p) { return byLabel(p.metadata); })));
  // A slice's policy: an orphan (its policy gone, say while no operator ran) is deleted by the
  // reconcile of a policy that is not there.
  // The echo of this process's own view write queues nothing either, unless a release waits
  // for the cache to show that the view no longer names an address: the policy's own, or that
  // of a former policy of the name whose slice the write took over (re-created under the same
  // name: it waits for exactly this event, releaseFormerOwners()).
  DeploymentProcessor* deployment = &deployment_;
  check(cache->slices().addEventHandler(enqueueMapped<v1alpha1::EgressPolicySlice>(
      policies,
      [](const v1alpha1::EgressPolicySlice& s) {
        return std::vector<std::string>{s.spec.policy.namespace_ + "/" + s.spec.policy.name};
      },
      [ctx, deployment](const v1alpha1::EgressPolicySlice& old,
                        const v1alpha1::EgressPolicySlice& s) {
        return !deployment->isOwnViewWrite(s) || releaseWaits(*ctx, s.spec.policy.uid) ||
               (old.spec.policy.uid != s.spec.policy.uid &&
                !ctx->allocator.heldBy(old.spec.policy.uid).empty());
      })));
  // A gateway pod's ReplicaSet completes (or breaks) the chain of owners that proves the pod.
  check(cache->replicaSets().addEventHandler(
      enqueueMapped<apps::ReplicaSet>(policies, [cache](const apps::ReplicaSet& rs) {
        std::vector<std::string> keys;
        if (const auto* ref = meta::controllerOf(rs.metadata);
            ref != nullptr && ref->kind == "Deployment") {
          if (auto d =
                  cache->deployments().indexer().get(rs.metadata.namespace_ + "/" + ref->name)) {
            auto it = d->metadata.labels.find(std::string(kPolicyLabel));
            if (it != d->metadata.labels.end()) {
              keys.push_back(rs.metadata.namespace_ + "/" + it->second);
            }
          }
        }
        return keys;
      })));
  if (!failed.empty()) {
    return failed.front();
  }
  return Ok{};
}

void EgressGatewayController::useOwnWrite(EgressGatewayPolicyInfo& info) {
  auto it = written_.find(info.key);
  if (it == written_.end()) {
    return;
  }
  if (info.policy && it->second.superseded.count(info.policy->metadata.resourceVersion) != 0) {
    info.current = it->second.object;
    return;
  }
  written_.erase(it);  // the cache caught up, someone else wrote, or the policy is gone
}

net::awaitable<ReconcileResult> EgressGatewayController::reconcile(const std::string& key) {
  EgressGatewayPolicyInfo info = ctx_.cache.policyInfo(key);
  useOwnWrite(info);
  deployment_.useOwnViewWrites(info);
  if (!info.policy) {
    // Its view goes either way: the data plane stops using its addresses. A policy that exists
    // but does not decode cannot have its sources followed, and a stale source address, handed
    // by the CNI to another namespace's pod, would leave as this policy.
    if (!info.deployment.slices.empty()) {
      auto removed = co_await deleteSlices(ctx_.client, info.deployment.slices);
      if (!removed) {
        co_return ReconcileResult::error(removed.error());
      }
    }
    if (info.undecodable) {
      spdlog::warn(
          "egressgateway: policy {} does not decode ({}): its addresses stay held, its "
          "data-plane view is withdrawn",
          key, info.undecodable->error);
      co_return ReconcileResult::done();
    }
    deployment_.forget(key);
    status_.forget(key);
    ctx_.policyStatusWrites.erase(key);
    // Its series go whether or not it held anything (a policy that never got an address would
    // otherwise keep them for good); its addresses once its pods are gone.
    ctx_.metrics.removePolicy(info.ns, info.name);
    ipPool_.releaseFormerOwners(info);
    co_return ReconcileResult::done();
  }
  ipPool_.releaseFormerOwners(info);
  info.dataplaneProblems = ctx_.agents.problemsOf(info.policy->metadata.uid, ctx_.clock.now());
  // The steps in order, each handed what the ones before decided; the info view stays as
  // gathered. Both status writes go through `writer`, the second carrying the version the
  // first returned.
  PolicyWriter writer(ctx_, info);
  controllerruntime::ProcessorResults results;
  auto ledger = co_await ipPool_.process(info, writer);
  if (results.add(ledger.result, ipPool_.name())) {
    auto applied = co_await deployment_.process(info, writer.policy(), ledger.plan);
    const bool goOn = results.add(applied.result, deployment_.name());
    // Also after a failed apply: the ledger write already told the user the gateway is on its
    // way, and the status would say so for as long as the retries back off. The apply's error
    // stays the result.
    if (goOn || !applied.applyFailure.empty()) {
      auto status = co_await status_.process(info, ledger.plan, applied.applyFailure, writer);
      if (goOn) {
        results.add(std::move(status), status_.name());
      }
    }
  }
  if (!writer.superseded().empty()) {
    auto& w = written_[key];
    w.superseded.insert(writer.superseded().begin(), writer.superseded().end());
    w.object = writer.policy();
  }
  co_return results.result();
}

}  // namespace egress::controller
