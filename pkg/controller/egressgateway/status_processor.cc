#include "pkg/controller/egressgateway/status_processor.h"

#include "pkg/client/networking/v1alpha1/zz_generated.clientset.h"
#include "pkg/controller/conditions.h"
#include "pkg/controller/egressgateway/render.h"
#include "pkg/controller/egressgateway/status.h"
#include "pkg/controller/names.h"

namespace egress::controller {

using controllerruntime::ReconcileResult;

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
  v1alpha1::EgressGatewayPolicy updated = current;
  updated.status = std::move(status);
  client::TypedClient<v1alpha1::EgressGatewayPolicy> policies(ctx_.client, info.ns);
  kube::WriteOptions opts;
  opts.fieldManager = std::string(kFieldManager);
  auto written = co_await policies.updateStatus(std::move(updated), std::move(opts));
  if (!written) {
    if (written.error().isConflict()) {
      co_return ReconcileResult::requeue();
    }
    if (written.error().isNotFound()) {
      co_return ReconcileResult::done();
    }
    co_return ReconcileResult::error("writing status: " + written.error().message());
  }
  info.superseded.push_back(info.current->metadata.resourceVersion);
  info.current = std::move(*written);
  summaryChanged(ctx_);
  co_return ReconcileResult::done();
}

}  // namespace egress::controller
