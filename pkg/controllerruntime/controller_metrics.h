// File: controller_metrics.h
//
// The controller_runtime_* metrics of one controller, with controller-runtime's names, help
// text, labels and buckets (pkg/internal/controller/metrics/metrics.go at 86a0d40e, master after
// v0.24.1), so dashboards written for Go operators work unchanged:
//   controller_runtime_reconcile_total{controller,result}   result: success|error|requeue|
//                                                            requeue_after, all pre-set to 0
//   controller_runtime_reconcile_errors_total{controller}
//   controller_runtime_reconcile_panics_total{controller}
//   controller_runtime_reconcile_time_seconds{controller}   histogram
//   controller_runtime_max_concurrent_reconciles{controller}
//   controller_runtime_active_workers{controller}
// controller-runtime's terminal-error and timeout counters are left out: this runtime has neither
// terminal errors nor a reconcile timeout.
//
// The children are created once (Family::Add is a locked lookup and may throw) and removed when
// this object goes, so a controller of the same name may be made again later.
#pragma once

#include <memory>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "pkg/controllerruntime/reconcile_result.h"

namespace egress::controllerruntime {

// controller-runtime's reconcile_time_seconds buckets (0.005 ... 60; its native-histogram
// settings have no prometheus-cpp counterpart).
prometheus::Histogram::BucketBoundaries reconcileTimeBuckets();

class ControllerMetrics {
 public:
  // Null without a registry. Also null, with the reason in *error, if prometheus-cpp refuses
  // (a family of the same name with another type) or if `controller` already has series in this
  // registry: its name is the metrics' label, so it must be unique (controller-runtime refuses
  // duplicate names for the same reason).
  static std::unique_ptr<ControllerMetrics> create(prometheus::Registry* registry,
                                                   const std::string& controller, int workers,
                                                   std::string* error);
  ~ControllerMetrics();
  ControllerMetrics(const ControllerMetrics&) = delete;
  ControllerMetrics& operator=(const ControllerMetrics&) = delete;

  void workerBusy() { activeWorkers_->Increment(); }
  void workerIdle() { activeWorkers_->Decrement(); }
  void panicked() { panics_->Increment(); }
  // One finished reconcile: its outcome (an error also counts in errors_total) and its duration.
  void reconciled(ReconcileResult::Kind outcome, double seconds);

 private:
  ControllerMetrics() = default;

  prometheus::Family<prometheus::Counter>* totalFamily_ = nullptr;
  prometheus::Family<prometheus::Counter>* errorsFamily_ = nullptr;
  prometheus::Family<prometheus::Counter>* panicsFamily_ = nullptr;
  prometheus::Family<prometheus::Histogram>* timeFamily_ = nullptr;
  prometheus::Family<prometheus::Gauge>* maxFamily_ = nullptr;
  prometheus::Family<prometheus::Gauge>* activeFamily_ = nullptr;

  prometheus::Counter* success_ = nullptr;
  prometheus::Counter* error_ = nullptr;
  prometheus::Counter* requeue_ = nullptr;
  prometheus::Counter* requeueAfter_ = nullptr;
  prometheus::Counter* errors_ = nullptr;
  prometheus::Counter* panics_ = nullptr;
  prometheus::Histogram* time_ = nullptr;
  prometheus::Gauge* maxConcurrent_ = nullptr;
  prometheus::Gauge* activeWorkers_ = nullptr;
};

}  // namespace egress::controllerruntime
