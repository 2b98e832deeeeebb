// File: rate_limiter.h
//
// client-go's workqueue rate limiters (util/workqueue/default_rate_limiters.go): how long an
// item waits before it is retried. Pure objects with no I/O; only BucketRateLimiter reads time,
// from the injected Clock. Used through RateLimitingQueue::addRateLimited, or directly.
//
// Like everything in a queue, a limiter lives on one io_context thread and takes no locks.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pkg/base/clock.h"
#include "pkg/base/token_bucket.h"

namespace egress::workqueue {

using Duration = Clock::Duration;

template <class T>
class RateLimiter {
 public:
  virtual ~RateLimiter() = default;
  // How long `item` should wait now; records the attempt (or consumes a token).
  virtual Duration when(const T& item) = 0;
  // The item succeeded: stop tracking it, so its next failure starts from scratch.
  virtual void forget(const T& item) = 0;
  // Failures recorded for `item` since it was last forgotten.
  virtual int numRequeues(const T& item) = 0;
};

// base * 2^failures, capped at maxDelay; when() returns the delay and then counts the failure,
// so the first call returns base. With 5ms/1000s: 5ms, 10ms, ... 655.36s (call 18), then 1000s.
template <class T, class Hash = std::hash<T>>
class ItemExponentialFailureRateLimiter : public RateLimiter<T> {
 public:
  ItemExponentialFailureRateLimiter(Duration baseDelay, Duration maxDelay)
      : baseDelay_(baseDelay), maxDelay_(maxDelay) {}

  Duration when(const T& item) override {
    int& failures = failures_[item];
    const int exp = failures;
    ++failures;
    // Computed in float like client-go, so a huge exponent saturates instead of wrapping.
    const double backoff =
        static_cast<double>(std::chrono::nanoseconds(baseDelay_).count()) * std::pow(2.0, exp);
    // client-go tests `> MaxInt64`, but 2^63 (== float64(MaxInt64)) does not fit an int64 and
    // Go's conversion then yields a negative delay; `>=` caps that case too.
    if (backoff >= static_cast<double>(std::numeric_limits<int64_t>::max())) {
      return maxDelay_;
    }
    const auto calculated = std::chrono::duration_cast<Duration>(
        std::chrono::nanoseconds(static_cast<int64_t>(backoff)));
    return calculated > maxDelay_ ? maxDelay_ : calculated;
  }
  void forget(const T& item) override { failures_.erase(item); }
  int numRequeues(const T& item) override {
    auto it = failures_.find(item);
    return it == failures_.end() ? 0 : it->second;
  }

 private:
  Duration baseDelay_;
  Duration maxDelay_;
  std::unordered_map<T, int, Hash> failures_;
};

// fastDelay for the first maxFastAttempts failures of an item, slowDelay after that.
template <class T, class Hash = std::hash<T>>
class ItemFastSlowRateLimiter : public RateLimiter<T> {
 public:
  ItemFastSlowRateLimiter(Duration fastDelay, Duration slowDelay, int maxFastAttempts)
      : fastDelay_(fastDelay), slowDelay_(slowDelay), maxFastAttempts_(maxFastAttempts) {}

  Duration when(const T& item) override {
    const int failures = ++failures_[item];
    return failures <= maxFastAttempts_ ? fastDelay_ : slowDelay_;
  }
  void forget(const T& item) override { failures_.erase(item); }
  int numRequeues(const T& item) override {
    auto it = failures_.find(item);
    return it == failures_.end() ? 0 : it->second;
  }

 private:
  Duration fastDelay_;
  Duration slowDelay_;
  int maxFastAttempts_;
  std::unordered_map<T, int, Hash> failures_;
};

// One token bucket shared by every item (overall retry rate, not per item). when() is
// x/time/rate's Reserve().Delay(): the token is taken even if the caller never waits.
template <class T>
class BucketRateLimiter : public RateLimiter<T> {
 public:
  BucketRateLimiter(Clock& clock, double qps, int burst) : clock_(&clock), bucket_(qps, burst) {}

  Duration when(const T& /*item*/) override { return bucket_.reserve(clock_->now()); }
  void forget(const T& /*item*/) override {}
  int numRequeues(const T& /*item*/) override { return 0; }

 private:
  Clock* clock_;
  egress::TokenBucket bucket_;
};

// The strictest of several limiters. when() asks every one of them (each records the failure
// or takes a token) and returns the longest delay; numRequeues is the largest count.
template <class T>
class MaxOfRateLimiter : public RateLimiter<T> {
 public:
  explicit MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter<T>>> limiters)
      : limiters_(std::move(limiters)) {}

  Duration when(const T& item) override {
    Duration ret = Duration::zero();
    for (auto& limiter : limiters_) {
      ret = std::max(ret, limiter->when(item));
    }
    return ret;
  }
  void forget(const T& item) override {
    for (auto& limiter : limiters_) {
      limiter->forget(item);
    }
  }
  int numRequeues(const T& item) override {
    int ret = 0;
    for (auto& limiter : limiters_) {
      ret = std::max(ret, limiter->numRequeues(item));
    }
    return ret;
  }

 private:
  std::vector<std::unique_ptr<RateLimiter<T>>> limiters_;
};

// Caps another limiter's delay at maxDelay (client-go's WithMaxWaitRateLimiter).
template <class T>
class WithMaxWaitRateLimiter : public RateLimiter<T> {
 public:
  WithMaxWaitRateLimiter(std::unique_ptr<RateLimiter<T>> limiter, Duration maxDelay)
      : limiter_(std::move(limiter)), maxDelay_(maxDelay) {}

  Duration when(const T& item) override { return std::min(limiter_->when(item), maxDelay_); }
  void forget(const T& item) override { limiter_->forget(item); }
  int numRequeues(const T& item) override { return limiter_->numRequeues(item); }

 private:
  std::unique_ptr<RateLimiter<T>> limiter_;
  Duration maxDelay_;
};

template <class T, class... Limiters>
std::unique_ptr<RateLimiter<T>> makeMaxOfRateLimiter(std::unique_ptr<Limiters>... limiters) {
  std::vector<std::unique_ptr<RateLimiter<T>>> all;
  (all.push_back(std::move(limiters)), ...);
  return std::make_unique<MaxOfRateLimiter<T>>(std::move(all));
}

// client-go's DefaultControllerRateLimiter (also controller-runtime's
// DefaultTypedControllerRateLimiter): per-item exponential backoff from 5ms to 1000s, and an
// overall 10 qps / burst 100 bucket. controller-runtime's priority queue drops the bucket
// (as controller-runtime's default does); our queue is the classic FIFO one, which keeps it.
template <class T, class Hash = std::hash<T>>
std::unique_ptr<RateLimiter<T>> defaultControllerRateLimiter(Clock& clock) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  return makeMaxOfRateLimiter<T>(
      std::make_unique<ItemExponentialFailureRateLimiter<T, Hash>>(milliseconds(5), seconds(1000)),
      std::make_unique<BucketRateLimiter<T>>(clock, 10.0, 100));
}

// client-go's DefaultItemBasedRateLimiter: exponential from 1ms to 1000s, no bucket.
template <class T, class Hash = std::hash<T>>
std::unique_ptr<RateLimiter<T>> defaultItemBasedRateLimiter() {
  return std::make_unique<ItemExponentialFailureRateLimiter<T, Hash>>(std::chrono::milliseconds(1),
                                                                      std::chrono::seconds(1000));
}

}  // namespace egress::workqueue
