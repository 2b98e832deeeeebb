// File: queue_config.h
//
// What every workqueue is built from: its name (the `name` label of the workqueue_* metrics),
// the Clock all its time comes from, the executor its own coroutines run on, where its metrics
// go, and, for a RateLimitingQueue, its rate limiter.
//
//   RateLimitingQueue<std::string> queue({.name = "egressgateway", .clock = clock,
//                                         .executor = ioc.get_executor(), .registry = &registry});
#pragma once

#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <prometheus/registry.h>

#include "pkg/base/clock.h"
#include "pkg/workqueue/rate_limiter.h"

namespace egress::workqueue {

template <class T>
struct QueueConfig {
  // Metrics label. As in client-go, an unnamed queue has no metrics.
  std::string name;
  // Must outlive the queue.
  Clock& clock;
  // Runs the queue's background coroutines (delayed adds, the unfinished-work refresh) and the
  // timers its getters and drainers park on. Callers may await the queue from another executor
  // only if it runs on the same single thread.
  boost::asio::any_io_executor executor;
  // Null: no metrics. Must outlive the queue.
  prometheus::Registry* registry = nullptr;
  // RateLimitingQueue only; null means defaultControllerRateLimiter(clock).
  std::unique_ptr<RateLimiter<T>> limiter;
};

}  // namespace egress::workqueue
