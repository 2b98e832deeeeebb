// File: deployment_processor.h
//
// DeploymentProcessor: brings the policy's gateway objects (render.h) to what the ledger says,
// with server-side apply (field manager egress-gateway-operator, force: the operator owns these
// fields, whoever touched them last): the Deployment with one pod per ledger entry, the
// ConfigMap the data plane reads, and a PodDisruptionBudget while more than one gateway runs
// (deleted at one). An object whose cached copy already carries the digest of what would be
// applied (and, for the Deployment, the same replica count; for the ConfigMap, the same data) is
// not written: a resync writes nothing. Skipped while the spec is invalid (the gateway keeps
// running as it is) and while no OperatorConfig names the gateway image. A write that fails
// fails the reconcile (retried with backoff) and is reported: info.applyFailure, which the status
// shows as GatewayAvailable=False reason ApplyFailed, and one Warning Event ApplyFailed.
#pragma once

#include <string>

#include "pkg/controller/context.h"
#include "pkg/controller/egressgateway/policy_processor.h"

namespace egress::controller {

class DeploymentProcessor : public PolicyProcessor {
 public:
  explicit DeploymentProcessor(Context& ctx) : ctx_(ctx) {}

  const std::string& name() const override;
  net::awaitable<controllerruntime::ReconcileResult> process(
      EgressGatewayPolicyInfo& info) override;

 private:
  // `r`, a failed write, after recording it in `info` for the status and in a Warning Event.
  controllerruntime::ReconcileResult failed(EgressGatewayPolicyInfo& info,
                                            controllerruntime::ReconcileResult r);

  Context& ctx_;
};

}  // namespace egress::controller
