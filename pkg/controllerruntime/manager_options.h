// File: manager_options.h
//
// What the Manager is told on the command line, as controller-runtime's manager.Options and the
// flags Kubebuilder's main.go defines for them. One definition: the struct with the defaults,
// and addManagerFlags() registering each field on a FlagSet (so --help shows the defaults).
//
//   ManagerOptions options;
//   cli::FlagSet flags("egress-operator");
//   addManagerFlags(flags, options);
//   if (auto err = flags.parse(argc, argv); !err.empty()) { ... }
//   if (auto valid = validateManagerOptions(options); !valid) { ... valid.error() ... }
#pragma once

#include <chrono>
#include <string>

#include "pkg/base/result.h"
#include "pkg/cli/flag_set.h"

namespace egress::controllerruntime {

struct ManagerOptions {
  // "" = controller-runtime's discovery: KUBECONFIG, in-cluster, ~/.kube/config.
  std::string kubeconfig;

  bool leaderElect = false;
  // The Lease's name and namespace; "" namespace = the client's default namespace (in a pod,
  // the service account's; outside, the kubeconfig context's).
  std::string leaderElectionId = "egress-gateway-operator";
  std::string leaderElectionNamespace;
  // client-go's and controller-runtime's defaults.
  std::chrono::milliseconds leaseDuration{std::chrono::seconds(15)};
  std::chrono::milliseconds renewDeadline{std::chrono::seconds(10)};
  std::chrono::milliseconds retryPeriod{std::chrono::seconds(2)};

  // "0" disables a server.
  std::string metricsBindAddress = ":8080";
  std::string healthProbeBindAddress = ":8081";

  // controller-runtime's GracefulShutdownTimeout and CacheSyncTimeout.
  std::chrono::milliseconds gracefulShutdownTimeout{std::chrono::seconds(30)};
  std::chrono::milliseconds cacheSyncTimeout{std::chrono::minutes(2)};
  // How often every informer replays its whole cache to the handlers (a resync), so that a
  // controller re-checks every object now and then even if no event arrives: controller-runtime's
  // Cache.SyncPeriod, 10 h by default. 0 turns resyncs off.
  std::chrono::milliseconds syncPeriod{std::chrono::hours(10)};
  // How often free heap goes back to the kernel (heap_scavenger.h). A bench that reads the RSS
  // after a burst shortens it rather than wait out the default.
  std::chrono::milliseconds heapReleasePeriod{std::chrono::seconds(30)};
};

// Registers --kubeconfig, --leader-elect, --leader-elect-lease-duration,
// --leader-elect-renew-deadline, --leader-elect-retry-period, --leader-election-id,
// --leader-election-namespace, --metrics-bind-address, --health-probe-bind-address,
// --graceful-shutdown-timeout, --cache-sync-timeout, --sync-period and --heap-release-period,
// writing into `options` (which must outlive the parse).
void addManagerFlags(cli::FlagSet& flags, ManagerOptions& options);

// The longest duration any option may have (about 114 years), so that a deadline that far
// ahead still fits steady_clock's int64 nanoseconds.
inline constexpr std::chrono::milliseconds kMaxDuration = std::chrono::hours(1'000'000);

// What the flags cannot check on their own: bind addresses (two servers never on one port),
// positive timeouts, durations within kMaxDuration, a lease name, and (with --leader-elect)
// client-go's rules for the three durations. Ok or the first problem, naming its flag.
Result<Ok, std::string> validateManagerOptions(const ManagerOptions& options);

}  // namespace egress::controllerruntime
