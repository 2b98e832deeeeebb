#include "pkg/kube/retry_policy.h"

#include <algorithm>
#include <random>

namespace egress::kube {
namespace {

constexpr int64_t kMaxRetryAfterSeconds = 1'000'000'000;

double uniformRandom() {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(engine);
}

}  // namespace

std::optional<std::chrono::seconds> parseRetryAfter(const std::string& value) {
  if (value.empty()) {
    return std::nullopt;
  }
  int64_t secs = 0;
  for (char c : value) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    secs = std::min(kMaxRetryAfterSeconds, secs * 10 + (c - '0'));
  }
  return std::chrono::seconds(secs);
}

RetryPolicy::RetryPolicy(RetryOptions options) : options_(std::move(options)) {
  if (!options_.random) {
    options_.random = uniformRandom;
  }
}

std::chrono::milliseconds RetryPolicy::jittered(std::chrono::seconds wait) const {
  const auto capped = std::min<std::chrono::milliseconds>(wait, options_.maxWait);
  const double factor = 1.0 + options_.jitter * std::clamp(options_.random(), 0.0, 1.0);
  const auto stretched =
      std::chrono::milliseconds(static_cast<int64_t>(static_cast<double>(capped.count()) * factor));
  return std::min<std::chrono::milliseconds>(stretched, options_.maxWait);
}

std::optional<std::chrono::milliseconds> RetryPolicy::afterResponse(
    int retries, int status, const std::string& retryAfter) const {
  if (retries >= options_.maxRetries || (status != 429 && status < 500)) {
    return std::nullopt;
  }
  const auto seconds = parseRetryAfter(retryAfter);
  if (!seconds) {
    return std::nullopt;
  }
  return jittered(*seconds);
}

std::optional<std::chrono::milliseconds> RetryPolicy::afterFailure(int retries,
                                                                   const std::string& method,
                                                                   const Error& error) const {
  // client-go retries only GETs that lost their connection: the request may have reached the
  // server, and only a read is safe to send twice.
  if (retries >= options_.maxRetries || method != "GET" || !error.isConnectionLost()) {
    return std::nullopt;
  }
  return jittered(std::chrono::seconds(1));
}

}  // namespace egress::kube
