// File: pool_sync.h
//
// The allocator's copy of an IPAMPool's spec, kept in line with the watch cache. Both the
// IPAMPool controller and the IPPoolProcessor call it, so a policy reconciled before its new
// pool's own reconcile still sees the pool.
#pragma once

#include <string>

#include "pkg/controller/context.h"

namespace egress::controller {

// Brings the allocator's pool `name` in line with the cached IPAMPool (created, changed,
// deleted, or invalid); nothing for "".
void syncPoolFromCache(Context& ctx, const std::string& name);

}  // namespace egress::controller
