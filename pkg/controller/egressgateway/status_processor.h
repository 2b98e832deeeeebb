// File: status_processor.h
//
// StatusProcessor: the last step of a policy's reconcile. Writes desiredStatus() (status.h)
// with an update of the status subresource carrying the resourceVersion, only when it differs
// from the status the policy has; a conflict requeues. Also keeps the policy's
// egress_gateway_replicas, egress_selected_pods and egress_policy_ready series current.
#pragma once

#include <string>

#include "pkg/controller/apis/egressgateway_policy.h"
#include "pkg/controller/context.h"
#include "pkg/controllerruntime/processor.h"

namespace egress::controller {

class StatusProcessor : public PolicyProcessor {
 public:
  explicit StatusProcessor(Context& ctx) : ctx_(ctx) {}

  const std::string& name() const override;
  net::awaitable<controllerruntime::ReconcileResult> process(
      EgressGatewayPolicyInfo& info) override;

 private:
  Context& ctx_;
};

// Writes `status` to the policy (status_write.h) and, once written, makes info.current the
// written object, recording the version it replaced in info.superseded (the controller reads
// its own write until the watch shows it). `written`, if not null, says whether it was.
// The written version is also remembered as the write's echo (Context::policyStatusWrites).
net::awaitable<controllerruntime::ReconcileResult> writePolicyStatus(
    Context& ctx, EgressGatewayPolicyInfo& info, v1alpha1::EgressGatewayPolicyStatus status,
    std::string what, bool* written = nullptr);

}  // namespace egress::controller
