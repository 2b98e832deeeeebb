// File: controller.h
//
// The ipampool subcontroller: reconciles IPAMPools. It keeps the allocator's view of the pool in
// line with its spec (created, changed, deleted, invalid), and reports the pool's usage per
// family (total, allocated, free; saturating at 2^63-1), the policies' allocations and these
// conditions in its status, as events when they flip, and as egress_ipam_pool_addresses:
//   Ready        False while the spec is invalid (InvalidSpec), while it overlaps an older pool
//                (Overlapping), or while addresses in use lie outside its CIDRs or inside an
//                exclusion (AllocatedOutsidePool: they stay allocated until released)
//   Exhausted    True when a family it has has no free address left
//   Overlapping  True while an older pool's CIDRs overlap this one's: it makes no new
//                allocations (the older pool, by creation time then name, wins)
// What it watches: IPAMPools (the pool itself; and every pool when one's spec, labels or
// conditions change, since overlaps are pairwise); and the Context's trigger `pools`: the
// egressgateway controller's, whenever a policy's ledger in the pool changes (batched).
#pragma once

#include <string>

#include "pkg/controller/subcontroller.h"

namespace egress::controller {

class IPAMPoolController final : public Subcontroller {
  using Subcontroller::Subcontroller;
  Result<Ok, std::string> addEventHandlers() override;
  net::awaitable<controllerruntime::ReconcileResult> reconcile(const std::string& key) override;
};

// The status `pool` should have, from the allocator's state (pure; exposed for tests).
v1alpha1::IPAMPoolStatus desiredPoolStatus(const v1alpha1::IPAMPool& pool,
                                           const ipam::PoolState& state, meta::Time now);

}  // namespace egress::controller
