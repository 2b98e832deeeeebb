// File: worker_thread.h
//
// A thread of its own for blocking work that a coroutine on the event loop hands off and awaits:
// the loop stays free meanwhile (its timers fire, its Leases renew), and the coroutine resumes on
// its own executor once the work is done. egw-agent's kernel work is the case: a first
// programming at 100,000 source pods takes seconds of netlink transactions, longer than a Lease
// renewal may wait.
//   - Pieces of work run one at a time, in the order they were handed off.
//   - The work must not touch what the loop's coroutines touch meanwhile: hand it its inputs as
//     values, or objects only the awaiting coroutine uses (it waits, so nothing of its own runs).
//   - Destruction waits until every piece handed off has run (the thread pool's join); an
//     awaiting coroutine whose loop has stopped by then never resumes.
#pragma once

#include <optional>
#include <type_traits>
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace egress {

namespace net = boost::asio;

class WorkerThread {
 public:
  WorkerThread() : pool_(1) {}
  ~WorkerThread() { pool_.join(); }
  WorkerThread(const WorkerThread&) = delete;
  WorkerThread& operator=(const WorkerThread&) = delete;

  // Runs `work()` on the thread; the caller resumes on its own executor with the result.
  template <typename F, typename R = std::invoke_result_t<F&>>
  net::awaitable<R> run(F work) {
    // co_spawn's result must be default-constructible (its error path makes one): an optional.
    return unwrap<R>(net::co_spawn(
        pool_.get_executor(),
        [work = std::move(work)]() mutable -> net::awaitable<std::optional<R>> {
          co_return std::optional<R>(work());
        },
        net::use_awaitable));
  }

 private:
  // Static, with the awaitable passed in: a member coroutine started from inside another
  // coroutine can lose `this` under g++ 12.
  template <typename R>
  static net::awaitable<R> unwrap(net::awaitable<std::optional<R>> result) {
    co_return std::move(*(co_await std::move(result)));
  }

  net::thread_pool pool_;
};

}  // namespace egress
