// File: deployment_processor.h
//
// DeploymentProcessor: brings the policy's gateway objects (render.h) and its data-plane view
// (view.h) to what the ledger says, with server-side apply (field manager egress-gateway-operator,
// force: the operator owns these fields, whoever touched them last): the Deployment with one pod
// per ledger entry, a PodDisruptionBudget while more than one gateway runs (deleted at one), and
// the EgressPolicySlices the agents program (extra ones deleted). An object whose cached copy
// already carries the digest of what would be applied (and, for the Deployment, the same replica
// count; for a slice, the same spec) is not written: a resync writes nothing. The view comes
// first and is kept current whatever else happens (an invalid spec, a namespace being deleted,
// a Deployment that cannot be written): its sources must follow the pods. With the agent, it
// then sets each gateway pod's readiness gate from what the agent of the pod's node reports
// (agentlease/agents.h): True once that live agent reports all the pod's egress IPs programmed,
// False once it no longer does. The gateway objects are skipped while the spec is invalid (the
// gateway stays as it is) and while no OperatorConfig names the gateway image. A write that
// fails fails the reconcile (retried with backoff) and is reported: Outcome::applyFailure, which
// the status shows as GatewayAvailable=False reason ApplyFailed, and one Warning Event ApplyFailed.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "pkg/controller/apis/egressgateway_policy.h"
#include "pkg/controller/context.h"
#include "pkg/controllerruntime/reconcile_result.h"

namespace egress::controller {

class DeploymentProcessor {
 public:
  explicit DeploymentProcessor(Context& ctx) : ctx_(ctx) {}

  struct Outcome {
    controllerruntime::ReconcileResult result = controllerruntime::ReconcileResult::done();
    // A gateway object that could not be written: the message, for the status ("" if none).
    std::string applyFailure;
  };

  const std::string& name() const;
  // `policy`: as the reconcile last wrote it; `ledger`: the IPPoolProcessor's plan.
  net::awaitable<Outcome> process(const EgressGatewayPolicyInfo& info,
                                  const v1alpha1::EgressGatewayPolicy& policy,
                                  const LedgerPlan& ledger);
  // The policy is gone: what was remembered of its pods and view goes too.
  void forget(const std::string& key);
  // Read your own writes: sets info.viewInFlight to what the gateway part of the view, as this
  // process last wrote it, names while the cache still shows an older version of that slice
  // (or none). An address the ledger drops stays held meanwhile: an agent may already program
  // what the write named. Forgotten once the cache shows the write or a later version.
  void useOwnViewWrites(EgressGatewayPolicyInfo& info);
  // Whether `slice` is exactly the gateway part of the view as this process last wrote it (the
  // watch's echo of that write).
  bool isOwnViewWrite(const v1alpha1::EgressPolicySlice& slice) const;

 private:
  // `r`, a failed write, as the outcome that reports it to the status, after a Warning Event
  // (once per failure: `policy`'s status says whether it was reported).
  Outcome failed(const v1alpha1::EgressGatewayPolicy& policy, controllerruntime::ReconcileResult r);
  net::awaitable<controllerruntime::ReconcileResult> applySlices(
      const EgressGatewayPolicyInfo& info, const v1alpha1::EgressGatewayPolicy& policy,
      const LedgerPlan& ledger);
  net::awaitable<controllerruntime::ReconcileResult> writeReadinessGates(
      const EgressGatewayPolicyInfo& info, const LedgerPlan& ledger);

  Context& ctx_;
  // Read your own writes: per policy and gateway pod (uid), the gate value last written and the
  // pod's resourceVersion it was decided on; the same write is not repeated before the watch
  // shows it.
  std::map<std::string, std::map<std::string, std::pair<bool, std::string>>> gatesWritten_;
  // Per policy, the slice carrying its gateway part as last written.
  struct ViewWrite {
    std::string slice;
    std::string resourceVersion;
    std::set<ipam::Address> addresses;
  };
  std::map<std::string, ViewWrite> viewWritten_;
};

// Deletes `slices` (each by uid: never a successor of the same name); not found is done.
net::awaitable<Result<Ok, std::string>> deleteSlices(kube::RestClient& client,
                                                     const std::vector<SlicePtr>& slices);

// The strategic merge patch of pods/status that sets a gateway pod's readiness gate (conditions
// merge by type, so the kubelet's own stay).
std::string readinessGatePatch(bool programmed, const std::string& node, meta::Time now);

}  // namespace egress::controller
