#include "pkg/cache/wait_for_cache_sync.h"

#include <algorithm>

namespace egress::cache {

net::awaitable<bool> waitForCacheSync(Clock& clock, std::vector<const InformerBase*> informers,
                                      Clock::TimePoint deadline) {
  auto timer = clock.makeTimer();
  for (;;) {
    const bool all = std::all_of(informers.begin(), informers.end(),
                                 [](const InformerBase* i) { return i->hasSynced(); });
    if (all) {
      co_return true;
    }
    if (clock.now() >= deadline) {
      co_return false;
    }
    co_await timer->waitUntil(std::min(deadline, clock.now() + std::chrono::milliseconds(100)));
  }
}

}  // namespace egress::cache
