// File: manager.h
//
// controller-runtime's Manager: the one object an operator's main() builds. It owns what the
// controllers share (the REST client, the shared informer factory, the metrics registry, the
// EventRecorder), serves /metrics and the health probes, optionally elects a leader, and runs the
// controllers (Runnables, runnable.h) through their life in this order:
//
//   1. the metrics and health probe servers start (/readyz fails until the caches synced);
//   2. every runnable's setUp(factory), in the order added;
//   3. the informers start; every cache must sync within --cache-sync-timeout, or run() logs the
//      informers that did not and returns non-zero;
//   4. with --leader-elect, the lease is won (until then the Manager is a standby);
//   5. every runnable's start(), in order; an error is logged and run() returns non-zero;
//   6. every runnable's run(), concurrently, until the Manager stops.
// From start to stop it also returns free heap to the kernel every 30 s (heap_scavenger.h).
//
// It stops in one of three ways:
//  - SIGTERM/SIGINT (or requestShutdown()): every runnable's stop() (no new keys), then their
//    run()s are awaited until --graceful-shutdown-timeout (after it, the ones still running are
//    named in the log and abandoned); only then is the lease released (the elector keeps renewing
//    it during the drain, so no successor runs while our reconciles still write); the
//    EventRecorder is flushed, the informers and servers stop, and run() returns 0. A second
//    signal during all this makes run() return 1 at once.
//  - Leadership lost (the lease could not be renewed): the runnables are stopped and awaited (for
//    at most the graceful timeout, and at most leaseDuration - renewDeadline, the time before a
//    successor may take over), and run() returns 1 ("leader election lost"), as
//    controller-runtime does, so the kubelet restarts a clean process that campaigns afresh.
//  - A runnable's setUp() or start() fails, or its run() throws: the same orderly stop, and 1.
//
//   ManagerOptions options;                       // manager_options.h: flags and defaults
//   addManagerFlags(flags, options);
//   net::io_context ioc;
//   auto manager = Manager::create(ioc.get_executor(), options, {});
//   if (!manager) { spdlog::error("{}", manager.error()); return 1; }
//   (*manager)->add(std::make_unique<PolicyController>(...));
//   int code = kExitError;
//   net::co_spawn(ioc, (*manager)->run(), [&](std::exception_ptr e, int result) {
//     if (e) std::rethrow_exception(e);
//     code = result;
//     ioc.stop();   // what the Manager abandoned must not keep the process alive
//   });
//   ioc.run();
//   return code;
//
// Everything runs on the io_context's one thread. The Manager's coroutines co-own its state, so
// destroying the Manager after run() returned is safe while the io_context still runs.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "pkg/base/clock.h"
#include "pkg/base/result.h"
#include "pkg/cache/informer_factory.h"
#include "pkg/controllerruntime/event_recorder.h"
#include "pkg/controllerruntime/healthz.h"
#include "pkg/controllerruntime/http_server.h"
#include "pkg/controllerruntime/manager_options.h"
#include "pkg/controllerruntime/runnable.h"
#include "pkg/kube/rest_config.h"
#include "pkg/kube/transport.h"
#include "pkg/leaderelection/lease_lock.h"

namespace prometheus {
class Registry;
}

namespace egress::kube {
class RestClient;
}

namespace egress::controllerruntime {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;

// What the Manager would otherwise build or discover itself; tests replace it.
struct ManagerDeps {
  // Null = a RealClock on the executor. Must outlive the Manager's coroutines.
  Clock* clock = nullptr;
  // Unset = kube::loadRestConfig(options.kubeconfig). The Manager builds its REST client from it
  // either way, so rest_client_* always land in its registry.
  std::optional<kube::RestConfig> restConfig;
  // Null = the transport restConfig describes. Tests answer requests in-process with their own.
  std::unique_ptr<kube::Transport> transport;
  // Empty = informers list and watch through the REST client.
  cache::SharedInformerFactory::ListerWatcherMaker listerWatchers;
  // Null = a KubeLeaseLock on options' Lease. Not owned; must outlive the Manager's coroutines.
  leaderelection::LeaseLock* leaseLock = nullptr;
  // The leader-election candidate's identity; "" = "<hostname>_<random hex>" as
  // controller-runtime (in a pod the hostname is the pod's name).
  std::string identity;
  // False = no signal handlers: tests call requestShutdown() themselves.
  bool handleSignals = true;
  // The elector's jitter source (uniform in [0, 1)); empty = a seeded generator.
  std::function<double()> random;
  EventRecorderOptions events;
};

class Manager {
 public:
  // Builds the client, the factory, the recorder and (with options.leaderElect) the elector;
  // an error for invalid options, a config that cannot be found or loaded, or an elector config
  // client-go would refuse.
  static Result<std::unique_ptr<Manager>, std::string> create(const net::any_io_executor& executor,
                                                              ManagerOptions options,
                                                              ManagerDeps deps);
  ~Manager();
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  // Before run(). Runnables are set up, started and stopped in the order added.
  void add(std::unique_ptr<Runnable> runnable);
  // Extra probe checks (controller-runtime's AddHealthzCheck / AddReadyzCheck), before run().
  // The Manager itself registers "ping" on /healthz and "informers" on /readyz.
  Result<Ok, std::string> addHealthzCheck(const std::string& name, HealthCheck check);
  Result<Ok, std::string> addReadyzCheck(const std::string& name, HealthCheck check);

  // Runs everything until it stops (see the top of this file); the process exit code: kExitOk
  // after a requested shutdown, kExitError otherwise. Call once.
  net::awaitable<int> run();

  // What a SIGTERM does (the first call: graceful shutdown; the second: return kExitError at
  // once). Also valid before run() (run() then stops right after its setup).
  void requestShutdown();

  kube::RestClient& client();
  cache::SharedInformerFactory& informers();
  prometheus::Registry& registry();
  EventRecorder& eventRecorder();
  Clock& clock();
  // The probe checks, as served on /healthz and /readyz.
  const HealthChecks& livenessChecks() const;
  const HealthChecks& readinessChecks() const;
  // The servers, once run() started them; null when disabled or not started.
  const HttpServer* metricsServer() const;
  const HttpServer* healthProbeServer() const;
  // With leader election, whether this replica leads; without, true once the caches synced.
  bool isLeader() const;

  struct State;

 private:
  explicit Manager(std::shared_ptr<State> state);

  std::shared_ptr<State> state_;
};

}  // namespace egress::controllerruntime
