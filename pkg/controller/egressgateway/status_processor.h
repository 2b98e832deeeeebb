// File: status_processor.h
//
// StatusProcessor: the last step of a policy's reconcile. Writes desiredStatus() (status.h) of
// what the steps before it decided (the ledger, the gateway's apply failure) with an update of
// the status subresource carrying the resourceVersion, only when it differs from the status the
// policy has; a conflict requeues. A change of status.selectedPods alone waits until
// kSelectedPodsBatch has passed since the policy's last status write (a requeue carries it): pods
// moving in and out of a selector at tens a second would otherwise cost a status write (and its
// watch echo) each, for a count no one reads that fast (kube-controller-manager's EndpointSlice
// controller batches its updates the same way, --endpointslice-updates-batch-period). Also keeps
// the policy's egress_gateway_replicas, egress_selected_pods (not batched) and
// egress_policy_ready series current.
//
// PolicyWriter: the policy as the reconcile last wrote it, through which both status writes of
// a reconcile go (the IPPoolProcessor's ledger, then this one's), each carrying the version the
// one before returned.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "pkg/controller/apis/egressgateway_policy.h"
#include "pkg/controller/context.h"
#include "pkg/controllerruntime/reconcile_result.h"

namespace egress::controller {

namespace net = boost::asio;

class PolicyWriter {
 public:
  // Starts from the policy the reconcile starts from (info.current).
  PolicyWriter(Context& ctx, const EgressGatewayPolicyInfo& info);

  // The policy as last written (its status is what the API server holds, as far as this process
  // knows).
  const v1alpha1::EgressGatewayPolicy& policy() const { return policy_; }
  // The resourceVersions this reconcile's writes replaced, the one it started from first.
  const std::vector<std::string>& superseded() const { return superseded_; }

  // Writes `status` (status_write.h: a conflict requeues, not found is done); once written,
  // policy() is the written object, the version it replaced goes to superseded(), and the new one
  // is remembered as the write's echo (Context::policyStatusWrites). `written`, if not null, says
  // whether it was.
  net::awaitable<controllerruntime::ReconcileResult> write(
      v1alpha1::EgressGatewayPolicyStatus status, std::string what, bool* written);

 private:
  Context& ctx_;
  std::string key_;
  v1alpha1::EgressGatewayPolicy policy_;
  std::vector<std::string> superseded_;
};

class StatusProcessor {
 public:
  static constexpr Clock::Duration kSelectedPodsBatch = std::chrono::seconds(2);

  explicit StatusProcessor(Context& ctx) : ctx_(ctx) {}

  const std::string& name() const;
  // `ledger`: the IPPoolProcessor's plan; `applyFailure`: the DeploymentProcessor's, "" if none.
  net::awaitable<controllerruntime::ReconcileResult> process(const EgressGatewayPolicyInfo& info,
                                                             const LedgerPlan& ledger,
                                                             const std::string& applyFailure,
                                                             PolicyWriter& writer);

  // The policy is gone: so is the time of its last status write.
  void forget(const std::string& key) { writtenAt_.erase(key); }

 private:
  Context& ctx_;
  // When this processor last wrote each policy's status.
  std::map<std::string, Clock::TimePoint> writtenAt_;
};

}  // namespace egress::controller
