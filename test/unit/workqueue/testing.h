// File: testing.h
//
// Helpers shared by the pkg/workqueue tests: an io_context with a FakeClock (time moves only
// when a test advances it; nothing sleeps), and small named coroutines that wrap queue calls so
// a test can start them with testutil::spawnInto and check later whether they finished.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "pkg/base/clock.h"
#include "pkg/workqueue/queue.h"
#include "pkg/workqueue/queue_config.h"
#include "test/testutil/run_sync.h"

namespace egress::workqueue::testing {

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;

using Item = std::optional<std::string>;

inline boost::asio::awaitable<void> getInto(Queue<std::string>* queue,
                                            std::shared_ptr<std::optional<Item>> out) {
  Item item = co_await queue->get();
  out->emplace(std::move(item));
}

class WorkqueueTest : public ::testing::Test {
 protected:
  QueueConfig<std::string> config(std::string name = "", prometheus::Registry* registry = nullptr) {
    return QueueConfig<std::string>{.name = std::move(name),
                                    .clock = clock_,
                                    .executor = ioc_.get_executor(),
                                    .registry = registry,
                                    .limiter = nullptr};
  }

  // Runs everything that is ready, without moving time.
  void poll() {
    ioc_.restart();
    ioc_.poll();
  }
  void advance(Clock::Duration d) {
    clock_.advance(d);
    poll();
  }

  // The next item if get() completes without time moving, else "<blocked>" (the getter then
  // stays parked until the queue shuts down): a broken queue fails the test instead of hanging.
  Item getNow(Queue<std::string>& queue) {
    auto out = std::make_shared<std::optional<Item>>();
    boost::asio::co_spawn(ioc_, getInto(&queue, out), rethrowUnhandled);
    poll();
    return out->has_value() ? **out : Item("<blocked>");
  }

  // Destroyed in reverse: queues (test locals) first, then the clock, then the io_context.
  boost::asio::io_context ioc_;
  FakeClock clock_{ioc_.get_executor()};
};

inline boost::asio::awaitable<Item> getItem(Queue<std::string>* queue) {
  co_return co_await queue->get();
}

inline boost::asio::awaitable<Item> getWithin(Queue<std::string>* queue, Clock::Duration timeout) {
  co_return co_await queue->get(timeout);
}

// shutDownWithDrain() as something spawnInto can report on (it needs a non-void result).
inline boost::asio::awaitable<bool> drain(Queue<std::string>* queue) {
  co_await queue->shutDownWithDrain();
  co_return true;
}

}  // namespace egress::workqueue::testing
