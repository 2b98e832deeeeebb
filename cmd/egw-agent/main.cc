// egw-agent: makes this node's share of every egress IP carry packets (pkg/dataplane). Wiring
// only: flags → logging → REST config → Manager (metrics, probes, informers; no leader
// election: one agent per node) → the Lease renewer and the sync loop → io_context.run().
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <spdlog/spdlog.h>

#include "pkg/agent/agent.h"
#include "pkg/agent/host_address.h"
#include "pkg/agent/lease_renewer.h"
#include "pkg/apis/validation/names.h"
#include "pkg/base/heap.h"
#include "pkg/cli/flag_set.h"
#include "pkg/controllerruntime/manager.h"
#include "pkg/dataplane/cluster_view.h"
#include "pkg/kube/config_discovery.h"
#include "pkg/kube/server_address.h"
#include "pkg/leaderelection/kube_lease_lock.h"
#include "pkg/log/log.h"

namespace {

namespace net = boost::asio;
using egress::controllerruntime::kExitError;

constexpr int kExitUsage = 2;

int usage(const std::string& message) {
  std::fprintf(stderr, "egw-agent: %s\n", message.c_str());
  return kExitUsage;
}

std::string envOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  // The loop and the kernel's worker thread take turns with large states (heap.h).
  egress::base::useOneArena();
  egress::cli::FlagSet flags("egw-agent");
  bool showHelp = false;
  bool showVersion = false;
  bool dryRun = false;
  std::string logLevel = "info";
  std::string logFormat = "text";
  // The downward API's spec.nodeName and metadata.namespace, as the chart passes them.
  std::string nodeName = envOr("NODE_NAME", "");
  std::string leaseNamespace = envOr("POD_NAMESPACE", "");
  std::string uplink;
  int64_t vni = 4242;
  int64_t port = 4799;
  int64_t markMask = 0xff;
  int64_t tableBase = 7000;
  std::string reply = "symmetric";
  std::string ownerDaemonSet;
  int64_t renewIntervalMs = 2000;
  int64_t leaseDurationS = 6;
  int64_t heartbeatPort = 4798;
  egress::agent::QuorumOptions quorum;
  flags.addBool("help", showHelp, "Print this help and exit.");
  flags.addBool("version", showVersion, "Print the version and exit.");
  flags.addString("log-level", logLevel,
                  "Log level: trace, debug, info, warn, error, critical or off.");
  flags.addString("log-format", logFormat, "Log format: text or json (one object per line).");
  flags.addString("node-name", nodeName, "This node's name (default: $NODE_NAME). Required.");
  flags.addString("lease-namespace", leaseNamespace,
                  "Namespace of the egw-agent-<node> Leases (default: $POD_NAMESPACE). Required.");
  flags.addString("uplink", uplink,
                  "Device with the node's InternalIP (default: found from the Node's address).");
  flags.addInt("tunnel-vni", vni, "VNI of the egw0 VXLAN tunnel.");
  flags.addInt("tunnel-port", port, "UDP port of the egw0 VXLAN tunnel (not 4789/8472).");
  flags.addInt("mark-mask", markMask,
               "Packet mark bits the agent owns, decimal or 0x hex (kube-proxy uses 0xc000).");
  flags.addInt("table-base", tableBase, "First routing table the agent owns.");
  flags.addString("reply", reply,
                  "Reply path: symmetric (through the tunnel) or cni (the CNI's own routing).");
  flags.addInt("heartbeat-port", heartbeatPort,
               "UDP port of the agents' heartbeats to each other, on every node's InternalIP.");
  flags.addDuration("heartbeat-interval", quorum.interval,
                    "How often this agent sends every other agent a heartbeat.");
  flags.addDuration("heartbeat-timeout", quorum.timeout,
                    "From an agent's last heartbeat to a majority certifying it dead and its "
                    "egress IPs moving (at least 4 intervals).");
  flags.addDuration("restart-grace", quorum.restartGrace,
                    "How long a stopping agent's peers let its node keep its egress IPs for its "
                    "successor; a node not back by then fails over.");
  flags.addInt("lease-renew-interval-ms", renewIntervalMs,
               "How often the Lease (the agent's report to the operator) is renewed.");
  flags.addInt("lease-duration-seconds", leaseDurationS,
               "Lease duration: the operator counts an agent live this long after a renewal.");
  flags.addString("owner-daemonset", ownerDaemonSet,
                  "<namespace>/<name> of the DaemonSet that runs this agent: when it is deleted "
                  "(an uninstall) the agent removes its kernel state as it exits; otherwise, and "
                  "by default, exiting leaves the state for the next agent on the node.");
  flags.addBool("dry-run", dryRun, "Compute the kernel state and report it; change nothing.");
  egress::controllerruntime::ManagerOptions managerOptions;
  // The agent runs in the host's network namespace: by default nothing listens beyond loopback
  // (the chart binds /metrics to the node's own address).
  managerOptions.metricsBindAddress = "127.0.0.1:9402";
  managerOptions.healthProbeBindAddress = "127.0.0.1:9403";
  egress::controllerruntime::addManagerFlags(flags, managerOptions);

