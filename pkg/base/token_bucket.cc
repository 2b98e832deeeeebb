#include "pkg/base/token_bucket.h"

#include <cstdint>
#include <limits>

namespace egress {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

// time.Duration.Seconds(): whole seconds plus the fraction, so results match Go bit for bit.
double goSeconds(TokenBucket::Duration d) {
  const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  const int64_t whole = ns / kSecond;
  return static_cast<double>(whole) + static_cast<double>(ns % kSecond) / 1e9;
}

// Limit.tokensFromDuration.
double tokensFromDuration(double limit, TokenBucket::Duration d) {
  if (limit <= 0) {
    return 0;
  }
  return goSeconds(d) * limit;
}

// Limit.durationFromTokens, truncating toward zero like Go's float-to-int conversion.
TokenBucket::Duration durationFromTokens(double limit, double tokens) {
  if (limit <= 0) {
    return TokenBucket::kInfDuration;
  }
  const double ns = (tokens / limit) * static_cast<double>(kSecond);
  // Go caps at MaxInt64 with `>`; 2^63 itself does not fit an int64, so we cap it too.
  if (ns >= static_cast<double>(std::numeric_limits<int64_t>::max())) {
    return TokenBucket::kInfDuration;
  }
  return std::chrono::duration_cast<TokenBucket::Duration>(
      std::chrono::nanoseconds(static_cast<int64_t>(ns)));
}

}  // namespace

TokenBucket::Duration TokenBucket::reserve(TimePoint now) {
  if (limit_ == kInf || limit_ >= std::numeric_limits<double>::max()) {
    return Duration::zero();
  }
  if (limit_ <= 0) {
    // reserveN's `limit == 0` branch: spend the burst, then refuse forever.
    if (burst_ >= 1) {
      --burst_;
      return Duration::zero();
    }
    return kInfDuration;
  }

  // advance(): refill for the time since the last reservation, capped at the burst.
  double tokens = tokens_;
  if (!last_) {
    tokens = burst_;
  } else {
    const TimePoint last = now < *last_ ? now : *last_;
    tokens += tokensFromDuration(limit_, now - last);
    if (tokens > burst_) {
      tokens = burst_;
    }
  }

  tokens -= 1;
  Duration wait = Duration::zero();
  if (tokens < 0) {
    wait = durationFromTokens(limit_, -tokens);
  }
  // n (1) > burst: the reservation is not ok and nothing is consumed.
  if (burst_ < 1) {
    return kInfDuration;
  }
  last_ = now;
  tokens_ = tokens;
  return wait;
}

}  // namespace egress
