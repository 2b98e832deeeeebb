// File: waiter_list.h
//
// Coroutines parked until someone wakes them: the io_context counterpart of the sync.Cond that
// client-go's queue waits on. Each waiter parks on an Asio timer of its own that never expires
// and is woken by cancelling it, so signalOne() wakes exactly one waiter (no thundering herd, no
// polling). Waking is a hint, as with a condition variable: the woken coroutine re-checks its
// condition when it runs, because another one may have taken the item in between.
//
// Single-threaded (one io_context thread), no locks. The list must outlive its parked waiters;
// queues keep it in state that every waiting coroutine co-owns.
#pragma once

#include <deque>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

namespace egress::workqueue::detail {

namespace net = boost::asio;

class WaiterList {
 public:
  WaiterList() = default;
  WaiterList(const WaiterList&) = delete;
  WaiterList& operator=(const WaiterList&) = delete;

  // Parks the calling coroutine until signalOne()/signalAll() picks it (true), or until the
  // wait is cancelled through Asio's per-operation cancellation (false). A waiter that was woken
  // but found nothing to do re-parks with `front` so it keeps its place in line.
  net::awaitable<bool> wait(bool front);

  // Wakes the longest-waiting coroutine, if any.
  void signalOne();
  void signalAll();
  bool empty() const { return waiters_.empty(); }

 private:
  class Waiter;
  void remove(Waiter* waiter);

  std::deque<Waiter*> waiters_;
};

}  // namespace egress::workqueue::detail
