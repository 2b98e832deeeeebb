#include "pkg/controllerruntime/manager.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <exception>
#include <random>
#include <utility>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/signal_set.hpp>
#include <fmt/format.h>
#include <prometheus/registry.h>
#include <spdlog/spdlog.h>

#include "pkg/base/heap_scavenger.h"
#include "pkg/base/notifier.h"
#include "pkg/cli/flag_set.h"
#include "pkg/controllerruntime/endpoints.h"
#include "pkg/controllerruntime/process_collector.h"
#include "pkg/kube/config_discovery.h"
#include "pkg/kube/rest_client.h"
#include "pkg/leaderelection/kube_lease_lock.h"
#include "pkg/leaderelection/leader_elector.h"
#include <unistd.h>

namespace egress::controllerruntime {

namespace {

// How often the cache-sync wait looks at the informers (client-go's syncedPollPeriod).
constexpr std::chrono::milliseconds kSyncPollPeriod{100};
// The EventRecorder gets what is left of the graceful timeout to flush, and at least this.
constexpr std::chrono::seconds kMinEventFlush{1};

std::string joinNames(const std::vector<std::string>& names) {
  return fmt::format("{}", fmt::join(names, ", "));
}

// controller-runtime's default identity: the hostname (the pod's name) and a random suffix, so
// two processes on one host (or a restarted container) never share an identity.
std::string defaultIdentity() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') {
    std::snprintf(host, sizeof host, "unknown");
  }
  std::random_device device;
  std::mt19937_64 random(device());
  return fmt::format("{}_{:016x}", host, random());
}

}  // namespace

// Everything the Manager owns, co-owned by its coroutines: the Manager may go away while they
// still finish, and nothing they touch goes with it. Members are destroyed in reverse order:
// what uses the registry, the clock and the client goes before them.
struct Manager::State : std::enable_shared_from_this<Manager::State> {
  State(const net::any_io_executor& executorIn, ManagerOptions optionsIn)
      : executor(executorIn), options(std::move(optionsIn)), wake(executorIn) {}

  net::any_io_executor executor;
  ManagerOptions options;
  prometheus::Registry registry;
  ProcessCollector processCollector;
  std::unique_ptr<Clock> ownedClock;
  Clock* clock = nullptr;
  std::unique_ptr<kube::RestClient> client;
  std::unique_ptr<EventRecorder> recorder;
  std::unique_ptr<cache::SharedInformerFactory> factory;
  std::unique_ptr<leaderelection::LeaseLock> ownedLock;
  std::unique_ptr<leaderelection::LeaderElector> elector;
  HealthChecks liveness;
  HealthChecks readiness;
  std::unique_ptr<HttpServer> metricsServer;
  std::unique_ptr<HttpServer> healthProbeServer;
  std::unique_ptr<net::signal_set> signals;
  std::unique_ptr<base::HeapScavenger> scavenger;

  std::vector<std::shared_ptr<Runnable>> runnables;
  // Per runnable: its run() is under way.
  std::vector<bool> running;
  size_t runningCount = 0;

  // Every change of the flags below and of `running` is announced here.
  Notifier wake;
  bool ran = false;
  bool cachesSynced = false;
  bool leading = false;
  bool runnablesStarted = false;
  bool electorStarted = false;
  bool electorDone = false;
  // The Manager decided to stop (a signal, or a failure of its own); stopDeadline bounds the
  // drain.
  bool stopRequested = false;
  Clock::TimePoint stopDeadline{};
  int exitCode = kExitOk;
  // A second signal: stop waiting for anything.
  bool forced = false;
  // onStoppedLeading came without a stop request.
  bool leadershipLost = false;
  // onStartedLeading ran: from then on another holder means a successor.
  bool everLed = false;
  bool runnablesStopped = false;
  bool drainReported = false;
};

