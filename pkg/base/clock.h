// File: clock.h
//
// Time as a seam: every component that waits (reflector backoff, workqueue delays, leader
// election renewals, resyncs) takes a Clock&, so unit tests drive time by hand with FakeClock
// instead of sleeping. Timers are coroutine-friendly: `co_await timer->waitUntil(t)` yields true
// when the deadline passed and false when the timer was cancelled.
#pragma once

#include <chrono>
#include <exception>
#include <map>
#include <memory>
#include <optional>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

namespace egress {

namespace net = boost::asio;

class Timer {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  virtual ~Timer() = default;
  // Waits until `deadline` (true) or until cancel() (false). One wait at a time per timer.
  virtual net::awaitable<bool> waitUntil(TimePoint deadline) = 0;
  // Wakes a pending wait with false; a later waitUntil starts afresh.
  virtual void cancel() = 0;
};

class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;
  virtual ~Clock() = default;
  // Monotonic time, for every duration and deadline.
  virtual TimePoint now() const = 0;
  // Wall-clock time, only for what is written to the API (Lease renewTime, conditions).
  virtual std::chrono::system_clock::time_point wallNow() const = 0;
  virtual std::unique_ptr<Timer> makeTimer() = 0;

  // Sleeps for `d` on a timer of its own; false if the coroutine's timer was cancelled.
  net::awaitable<bool> sleepFor(Duration d);
};

// The real thing: steady_clock and Asio timers on `executor`.
class RealClock : public Clock {
 public:
  explicit RealClock(net::any_io_executor executor) : executor_(std::move(executor)) {}
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
  std::chrono::system_clock::time_point wallNow() const override {
    return std::chrono::system_clock::now();
  }
  std::unique_ptr<Timer> makeTimer() override;

 private:
  net::any_io_executor executor_;
};

// A clock that moves only when told to. advance() wakes every timer whose deadline it passes;
// the woken coroutines run when the test next runs the io_context (poll()).
class FakeClock : public Clock {
 public:
  explicit FakeClock(net::any_io_executor executor,
                     std::chrono::system_clock::time_point wallStart =
                         std::chrono::system_clock::time_point{} + std::chrono::hours(24 * 20000));
  ~FakeClock() override;

  TimePoint now() const override { return now_; }
  std::chrono::system_clock::time_point wallNow() const override {
    return wallStart_ + (now_ - TimePoint{});
  }
  std::unique_ptr<Timer> makeTimer() override;

  void advance(Duration d);
  void setTime(TimePoint t);
  // Timers currently waiting (a test can assert a component is blocked on time).
  size_t waiters() const { return waiting_.size(); }
  // The earliest deadline anyone waits for, if any.
  std::optional<TimePoint> nextDeadline() const;

 private:
  friend class FakeTimer;
  void fire();

  net::any_io_executor executor_;
  TimePoint now_;
  std::chrono::system_clock::time_point wallStart_;
  std::multimap<TimePoint, class FakeTimer*> waiting_;
};

// Completion handler for co_spawn of long-running tasks: an exception escaping one must
// not vanish silently (net::detached would swallow it and leave an informer dead); rethrowing
// makes io_context::run() fail loudly instead.
inline void rethrowUnhandled(const std::exception_ptr& e) {
  if (e) {
    std::rethrow_exception(e);
  }
}

}  // namespace egress
