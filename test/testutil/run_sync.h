// File: run_sync.h
//
// Drives the test's io_context from plain test code, with the rest of it (an in-process server,
// informers) making progress alongside: runSync() until a coroutine finishes, runUntil() until a
// condition holds. Results need no default constructor: co_spawn's own completion handler would
// demand one, which Result lacks.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <stdexcept>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include "pkg/base/clock.h"

namespace egress::testutil {

template <class T>
boost::asio::awaitable<void> storeResult(boost::asio::awaitable<T> task, std::optional<T>* out) {
  out->emplace(co_await std::move(task));
}

// Starts `task`; `out` is filled when it finishes (drive the io_context meanwhile).
template <class T>
void spawnInto(boost::asio::io_context& ioc, boost::asio::awaitable<T> task,
               std::optional<T>& out) {
  boost::asio::co_spawn(ioc, storeResult(std::move(task), &out), rethrowUnhandled);
}

template <class T>
T runSync(boost::asio::io_context& ioc, boost::asio::awaitable<T> task) {
  std::optional<T> result;
  spawnInto(ioc, std::move(task), result);
  while (!result) {
    if (ioc.run_one() == 0) {
      // Out of work, the io_context stopped (e.g. after the previous runSync); restart it. If
      // it has still nothing to run, the task can never finish: say so instead of spinning.
      ioc.restart();
      if (!result && ioc.run_one() == 0) {
        throw std::logic_error("runSync: the task waits for nothing that can ever complete");
      }
    }
  }
  return std::move(*result);
}

// Runs the io_context until `done` holds; whether it does. It gives up once the io_context has
// had nothing to run for two rounds of `idle`: the limit only turns a hang into a failure.
inline bool runUntil(boost::asio::io_context& ioc, const std::function<bool()>& done,
                     std::chrono::milliseconds idle = std::chrono::seconds(5)) {
  for (int idleRounds = 0; !done() && idleRounds < 2;) {
    ioc.restart();
    idleRounds = ioc.run_one_for(idle) == 0 ? idleRounds + 1 : 0;
  }
  return done();
}

}  // namespace egress::testutil
