// File: rate_limiting_queue.h
//
// client-go's RateLimitingQueue (util/workqueue/rate_limiting_queue.go): a DelayingQueue whose
// retries are spaced by a RateLimiter. The controller pattern:
//
//   if (failed) queue.addRateLimited(key);   // back off: 5ms, 10ms, 20ms, ... 1000s
//   else queue.forget(key);                  // success resets the item's backoff
//   queue.done(key);
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "pkg/workqueue/delaying_queue.h"
#include "pkg/workqueue/queue_config.h"
#include "pkg/workqueue/rate_limiter.h"

namespace egress::workqueue {

template <class T, class Hash = std::hash<T>>
class RateLimitingQueue : public DelayingQueue<T, Hash> {
 public:
  // Takes config.limiter; without one, defaultControllerRateLimiter(config.clock).
  explicit RateLimitingQueue(QueueConfig<T> config)
      : DelayingQueue<T, Hash>(config),
        limiter_(config.limiter ? std::move(config.limiter)
                                : defaultControllerRateLimiter<T, Hash>(config.clock)) {}

  // addAfter(item, limiter.when(item)). The limiter is consulted even while shutting down, as
  // in client-go, so it records the failure either way.
  void addRateLimited(const T& item) { this->addAfter(item, limiter_->when(item)); }
  // The item succeeded: reset its backoff. It stays in the queue if it is there.
  void forget(const T& item) { limiter_->forget(item); }
  int numRequeues(const T& item) { return limiter_->numRequeues(item); }

  RateLimiter<T>& rateLimiter() { return *limiter_; }

 private:
  std::unique_ptr<RateLimiter<T>> limiter_;
};

extern template class RateLimitingQueue<std::string>;

}  // namespace egress::workqueue
