#include "pkg/base/clock.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace egress {
namespace {

constexpr auto kUseTuple = net::as_tuple(net::use_awaitable);

class RealTimer : public Timer {
 public:
  explicit RealTimer(const net::any_io_executor& ex) : timer_(ex) {}
  net::awaitable<bool> waitUntil(TimePoint deadline) override {
    timer_.expires_at(deadline);
    auto [ec] = co_await timer_.async_wait(kUseTuple);
    co_return !ec;
  }
  void cancel() override { timer_.cancel(); }

 private:
  net::steady_timer timer_;
};

}  // namespace

net::awaitable<bool> Clock::sleepFor(Duration d) {
  auto timer = makeTimer();
  co_return co_await timer->waitUntil(now() + d);
}

std::unique_ptr<Timer> RealClock::makeTimer() {
  return std::make_unique<RealTimer>(executor_);
}

// Waits on an Asio timer that never expires by itself; the FakeClock cancels it to wake it,
// after marking whether the deadline was reached.
class FakeTimer : public Timer {
 public:
  FakeTimer(FakeClock& clock, const net::any_io_executor& ex) : clock_(&clock), timer_(ex) {}
  ~FakeTimer() override { unregister(); }

  net::awaitable<bool> waitUntil(TimePoint deadline) override {
    unregister();
    if (clock_ == nullptr) {
      co_return false;
    }
    if (deadline <= clock_->now()) {
      co_return true;
    }
    fired_ = false;
    timer_.expires_at(net::steady_timer::time_point::max());
    position_ = clock_->waiting_.emplace(deadline, this);
    registered_ = true;
    auto [ec] = co_await timer_.async_wait(kUseTuple);
    (void)ec;
    unregister();
    co_return fired_;
  }

  void cancel() override {
    unregister();
    fired_ = false;
    timer_.cancel();
  }

  void fireFromClock() {
    registered_ = false;  // the clock already took us off its list
    fired_ = true;
    timer_.cancel();
  }
  void detach() {
    registered_ = false;
    clock_ = nullptr;
    timer_.cancel();
  }

 private:
  void unregister() {
    if (registered_ && clock_ != nullptr) {
      clock_->waiting_.erase(position_);
    }
    registered_ = false;
  }

  FakeClock* clock_;
  net::steady_timer timer_;
  std::multimap<TimePoint, FakeTimer*>::iterator position_;
  bool registered_ = false;
  bool fired_ = false;
};

FakeClock::FakeClock(net::any_io_executor executor, std::chrono::system_clock::time_point wallStart)
    : executor_(std::move(executor)),
      now_(TimePoint{} + std::chrono::hours(1)),
      wallStart_(wallStart) {}

FakeClock::~FakeClock() {
  for (auto& [deadline, timer] : waiting_) {
    (void)deadline;
    timer->detach();
  }
  waiting_.clear();
}

std::unique_ptr<Timer> FakeClock::makeTimer() {
  return std::make_unique<FakeTimer>(*this, executor_);
}

void FakeClock::advance(Duration d) {
  setTime(now_ + d);
}

void FakeClock::setTime(TimePoint t) {
  if (t > now_) {
    now_ = t;
  }
  fire();
}

void FakeClock::fire() {
  while (!waiting_.empty() && waiting_.begin()->first <= now_) {
    FakeTimer* timer = waiting_.begin()->second;
    waiting_.erase(waiting_.begin());
    timer->fireFromClock();
  }
}

std::optional<FakeClock::TimePoint> FakeClock::nextDeadline() const {
  if (waiting_.empty()) {
    return std::nullopt;
  }
  return waiting_.begin()->first;
}

}  // namespace egress
