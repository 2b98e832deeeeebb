// File: backoff.h
//
// The reflector's delay between ListAndWatch attempts, as client-go builds it:
// wait.Backoff{Duration: 800ms, Factor: 2, Jitter: 1.0, Cap: 30s} wrapped in a manager that
// resets to the initial delay once 2 minutes have passed since the last reset. Pure arithmetic
// over an injected time and random source.
#pragma once

#include <chrono>
#include <functional>

namespace egress::cache {

struct BackoffConfig {
  std::chrono::milliseconds initial{800};
  double factor = 2.0;
  double jitter = 1.0;
  std::chrono::milliseconds cap{30'000};
  std::chrono::milliseconds resetAfter{120'000};
};

class Backoff {
 public:
  using Clock = std::chrono::steady_clock;
  // random() yields uniform values in [0, 1).
  Backoff(BackoffConfig config, std::function<double()> random);

  // The next delay: d·(1 + jitter·rand) with d doubling from `initial` up to `cap` (then the
  // base stays at the cap, so delays settle in [cap, 2·cap) as client-go's do).
  Clock::duration next(Clock::time_point now);

 private:
  BackoffConfig config_;
  std::function<double()> random_;
  std::chrono::duration<double> current_;
  Clock::time_point lastReset_{};
  bool started_ = false;
};

}  // namespace egress::cache