namespace {

using State = Manager::State;

// Starts an orderly stop ending in `code` (the first reason wins).
void requestStop(State& s, int code) {
  if (s.stopRequested) {
    return;
  }
  s.stopRequested = true;
  s.exitCode = code;
  s.stopDeadline = s.clock->now() + s.options.gracefulShutdownTimeout;
  s.wake.notify();
}

// Tells every runnable to take no new work. Once.
void stopRunnables(State& s) {
  if (s.runnablesStopped) {
    return;
  }
  s.runnablesStopped = true;
  for (auto& runnable : s.runnables) {
    runnable->stop();
  }
}

void onSignal(State& s) {
  // A stop under way (for a signal or for an error): a signal now means "do not wait".
  if (s.stopRequested) {
    if (!s.forced) {
      spdlog::error("second shutdown signal: exiting without waiting for the shutdown to finish");
    }
    s.forced = true;
    s.wake.notify();
    return;
  }
  spdlog::info("shutdown requested: stopping the controllers (graceful shutdown timeout {})",
               cli::formatDuration(s.options.gracefulShutdownTimeout));
  requestStop(s, kExitOk);
  // No new keys from this turn on: the drain that awaits the runnables begins a few turns later
  // (in the elector's stop hook), and a worker finishing a reconcile meanwhile must not take
  // another key. Before the runnables started, startUp() sees the request instead.
  if (s.runnablesStarted) {
    stopRunnables(s);
  }
}

void armSignals(const std::shared_ptr<State>& state) {
  std::weak_ptr<State> weak = state;
  state->signals->async_wait([weak](const boost::system::error_code& ec, int signo) {
    if (ec) {
      return;  // cancelled: the Manager stopped
    }
    auto s = weak.lock();
    if (!s) {
      return;
    }
    spdlog::info("received signal {}", signo == SIGTERM ? "SIGTERM" : "SIGINT");
    onSignal(*s);
    armSignals(s);
  });
}

// Stops the runnables and waits until their run()s returned, `deadline` passed or a second
// signal came; true if they all returned. Several coroutines may drain at once (the elector's
// hook and run()); each waits for the same thing.
net::awaitable<bool> drain(std::shared_ptr<State> s, Clock::TimePoint deadline) {
  stopRunnables(*s);
  while (s->runningCount > 0 && !s->forced) {
    if (s->clock->now() >= deadline) {
      if (!s->drainReported) {
        s->drainReported = true;
        std::vector<std::string> names;
        for (size_t i = 0; i < s->runnables.size(); ++i) {
          if (s->running[i]) {
            names.push_back(s->runnables[i]->name());
          }
        }
        spdlog::error("graceful shutdown timeout: {} still running, not waiting any longer",
                      joinNames(names));
      }
      co_return false;
    }
    co_await s->wake.waitUntil(*s->clock, deadline, Notifier::Place::Back);
  }
  co_return s->runningCount == 0;
}

// Waits until `done` holds or a second signal came.
template <class Done>
net::awaitable<void> waitFor(std::shared_ptr<State> s, Done done) {
  while (!done() && !s->forced) {
    co_await s->wake.wait();
  }
}

// One runnable's run(), as its own coroutine. Static with its state passed explicitly: g++ 12
// can lose `this` in member coroutines spawned from a coroutine.
net::awaitable<void> runRunnable(std::shared_ptr<State> s, size_t index) {
  std::shared_ptr<Runnable> runnable = s->runnables[index];
  try {
    co_await runnable->run();
  } catch (const std::exception& e) {
    spdlog::error("{}: run() failed: {}", runnable->name(), e.what());
    requestStop(*s, kExitError);
  }
  s->running[index] = false;
  --s->runningCount;
  s->wake.notify();
}

net::awaitable<void> runElector(std::shared_ptr<State> s) {
  co_await s->elector->run();
  s->electorDone = true;
  s->wake.notify();
}

// The elector's onStoppedLeading: the lease is renewed (after a requested stop) or lost;
// either way the runnables stop, and the lease is released only once this returns.
net::awaitable<void> stoppedLeading(std::shared_ptr<State> s) {
  s->leading = false;
  Clock::TimePoint deadline = s->stopDeadline;
  if (!s->stopRequested) {
    // Nobody can renew a lost lease: a successor may take over leaseDuration - renewDeadline
    // after our last renewal, so the runnables get no longer than that to stop.
    spdlog::error("leader election lost");
    s->leadershipLost = true;
    auto budget = std::min<Clock::Duration>(s->options.gracefulShutdownTimeout,
                                            s->options.leaseDuration - s->options.renewDeadline);
    if (s->client->writesFenced()) {
      // Deliberate difference from controller-runtime, which lets its runnables wind down
      // while the process exits: another holder has the lease (onNewLeader fenced the writes),
      // and may be writing already. Nothing is waited for.
      spdlog::error("exiting without waiting for the reconciles in flight");
      budget = Clock::Duration::zero();
    }
    requestStop(*s, kExitError);
    deadline = s->clock->now() + budget;
    s->stopDeadline = deadline;
  }
  if (s->runnablesStarted) {
    co_await drain(s, deadline);
    // After a second signal the process exits now: the lease must not be released under work
    // that still runs (it expires instead), so the elector is kept waiting for that work.
    while (s->forced && s->runningCount > 0) {
      co_await s->wake.wait();
    }
  }
}

std::vector<std::string> unsyncedInformers(const State& s) {
  std::vector<std::string> names;
  for (const auto* informer : s.factory->informers()) {
    if (!informer->hasSynced()) {
      names.push_back(informer->name());
    }
  }
  return names;
}

enum class SyncOutcome { Synced, TimedOut, Stopped };

net::awaitable<SyncOutcome> waitForCaches(std::shared_ptr<State> s) {
  const auto deadline = s->clock->now() + s->options.cacheSyncTimeout;
  for (;;) {
    if (s->stopRequested) {
      co_return SyncOutcome::Stopped;
    }
    if (unsyncedInformers(*s).empty()) {
      co_return SyncOutcome::Synced;
    }
    const auto now = s->clock->now();
    if (now >= deadline) {
      co_return SyncOutcome::TimedOut;
    }
    const auto poll = std::min(deadline, now + kSyncPollPeriod);
    co_await s->wake.waitUntil(*s->clock, poll, Notifier::Place::Back);
  }
}

Result<Ok, std::string> startServers(State& s) {
  auto metrics = startMetricsServer(s.executor, s.options.metricsBindAddress,
                                    {&s.registry, &s.processCollector}, HttpServerOptions());
  if (!metrics) {
    return metrics.error();
  }
  s.metricsServer = std::move(*metrics);
  auto probes = startHealthProbeServer(s.executor, s.options.healthProbeBindAddress, s.liveness,
                                       s.readiness, HttpServerOptions());
  if (!probes) {
    return probes.error();
  }
  s.healthProbeServer = std::move(*probes);
  if (s.metricsServer) {
    spdlog::info("serving /metrics on port {}", s.metricsServer->port());
  }
  if (s.healthProbeServer) {
    spdlog::info("serving /healthz and /readyz on port {}", s.healthProbeServer->port());
  }
  return Ok{};
}

// Sets up, syncs, elects and starts; false when the Manager must stop instead of running the
// runnables (the reason is in s.exitCode or s.stopRequested).
net::awaitable<bool> startUp(std::shared_ptr<State> s) {
  if (auto started = startServers(*s); !started) {
    spdlog::error("{}", started.error());
    requestStop(*s, kExitError);
    co_return false;
  }
  for (auto& runnable : s->runnables) {
    if (auto set = runnable->setUp(*s->factory); !set) {
      spdlog::error("{}: setting up failed: {}", runnable->name(), set.error());
      requestStop(*s, kExitError);
      co_return false;
    }
  }
  s->factory->start();
  const auto synced = co_await waitForCaches(s);
  if (synced == SyncOutcome::TimedOut) {
    spdlog::error("timed out after {} waiting for the caches to sync; informers not synced: {}",
                  cli::formatDuration(s->options.cacheSyncTimeout),
                  joinNames(unsyncedInformers(*s)));
    requestStop(*s, kExitError);
    co_return false;
  }
  if (synced == SyncOutcome::Stopped) {
    co_return false;
  }
  s->cachesSynced = true;
  spdlog::info("caches synced ({} informers)", s->factory->size());

  if (s->elector) {
    spdlog::info("attempting to acquire the leader lease {} as {}",
                 s->ownedLock ? s->ownedLock->describe() : std::string("(injected lock)"),
                 s->elector->identity());
    s->electorStarted = true;
    net::co_spawn(s->executor, runElector(s), rethrowUnhandled);
    State* raw = s.get();
    co_await waitFor(s, [raw] { return raw->leading || raw->stopRequested || raw->electorDone; });
    if (!s->leading) {
      if (!s->stopRequested) {
        spdlog::error("leader election ended before this replica led");
        requestStop(*s, kExitError);
      }
      co_return false;
    }
  } else {
    s->leading = true;
  }

  for (auto& runnable : s->runnables) {
    if (s->stopRequested) {
      co_return false;
    }
    auto started = co_await runnable->start();
    if (!started) {
      spdlog::error("{}: start failed: {}", runnable->name(), started.error());
      requestStop(*s, kExitError);
      co_return false;
    }
  }
  if (s->stopRequested) {
    co_return false;
  }
  s->runnablesStarted = true;
  s->running.assign(s->runnables.size(), true);
  s->runningCount = s->runnables.size();
  for (size_t i = 0; i < s->runnables.size(); ++i) {
    net::co_spawn(s->executor, runRunnable(s, i), rethrowUnhandled);
  }
  spdlog::info("started {} controllers", s->runnables.size());
  co_return true;
}

// The orderly stop, in controller-runtime's order: runnables (drained), then the lease, then the
// event sink, the caches and the servers.
net::awaitable<int> shutDown(std::shared_ptr<State> s) {
  State* raw = s.get();
  if (s->electorStarted && !s->electorDone) {
    // With a requested stop the elector keeps renewing while stoppedLeading() drains, and
    // releases the lease after it; after a lost lease it only awaits the drain.
    s->elector->stop();
    co_await waitFor(s, [raw] { return raw->electorDone; });
  }
  co_await drain(s, s->stopDeadline);
  if (!s->forced && !s->client->writesFenced()) {
    const auto flushDeadline = std::max(s->stopDeadline, s->clock->now() + kMinEventFlush);
    co_await s->recorder->shutdown(flushDeadline);
  }
  // Even after a second signal, when nothing is awaited any more: the informers' watches, the
  // servers and the signal handler are cancelled now, while everything they use exists. Left
  // running, they would be cancelled by their destructors when the process ends (main() stops
  // the io_context and returns), from inside the io_context's destructor, after coroutines
  // that own part of what they use are gone (a second SIGTERM used to end in SIGSEGV so).
  s->factory->stop();
  s->scavenger->stop();
  if (s->metricsServer) {
    s->metricsServer->stop();
  }
  if (s->healthProbeServer) {
    s->healthProbeServer->stop();
  }
  if (s->signals) {
    s->signals->cancel();
  }
  if (s->forced || s->leadershipLost) {
    co_return kExitError;
  }
  co_return s->exitCode;
}

net::awaitable<int> runManager(std::shared_ptr<State> s) {
  if (s->ran) {
    spdlog::error("Manager::run() called twice");
    co_return kExitError;
  }
  s->ran = true;
  if (s->signals) {
    armSignals(s);
  }
  net::co_spawn(s->executor, s->scavenger->run(), rethrowUnhandled);
  if (co_await startUp(s)) {
    State* raw = s.get();
    co_await waitFor(s, [raw] { return raw->stopRequested; });
  }
  if (!s->stopRequested) {
    requestStop(*s, kExitOk);
  }
  co_return co_await shutDown(s);
}

}  // namespace

