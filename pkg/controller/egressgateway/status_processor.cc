#include "pkg/controller/egressgateway/status_processor.h"

#include "pkg/controller/conditions.h"
#include "pkg/controller/egressgateway/ippool_processor.h"
#include "pkg/controller/egressgateway/render.h"
#include "pkg/controller/egressgateway/status.h"
#include "pkg/controller/names.h"
#include "pkg/controller/status_write.h"

namespace egress::controller {

using controllerruntime::ReconcileResult;

namespace {

bool onlySelectedPodsDiffer(const v1alpha1::EgressGatewayPolicyStatus& desired,
                            const v1alpha1::EgressGatewayPolicyStatus& current) {
  if (desired.selectedPods == current.selectedPods) {
    return false;
  }
  auto same = desired;
  same.selectedPods = current.selectedPods;
  return same == current;
}

}  // namespace

PolicyWriter::PolicyWriter(Context& ctx, const EgressGatewayPolicyInfo& info)
    : ctx_(ctx), key_(info.key), policy_(*info.current) {}

net::awaitable<ReconcileResult> PolicyWriter::write(v1alpha1::EgressGatewayPolicyStatus status,
                                                    std::string what, bool* written) {
  v1alpha1::EgressGatewayPolicy updated = policy_;
  updated.status = std::move(status);
  std::optional<v1alpha1::EgressGatewayPolicy> result;
  auto r = co_await writeStatus(ctx_.client, std::move(updated), std::move(what), &result);
  if (result) {
    ctx_.policyStatusWrites[key_] = result->metadata.resourceVersion;
    superseded_.push_back(policy_.metadata.resourceVersion);
    policy_ = std::move(*result);
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

net::awaitable<ReconcileResult> StatusProcessor::process(const EgressGatewayPolicyInfo& info,
                                                         const LedgerPlan& ledger,
                                                         const std::string& applyFailure,
                                                         PolicyWriter& writer) {
  const auto now = ctx_.clock.now();
  if (!writer.superseded().empty()) {
    writtenAt_[info.key] = now;  // the ledger's write, earlier in this reconcile
  }
  const auto& current = writer.policy();
  auto status = desiredStatus(info, current, ledger, applyFailure,
                              meta::truncateToSeconds(ctx_.clock.wallNow()));
  // Once per problem: a live agent's report is the same on every renewal, and the status says it
  // meanwhile (the agent, which writes nothing but its Lease, cannot tell the user itself).
  if (!info.dataplaneProblems.empty()) {
    const auto* was = meta::findCondition(info.current->status.conditions, kConditionProgrammed);
    const auto* is = meta::findCondition(status.conditions, kConditionProgrammed);
    if (is != nullptr && is->status != meta::kConditionTrue &&
        (was == nullptr || was->reason != is->reason || was->message != is->message)) {
      ctx_.recorder.event(referenceTo(kPolicyKind, current.metadata), core::kEventTypeWarning,
                          is->reason, is->message);
    }
  }
  const auto* d = info.deployment.deployment.get();
  ctx_.metrics.setPolicy(info.ns, info.name, gatewayShape(current, info.config.get()).replicas,
                         d != nullptr ? d->status.availableReplicas : 0, status.selectedPods,
                         conditionIsTrue(status.conditions, kConditionReady));
  // A change of the count alone waits for the batch (see the header), unless the apply failed:
  // then the reconcile's result is the apply's error, retried with backoff, and a requeue of its
  // own would be dropped with it.
  const auto last = writtenAt_.find(info.key);
  const bool batched = applyFailure.empty() && last != writtenAt_.end() &&
                       onlySelectedPodsDiffer(status, current.status) &&
                       now - last->second < kSelectedPodsBatch;
  if (status == current.status || batched) {
    // An invalid policy's addresses taken for a ledger write that failed, whose return after the
    // InvalidSpec write had to wait for the agents (a live one had yet to observe the view
    // without them): this reconcile is the one the agentlease controller queued once they had.
    // The status records the ledger as it is either way (only the count may differ).
    if (!ledger.assignment && releaseWaits(ctx_, ownerOf(info))) {
      returnUnwritten(ctx_, info, current);
    }
    co_return batched ? ReconcileResult::requeueAfter(last->second + kSelectedPodsBatch - now)
                      : ReconcileResult::done();
  }
  bool written = false;
  auto r = co_await writer.write(std::move(status), "writing status", &written);
  if (!written) {
    co_return r;
  }
  writtenAt_[info.key] = now;
  if (!ledger.assignment) {
    returnUnwritten(ctx_, info, writer.policy());
  }
  co_return ReconcileResult::done();
}

}  // namespace egress::controller
