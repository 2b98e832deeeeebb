#include "pkg/base/notifier.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace egress {

Notifier::Notifier(const net::any_io_executor& executor) : timer_(executor) {
  timer_.expires_at(net::steady_timer::time_point::max());
}

void Notifier::notify() {
  pending_ = true;
  timer_.cancel();
}

net::awaitable<void> Notifier::wait() {
  if (pending_) {
    pending_ = false;
    co_return;
  }
  timer_.expires_at(net::steady_timer::time_point::max());
  auto [ec] = co_await timer_.async_wait(net::as_tuple(net::use_awaitable));
  (void)ec;
  pending_ = false;
}

}  // namespace egress
