// File: status.h
//
// The status a policy should have, computed from its info view and what the reconcile decided
// (pure, so the IPPoolProcessor, which writes the ledger, and the StatusProcessor, which writes
// the rest, agree to the byte and an unchanged status is never written):
//   pool, egressIPs, gateways[]   the ledger (LedgerPlan: the assignment, or the written one when
//                                 the spec is invalid), each entry with the pod that holds it, by
//                                 name and uid, its node and readiness
//   selectedPods, observedGeneration
//   IPAllocated                   every replica has its addresses, or why not (the reason of the
//                                 allocator's shortfall, or InvalidSpec)
//   GatewayAvailable              the Deployment rolled out with one available pod per entry;
//                                 else Progressing "A of N gateway pods available" (also before
//                                 the Deployment is cached), or what stops it: ApplyFailed,
//                                 ProgressDeadlineExceeded, ReplicaFailure (with the detail)
//   Ready                         both, no live agent reports a problem with the policy, and
//                                 every entry held by a Ready pod
//   Programmed                    with the agent: every holder's agent programmed its IPs and no
//                                 live agent reports a problem with the policy (then False, with
//                                 the problem's kind as the reason: RefusedAddress, ...)
// Conditions keep their lastTransitionTime unless their status flips (meta::setCondition).
#pragma once

#include "pkg/base/clock.h"
#include "pkg/controller/apis/egressgateway_policy.h"

namespace egress::controller {

// `policy`: as this reconcile last wrote it (its conditions' transition times carry over);
// `applyFailure`: the DeploymentProcessor's, "" if none.
v1alpha1::EgressGatewayPolicyStatus desiredStatus(const EgressGatewayPolicyInfo& info,
                                                  const v1alpha1::EgressGatewayPolicy& policy,
                                                  const LedgerPlan& ledger,
                                                  const std::string& applyFailure, meta::Time now);

// The ledger a status holds, parsed (entries that do not parse are left out).
std::vector<ipam::Entry> statusLedger(const v1alpha1::EgressGatewayPolicyStatus& status);
// One entry of it, parsed and sorted (empty if none of its addresses parse).
ipam::Entry gatewayEntry(const v1alpha1::GatewayStatus& gateway);

// The gateway pod holding each ledger entry ("" if none), as `status` names it: by pod uid, a pod
// that is still one of the policy's proven gateway pods, one entry per pod. The status is the
// holder record: only the operator writes it (a pod's labels and annotations are anyone's in the
// namespace).
std::vector<std::string> entryHolders(const EgressGatewayPolicyInfo& info,
                                      const v1alpha1::EgressGatewayPolicyStatus& status,
                                      const std::vector<ipam::Entry>& ledger);

}  // namespace egress::controller
