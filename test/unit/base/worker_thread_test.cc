// WorkerThread: work handed off runs on another thread while the loop keeps running, and the
// awaiting coroutine resumes on the loop's thread with the result.
#include "pkg/base/worker_thread.h"

#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <gtest/gtest.h>

namespace egress {
namespace {

// The loop's timer fires while the work blocks (it waits until the timer has fired), so the
// work cannot be running on the loop: were it, this test would never end (the work would wait
// for a timer its own thread has to run).
TEST(WorkerThread, TheLoopRunsWhileTheWorkBlocksAndTheCallerResumesOnTheLoop) {
  net::io_context ioc;
  WorkerThread worker;
  std::promise<void> timerFired;
  auto fired = timerFired.get_future();
  const auto loopThread = std::this_thread::get_id();
  std::thread::id workThread;
  std::thread::id resumedOn;
  int result = 0;
  net::co_spawn(
      ioc,
      [&]() -> net::awaitable<void> {
        result = co_await worker.run([&] {
          workThread = std::this_thread::get_id();
          fired.wait();
          return 42;
        });
        resumedOn = std::this_thread::get_id();
      },
      net::detached);
  net::steady_timer timer(ioc, std::chrono::milliseconds(10));
  timer.async_wait([&](const boost::system::error_code&) { timerFired.set_value(); });
  ioc.run();
  EXPECT_EQ(result, 42);
  EXPECT_NE(workThread, loopThread);
  EXPECT_EQ(resumedOn, loopThread);
}

// Pieces run one at a time, in the order handed off.
TEST(WorkerThread, PiecesRunOneAtATimeInOrder) {
  net::io_context ioc;
  WorkerThread worker;
  std::vector<int> order;
  int running = 0;
  int most = 0;
  for (int i = 0; i < 5; ++i) {
    net::co_spawn(
        ioc,
        [&, i]() -> net::awaitable<void> {
          co_await worker.run([&, i] {
            most = std::max(most, ++running);
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            order.push_back(i);
            --running;
            return 0;
          });
        },
        net::detached);
  }
  ioc.run();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(most, 1);
}

}  // namespace
}  // namespace egress
