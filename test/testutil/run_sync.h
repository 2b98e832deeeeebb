// File: run_sync.h
//
// Runs a coroutine to completion from plain test code, with the rest of the io_context (an
// in-process server, informers) making progress alongside. Results need no default
// constructor: co_spawn's own completion handler would demand one, which Result lacks.
#pragma once

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

}  // namespace egress::testutil
