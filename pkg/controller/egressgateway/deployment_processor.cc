#include "pkg/controller/egressgateway/deployment_processor.h"

#include "pkg/controller/conditions.h"
#include "pkg/controller/egressgateway/render.h"
#include "pkg/controller/names.h"

namespace egress::controller {
namespace {

using controllerruntime::ReconcileResult;

bool carriesHash(const meta::ObjectMeta& meta, const std::string& hash) {
  auto it = meta.annotations.find(std::string(kAppliedHashAnnotation));
  return it != meta.annotations.end() && it->second == hash;
}

net::awaitable<ReconcileResult> applyObject(kube::RestClient& client, kube::Resource resource,
                                            std::string ns, Rendered rendered, std::string what) {
  kube::WriteOptions opts;
  opts.fieldManager = std::string(kFieldManager);
  opts.force = true;
  auto applied = co_await client.apply(std::move(resource), std::move(ns), rendered.name,
                                       std::move(rendered.body), std::move(opts), std::string());
  if (!applied) {
    co_return ReconcileResult::error("applying " + what + " " + rendered.name + ": " +
                                     applied.error().message());
  }
  co_return ReconcileResult::done();
}

}  // namespace

ReconcileResult DeploymentProcessor::failed(EgressGatewayPolicyInfo& info, ReconcileResult r) {
  // Once per failure: retries back off with the same error, and the status says it meanwhile.
  if (conditionReason(info.current->status.conditions, kConditionGatewayAvailable) !=
      kReasonApplyFailed) {
    ctx_.recorder.event(referenceTo(kPolicyKind, info.current->metadata), core::kEventTypeWarning,
                        kReasonApplyFailed, r.message());
  }
  info.applyFailure = r.message();
  return r;
}

const std::string& DeploymentProcessor::name() const {
  static const std::string kName = "DeploymentProcessor";
  return kName;
}

net::awaitable<ReconcileResult> DeploymentProcessor::process(EgressGatewayPolicyInfo& info) {
  if (!info.invalid.empty() || !info.assignment || info.config == nullptr ||
      info.config->spec.gatewayImage.empty()) {
    co_return ReconcileResult::done();
  }
  if (info.policyNamespace && info.policyNamespace->phase == "Terminating") {
    // Nothing new may be made in it, and the policy goes with it.
    co_return ReconcileResult::done();
  }
  const auto& policy = info.current ? *info.current : *info.policy;
  const auto& ledger = info.assignment->entries;
  const auto replicas = static_cast<int32_t>(ledger.size());

  Rendered deployment = renderDeployment(policy, gatewayShape(policy, info.config.get()), replicas);
  const auto* cachedDeployment = info.deployment.deployment.get();
  if (cachedDeployment == nullptr || !carriesHash(cachedDeployment->metadata, deployment.hash) ||
      cachedDeployment->spec.replicas.value_or(1) != replicas) {
    auto r = co_await applyObject(ctx_.client, deploymentsResource(), info.ns,
                                  std::move(deployment), "Deployment");
    if (!r.isDone()) {
      co_return failed(info, std::move(r));
    }
  }

  const meta::StringMap data =
      configMapData(gatewayData(policy, ledger, info.config->spec.clusterCIDRs, info.sourcePods));
  Rendered configMap = renderConfigMap(policy, data);
  const auto* cachedConfigMap = info.deployment.configMap.get();
  if (cachedConfigMap == nullptr || cachedConfigMap->data != data ||
      !carriesHash(cachedConfigMap->metadata, configMap.hash)) {
    auto r = co_await applyObject(ctx_.client, configMapsResource(), info.ns, std::move(configMap),
                                  "ConfigMap");
    if (!r.isDone()) {
      co_return failed(info, std::move(r));
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
        co_return failed(info, std::move(r));
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
          info, ReconcileResult::error("deleting PodDisruptionBudget " + gatewayName(info.name) +
                                       ": " + removed.error().message()));
    }
  }
  co_return ReconcileResult::done();
}

}  // namespace egress::controller
