// File: notifier.h
//
// The one wake-up primitive between coroutines on one io_context: the sync.Cond client-go's
// workqueue waits on, and the "something changed" signal of the informers.
//   - notify() wakes every parked waiter. With nobody parked it is remembered and the next wait
//     returns at once, so a producer can never slip a wake-up in between a consumer's check and
//     its wait.
//   - notifyOne() wakes only the longest-parked waiter (one queued item, one worker: no
//     thundering herd). With nobody parked it is dropped: use it only where waiters check their
//     condition before they park.
//   - waitUntil() also ends at a deadline on an injected Clock, so tests drive it with FakeClock.
//
// A wake-up is never lost. A waiter that is notified in the same tick as its deadline passes
// reports the notification; one whose wait is cancelled through Asio (`wait() || timeout`) after
// notifyOne() picked it reports false and hands the wake-up to the next waiter.
//
// Waking is a hint, as with a condition variable: re-check the condition after waking, because a
// running coroutine may have consumed what the notification announced.
//
// Single-threaded (one io_context thread), no locks. Destroying the Notifier wakes its parked
// waiters with false; a coroutine that can outlive its Notifier must check, in state it
// co-owns, whether its owner is gone before touching it.
#pragma once

#include <deque>
#include <memory>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "pkg/base/clock.h"

namespace egress {

namespace net = boost::asio;

class Notifier {
 public:
  // Where a waiter parks: Back for a new wait, Front for one that was woken but found nothing to
  // do and so keeps its place in line.
  enum class Place { Back, Front };

  explicit Notifier(const net::any_io_executor& executor);
  ~Notifier();
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;

  void notify();
  void notifyOne();

  // True when notified; false when the wait was cancelled through Asio or the Notifier was
  // destroyed.
  net::awaitable<bool> wait();
  net::awaitable<bool> wait(Place place);
  // Like wait(place), and also false once `clock` reaches `deadline`.
  net::awaitable<bool> waitUntil(Clock& clock, Clock::TimePoint deadline, Place place);

 private:
  class Waiter;
  net::awaitable<bool> park(std::unique_ptr<Timer> timer, Clock::TimePoint deadline, Place place);
  void remove(Waiter* waiter);

  net::any_io_executor executor_;
  // Parked waiters in wake-up order, and woken ones that have not run yet (flagged; they stay
  // listed so the destructor can tell them their Notifier is gone).
  std::deque<Waiter*> waiters_;
  bool pending_ = false;
};

}  // namespace egress
