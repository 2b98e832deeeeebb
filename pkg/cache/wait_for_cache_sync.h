// File: wait_for_cache_sync.h
//
// client-go's WaitForCacheSync: a controller starts its workers only once every informer it
// reads has synced (its cache holds the initial list and the handlers have been told of it).
#pragma once

#include <vector>

#include <boost/asio/awaitable.hpp>

#include "pkg/base/clock.h"
#include "pkg/cache/informer_base.h"

namespace egress::cache {

// Polls every 100 ms (client-go's syncedPollPeriod) until all informers have synced; false if
// `deadline` passes first.
net::awaitable<bool> waitForCacheSync(Clock& clock, std::vector<const InformerBase*> informers,
                                      Clock::TimePoint deadline);

}  // namespace egress::cache
