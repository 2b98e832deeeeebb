#include "pkg/controllerruntime/manager_options.h"

#include <string>
#include <utility>

#include "pkg/controllerruntime/bind_address.h"

namespace egress::controllerruntime {

void addManagerFlags(cli::FlagSet& flags, ManagerOptions& options) {
  flags.addString("kubeconfig", options.kubeconfig,
                  "Path to a kubeconfig. Only required if out-of-cluster; without it KUBECONFIG, "
                  "the in-cluster service account and ~/.kube/config are tried in that order.");
  flags.addBool("leader-elect", options.leaderElect,
                "Enable leader election, ensuring only one active operator at a time.");
  flags.addString("leader-election-id", options.leaderElectionId,
                  "Name of the Lease used for leader election.");
  flags.addString("leader-election-namespace", options.leaderElectionNamespace,
                  "Namespace of the leader election Lease; empty means the operator's own "
                  "namespace (the service account's in a pod, the kubeconfig context's outside).");
  flags.addDuration("leader-elect-lease-duration", options.leaseDuration,
                    "How long candidates wait before taking over a lease that is not renewed.");
  flags.addDuration("leader-elect-renew-deadline", options.renewDeadline,
                    "How long the leader keeps trying to renew before it gives up leadership.");
  flags.addDuration("leader-elect-retry-period", options.retryPeriod,
                    "How long candidates wait between two attempts to acquire or renew.");
  flags.addString("metrics-bind-address", options.metricsBindAddress,
                  "Address the /metrics endpoint binds to; \"0\" disables it.");
  flags.addString("health-probe-bind-address", options.healthProbeBindAddress,
                  "Address the /healthz and /readyz probes bind to; \"0\" disables them.");
  flags.addDuration("graceful-shutdown-timeout", options.gracefulShutdownTimeout,
                    "On SIGTERM, how long running reconciles may take to finish before the "
                    "operator stops waiting for them.");
  flags.addDuration("cache-sync-timeout", options.cacheSyncTimeout,
                    "How long the informers may take to sync before the operator gives up and "
                    "exits with an error.");
  flags.addDuration("sync-period", options.syncPeriod,
                    "How often every cached object is handed to the controllers again (a resync) "
                    "even without a change; 0 turns resyncs off.");
  flags.addDuration("heap-release-period", options.heapReleasePeriod,
                    "How often free heap memory is handed back to the kernel.");
}

Result<Ok, std::string> validateManagerOptions(const ManagerOptions& options) {
  auto metrics = parseBindAddress(options.metricsBindAddress);
  if (!metrics) {
    return "--metrics-bind-address: " + metrics.error();
  }
  auto probes = parseBindAddress(options.healthProbeBindAddress);
  if (!probes) {
    return "--health-probe-bind-address: " + probes.error();
  }
  // Two listeners on one port: the second bind would fail at start, after the flags. A wildcard
  // host (absent, 0.0.0.0 or ::) takes the port on every address, so it clashes with any.
  auto everywhere = [](const BindAddress& b) { return !b.host || b.host->is_unspecified(); };
  if (*metrics && *probes && (*metrics)->port != 0 && (*metrics)->port == (*probes)->port &&
      (everywhere(**metrics) || everywhere(**probes) || (*metrics)->host == (*probes)->host)) {
    return "--metrics-bind-address and --health-probe-bind-address must not share port " +
           std::to_string((*metrics)->port);
  }
  // Every duration becomes a deadline, steady_clock::now() + it in int64 nanoseconds: within
  // this cap that cannot overflow (Go's time.Duration, which parseDuration allows, reaches
  // 2562047h, and a clock that has run for years would overflow past it).
  for (const auto& [flag, value] :
       {std::pair<const char*, std::chrono::milliseconds>{"--leader-elect-lease-duration",
                                                          options.leaseDuration},
        {"--leader-elect-renew-deadline", options.renewDeadline},
        {"--leader-elect-retry-period", options.retryPeriod},
        {"--graceful-shutdown-timeout", options.gracefulShutdownTimeout},
        {"--cache-sync-timeout", options.cacheSyncTimeout},
        {"--sync-period", options.syncPeriod},
        {"--heap-release-period", options.heapReleasePeriod}}) {
    if (value > kMaxDuration) {
      return std::string(flag) + " must be at most " + cli::formatDuration(kMaxDuration);
    }
  }
  if (options.cacheSyncTimeout.count() <= 0) {
    return std::string("--cache-sync-timeout must be greater than zero");
  }
  if (options.syncPeriod.count() < 0) {
    return std::string("--sync-period must not be negative");
  }
  if (options.heapReleasePeriod.count() <= 0) {
    return std::string("--heap-release-period must be greater than zero");
  }
  if (options.gracefulShutdownTimeout.count() < 0) {
    return std::string("--graceful-shutdown-timeout must not be negative");
  }
  if (options.leaderElect && options.leaderElectionId.empty()) {
    return std::string("--leader-election-id must not be empty with --leader-elect");
  }
  return Ok{};
}

}  // namespace egress::controllerruntime
