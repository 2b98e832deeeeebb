#include "pkg/controllerruntime/controller_metrics.h"

#include <exception>

namespace egress::controllerruntime {

prometheus::Histogram::BucketBoundaries reconcileTimeBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1,  0.15, 0.2,  0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6,
          0.7,   0.8,  0.9,   1.0,  1.25, 1.5,  1.75, 2.0,  2.5, 3.0,  3.5, 4.0,  4.5, 5,
          6,     7,    8,     9,    10,   15,   20,   25,   30,  40,   50,  60};
}

std::unique_ptr<ControllerMetrics> ControllerMetrics::create(prometheus::Registry* registry,
                                                             const std::string& controller,
                                                             int workers, std::string* error) {
  if (registry == nullptr) {
    return nullptr;
  }
  const prometheus::Labels labels = {{"controller", controller}};
  auto withResult = [&controller](const char* result) {
    return prometheus::Labels{{"controller", controller}, {"result", result}};
  };
  std::unique_ptr<ControllerMetrics> m(new ControllerMetrics());
  try {
    m->totalFamily_ = &prometheus::BuildCounter()
                           .Name("controller_runtime_reconcile_total")
                           .Help("Total number of reconciliations per controller")
                           .Register(*registry);
    if (m->totalFamily_->Has(withResult("success"))) {
      if (error != nullptr) {
        *error = "a controller named \"" + controller +
                 "\" already has metrics in this registry: controller names must be unique";
      }
      m->totalFamily_ = nullptr;  // the series are the other controller's: leave them
      return nullptr;
    }
    m->errorsFamily_ = &prometheus::BuildCounter()
                            .Name("controller_runtime_reconcile_errors_total")
                            .Help("Total number of reconciliation errors per controller")
                            .Register(*registry);
    m->panicsFamily_ = &prometheus::BuildCounter()
                            .Name("controller_runtime_reconcile_panics_total")
                            .Help("Total number of reconciliation panics per controller")
                            .Register(*registry);
    m->timeFamily_ = &prometheus::BuildHistogram()
                          .Name("controller_runtime_reconcile_time_seconds")
                          .Help("Length of time per reconciliation per controller")
                          .Register(*registry);
    m->maxFamily_ = &prometheus::BuildGauge()
                         .Name("controller_runtime_max_concurrent_reconciles")
                         .Help("Maximum number of concurrent reconciles per controller")
                         .Register(*registry);
    m->activeFamily_ = &prometheus::BuildGauge()
                            .Name("controller_runtime_active_workers")
                            .Help("Number of currently used workers per controller")
                            .Register(*registry);
    // Pre-set to 0, as controller-runtime's initMetrics does, so rate() sees the first event.
    m->success_ = &m->totalFamily_->Add(withResult("success"));
    m->error_ = &m->totalFamily_->Add(withResult("error"));
    m->requeue_ = &m->totalFamily_->Add(withResult("requeue"));
    m->requeueAfter_ = &m->totalFamily_->Add(withResult("requeue_after"));
    m->errors_ = &m->errorsFamily_->Add(labels);
    m->panics_ = &m->panicsFamily_->Add(labels);
    m->time_ = &m->timeFamily_->Add(labels, reconcileTimeBuckets());
    m->maxConcurrent_ = &m->maxFamily_->Add(labels);
    m->maxConcurrent_->Set(workers);
    m->activeWorkers_ = &m->activeFamily_->Add(labels);
  } catch (const std::exception& e) {
    if (error != nullptr) {
      *error = "controller metrics for \"" + controller + "\": " + e.what();
    }
    return nullptr;  // the destructor removes the children made so far
  }
  return m;
}

namespace {
template <class T>
void removeChild(prometheus::Family<T>* family, T* child) {
  if (family != nullptr && child != nullptr) {
    family->Remove(child);
  }
}
}  // namespace

ControllerMetrics::~ControllerMetrics() {
  removeChild(totalFamily_, success_);
  removeChild(totalFamily_, error_);
  removeChild(totalFamily_, requeue_);
  removeChild(totalFamily_, requeueAfter_);
  removeChild(errorsFamily_, errors_);
  removeChild(panicsFamily_, panics_);
  removeChild(timeFamily_, time_);
  removeChild(maxFamily_, maxConcurrent_);
  removeChild(activeFamily_, activeWorkers_);
}

void ControllerMetrics::reconciled(ReconcileResult::Kind outcome, double seconds) {
  time_->Observe(seconds);
  switch (outcome) {
    case ReconcileResult::Kind::Done:
      success_->Increment();
      break;
    case ReconcileResult::Kind::Requeue:
      requeue_->Increment();
      break;
    case ReconcileResult::Kind::RequeueAfter:
      requeueAfter_->Increment();
      break;
    case ReconcileResult::Kind::Error:
      errors_->Increment();
      error_->Increment();
      break;
  }
}

}  // namespace egress::controllerruntime
