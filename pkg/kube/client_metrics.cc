#include "pkg/kube/client_metrics.h"

namespace egress::kube {
namespace {

// client-go (component-base metrics/prometheus/restclient): requestLatency buckets.
const prometheus::Histogram::BucketBoundaries kLatencyBuckets = {
    0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0};

}  // namespace

ClientMetrics::ClientMetrics(prometheus::Registry& registry)
    : requests_(prometheus::BuildCounter()
                    .Name("rest_client_requests_total")
                    .Help("Number of HTTP requests, partitioned by status code, method, and host.")
                    .Register(registry)),
      duration_(prometheus::BuildHistogram()
                    .Name("rest_client_request_duration_seconds")
                    .Help("Request latency in seconds. Broken down by verb, and host.")
                    .Register(registry)),
      rateLimiter_(prometheus::BuildHistogram()
                       .Name("rest_client_rate_limiter_duration_seconds")
                       .Help("Client side rate limiter latency in seconds. Broken down by verb, "
                             "and host.")
                       .Register(registry)) {}

void ClientMetrics::observeRequest(const std::string& code, const std::string& method,
                                   const std::string& host, double seconds) {
  auto key = std::make_tuple(code, method, host);
  auto it = requestsBy_.find(key);
  if (it == requestsBy_.end()) {
    it = requestsBy_
             .emplace(key, &requests_.Add({{"code", code}, {"method", method}, {"host", host}}))
             .first;
  }
  it->second->Increment();
  auto dkey = std::make_pair(method, host);
  auto dit = durationBy_.find(dkey);
  if (dit == durationBy_.end()) {
    dit = durationBy_
              .emplace(dkey, &duration_.Add({{"verb", method}, {"host", host}}, kLatencyBuckets))
              .first;
  }
  dit->second->Observe(seconds);
}

void ClientMetrics::observeRateLimiter(const std::string& verb, const std::string& host,
                                       double seconds) {
  auto key = std::make_pair(verb, host);
  auto it = rateLimiterBy_.find(key);
  if (it == rateLimiterBy_.end()) {
    it = rateLimiterBy_
             .emplace(key, &rateLimiter_.Add({{"verb", verb}, {"host", host}}, kLatencyBuckets))
             .first;
  }
  it->second->Observe(seconds);
}

}  // namespace egress::kube
