// File: token_bucket.h
//
// golang.org/x/time/rate's Limiter, reduced to what client-go uses it for (the workqueue's
// BucketRateLimiter and the REST client's flowcontrol QPS/burst): Reserve().Delay() for one
// token. One bucket of `burst` tokens refilled at `qps` per second;
// every reservation takes a token even if the caller never waits, and tokens may go negative so
// that later callers queue up behind earlier ones (delays 1/qps apart once the burst is gone).
// Pure arithmetic over time points passed in, so BucketRateLimiter can feed it from a Clock.

#pragma once

#include <chrono>
#include <limits>
#include <optional>

namespace egress {

class TokenBucket {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  // rate.Inf: never delays.
  static constexpr double kInf = std::numeric_limits<double>::infinity();
  // What Reserve().Delay() returns for a reservation that can never be honoured
  // (rate.InfDuration): burst 0, or rate 0 once the burst is spent.
  static constexpr Duration kInfDuration = Duration::max();

  // qps <= 0 behaves as rate 0 (only the initial burst is ever granted). x/time/rate leaves a
  // negative rate undefined (its arithmetic overflows); we pick the nearest sane meaning.
  TokenBucket(double qps, int burst) : limit_(qps), burst_(burst), tokens_(burst) {}

  // Takes one token at `now` and returns how long the caller must wait before using it.
  Duration reserve(TimePoint now);

 private:
  double limit_;
  int burst_;
  double tokens_;
  // Unset until the first reservation: the bucket starts full whatever the time.
  std::optional<TimePoint> last_;
};

}  // namespace egress
