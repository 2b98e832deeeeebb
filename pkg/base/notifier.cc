#include "pkg/base/notifier.h"

#include <algorithm>
#include <utility>

#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/this_coro.hpp>

namespace egress {

// Lives in the parked coroutine's frame. Its timer never fires by itself when there is no
// deadline; a notification wakes it by cancelling the timer, after marking how it was woken.
// If the frame is destroyed while parked (io_context torn down), it takes itself off the list.
class Notifier::Waiter {
 public:
  enum class Woken { No, ByOne, ByAll };

  Waiter(Notifier& owner, std::unique_ptr<Timer> timer)
      : owner_(&owner), timer_(std::move(timer)) {}
  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;
  ~Waiter() {
    if (owner_ != nullptr) {
      owner_->remove(this);
    }
  }

  Timer& timer() { return *timer_; }
  Notifier* owner() const { return owner_; }
  Woken woken() const { return woken_; }
  bool parked() const { return woken_ == Woken::No; }

  void wake(Woken how) {
    woken_ = how;
    timer_->cancel();
  }
  // The Notifier is being destroyed: wake with false, and never touch it again.
  void orphan() {
    owner_ = nullptr;
    if (parked()) {
      timer_->cancel();
    }
  }

 private:
  Notifier* owner_;
  std::unique_ptr<Timer> timer_;
  Woken woken_ = Woken::No;
};

Notifier::Notifier(const net::any_io_executor& executor) : executor_(executor) {}

Notifier::~Notifier() {
  for (Waiter* waiter : waiters_) {
    waiter->orphan();
  }
}

void Notifier::notify() {
  bool wokeSomeone = false;
  for (Waiter* waiter : waiters_) {
    if (waiter->parked()) {
      waiter->wake(Waiter::Woken::ByAll);
      wokeSomeone = true;
    }
  }
  if (!wokeSomeone) {
    pending_ = true;
  }
}

void Notifier::notifyOne() {
  auto it = std::find_if(waiters_.begin(), waiters_.end(), [](Waiter* w) { return w->parked(); });
  if (it != waiters_.end()) {
    (*it)->wake(Waiter::Woken::ByOne);
  }
}

net::awaitable<bool> Notifier::wait() {
  return wait(Place::Back);
}

net::awaitable<bool> Notifier::wait(Place place) {
  // No deadline: a steady timer that never expires, only cancelled.
  return park(RealClock(executor_).makeTimer(), Clock::TimePoint::max(), place);
}

net::awaitable<bool> Notifier::waitUntil(Clock& clock, Clock::TimePoint deadline, Place place) {
  return park(clock.makeTimer(), deadline, place);
}

net::awaitable<bool> Notifier::park(std::unique_ptr<Timer> timer, Clock::TimePoint deadline,
                                    Place place) {
  if (pending_) {
    pending_ = false;
    co_return true;
  }
  Waiter waiter(*this, std::move(timer));
  if (place == Place::Front) {
    waiters_.push_front(&waiter);
  } else {
    waiters_.push_back(&waiter);
  }
  // One resumption, whatever ended the wait (notification, deadline, Asio cancellation, the
  // Notifier's destruction); the flags, not the timer's result, say what happened. A notification
  // that lands in the same tick as the deadline therefore still counts.
  co_await waiter.timer().waitUntil(deadline);
  const auto state = co_await net::this_coro::cancellation_state;
  const bool cancelled = state.cancelled() != net::cancellation_type::none;
  if (waiter.woken() == Waiter::Woken::No) {
    co_return false;
  }
  if (cancelled) {
    // Picked by notifyOne() just before the caller gave up: the caller will not act on it, so
    // the next waiter must.
    if (waiter.woken() == Waiter::Woken::ByOne && waiter.owner() != nullptr) {
      Notifier* owner = waiter.owner();
      owner->remove(&waiter);
      owner->notifyOne();
    }
    co_return false;
  }
  co_return waiter.owner() != nullptr;
}

void Notifier::remove(Waiter* waiter) {
  auto it = std::find(waiters_.begin(), waiters_.end(), waiter);
  if (it != waiters_.end()) {
    waiters_.erase(it);
  }
}

}  // namespace egress
