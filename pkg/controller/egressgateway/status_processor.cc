#include "pkg/controller/egressgateway/status_processor.h"

#include "pkg/controller/conditions.h"
#include "pkg/controller/egressgateway/ippool_processor.h"
#include "pkg/controller/egressgateway/render.h"
#include "pkg/controller/egressgateway/status.h"
#include "pkg/controller/names.h"
#include "pkg/controller/status_write.h"

namespace egress::controller {

using controllerruntime::ReconcileResult;

net::awaitable<ReconcileResult> writePolicyStatus(Context& ctx, EgressGatewayPolicyInfo& info,
                                                  v1alpha1::EgressGatewayPolicyStatus status,
                                                  std::string what, bool* written) {
  v1alpha1::EgressGatewayPolicy updated = *info.current;
  updated.status = std::move(status);
  std::optional<v1alpha1::EgressGatewayPolicy> result;
  auto r = co_await writeStatus(ctx.client, std::move(updated), std::move(what), &result);
  if (result) {
    ctx.policyStatusWrites[info.key] = result->metadata.resourceVersion;
    info.superseded.push_back(info.current->metadata.resourceVersion);
    info.current = std::move(*result);
  }
  if (written != nullptr) {
    *written = result.has_value();
  }
  co_return r;
}

const std::string& StatusProcessor::name() const {
  static const std::string kName = "StatusProcessor";
  return kName;
}

net::awaitable<ReconcileResult> StatusProcessor::process(EgressGatewayPolicyInfo& info) {
  const auto& current = *info.current;
  auto status = desiredStatus(info, meta::truncateToSeconds(ctx_.clock.wallNow()));
  const auto* d = info.deployment.deployment.get();
  ctx_.metrics.setPolicy(info.ns, info.name, gatewayShape(current, info.config.get()).replicas,
                         d != nullptr ? d->status.availableReplicas : 0, status.selectedPods,
                         conditionIsTrue(status.conditions, kConditionReady));
  if (status == current.status) {
    co_return ReconcileResult::done();
  }
  bool written = false;
  auto r = co_await writePolicyStatus(ctx_, info, std::move(status), "writing status", &written);
  if (!written) {
    co_return r;
  }
  if (!info.assignment) {
    returnUnwritten(ctx_, info);
  }
  summaryChanged(ctx_);
  co_return ReconcileResult::done();
}

}  // namespace egress::controller