Result<std::unique_ptr<Manager>, std::string> Manager::create(const net::any_io_executor& executor,
                                                              ManagerOptions options,
                                                              ManagerDeps deps) {
  if (auto valid = validateManagerOptions(options); !valid) {
    return valid.error();
  }
  auto s = std::make_shared<State>(executor, std::move(options));
  if (deps.clock != nullptr) {
    s->clock = deps.clock;
  } else {
    s->ownedClock = std::make_unique<RealClock>(executor);
    s->clock = s->ownedClock.get();
  }

  s->scavenger = std::make_unique<base::HeapScavenger>(*s->clock, s->options.heapReleasePeriod);

  kube::RestConfig config;
  if (deps.restConfig) {
    config = std::move(*deps.restConfig);
  } else {
    auto loaded = kube::loadRestConfig(s->options.kubeconfig, "");
    if (!loaded) {
      return "loading the Kubernetes client configuration: " + loaded.error().message();
    }
    config = std::move(*loaded);
  }
  kube::RestClientOptions clientOptions;
  clientOptions.clock = s->clock;
  if (deps.transport) {
    s->client = std::make_unique<kube::RestClient>(executor, config, std::move(deps.transport),
                                                   &s->registry, clientOptions);
  } else {
    auto client = kube::RestClient::create(executor, config, &s->registry, clientOptions);
    if (!client) {
      return "building the Kubernetes client: " + client.error().message();
    }
    s->client = std::move(*client);
  }

  if (deps.listerWatchers) {
    s->factory = std::make_unique<cache::SharedInformerFactory>(
        std::move(deps.listerWatchers), *s->clock, executor, s->options.syncPeriod, &s->registry);
  } else {
    s->factory = std::make_unique<cache::SharedInformerFactory>(
        *s->client, *s->clock, executor, s->options.syncPeriod, &s->registry);
  }

  const std::string identity = deps.identity.empty() ? defaultIdentity() : deps.identity;
  EventRecorderOptions events = std::move(deps.events);
  if (events.instance.empty()) {
    events.instance = identity.substr(0, identity.find('_'));
  }
  s->recorder =
      std::make_unique<EventRecorder>(executor, *s->client, *s->clock, events, &s->registry);

  if (s->options.leaderElect) {
    leaderelection::LeaseLock* lock = deps.leaseLock;
    if (lock == nullptr) {
      const std::string ns = s->options.leaderElectionNamespace.empty()
                                 ? s->client->config().defaultNamespace
                                 : s->options.leaderElectionNamespace;
      s->ownedLock = std::make_unique<leaderelection::KubeLeaseLock>(
          *s->client, ns, s->options.leaderElectionId, identity);
      lock = s->ownedLock.get();
    }
    leaderelection::LeaderElectionConfig elector;
    elector.lock = lock;
    elector.name = s->options.leaderElectionId;
    elector.leaseDuration = s->options.leaseDuration;
    elector.renewDeadline = s->options.renewDeadline;
    elector.retryPeriod = s->options.retryPeriod;
    elector.releaseOnCancel = true;
    elector.random = std::move(deps.random);
    // Raw pointers: the elector is a member of the state, so the state outlives its callbacks.
    State* raw = s.get();
    elector.callbacks.onStartedLeading = [raw] {
      spdlog::info("became the leader");
      raw->leading = true;
      raw->everLed = true;
      raw->wake.notify();
    };
    elector.callbacks.onStoppedLeading = [raw] { return stoppedLeading(raw->shared_from_this()); };
    elector.callbacks.onNewLeader = [raw](const std::string& holder) {
      spdlog::info("the leader is {}", holder.empty() ? std::string("nobody") : holder);
      // Seen while renewing or while draining after a stop request alike: a successor may be
      // writing already, so nothing of ours is written from now on.
      if (raw->everLed && !holder.empty() && holder != raw->elector->identity() &&
          !raw->client->writesFenced()) {
        spdlog::error("leader election lost to {}: writes fenced", holder);
        raw->client->fenceWrites("leadership lost to " + holder);
      }
    };
    auto created =
        leaderelection::LeaderElector::create(*s->clock, std::move(elector), &s->registry);
    if (!created) {
      return "leader election (--leader-elect-lease-duration, --leader-elect-renew-deadline, "
             "--leader-elect-retry-period): " +
             created.error();
    }
    s->elector = std::move(*created);
  }

  if (auto added = s->liveness.add("ping", [] { return CheckResult(Ok{}); }); !added) {
    return added.error();
  }
  State* raw = s.get();
  auto informersSynced = [raw]() -> CheckResult {
    if (raw->cachesSynced) {
      return Ok{};
    }
    auto pending = unsyncedInformers(*raw);
    return pending.empty() ? std::string("caches not synced")
                           : "caches not synced: " + joinNames(pending);
  };
  if (auto added = s->readiness.add("informers", informersSynced); !added) {
    return added.error();
  }
  if (deps.handleSignals) {
    s->signals = std::make_unique<net::signal_set>(executor, SIGTERM, SIGINT);
  }
  return std::unique_ptr<Manager>(new Manager(std::move(s)));
}

