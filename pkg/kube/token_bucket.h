// File: token_bucket.h
//
// The client-side request rate limiter (client-go's flowcontrol token bucket, QPS with a
// burst; defaults 5 / 10). Pure arithmetic over an injected time so tests need no clock:
// reserve() takes a token and says how long the caller must wait for it, exactly like
// golang.org/x/time/rate's Reserve().Delay().
#pragma once

#include <chrono>

namespace egress::kube {

class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;

  // qps <= 0 disables limiting.
  TokenBucket(double qps, int burst);

  // Takes one token at `now`; returns the wait before it may be used (zero if available now).
  Clock::duration reserve(Clock::time_point now);

 private:
  double qps_;
  double burst_;
  double tokens_;
  Clock::time_point last_{};
  bool started_ = false;
};

}  // namespace egress::kube
