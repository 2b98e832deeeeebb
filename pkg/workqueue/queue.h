// File: queue.h
//
// client-go's workqueue (util/workqueue/queue.go) on one io_context: the queue controllers feed
// keys into and their workers take keys from. It is
//   - fair: items come out in the order they were first added;
//   - stingy: an item is never handed to two workers at once, and adds that arrive before it is
//     taken collapse into one;
//   - re-entrant: an item added while a worker processes it is queued again once the worker
//     calls done(), so the change is not lost;
//   - stoppable: shutDown() releases waiting workers, shutDownWithDrain() also waits for the
//     items in flight;
//   - lossless: an item handed to a getter reaches its caller. A get() whose caller gives up
//     (Asio cancellation, e.g. losing `get() || timer`) takes nothing; get(timeout) waits with
//     a timeout on the queue's Clock.
//
//   while (auto key = co_await queue.get()) {   // nullopt: the queue is shut down
//     co_await reconcile(*key);
//     queue.done(*key);
//   }
//
// No threads and no locks: every call and every coroutine must run on the same io_context
// thread. State shared with coroutines that may still be parked lives in a shared_ptr they
// co-own, so destroying the queue (which shuts it down) never leaves them dangling.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>

#include "pkg/base/clock.h"
#include "pkg/base/notifier.h"
#include "pkg/workqueue/metrics.h"
#include "pkg/workqueue/queue_config.h"

namespace egress::workqueue {

namespace net = boost::asio;

// client-go refreshes workqueue_unfinished_work_seconds and
// workqueue_longest_running_processor_seconds this often.
inline constexpr std::chrono::milliseconds kUnfinishedWorkUpdatePeriod{500};

namespace detail {

inline double toSeconds(Clock::Duration d) {
  return std::chrono::duration<double>(d).count();
}

// The base queue's state, co-owned by the Queue handle and by every coroutine parked in it.
template <class T, class Hash>
class QueueState {
 public:
  QueueState(Clock& clock, const net::any_io_executor& executor,
             std::unique_ptr<QueueMetrics> metrics)
      : clock_(&clock), getters_(executor), drainers_(executor), metrics_(std::move(metrics)) {
    if (metrics_) {
      ticker_ = clock.makeTimer();
    }
  }
  QueueState(const QueueState&) = delete;
  QueueState& operator=(const QueueState&) = delete;

  void add(const T& item) {
    // client-go also calls Touch(item) on its queue storage here; that hook only matters to
    // reordering storages (priority queues) and is a no-op for the FIFO, so it is left out.
    if (shuttingDown_ || dirty_.contains(item)) {
      return;
    }
    if (metrics_) {
      metrics_->add();
      addTimes_.try_emplace(item, clock_->now());
    }
    dirty_.insert(item);
    if (processing_.contains(item)) {
      return;  // done() queues it again
    }
    queue_.push_back(item);
    getters_.notifyOne();
  }

  // Takes the next item, waiting for one until `deadline` (max: no deadline). Deciding between
  // "an item" and "nothing" happens here, in one step after one wake-up: a getter woken for an
  // item in the tick its deadline passes takes the item, and one whose caller gave up (Asio
  // cancellation) takes nothing and passes the wake-up on (Notifier). Nothing is lost either way.
  static net::awaitable<std::optional<T>> get(std::shared_ptr<QueueState> self,
                                              Clock::TimePoint deadline) {
    auto place = Notifier::Place::Back;
    while (self->queue_.empty() && !self->shuttingDown_) {
      bool woken = false;
      if (deadline == Clock::TimePoint::max()) {
        woken = co_await self->getters_.wait(place);
      } else {
        woken = co_await self->getters_.waitUntil(*self->clock_, deadline, place);
      }
      if (!woken) {
        co_return std::nullopt;  // timed out or cancelled, without taking anything
      }
      // Woken but possibly beaten to the item by a running coroutine: wait again, keeping our
      // place in line.
      place = Notifier::Place::Front;
    }
    // Even after shutdown, what is still queued is handed out; nullopt only once it is empty, or
    // when the queue is gone (its caller could not call done()).
    if (self->queue_.empty() || self->destroyed_) {
      co_return std::nullopt;
    }
    T item = std::move(self->queue_.front());
    self->queue_.pop_front();
    if (self->metrics_) {
      const auto now = self->clock_->now();
      self->processingStart_.insert_or_assign(item, now);
      std::optional<double> queued;
      if (auto it = self->addTimes_.find(item); it != self->addTimes_.end()) {
        queued = toSeconds(now - it->second);
        self->addTimes_.erase(it);
      }
      self->metrics_->get(queued);
    }
    self->processing_.insert(item);
    self->dirty_.erase(item);
    co_return item;
  }

