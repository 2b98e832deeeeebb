// File: notifier.h
//
// A wake-up signal between coroutines on one io_context: notify() wakes every coroutine in
// wait(), and a notify() with nobody waiting is remembered until the next wait(), so a
// producer can never slip a wake-up in between a consumer's check and its wait.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

namespace egress {

namespace net = boost::asio;

class Notifier {
 public:
  explicit Notifier(const net::any_io_executor& executor);
  void notify();
  net::awaitable<void> wait();

 private:
  net::steady_timer timer_;
  bool pending_ = false;
};

}  // namespace egress
