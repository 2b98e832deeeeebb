// File: fake_time.h
//
// Moves a FakeClock forward the way real time would pass: stopping at every timer deadline on
// the way and letting the io_context run what became ready there, so each timer wakes at exactly
// its own time and what it schedules sees the right now().
#pragma once

#include <boost/asio/io_context.hpp>

#include "pkg/base/clock.h"

namespace egress::testutil {

// Runs whatever is ready without blocking.
inline void pollReady(boost::asio::io_context& ioc) {
  ioc.restart();
  ioc.poll();
}

inline void advanceFakeClockTo(boost::asio::io_context& ioc, FakeClock& clock,
                               Clock::TimePoint target) {
  pollReady(ioc);
  for (;;) {
    auto next = clock.nextDeadline();
    if (!next || *next > target) {
      break;
    }
    clock.setTime(*next);
    pollReady(ioc);
  }
  clock.setTime(target);
  pollReady(ioc);
}

}  // namespace egress::testutil
