#include "pkg/workqueue/waiter_list.h"

#include <algorithm>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace egress::workqueue::detail {

// Lives in the parked coroutine's frame; if that frame is destroyed while parked (io_context
// torn down), it takes itself off the list so no dangling pointer is left behind.
class WaiterList::Waiter {
 public:
  Waiter(WaiterList& list, const net::any_io_executor& executor) : list_(&list), timer_(executor) {
    timer_.expires_at(net::steady_timer::time_point::max());
  }
  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;
  ~Waiter() {
    if (!signalled_) {
      list_->remove(this);
    }
  }

  net::steady_timer& timer() { return timer_; }
  bool signalled() const { return signalled_; }
  void signal() {
    signalled_ = true;
    timer_.cancel();
  }

 private:
  WaiterList* list_;
  net::steady_timer timer_;
  bool signalled_ = false;
};

net::awaitable<bool> WaiterList::wait(bool front) {
  Waiter waiter(*this, co_await net::this_coro::executor);
  if (front) {
    waiters_.push_front(&waiter);
  } else {
    waiters_.push_back(&waiter);
  }
  auto [ec] = co_await waiter.timer().async_wait(net::as_tuple(net::use_awaitable));
  (void)ec;  // always operation_aborted: the timer never expires, it is only cancelled
  co_return waiter.signalled();
}

void WaiterList::signalOne() {
  if (waiters_.empty()) {
    return;
  }
  Waiter* waiter = waiters_.front();
  waiters_.pop_front();
  waiter->signal();
}

void WaiterList::signalAll() {
  while (!waiters_.empty()) {
    signalOne();
  }
}

void WaiterList::remove(Waiter* waiter) {
  auto it = std::find(waiters_.begin(), waiters_.end(), waiter);
  if (it != waiters_.end()) {
    waiters_.erase(it);
  }
}

}  // namespace egress::workqueue::detail
