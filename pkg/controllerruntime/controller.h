// File: controller.h
//
// Controller: the seed's GenericController, run the way controller-runtime runs a controller.
// A subclass names the informers it needs (watchResources), maps their events to keys
// (addEventHandlers, usually with event_handlers.h), and reconciles a key (reconcile(), which
// may run processors over what it gathered; processor.h says how their results combine). The
// Manager drives it as a Runnable: setUp(factory) → start() → run() … stop().
//
//   class ConfigMapController : public Controller {
//    public:
//     using Controller::Controller;
//    protected:
//     Result<Ok, std::string> watchResources(cache::SharedInformerFactory& f) override {
//       configMaps_ = &f.informerFor<core::ConfigMap>(kConfigMaps, core::decodeConfigMap);
//       return Ok{};
//     }
//     Result<Ok, std::string> addEventHandlers() override {
//       auto reg = configMaps_->addEventHandler(enqueueForObject<core::ConfigMap>(enqueuer()));
//       if (!reg) return reg.error().message();
//       return Ok{};
//     }
//     net::awaitable<ReconcileResult> reconcile(const std::string& key) override;
//   };
//
// What a reconcile's result does (controller-runtime's reconcileHandler):
//   done           forget the key's backoff                      reconcile_total{success}
//   requeue        addRateLimited                                 reconcile_total{requeue}
//   requeueAfter d forget the backoff, then addAfter(d) exactly   reconcile_total{requeue_after}
//   error          addRateLimited, logged                         reconcile_total{error}, errors
//   an exception escaping the reconcile: logged, reconcile_panics_total, then as an error.
// The workqueue (pkg/workqueue) guarantees that a key is never reconciled by two workers at once;
// `workers` reconciles of different keys run concurrently (interleaved on the one io_context
// thread). The workqueue_* metrics carry the controller's name as their `name` label.
//
// Lifetime: the queue, the workers' bookkeeping and the metrics are co-owned by the worker
// coroutines, so the Controller may be destroyed while the io_context runs, even in the middle of
// a reconcile whose frame does not touch it (it stops; the running reconcile finishes and nothing
// is requeued). A reconcile() that is a member coroutine of the subclass and suspends: destroy the
// controller only after stop() and run() has returned (the Manager does), or keep what it
// touches in shared state. The clock and the metrics registry must outlive the workers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <prometheus/registry.h>

#include "pkg/base/clock.h"
#include "pkg/base/result.h"
#include "pkg/controllerruntime/enqueuer.h"
#include "pkg/controllerruntime/reconcile_result.h"
#include "pkg/controllerruntime/runnable.h"
#include "pkg/workqueue/rate_limiter.h"

namespace egress::controllerruntime {

class Controller : public Runnable {
 public:
  struct Options {
    // The metrics' `controller` label and the workqueue's `name`: unique per registry.
    std::string name;
    // Concurrent reconciles (--workers); values below 1 mean 1 (controller-runtime's default).
    int workers = 1;
    Clock& clock;
    net::any_io_executor executor;
    // controller_runtime_* and workqueue_* metrics; null = none. Must outlive the workers.
    prometheus::Registry* registry = nullptr;
  };

  explicit Controller(Options options);
  // Stops the controller (as stop()); safe while reconciles run, see the banner.
  ~Controller() override;
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  const std::string& name() const override;
  // Makes the workqueue (with rateLimiter()), then watchResources(factory), then
  // addEventHandlers(). Fails if the controller's metrics could not be registered (its name is
  // already taken in the registry).
  Result<Ok, std::string> setUp(cache::SharedInformerFactory& factory) override;
  // The start hook; nothing by default.
  net::awaitable<Result<Ok, std::string>> start() override;
  // Runs `workers` workers until stop(); returns once none runs any more. Returns at once after
  // stop(), or if it already runs (a second call does not add workers). Cancelling the
  // returned awaitable stops the controller and returns without waiting for the workers.
  net::awaitable<void> run() override;
  // Takes no new keys (the queue shuts down, delayed keys are dropped); running reconciles
  // finish, then run() returns. Idempotent.
  void stop() override;

  // The handle event handlers enqueue through (safe to keep after the controller is gone).
  Enqueuer enqueuer();
  int workers() const;
  // Keys queued and not yet taken (not those delayed or being reconciled).
  size_t queueLength() const;
  // Failures the rate limiter has recorded for `key` since it was last forgotten.
  int numRequeues(const std::string& key) const;

 protected:
  // Asks the factory for the informers this controller needs (keep the references).
  virtual Result<Ok, std::string> watchResources(cache::SharedInformerFactory& factory);
  // Adds the handlers mapping those informers' events to keys (enqueuer()).
  virtual Result<Ok, std::string> addEventHandlers();
  // Reconciles one key (see Lifetime above).
  virtual net::awaitable<ReconcileResult> reconcile(const std::string& key) = 0;
  // The workqueue's rate limiter; called once, by setUp() (or by run() / enqueuer() if they come
  // first). Default: controller-runtime's DefaultTypedControllerRateLimiter, the max of per-item
  // exponential backoff 5 ms → 1000 s and an overall 10 qps / burst 100 bucket (controller-runtime
  // drops the bucket with its priority queue; this runtime has the classic FIFO queue).
  virtual std::unique_ptr<workqueue::RateLimiter<std::string>> rateLimiter();

  Clock& clock() const;
  // Where the workers run (the Manager's event loop).
  net::any_io_executor executor() const;

 private:
  using State = detail::ControllerState;
  void ensureQueue();
  static net::awaitable<void> runWorkers(std::shared_ptr<State> state);
  static net::awaitable<void> worker(std::shared_ptr<State> state);
  static net::awaitable<void> reconcileOne(std::shared_ptr<State> state, std::string key);
  static void stopState(State& state);

  std::shared_ptr<State> state_;
};

}  // namespace egress::controllerruntime
