// File: status_processor.h
//
// StatusProcessor: the last step of a policy's reconcile. Writes desiredStatus() (status.h)
// with an update of the status subresource carrying the resourceVersion, only when it differs
// from the status the policy has; a conflict requeues. Also keeps the policy's
// egress_gateway_replicas, egress_selected_pods and egress_policy_ready series current.
#pragma once

#include <string>

#include "pkg/controller/context.h"
#include "pkg/controller/egressgateway/policy_processor.h"

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

}  // namespace egress::controller