  if (auto err = flags.parse(argc, argv); !err.empty()) {
    return usage(err);
  }
  if (showHelp) {
    std::fputs(flags.usage().c_str(), stdout);
    return 0;
  }
  if (showVersion) {
    std::printf("egw-agent %s\n", EGRESS_VERSION);
    return 0;
  }
  if (!flags.args().empty()) {
    return usage("unexpected argument \"" + flags.args().front() + "\" (see --help)");
  }
  if (nodeName.empty()) {
    return usage("--node-name (or $NODE_NAME) is required");
  }
  if (leaseNamespace.empty()) {
    return usage("--lease-namespace (or $POD_NAMESPACE) is required");
  }
  if (managerOptions.leaderElect) {
    return usage("--leader-elect makes no sense for a per-node agent");
  }
  if (vni < 1 || vni > 0xffffff) {
    return usage("--tunnel-vni must be between 1 and 16777215");
  }
  if (port < 1 || port > 65535) {
    return usage("--tunnel-port must be between 1 and 65535");
  }
  // Contiguous bits; their top three values are the reply, refuse and local marks, and at least
  // one more is needed for a node that holds egress IPs.
  const auto mask = static_cast<uint32_t>(markMask);
  const uint32_t values = mask == 0 ? 0 : mask >> std::countr_zero(mask);
  if (markMask <= 0 || markMask > 0xffffffffLL || values < 7 || (values & (values + 1)) != 0) {
    return usage("--mark-mask must be contiguous bits, at least 3 of them");
  }
  // It owns tables base (replies) to base + the mask's highest value (one per mark): none of
  // them may be the kernel's default, main or local (253-255), nor past the 32-bit range.
  const int64_t lastTable = tableBase + static_cast<int64_t>(values);
  if (tableBase < 1 || lastTable > 0x7fffffff || (tableBase <= 255 && lastTable >= 253)) {
    return usage("--table-base: the agent owns tables " + std::to_string(tableBase) + " to " +
                 std::to_string(lastTable) +
                 " (one per value of --mark-mask); they must not include 253-255 (default, main, "
                 "local) and must end by 2147483647");
  }
  std::string ownerNamespace;
  if (!ownerDaemonSet.empty()) {
    const auto slash = ownerDaemonSet.find('/');
    ownerNamespace = ownerDaemonSet.substr(0, slash);
    ownerDaemonSet = slash == std::string::npos ? "" : ownerDaemonSet.substr(slash + 1);
    if (!egress::validation::dns1123LabelErrors(ownerNamespace).empty() ||
        !egress::validation::dns1123SubdomainErrors(ownerDaemonSet).empty()) {
      return usage("--owner-daemonset must be <namespace>/<name> of a DaemonSet");
    }
  }
  if (heartbeatPort < 1 || heartbeatPort > 65535 || heartbeatPort == port) {
    return usage("--heartbeat-port must be between 1 and 65535 and not the --tunnel-port");
  }
  if (auto valid = egress::agent::validateQuorumOptions(quorum); !valid) {
    return usage("--heartbeat-interval, --heartbeat-timeout, --restart-grace: " + valid.error());
  }
  if (reply != "symmetric" && reply != "cni") {
    return usage("--reply must be symmetric or cni, not \"" + reply + "\"");
  }
  // The agent counts itself fresh for the duration minus LeaseRenewer::kFreshnessMargin after a
  // renewal starts: an interval as long would fence it between two successful renewals.
  if (renewIntervalMs < 100 || leaseDurationS < 1 ||
      std::chrono::milliseconds(renewIntervalMs) >=
          std::chrono::seconds(leaseDurationS) - egress::agent::LeaseRenewer::kFreshnessMargin) {
    return usage(
        "--lease-renew-interval-ms must be at least 100 and below the lease duration minus 500 ms");
  }
  egress::log::Options logOptions;
  if (auto level = egress::log::parseLevel(logLevel)) {
    logOptions.level = *level;
  } else {
    return usage("invalid --log-level \"" + logLevel + "\"");
  }
  if (auto format = egress::log::parseFormat(logFormat)) {
    logOptions.format = *format;
  } else {
    return usage("invalid --log-format \"" + logFormat + "\"");
  }
  managerOptions.metricsBindAddress =
      egress::agent::bracketIPv6Host(managerOptions.metricsBindAddress);
  managerOptions.healthProbeBindAddress =
      egress::agent::bracketIPv6Host(managerOptions.healthProbeBindAddress);
  if (auto valid = egress::controllerruntime::validateManagerOptions(managerOptions); !valid) {
    return usage(valid.error());
  }
  egress::log::configure(logOptions);

