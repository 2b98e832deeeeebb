#include "pkg/controllerruntime/controller.h"

#include <exception>
#include <optional>
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <spdlog/spdlog.h>

#include "pkg/base/notifier.h"
#include "pkg/controllerruntime/controller_metrics.h"
#include "pkg/workqueue/rate_limiting_queue.h"

namespace egress::controllerruntime {

namespace detail {

// Everything the workers touch; they and the Controller own it together.
struct ControllerState {
  explicit ControllerState(Controller::Options& options)
      : name(std::move(options.name)),
        workers(options.workers < 1 ? 1 : options.workers),
        clock(options.clock),
        executor(std::move(options.executor)),
        registry(options.registry),
        metrics(ControllerMetrics::create(registry, name, workers, &metricsError)),
        workersDone(executor) {}

  std::string name;
  int workers;
  Clock& clock;
  net::any_io_executor executor;
  prometheus::Registry* registry;
  std::string metricsError;
  std::unique_ptr<ControllerMetrics> metrics;
  // Made once the rate limiter can be asked for (rateLimiter() is virtual).
  std::unique_ptr<workqueue::RateLimitingQueue<std::string>> queue;
  // Null once the Controller is destroyed; `stopping` is set then too.
  Controller* owner = nullptr;
  bool stopping = false;
  bool running = false;
  int liveWorkers = 0;
  Notifier workersDone;
};

}  // namespace detail

void Enqueuer::add(const std::string& key) const {
  if (auto s = state_.lock(); s && s->queue) {
    s->queue->add(key);
  }
}

void Enqueuer::addAfter(const std::string& key, Clock::Duration delay) const {
  if (auto s = state_.lock(); s && s->queue) {
    s->queue->addAfter(key, delay);
  }
}

Controller::Controller(Options options) : state_(std::make_shared<State>(options)) {
  state_->owner = this;
}

Controller::~Controller() {
  state_->owner = nullptr;
  stopState(*state_);
}

const std::string& Controller::name() const {
  return state_->name;
}

int Controller::workers() const {
  return state_->workers;
}

Clock& Controller::clock() const {
  return state_->clock;
}

net::any_io_executor Controller::executor() const {
  return state_->executor;
}

size_t Controller::queueLength() const {
  return state_->queue ? state_->queue->len() : 0;
}

int Controller::numRequeues(const std::string& key) const {
  return state_->queue ? state_->queue->numRequeues(key) : 0;
}

Enqueuer Controller::enqueuer() {
  ensureQueue();
  return Enqueuer(state_);
}

void Controller::ensureQueue() {
  State& s = *state_;
  if (s.queue) {
    return;
  }
  workqueue::QueueConfig<std::string> config{.name = s.name,
                                             .clock = s.clock,
                                             .executor = s.executor,
                                             .registry = s.registry,
                                             .limiter = rateLimiter()};
  s.queue = std::make_unique<workqueue::RateLimitingQueue<std::string>>(std::move(config));
  if (s.stopping) {
    s.queue->shutDown();
  }
}

std::unique_ptr<workqueue::RateLimiter<std::string>> Controller::rateLimiter() {
  return workqueue::defaultControllerRateLimiter<std::string>(state_->clock);
}

Result<Ok, std::string> Controller::setUp(cache::SharedInformerFactory& factory) {
  State& s = *state_;
  if (!s.metricsError.empty()) {
    return "controller " + s.name + ": " + s.metricsError;
  }
  ensureQueue();
  if (!s.queue->metricsError().empty()) {
    return "controller " + s.name + ": " + s.queue->metricsError();
  }
  if (auto watched = watchResources(factory); !watched) {
    return "controller " + s.name + ": " + watched.error();
  }
  if (auto added = addEventHandlers(); !added) {
    return "controller " + s.name + ": " + added.error();
  }
  return Ok{};
}

Result<Ok, std::string> Controller::watchResources(cache::SharedInformerFactory& /*factory*/) {
  return Ok{};
}

Result<Ok, std::string> Controller::addEventHandlers() {
  return Ok{};
}

net::awaitable<Result<Ok, std::string>> Controller::start() {
  co_return Ok{};
}

net::awaitable<void> Controller::run() {
  ensureQueue();
  return runWorkers(state_);
}

void Controller::stop() {
  stopState(*state_);
}

void Controller::stopState(State& s) {
  s.stopping = true;
  if (s.queue) {
    s.queue->shutDown();
  }
}

// Spawned coroutines are static and take the state explicitly: a member coroutine spawned from
// inside another coroutine can lose `this` under g++ 12, and holding the state keeps the queue
// alive for as long as a worker runs.
net::awaitable<void> Controller::runWorkers(std::shared_ptr<State> s) {
  if (s->stopping || s->running) {
    co_return;
  }
  s->running = true;
  spdlog::info("controller {}: starting {} workers", s->name, s->workers);
  for (int i = 0; i < s->workers; ++i) {
    ++s->liveWorkers;
    net::co_spawn(s->executor, worker(s), rethrowUnhandled);
  }
  while (s->liveWorkers > 0) {
    const bool woken = co_await s->workersDone.wait();
    if (!woken) {
      stopState(*s);  // our caller gave up waiting: the workers wind down on their own
      co_return;
    }
  }
  spdlog::info("controller {}: all workers finished", s->name);
}

net::awaitable<void> Controller::worker(std::shared_ptr<State> s) {
  auto& queue = *s->queue;
  while (!s->stopping) {
    std::optional<std::string> key = co_await queue.get();
    if (!key) {
      break;  // shut down
    }
    if (s->stopping) {
      queue.done(*key);  // handed over in the tick stop() came: take no new keys
      break;
    }
    const std::string& taken = *key;
    co_await reconcileOne(s, taken);
    // Only now may another worker take the key (the queue holds it back until done()).
    queue.done(*key);
  }
  if (--s->liveWorkers == 0) {
    s->workersDone.notify();
  }
}

// controller-runtime's processNextWorkItem + reconcileHandler, with its recover(): an exception
// is the C++ panic. Not stopping the process for it is the point (one bad object must not take
// every controller down), and retrying it with backoff is what controller-runtime does.
net::awaitable<void> Controller::reconcileOne(std::shared_ptr<State> s, std::string key) {
  if (s->metrics) {
    s->metrics->workerBusy();
  }
  const auto started = s->clock.now();
  ReconcileResult result = ReconcileResult::done();
  std::optional<std::string> panic;
  try {
    // `owner` is set: the controller is not stopping, so it has not been destroyed.
    result = co_await s->owner->reconcile(key);
  } catch (const std::exception& e) {
    panic = e.what();
  } catch (...) {
    panic = "an exception that is not a std::exception";
  }
  const double seconds = std::chrono::duration<double>(s->clock.now() - started).count();
  if (panic) {
    if (s->metrics) {
      s->metrics->panicked();
    }
    spdlog::error("controller {}: reconcile of {} threw (recovered, will retry): {}", s->name, key,
                  *panic);
    result = ReconcileResult::error("panic: " + *panic + " [recovered]");
  }
  auto& queue = *s->queue;
  switch (result.kind()) {
    case ReconcileResult::Kind::Done:
      queue.forget(key);
      break;
    case ReconcileResult::Kind::Requeue:
      queue.addRateLimited(key);
      break;
    case ReconcileResult::Kind::RequeueAfter:
      // A periodic check is not a failure: the next failure backs off from the start again.
      queue.forget(key);
      queue.addAfter(key, result.after());
      break;
    case ReconcileResult::Kind::Error:
      queue.addRateLimited(key);
      if (!panic) {
        spdlog::error("controller {}: reconcile of {} failed: {}", s->name, key, result.message());
      }
      break;
  }
  if (s->metrics) {
    s->metrics->reconciled(result.kind(), seconds);
    s->metrics->workerIdle();
  }
}

}  // namespace egress::controllerruntime