Manager::Manager(std::shared_ptr<State> state) : state_(std::move(state)) {}

Manager::~Manager() = default;

void Manager::add(std::unique_ptr<Runnable> runnable) {
  state_->runnables.push_back(std::move(runnable));
}

Result<Ok, std::string> Manager::addHealthzCheck(const std::string& name, HealthCheck check) {
  return state_->liveness.add(name, std::move(check));
}

Result<Ok, std::string> Manager::addReadyzCheck(const std::string& name, HealthCheck check) {
  return state_->readiness.add(name, std::move(check));
}

net::awaitable<int> Manager::run() {
  return runManager(state_);
}

void Manager::requestShutdown() {
  onSignal(*state_);
}

kube::RestClient& Manager::client() {
  return *state_->client;
}
cache::SharedInformerFactory& Manager::informers() {
  return *state_->factory;
}
prometheus::Registry& Manager::registry() {
  return state_->registry;
}
EventRecorder& Manager::eventRecorder() {
  return *state_->recorder;
}
Clock& Manager::clock() {
  return *state_->clock;
}
const HealthChecks& Manager::livenessChecks() const {
  return state_->liveness;
}
const HealthChecks& Manager::readinessChecks() const {
  return state_->readiness;
}
const HttpServer* Manager::metricsServer() const {
  return state_->metricsServer.get();
}
const HttpServer* Manager::healthProbeServer() const {
  return state_->healthProbeServer.get();
}
bool Manager::isLeader() const {
  return state_->leading;
}

}  // namespace egress::controllerruntime
