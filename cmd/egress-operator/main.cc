// egress-operator: gives selected pods a stable, known source IP for traffic leaving the
// cluster. Wiring only: flags → logging → REST config → Manager → the main controller →
// io_context.run().
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <memory>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <spdlog/spdlog.h>

#include "pkg/apis/validation/names.h"
#include "pkg/cli/flag_set.h"
#include "pkg/controller/controller.h"
#include "pkg/controllerruntime/manager.h"
#include "pkg/kube/config_discovery.h"
#include "pkg/kube/server_address.h"
#include "pkg/log/log.h"

namespace {

namespace net = boost::asio;
using egress::controllerruntime::kExitError;

constexpr int kExitUsage = 2;

// Asks the server what it serves, then adds the main controller and runs the Manager. An API
// server that cannot be reached is a clear message and exit 1, before anything else starts.
net::awaitable<int> runOperator(egress::controllerruntime::Manager& manager, int workers,
                                std::string agentLeaseNamespace, net::any_io_executor executor) {
  auto policyV1 = co_await egress::controller::serverHasPolicyV1(manager.client());
  if (!policyV1) {
    spdlog::error("egress-operator: cannot use the API server at {}: {}",
                  manager.client().config().server, policyV1.error());
    co_return kExitError;
  }
  egress::controller::MainController::Options options{workers,
                                                      manager.clock(),
                                                      std::move(executor),
                                                      manager.client(),
                                                      manager.eventRecorder(),
                                                      &manager.registry(),
                                                      *policyV1,
                                                      std::move(agentLeaseNamespace),
                                                      {}};
  const char* serviceHost = std::getenv("KUBERNETES_SERVICE_HOST");
  options.apiServerAddresses = egress::kube::serverAddresses(
      manager.client().config().server, serviceHost != nullptr ? serviceHost : "");
  manager.add(std::make_unique<egress::controller::MainController>(std::move(options)));
  co_return co_await manager.run();
}

// The names the flags give the API server, by its rules: the Lease's a DNS-1123 subdomain, the
// namespaces DNS-1123 labels. Refused here, a wrong one is a message at start, not an operator
// that never leads (every Lease create refused) or watches no agent Lease. "" or the problem.
std::string badObjectNames(const egress::controllerruntime::ManagerOptions& options,
                           const std::string& agentLeaseNamespace) {
  const auto subdomain = [](const std::string& flag, const std::string& value) -> std::string {
    auto errors = egress::validation::dns1123SubdomainErrors(value);
    return errors.empty() ? "" : flag + " \"" + value + "\": " + errors.front();
  };
  const auto label = [](const std::string& flag, const std::string& value) -> std::string {
    if (value.empty() || egress::validation::dns1123LabelErrors(value).empty()) {
      return "";
    }
    return flag + " \"" + value +
           "\": a namespace name must be a DNS-1123 label: at most 63 lower case alphanumeric "
           "characters or '-', starting and ending with an alphanumeric character";
  };
  std::string bad;
  if (options.leaderElect) {
    bad = subdomain("--leader-election-id", options.leaderElectionId);
    if (bad.empty()) {
      bad = label("--leader-election-namespace", options.leaderElectionNamespace);
    }
  }
  return bad.empty() ? label("--agent-lease-namespace", agentLeaseNamespace) : bad;
}

}  // namespace

