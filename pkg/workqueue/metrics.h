// File: metrics.h
//
// The workqueue_* Prometheus metrics of one named queue, with client-go's names, `name` label,
// help text and buckets (component-base metrics/prometheus/workqueue), so dashboards written
// for Kubernetes controllers work unchanged. The queue calls the hooks at the moments client-go
// does and keeps the per-item timestamps itself; this class
// only owns the prometheus-cpp children, created once (Family::Add is a locked lookup and may
// throw).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace egress::workqueue {

// ExponentialBuckets(10e-9, 10, 10) computed as Go computes it (repeated multiplication), so
// the `le` labels match client-go's exactly (1e-08 ... 9.999999999999999e-06 ... 10).
prometheus::Histogram::BucketBoundaries durationBuckets();

class QueueMetrics {
 public:
  // Metrics for queue `name` on `registry`; null when there is no registry or no name (client-go
  // only makes metrics for named queues). Never throws: if prometheus-cpp refuses (a family of
  // the same name registered with another type or help), returns null and says why in *error.
  // withRetries: also workqueue_retries_total, which only delaying queues have.
  static std::unique_ptr<QueueMetrics> create(prometheus::Registry* registry,
                                              const std::string& name, bool withRetries,
                                              std::string* error);

  // An item became dirty: adds_total and depth +1.
  void add();
  // An item was handed to a worker: depth -1, and the time since its first add (if known).
  void get(std::optional<double> queuedSeconds);
  // A worker finished an item after workSeconds.
  void done(double workSeconds);
  // Every addAfter call, whatever the delay.
  void retry();
  // The periodic in-flight summary: sum of ages and oldest age, in seconds.
  void setUnfinishedWork(double totalSeconds, double longestSeconds);

 private:
  QueueMetrics() = default;

  prometheus::Gauge* depth_ = nullptr;
  prometheus::Counter* adds_ = nullptr;
  prometheus::Histogram* queueDuration_ = nullptr;
  prometheus::Histogram* workDuration_ = nullptr;
  prometheus::Gauge* unfinishedWork_ = nullptr;
  prometheus::Gauge* longestRunning_ = nullptr;
  prometheus::Counter* retries_ = nullptr;
};

}  // namespace egress::workqueue
