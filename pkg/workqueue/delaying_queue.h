// File: delaying_queue.h
//
// client-go's DelayingQueue (util/workqueue/delaying_queue.go): a Queue whose items can also be
// added after a delay, for retries and periodic requeues without hot loops. Waiting items are
// kept ordered by the time they become ready, one entry per item: a second addAfter for the
// same item only counts if it is sooner. A single coroutine sleeps on a Clock timer until the
// earliest deadline and moves ready items into the queue.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>

#include "pkg/base/clock.h"
#include "pkg/workqueue/queue.h"
#include "pkg/workqueue/queue_config.h"
#include "pkg/workqueue/rate_limiter.h"

namespace egress::workqueue {

namespace detail {

// Items waiting for their time, co-owned by the DelayingQueue and by its waiting coroutine.
template <class T, class Hash>
class DelayState : public std::enable_shared_from_this<DelayState<T, Hash>> {
 public:
  using TimePoint = Clock::TimePoint;

  DelayState(std::shared_ptr<QueueState<T, Hash>> queue, Clock& clock,
             net::any_io_executor executor)
      : queue_(std::move(queue)),
        clock_(&clock),
        executor_(std::move(executor)),
        timer_(clock.makeTimer()) {}
  DelayState(const DelayState&) = delete;
  DelayState& operator=(const DelayState&) = delete;

  // Adds `item` to the queue at now + delay (delay > 0), unless it already waits for an earlier
  // time. client-go hands entries to its waiting goroutine over a channel; on one thread the
  // waiting set is updated in place and the coroutine only needs a nudge when the head moves.
  void addAfter(const T& item, Duration delay) {
    const auto now = clock_->now();
    // Saturate: a limiter may answer "never" with Duration::max().
    const TimePoint readyAt = delay >= TimePoint::max() - now ? TimePoint::max() : now + delay;
    if (auto known = byItem_.find(item); known != byItem_.end()) {
      if (readyAt >= known->second->first) {
        return;  // a later (or equal) time never postpones the earlier one
      }
      waiting_.erase(known->second);
      known->second = waiting_.emplace(readyAt, item);
    } else {
      byItem_.emplace(item, waiting_.emplace(readyAt, item));
    }
    if (!running_) {
      running_ = true;
      net::co_spawn(executor_, run(this->shared_from_this()), rethrowUnhandled);
    } else if (readyAt < armedFor_) {
      timer_->cancel();  // re-arm for the new, earlier head
    }
  }

  // Drops every waiting item and wakes the coroutine, which then sees the shutdown and exits.
  void stop() {
    waiting_.clear();
    byItem_.clear();
    timer_->cancel();
  }

  size_t waiting() const { return waiting_.size(); }

 private:
  // Runs while items wait, and exits when none do, so an idle queue holds no timer.
  // client-go also wakes every 10s as "insurance"; here the only way the head can change is
  // addAfter, which re-arms the timer itself, so there is nothing to insure against.
  static net::awaitable<void> run(std::shared_ptr<DelayState> self) {
    while (!self->queue_->shuttingDown()) {
      const auto now = self->clock_->now();
      while (!self->waiting_.empty() && self->waiting_.begin()->first <= now) {
        auto node = self->waiting_.extract(self->waiting_.begin());
        self->byItem_.erase(node.mapped());
        self->queue_->add(node.mapped());
      }
      if (self->waiting_.empty()) {
        break;
      }
      const TimePoint deadline = self->waiting_.begin()->first;
      self->armedFor_ = deadline;
      co_await self->timer_->waitUntil(deadline);
      self->armedFor_ = TimePoint::max();
    }
    self->running_ = false;
  }

  std::shared_ptr<QueueState<T, Hash>> queue_;
  Clock* clock_;
  net::any_io_executor executor_;
  std::unique_ptr<Timer> timer_;
  // Ordered by ready time (the min-heap of client-go's waitForPriorityQueue; equal times keep
  // insertion order), plus an index by item for the dedupe.
  std::multimap<TimePoint, T> waiting_;
  std::unordered_map<T, typename std::multimap<TimePoint, T>::iterator, Hash> byItem_;
  // The deadline the coroutine sleeps until (max when it is not sleeping).
  TimePoint armedFor_ = TimePoint::max();
  bool running_ = false;
};

}  // namespace detail

template <class T, class Hash = std::hash<T>>
class DelayingQueue : public Queue<T, Hash> {
 public:
  explicit DelayingQueue(const QueueConfig<T>& config)
      : Queue<T, Hash>(config, /*withRetries=*/true),
        delay_(std::make_shared<detail::DelayState<T, Hash>>(this->state_, config.clock,
                                                             config.executor)) {}
  ~DelayingQueue() override { delay_->stop(); }

  // Adds `item` once `delay` has passed; delay <= 0 adds it now. Ignored while shutting down.
  // If the item already waits, the earlier of the two times wins. A plain add() does not cancel
  // a pending addAfter (client-go behaves the same, kubernetes/kubernetes#112325).
  void addAfter(const T& item, Duration delay) {
    if (this->shuttingDown()) {
      return;
    }
    // client-go counts every call as a retry, whatever the delay.
    if (auto* metrics = this->state_->metrics()) {
      metrics->retry();
    }
    if (delay <= Duration::zero()) {
      this->add(item);
      return;
    }
    delay_->addAfter(item, delay);
  }

  // Items waiting for their delay to pass (not yet in len()).
  size_t waiting() const { return delay_->waiting(); }

  void shutDown() override {
    Queue<T, Hash>::shutDown();
    delay_->stop();
  }
  net::awaitable<void> shutDownWithDrain() override {
    auto drained = Queue<T, Hash>::shutDownWithDrain();
    delay_->stop();
    return drained;
  }

 private:
  std::shared_ptr<detail::DelayState<T, Hash>> delay_;
};

extern template class detail::DelayState<std::string, std::hash<std::string>>;
extern template class DelayingQueue<std::string>;

}  // namespace egress::workqueue