  void done(const T& item) {
    auto it = processing_.find(item);
    if (it == processing_.end()) {
      // Deliberate deviation: client-go would append a dirty item to the queue a second time
      // here, and two workers could then hold it at once. done() of an item nobody is
      // processing is a caller bug; ignoring it keeps the "never concurrently" promise.
      return;
    }
    if (metrics_) {
      if (auto start = processingStart_.find(item); start != processingStart_.end()) {
        metrics_->done(toSeconds(clock_->now() - start->second));
        processingStart_.erase(start);
      }
    }
    processing_.erase(it);
    if (dirty_.contains(item)) {
      queue_.push_back(item);
      getters_.notifyOne();
    }
    if (processing_.empty()) {
      drainers_.notify();
    }
  }

  size_t len() const { return queue_.size(); }
  bool shuttingDown() const { return shuttingDown_; }

  // ShutDown (drain=false) or the first half of ShutDownWithDrain (drain=true). A later
  // ShutDown turns drain off, which releases anyone still waiting for the drain.
  void shutDown(bool drain) {
    drain_ = drain;
    shuttingDown_ = true;
    getters_.notify();
    if (!drain) {
      drainers_.notify();
    }
    if (ticker_) {
      ticker_->cancel();
    }
  }

  // The Queue handle is being destroyed: shut down, and hand out nothing more, not even to a
  // getter woken for an item just before.
  void abandon() {
    destroyed_ = true;
    shutDown(false);
  }

  // The second half of ShutDownWithDrain: waits until no item is being processed. Items still
  // queued do not count (client-go waits on the processing set only).
  static net::awaitable<void> waitForDrain(std::shared_ptr<QueueState> self) {
    while (!self->processing_.empty() && self->drain_) {
      const bool woken = co_await self->drainers_.wait();
      if (!woken) {
        co_return;
      }
    }
  }

  // workqueue_unfinished_work_seconds / workqueue_longest_running_processor_seconds, refreshed
  // every 500ms by this Clock-driven coroutine, as client-go's goroutine does. Computing them
  // on demand would mean reading the queue from the metrics exposer's thread, which the
  // lock-free single-thread design rules out; the gauges themselves are atomic.
  // `next` is the first refresh, fixed when the queue is made (not when this first runs).
  static net::awaitable<void> updateUnfinishedWorkLoop(std::shared_ptr<QueueState> self,
                                                       Clock::TimePoint next) {
    while (!self->shuttingDown_) {
      const bool fired = co_await self->ticker_->waitUntil(next);
      if (self->shuttingDown_) {
        break;
      }
      if (!fired) {
        continue;
      }
      self->updateUnfinishedWork();
      const auto now = self->clock_->now();
      next += kUnfinishedWorkUpdatePeriod;
      if (next <= now) {
        next = now + kUnfinishedWorkUpdatePeriod;  // like a Go ticker, skip missed ticks
      }
    }
  }

  QueueMetrics* metrics() { return metrics_.get(); }
  Clock& clock() { return *clock_; }

 private:
  void updateUnfinishedWork() {
    const auto now = clock_->now();
    double total = 0;
    double oldest = 0;
    for (const auto& [item, start] : processingStart_) {
      (void)item;
      const double age = toSeconds(now - start);
      total += age;
      if (age > oldest) {
        oldest = age;
      }
    }
    metrics_->setUnfinishedWork(total, oldest);
  }