int main(int argc, char** argv) {
  egress::cli::FlagSet flags("egress-operator");
  bool showHelp = false;
  bool showVersion = false;
  std::string logLevel = "info";
  std::string logFormat = "text";
  int64_t verbosity = 0;
  int64_t workers = 4;
  // controller-runtime's defaults for a manager's client (client-go's own are 5 and 10).
  double qps = 20;
  int64_t burst = 30;
  flags.addBool("help", showHelp, "Print this help and exit.");
  flags.addBool("version", showVersion, "Print the version and exit.");
  flags.addString("log-level", logLevel,
                  "Log level: trace, debug, info, warn, error, critical or off.");
  flags.addString("log-format", logFormat, "Log format: text or json (one object per line).");
  flags.addInt("v", verbosity,
               "Log verbosity as klog counts it: 0 info, 1-3 debug, 4 and up trace (--log-level "
               "wins when both are given).");
  flags.addInt("workers", workers,
               "Concurrent reconciles of EgressGatewayPolicies (never two of one policy).");
  flags.addDouble("kube-api-qps", qps,
                  "Client-side limit of API requests per second (negative: no limit).");
  flags.addInt("kube-api-burst", burst, "Requests allowed above --kube-api-qps in a burst.");
  const char* podNamespace = std::getenv("POD_NAMESPACE");
  std::string agentLeaseNamespace = podNamespace != nullptr ? podNamespace : "";
  flags.addString("agent-lease-namespace", agentLeaseNamespace,
                  "Namespace of egw-agent's egw-agent-<node> Leases, which OperatorConfig "
                  "spec.dataplane.agent moves stale holders by (default: $POD_NAMESPACE; empty: "
                  "none are watched).");
  egress::controllerruntime::ManagerOptions managerOptions;
  egress::controllerruntime::addManagerFlags(flags, managerOptions);

  if (auto err = flags.parse(argc, argv); !err.empty()) {
    std::fprintf(stderr, "egress-operator: %s\n", err.c_str());
    return kExitUsage;
  }
  if (showHelp) {
    std::fputs(flags.usage().c_str(), stdout);
    return 0;
  }
  if (showVersion) {
    std::printf("egress-operator %s\n", EGRESS_VERSION);
    return 0;
  }
  if (!flags.args().empty()) {
    std::fprintf(stderr, "egress-operator: unexpected argument \"%s\" (see --help)\n",
                 flags.args().front().c_str());
    return kExitUsage;
  }
  if (workers < 1 || workers > 1024) {
    std::fprintf(stderr, "egress-operator: --workers must be between 1 and 1024, not %lld\n",
                 static_cast<long long>(workers));
    return kExitUsage;
  }
  // The REST client's burst is an int (client-go's rest.Config.Burst).
  if (burst < 0 || burst > std::numeric_limits<int>::max()) {
    std::fprintf(stderr, "egress-operator: --kube-api-burst must be between 0 and %d, not %lld\n",
                 std::numeric_limits<int>::max(), static_cast<long long>(burst));
    return kExitUsage;
  }
  if (verbosity < 0) {
    std::fprintf(stderr, "egress-operator: -v must not be negative\n");
    return kExitUsage;
  }
  if (!flags.changed("log-level") && verbosity > 0) {
    logLevel = verbosity >= 4 ? "trace" : "debug";
  }
  egress::log::Options logOptions;
  if (auto level = egress::log::parseLevel(logLevel)) {
    logOptions.level = *level;
  } else {
    std::fprintf(stderr, "egress-operator: invalid --log-level \"%s\"\n", logLevel.c_str());
    return kExitUsage;
  }
  if (auto format = egress::log::parseFormat(logFormat)) {
    logOptions.format = *format;
  } else {
    std::fprintf(stderr, "egress-operator: invalid --log-format \"%s\"\n", logFormat.c_str());
    return kExitUsage;
  }
  if (auto valid = egress::controllerruntime::validateManagerOptions(managerOptions); !valid) {
    std::fprintf(stderr, "egress-operator: %s\n", valid.error().c_str());
    return kExitUsage;
  }
  if (auto bad = badObjectNames(managerOptions, agentLeaseNamespace); !bad.empty()) {
    std::fprintf(stderr, "egress-operator: %s\n", bad.c_str());
    return kExitUsage;
  }
  egress::log::configure(logOptions);

  auto restConfig = egress::kube::loadRestConfig(managerOptions.kubeconfig, "");
  if (!restConfig) {
    spdlog::error("egress-operator: no usable kubeconfig or in-cluster config: {}",
                  restConfig.error().message());
    return kExitError;
  }
  restConfig->qps = qps;
  restConfig->burst = static_cast<int>(burst);

  net::io_context ioc;
  egress::controllerruntime::ManagerDeps deps;
  deps.restConfig = std::move(*restConfig);
  auto manager = egress::controllerruntime::Manager::create(ioc.get_executor(), managerOptions,
                                                            std::move(deps));
  if (!manager) {
    spdlog::error("{}", manager.error());
    return kExitError;
  }
  spdlog::info("egress-operator {} starting", EGRESS_VERSION);
  int code = kExitError;
  net::co_spawn(
      ioc,
      runOperator(**manager, static_cast<int>(workers), agentLeaseNamespace, ioc.get_executor()),
      [&](const std::exception_ptr& e, int result) {
        if (e) {
          std::rethrow_exception(e);
        }
        code = result;
        // Whatever the Manager abandoned (work past the graceful timeout, or
        // everything after a second signal) must not keep the process alive.
        ioc.stop();
      });
  ioc.run();
  spdlog::info("egress-operator exiting with code {}", code);
  return code;
}
