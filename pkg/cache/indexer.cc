#include "pkg/cache/indexer.h"

#include "pkg/cache/shared_informer.h"

namespace egress::cache {

std::optional<std::pair<std::string, std::string>> splitKey(const std::string& key) {
  const auto slash = key.find('/');
  if (slash == std::string::npos) {
    return std::make_pair(std::string(), key);
  }
  if (key.find('/', slash + 1) != std::string::npos) {
    return std::nullopt;
  }
  return std::make_pair(key.substr(0, slash), key.substr(slash + 1));
}

net::awaitable<bool> waitForCacheSync(Clock& clock, std::vector<const InformerBase*> informers,
                                      Clock::TimePoint deadline) {
  auto timer = clock.makeTimer();
  for (;;) {
    bool all = true;
    for (const auto* informer : informers) {
      all = all && informer->hasSynced();
    }
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