  Clock* clock_;
  // Order of work. Every queued item is dirty and not processing.
  std::deque<T> queue_;
  // Items that need processing (queued, or re-added while processing).
  std::unordered_set<T, Hash> dirty_;
  // Items a worker holds; they may be dirty too, and are re-queued by done().
  std::unordered_set<T, Hash> processing_;
  bool shuttingDown_ = false;
  bool drain_ = false;
  bool destroyed_ = false;
  Notifier getters_;
  Notifier drainers_;

  std::unique_ptr<QueueMetrics> metrics_;
  std::unique_ptr<Timer> ticker_;
  // Only with metrics: first add since the last get, and start of processing, per item.
  std::unordered_map<T, Clock::TimePoint, Hash> addTimes_;
  std::unordered_map<T, Clock::TimePoint, Hash> processingStart_;
};

}  // namespace detail

template <class T, class Hash = std::hash<T>>
class Queue {
 public:
  explicit Queue(const QueueConfig<T>& config) : Queue(config, /*withRetries=*/false) {}
  // Shuts the queue down: parked getters wake up with nullopt, even those woken for an item.
  virtual ~Queue() { state_->abandon(); }
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  // Marks `item` as needing processing. Ignored while shutting down, and a no-op if the item
  // is already waiting. An item being processed is queued again only when done() is called.
  void add(const T& item) { state_->add(item); }

  // Waits for an item and marks it as being processed; the caller must call done(item) when
  // finished. nullopt once the queue is shut down and empty (the worker should exit), or if
  // the wait was cancelled through Asio (then nothing was taken).
  net::awaitable<std::optional<T>> get() { return State::get(state_, Clock::TimePoint::max()); }
  // Like get(), but gives up after `timeout` on the queue's Clock: nullopt then, with nothing
  // taken; shuttingDown() tells that apart from a shut-down queue. An item that arrives in the
  // very tick the timeout passes is returned, not dropped.
  net::awaitable<std::optional<T>> get(Clock::Duration timeout) {
    const auto now = state_->clock().now();
    const auto deadline =
        timeout >= Clock::TimePoint::max() - now ? Clock::TimePoint::max() : now + timeout;
    return State::get(state_, deadline);
  }

  // Marks `item` as processed; if it was added again meanwhile, it goes back in the queue.
  void done(const T& item) { state_->done(item); }

  // Items waiting to be taken (not those being processed).
  size_t len() const { return state_->len(); }

  // Stops accepting items and wakes every parked getter. Items still queued are handed out
  // until the queue is empty; then get() returns nullopt.
  virtual void shutDown() { state_->shutDown(false); }

  // Like shutDown(), then waits until every item being processed is done(). The shutdown
  // itself happens when this is called, not when the result is awaited. A later shutDown()
  // ends the wait early. Workers must call done(), or this never finishes.
  virtual net::awaitable<void> shutDownWithDrain() {
    state_->shutDown(true);
    return State::waitForDrain(state_);
  }

  bool shuttingDown() const { return state_->shuttingDown(); }
  const std::string& name() const { return name_; }
  // Why metrics are off although a registry and a name were given (empty if they are on).
  const std::string& metricsError() const { return metricsError_; }

 protected:
  using State = detail::QueueState<T, Hash>;

  Queue(const QueueConfig<T>& config, bool withRetries) : name_(config.name) {
    auto metrics = QueueMetrics::create(config.registry, config.name, withRetries, &metricsError_);
    const bool withMetrics = metrics != nullptr;
    state_ = std::make_shared<State>(config.clock, config.executor, std::move(metrics));
    // As in client-go, the refresh runs only when there are metrics to refresh.
    if (withMetrics) {
      net::co_spawn(
          config.executor,
          State::updateUnfinishedWorkLoop(state_, config.clock.now() + kUnfinishedWorkUpdatePeriod),
          rethrowUnhandled);
    }
  }

  std::string name_;
  std::string metricsError_;
  std::shared_ptr<State> state_;
};

extern template class detail::QueueState<std::string, std::hash<std::string>>;
extern template class Queue<std::string>;

}  // namespace egress::workqueue
