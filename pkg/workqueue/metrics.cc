#include "pkg/workqueue/metrics.h"

#include <exception>

namespace egress::workqueue {

prometheus::Histogram::BucketBoundaries durationBuckets() {
  prometheus::Histogram::BucketBoundaries buckets;
  double start = 10e-9;
  for (int i = 0; i < 10; ++i) {
    buckets.push_back(start);
    start *= 10;
  }
  return buckets;
}

std::unique_ptr<QueueMetrics> QueueMetrics::create(prometheus::Registry* registry,
                                                   const std::string& name, bool withRetries,
                                                   std::string* error) {
  if (registry == nullptr || name.empty()) {
    return nullptr;
  }
  const prometheus::Labels labels = {{"name", name}};
  const auto buckets = durationBuckets();
  std::unique_ptr<QueueMetrics> m(new QueueMetrics());
  try {
    m->depth_ = &prometheus::BuildGauge()
                     .Name("workqueue_depth")
                     .Help("Current depth of workqueue")
                     .Register(*registry)
                     .Add(labels);
    m->adds_ = &prometheus::BuildCounter()
                    .Name("workqueue_adds_total")
                    .Help("Total number of adds handled by workqueue")
                    .Register(*registry)
                    .Add(labels);
    m->queueDuration_ =
        &prometheus::BuildHistogram()
             .Name("workqueue_queue_duration_seconds")
             .Help("How long in seconds an item stays in workqueue before being requested.")
             .Register(*registry)
             .Add(labels, buckets);
    m->workDuration_ = &prometheus::BuildHistogram()
                            .Name("workqueue_work_duration_seconds")
                            .Help("How long in seconds processing an item from workqueue takes.")
                            .Register(*registry)
                            .Add(labels, buckets);
    m->unfinishedWork_ =
        &prometheus::BuildGauge()
             .Name("workqueue_unfinished_work_seconds")
             .Help(
                 "How many seconds of work has done that is in progress and hasn't been "
                 "observed by work_duration. Large values indicate stuck threads. One can "
                 "deduce the number of stuck threads by observing the rate at which this "
                 "increases.")
             .Register(*registry)
             .Add(labels);
    m->longestRunning_ =
        &prometheus::BuildGauge()
             .Name("workqueue_longest_running_processor_seconds")
             .Help(
                 "How many seconds has the longest running processor for workqueue been "
                 "running.")
             .Register(*registry)
             .Add(labels);
    if (withRetries) {
      m->retries_ = &prometheus::BuildCounter()
                         .Name("workqueue_retries_total")
                         .Help("Total number of retries handled by workqueue")
                         .Register(*registry)
                         .Add(labels);
    }
  } catch (const std::exception& e) {
    if (error != nullptr) {
      *error = std::string("workqueue metrics for queue \"") + name + "\": " + e.what();
    }
    return nullptr;
  }
  return m;
}

void QueueMetrics::add() {
  adds_->Increment();
  depth_->Increment();
}

void QueueMetrics::get(std::optional<double> queuedSeconds) {
  depth_->Decrement();
  if (queuedSeconds) {
    queueDuration_->Observe(*queuedSeconds);
  }
}

void QueueMetrics::done(double workSeconds) {
  workDuration_->Observe(workSeconds);
}

void QueueMetrics::retry() {
  if (retries_ != nullptr) {
    retries_->Increment();
  }
}

void QueueMetrics::setUnfinishedWork(double totalSeconds, double longestSeconds) {
  unfinishedWork_->Set(totalSeconds);
  longestRunning_->Set(longestSeconds);
}

}  // namespace egress::workqueue
