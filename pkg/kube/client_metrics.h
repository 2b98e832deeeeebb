// File: client_metrics.h
//
// client-go's REST client metrics, with its names, labels and buckets, on a prometheus-cpp
// registry passed in: rest_client_requests_total{code,method,host},
// rest_client_request_duration_seconds{verb,host} and
// rest_client_rate_limiter_duration_seconds{verb,host}.
#pragma once

#include <map>
#include <string>
#include <tuple>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace egress::kube {

class ClientMetrics {
 public:
  explicit ClientMetrics(prometheus::Registry& registry);

  // code: the HTTP status, or "<error>" when no response arrived (as client-go labels it).
  void observeRequest(const std::string& code, const std::string& method, const std::string& host,
                      double seconds);
  void observeRateLimiter(const std::string& verb, const std::string& host, double seconds);

 private:
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& duration_;
  prometheus::Family<prometheus::Histogram>& rateLimiter_;
  // prometheus-cpp's Family::Add is a locked map lookup; keep the children we made.
  std::map<std::tuple<std::string, std::string, std::string>, prometheus::Counter*> requestsBy_;
  std::map<std::pair<std::string, std::string>, prometheus::Histogram*> durationBy_;
  std::map<std::pair<std::string, std::string>, prometheus::Histogram*> rateLimiterBy_;
};

}  // namespace egress::kube
