#include "pkg/controller/ipampool/controller.h"

#include "pkg/controller/conditions.h"
#include "pkg/controller/names.h"
#include "pkg/controller/pool_sync.h"
#include "pkg/controller/status_write.h"
#include "pkg/controller/update_filters.h"
#include "pkg/controllerruntime/event_handlers.h"

namespace egress::controller {
namespace {

using controllerruntime::ReconcileResult;

v1alpha1::IPFamilyCounts apiCounts(const ipam::FamilyCounts& c) {
  return {c.total, c.allocated, c.free};
}

int64_t saturatingAdd(int64_t a, int64_t b) {
  return a > ipam::FamilyCounts::kMax - b ? ipam::FamilyCounts::kMax : a + b;
}

}  // namespace

v1alpha1::IPAMPoolStatus desiredPoolStatus(const v1alpha1::IPAMPool& pool,
                                           const ipam::PoolState& state, meta::Time now) {
  v1alpha1::IPAMPoolStatus s = pool.status;
  const int64_t generation = pool.metadata.generation;
  s.ipv4.reset();
  s.ipv6.reset();
  if (state.hasIPv4) {
    s.ipv4 = apiCounts(state.ipv4);
  }
  if (state.hasIPv6) {
    s.ipv6 = apiCounts(state.ipv6);
  }
  const int64_t outside = saturatingAdd(state.ipv4.outside, state.ipv6.outside);
  s.allocated = saturatingAdd(saturatingAdd(state.ipv4.allocated, state.ipv6.allocated), outside);
  s.observedGeneration = generation;

  meta::Condition ready;
  if (state.invalid) {
    ready = makeCondition(kConditionReady, false, kReasonInvalidSpec, *state.invalid, generation);
  } else if (!state.overlaps.empty()) {
    ready = makeCondition(kConditionReady, false, kReasonOverlapping,
                          "overlaps IPAMPool " + state.overlaps + ", which is older", generation);
  } else if (outside > 0) {
    ready =
        makeCondition(kConditionReady, false, kReasonAllocatedOutsidePool,
                      std::to_string(outside) +
                          " addresses in use lie outside the pool's CIDRs or inside an exclusion; "
                          "they stay allocated until their policies release them",
                      generation);
  } else if (pool.spec.disabled) {
    ready =
        makeCondition(kConditionReady, true, kReasonDisabled,
                      "disabled: existing allocations are kept, no new ones are made", generation);
  } else {
    ready = makeCondition(kConditionReady, true, kReasonReady, "allocating", generation);
  }
  const bool v4Empty = state.hasIPv4 && state.ipv4.free == 0;
  const bool v6Empty = state.hasIPv6 && state.ipv6.free == 0;
  meta::Condition exhausted =
      v4Empty || v6Empty
          ? makeCondition(kConditionExhausted, true, kReasonNoFreeAddresses,
                          std::string("no free ") +
                              (v4Empty && v6Empty ? "IPv4 or IPv6" : (v4Empty ? "IPv4" : "IPv6")) +
                              " address left",
                          generation)
          : makeCondition(kConditionExhausted, false, kReasonFreeAddressesAvailable,
                          "free addresses left", generation);
  meta::Condition overlapping =
      state.overlaps.empty()
          ? makeCondition(kConditionOverlapping, false, kReasonNoOverlap,
                          "no older pool overlaps this one", generation)
          : makeCondition(kConditionOverlapping, true, kReasonOverlapsOlderPool,
                          "overlaps IPAMPool " + state.overlaps +
                              ", which is older: this pool makes no new allocations while it does",
                          generation);
  meta::setCondition(s.conditions, ready, now);
  meta::setCondition(s.conditions, exhausted, now);
  meta::setCondition(s.conditions, overlapping, now);
  return s;
}

Result<Ok, std::string> IPAMPoolController::addEventHandlers() {
  // A policy's allocation in a pool changed its counts (batched by the egressgateway controller).
  ctx_.pools.connect(enqueuer());
  Cache* cache = &ctx_.cache;
  auto own = cache->pools().addEventHandler(
      controllerruntime::enqueueForObject<v1alpha1::IPAMPool>(enqueuer()));
  if (!own) {
    return own.error().message();
  }
  // Overlaps are pairwise: a pool's change may change another's Overlapping condition, so every
  // pool is looked at again when what the conditions depend on changed.
  auto all = cache->pools().addEventHandler(controllerruntime::enqueueMapped<v1alpha1::IPAMPool>(
      enqueuer(),
      [cache](const v1alpha1::IPAMPool&) {
        std::vector<std::string> names;
        for (const auto& p : cache->allPools()) {
          names.push_back(p->metadata.name);
        }
        return names;
      },
      poolUpdateMattersToPolicies));
  if (!all) {
    return all.error().message();
  }
  return Ok{};
}

net::awaitable<ReconcileResult> IPAMPoolController::reconcile(const std::string& key) {
  syncPoolFromCache(ctx_, key);
  auto pool = ctx_.cache.pool(key);
  if (!pool) {
    ctx_.metrics.removePool(key);
    co_return ReconcileResult::done();
  }
  const ipam::PoolState state = ctx_.allocator.poolState(key);
  ctx_.metrics.setPoolAddresses(key, ipam::Family::kIPv4, state.hasIPv4, state.ipv4);
  ctx_.metrics.setPoolAddresses(key, ipam::Family::kIPv6, state.hasIPv6, state.ipv6);
  auto status = desiredPoolStatus(*pool, state, meta::truncateToSeconds(ctx_.clock.wallNow()));
  if (status == pool->status) {
    co_return ReconcileResult::done();
  }
  const auto ref = referenceTo(kPoolKind, pool->metadata);
  const std::string wasReady = conditionReason(pool->status.conditions, kConditionReady);
  const std::string nowReady = conditionReason(status.conditions, kConditionReady);
  if (nowReady != kReasonReady && nowReady != kReasonDisabled && wasReady != nowReady) {
    ctx_.recorder.event(ref, core::kEventTypeWarning, nowReady,
                        meta::findCondition(status.conditions, kConditionReady)->message);
  }
  if (conditionIsTrue(status.conditions, kConditionExhausted) &&
      !conditionIsTrue(pool->status.conditions, kConditionExhausted)) {
    ctx_.recorder.event(ref, core::kEventTypeWarning, kEventPoolExhausted,
                        meta::findCondition(status.conditions, kConditionExhausted)->message);
  }
  v1alpha1::IPAMPool updated = *pool;
  updated.status = std::move(status);
  co_return co_await writeStatus(ctx_.client, std::move(updated), "writing status");
}

}  // namespace egress::controller