  auto restConfig = egress::kube::loadRestConfig(managerOptions.kubeconfig, "");
  if (!restConfig) {
    spdlog::error("egw-agent: no usable kubeconfig or in-cluster config: {}",
                  restConfig.error().message());
    return kExitError;
  }

  net::io_context ioc;
  egress::controllerruntime::ManagerDeps deps;
  deps.restConfig = std::move(*restConfig);
  auto manager = egress::controllerruntime::Manager::create(ioc.get_executor(), managerOptions,
                                                            std::move(deps));
  if (!manager) {
    spdlog::error("egw-agent: {}", manager.error());
    return kExitError;
  }
  auto& m = **manager;
  egress::leaderelection::KubeLeaseLock lock(
      m.client(), leaseNamespace, std::string(egress::dataplane::kAgentLeasePrefix) + nodeName,
      nodeName);
  // The report starts empty: until its first sync this process has programmed nothing it knows
  // of, and a predecessor's report may be stale (the node may have rebooted).
  const std::string programmed(egress::dataplane::kProgrammedAnnotation);
  const std::string observedSlices(egress::dataplane::kObservedSlicesAnnotation);
  lock.setAnnotation(programmed, "");
  lock.setAnnotation(observedSlices, "");
  const std::string problems(egress::dataplane::kProblemsAnnotation);
  lock.setAnnotation(problems, "");
  egress::agent::LeaseRenewer::Options renewOptions;
  renewOptions.renewInterval = std::chrono::milliseconds(renewIntervalMs);
  renewOptions.duration = std::chrono::seconds(leaseDurationS);
  // The renewer is made before the agent whose queue it pokes: the poke goes through a handle
  // the agent fills in once it exists.
  auto poke = std::make_shared<egress::controllerruntime::Enqueuer>();
  renewOptions.onChange = [poke] { poke->add(egress::agent::kSyncKey); };
  auto renewer = std::make_unique<egress::agent::LeaseRenewer>(lock, m.clock(), renewOptions);

  egress::agent::AgentOptions agentOptions;
  const char* serviceHost = std::getenv("KUBERNETES_SERVICE_HOST");
  for (const auto& text : egress::kube::serverAddresses(
           m.client().config().server, serviceHost != nullptr ? serviceHost : "")) {
    if (auto ip = egress::ipam::parseAddress(text)) {
      agentOptions.apiServer.push_back(*ip);
    }
  }
  agentOptions.nodeName = nodeName;
  agentOptions.leaseNamespace = leaseNamespace;
  agentOptions.dryRun = dryRun;
  agentOptions.ownerNamespace = ownerNamespace;
  agentOptions.ownerDaemonSet = ownerDaemonSet;
  agentOptions.report = [&lock, programmed, observedSlices,
                         problems](const egress::agent::AgentReport& report) {
    lock.setAnnotation(programmed, report.programmed);
    lock.setAnnotation(observedSlices, report.observedSlices);
    lock.setAnnotation(problems, report.problems);
  };
  auto& dp = agentOptions.dataplane;
  dp.uplink = uplink;
  dp.vni = static_cast<uint32_t>(vni);
  dp.port = static_cast<uint16_t>(port);
  dp.heartbeatPort = static_cast<uint16_t>(heartbeatPort);
  agentOptions.quorum = quorum;
  dp.markMask = static_cast<uint32_t>(markMask);
  dp.tableBase = static_cast<uint32_t>(tableBase);
  dp.symmetricReply = reply == "symmetric";
  egress::controllerruntime::Controller::Options base{"egw-agent", 1, m.clock(), ioc.get_executor(),
                                                      &m.registry()};
  auto agent = std::make_unique<egress::agent::Agent>(std::move(base), std::move(agentOptions),
                                                      *renewer, m.registry());
  *poke = agent->syncQueue();
  m.add(std::move(renewer));
  m.add(std::move(agent));

  spdlog::info("egw-agent {} starting on node {}{}", EGRESS_VERSION, nodeName,
               dryRun ? " (dry run)" : "");
  int code = kExitError;
  net::co_spawn(ioc, m.run(), [&](const std::exception_ptr& e, int result) {
    if (e) {
      std::rethrow_exception(e);
    }
    code = result;
    ioc.stop();
  });
  ioc.run();
  spdlog::info("egw-agent exiting with code {}", code);
  return code;
}
