// File: retry_policy.h
//
// When the REST client sends a request again, and after how long: client-go's rest.withRetry
// and checkWait. A 429 or 5xx response is retried only when the server sent a Retry-After header
// in seconds, for every verb (the server asked for it, so even a POST is safe to resend); a 5xx
// without one goes back to the caller, because a PUT or DELETE the server already committed
// must not be replayed into a 404 or 409. A GET that lost its connection (reset, EOF) is
// retried as if the server had said "Retry-After: 1", as client-go's IsRetryableError does for
// GETs; other verbs never are. At most maxRetries retries per request.
//
// Deviations from client-go, on purpose: the wait is capped (client-go sleeps whatever the
// server says; a proxy or a broken server answering "Retry-After: 86400" would park a
// controller for a day), a value too large for an int saturates at the cap instead of being
// ignored, and every wait is stretched by up to `jitter` of itself so that many clients told the
// same Retry-After do not come back in the same instant.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "pkg/kube/errors.h"

namespace egress::kube {

struct RetryOptions {
  int maxRetries = 10;               // client-go's default
  std::chrono::seconds maxWait{60};  // the cap on any one wait
  double jitter = 0.2;               // a wait w becomes w * (1 + jitter * random())
  // Uniform in [0, 1); empty = a per-thread Mersenne twister. Tests make it fixed.
  std::function<double()> random;
};

class RetryPolicy {
 public:
  explicit RetryPolicy(RetryOptions options);

  // After a response: the wait before retry number `retries + 1`, or nullopt to give up.
  std::optional<std::chrono::milliseconds> afterResponse(int retries, int status,
                                                         const std::string& retryAfter) const;
  // After a request that got no response at all.
  std::optional<std::chrono::milliseconds> afterFailure(int retries, const std::string& method,
                                                        const Error& error) const;

 private:
  std::chrono::milliseconds jittered(std::chrono::seconds wait) const;

  RetryOptions options_;
};

// The seconds of a Retry-After header: digits only (an HTTP-date, a sign, or anything else is
// no Retry-After, as client-go's strconv.Atoi sees it); a value too large for any clock
// saturates at a billion seconds instead of overflowing.
std::optional<std::chrono::seconds> parseRetryAfter(const std::string& value);

}  // namespace egress::kube
