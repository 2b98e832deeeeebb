#include "pkg/controller/operator/controller.h"

#include "pkg/apis/networking/v1alpha1/validation.h"
#include "pkg/controller/conditions.h"
#include "pkg/controller/names.h"
#include "pkg/controller/status_write.h"
#include "pkg/controllerruntime/event_handlers.h"

namespace egress::controller {
namespace {

using controllerruntime::ReconcileResult;

// How long a burst of policy and pool changes is gathered into one recount.
constexpr auto kSummaryBatch = std::chrono::seconds(2);

// What egress_policies{state} counts a policy as.
enum class SummaryState { kReady, kNotReady, kInvalid };

SummaryState summaryState(const v1alpha1::EgressGatewayPolicy& p) {
  if (conditionIsTrue(p.status.conditions, kConditionReady)) {
    return SummaryState::kReady;
  }
  return conditionReason(p.status.conditions, kConditionIPAllocated) == kReasonInvalidSpec
             ? SummaryState::kInvalid
             : SummaryState::kNotReady;
}

}  // namespace

Result<Ok, std::string> OperatorController::addEventHandlers() {
  auto reg = ctx_.cache.operatorConfigs().addEventHandler(
      controllerruntime::enqueueForObject<v1alpha1::OperatorConfig>(enqueuer()));
  if (!reg) {
    return reg.error().message();
  }
  // The summary counts what the cache holds, so the cache's own changes queue the recount: a
  // status write's echo may reach the cache long after the write (a throttled or relisting
  // watch), and a recount queued by the writer would then count the old status for good.
  const auto recount = [q = enqueuer()] {
    q.addAfter(std::string(kOperatorConfigName), kSummaryBatch);
  };
  cache::EventHandler<v1alpha1::EgressGatewayPolicy> policies;
  policies.onAdd = [recount](const auto&, bool) { recount(); };
  policies.onUpdate = [recount](const auto& oldPolicy, const auto& policy) {
    if (summaryState(*oldPolicy) != summaryState(*policy)) {
      recount();
    }
  };
  policies.onDelete = [recount](const auto&, bool) { recount(); };
  policies.onUndecodable = [recount](const auto&) { recount(); };
  if (auto r = ctx_.cache.policies().addEventHandler(std::move(policies)); !r) {
    return r.error().message();
  }
  cache::EventHandler<v1alpha1::IPAMPool> pools;
  pools.onAdd = [recount](const auto&, bool) { recount(); };
  pools.onDelete = [recount](const auto&, bool) { recount(); };
  if (auto r = ctx_.cache.pools().addEventHandler(std::move(pools)); !r) {
    return r.error().message();
  }
  return Ok{};
}

net::awaitable<ReconcileResult> OperatorController::reconcile(const std::string& key) {
  auto config = ctx_.cache.operatorConfigs().indexer().get(key);
  if (!config) {
    co_return ReconcileResult::done();
  }
  const int64_t generation = config->metadata.generation;
  const auto now = meta::truncateToSeconds(ctx_.clock.wallNow());
  v1alpha1::OperatorConfigStatus status = config->status;
  status.observedGeneration = generation;
  meta::Condition ready;
  if (key != kOperatorConfigName) {
    ready = makeCondition(kConditionReady, false, kReasonNotDefault,
                          "only the OperatorConfig named default is read; this one is ignored",
                          generation);
  } else {
    int readyCount = 0;
    int invalid = 0;
    const auto policies = ctx_.cache.allPolicies();
    for (const auto& p : policies) {
      const SummaryState state = summaryState(*p);
      readyCount += state == SummaryState::kReady ? 1 : 0;
      invalid += state == SummaryState::kInvalid ? 1 : 0;
    }
    const int total = static_cast<int>(policies.size());
    ctx_.metrics.setPolicies(readyCount, total - readyCount - invalid, invalid);
    status.policies = total;
    status.readyPolicies = readyCount;
    status.pools = static_cast<int32_t>(ctx_.cache.allPools().size());
    const auto errs = v1alpha1::validate(*config);
    if (!errs.empty()) {
      ready = makeCondition(kConditionReady, false, kReasonInvalidSpec, validation::join(errs),
                            generation);
    } else if (!config->spec.defaultPool.empty() && !ctx_.cache.pool(config->spec.defaultPool)) {
      ready = makeCondition(
          kConditionReady, false, kReasonDefaultPoolNotFound,
          "spec.defaultPool names IPAMPool " + config->spec.defaultPool + ", which does not exist",
          generation);
    } else {
      ready = makeCondition(
          kConditionReady, true, kReasonReady,
          std::to_string(readyCount) + " of " + std::to_string(total) + " policies are Ready",
          generation);
    }
  }
  const std::string wasReason = conditionReason(config->status.conditions, kConditionReady);
  meta::setCondition(status.conditions, ready, now);
  if (status == config->status) {
    co_return ReconcileResult::done();
  }
  if (ready.status != meta::kConditionTrue && wasReason != ready.reason) {
    ctx_.recorder.event(referenceTo(kOperatorConfigKind, config->metadata), core::kEventTypeWarning,
                        ready.reason, ready.message);
  }
  v1alpha1::OperatorConfig updated = *config;
  updated.status = std::move(status);
  co_return co_await writeStatus(ctx_.client, std::move(updated), "writing status");
}

}  // namespace egress::controller
