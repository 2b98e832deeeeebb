#include "pkg/cache/yield.h"

#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace egress::cache {

net::awaitable<void> yieldNow() {
  auto executor = co_await net::this_coro::executor;
  co_await net::post(executor, net::use_awaitable);
}

}  // namespace egress::cache
