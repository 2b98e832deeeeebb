#include "pkg/cache/backoff.h"

#include <algorithm>

namespace egress::cache {

Backoff::Backoff(BackoffConfig config, std::function<double()> random)
    : config_(config), random_(std::move(random)), current_(config.initial) {}

Backoff::Clock::duration Backoff::next(Clock::time_point now) {
  // backoffManager.Step: restore the initial delay when the last reset is older than resetAfter.
  // As in client-go this counts from the last reset, not from the last failure.
  if (!started_ || now - lastReset_ > config_.resetAfter) {
    started_ = true;
    lastReset_ = now;
    current_ = config_.initial;
  }
  const auto base = current_;
  const std::chrono::duration<double> cap = config_.cap;
  current_ = std::min(cap, current_ * config_.factor);
  const auto delay = base * (1.0 + config_.jitter * random_());
  return std::chrono::duration_cast<Clock::duration>(delay);
}

}  // namespace egress::cache
