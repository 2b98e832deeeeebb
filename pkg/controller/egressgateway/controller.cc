#include "pkg/controller/egressgateway/controller.h"

#include <spdlog/spdlog.h>

#include "pkg/controller/egressgateway/deployment_processor.h"
#include "pkg/controllerruntime/event_handlers.h"
#include "pkg/controllerruntime/processor.h"

namespace egress::controller {

using controllerruntime::ReconcileResult;

EgressGatewayController::EgressGatewayController(Options options, Context& ctx)
    : Controller(std::move(options)),
      ctx_(ctx),
      ipPool_(std::make_shared<IPPoolProcessor>(ctx)),
      deployment_(std::make_shared<DeploymentProcessor>(ctx)),
      status_(std::make_shared<StatusProcessor>(ctx)),
      processors_{ipPool_, deployment_, status_} {}

Result<Ok, std::string> EgressGatewayController::addEventHandlers() {
  auto reg = ctx_.cache.policies().addEventHandler(
      controllerruntime::enqueueForObject<v1alpha1::EgressGatewayPolicy>(enqueuer()));
  if (!reg) {
    return reg.error().message();
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
  ipPool_->useOwnPodWrites(info);
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
    deployment_->forget(key);
    // Its series go whether or not it held anything (a policy that never got an address would
    // otherwise keep them for good); its addresses once its pods are gone.
    ctx_.metrics.removePolicy(info.ns, info.name);
    ipPool_->releaseFormerOwners(info);
    summaryChanged(ctx_);
    co_return ReconcileResult::done();
  }
  if (ipPool_->releaseFormerOwners(info)) {
    summaryChanged(ctx_);
  }
  ReconcileResult combined = ReconcileResult::done();
  for (const auto& processor : processors_) {
    ReconcileResult result = co_await processor->process(info);
    if (controllerruntime::foldProcessorResult(combined, std::move(result), processor->name())) {
      break;
    }
  }
  if (!info.applyFailure.empty()) {
    // The ledger write already told the user the gateway is on its way; without this the status
    // would say so for as long as the retries back off. The apply's error stays the result.
    co_await status_->process(info);
  }
  if (!info.superseded.empty()) {
    auto& w = written_[key];
    w.superseded.insert(info.superseded.begin(), info.superseded.end());
    w.object = *info.current;
  }
  co_return combined;
}

}  // namespace egress::controller
