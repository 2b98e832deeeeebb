// egress-testenv-kubelet: the test kubelet of the local control plane (fake_kubelet.h), run by
// hack/testenv/supervise.sh in place of kubelet.sh when EGRESS_TESTENV_KUBELET names it.
//
//   egress-testenv-kubelet [--kubeconfig PATH] [--nodes N] [--max-in-flight 16] RUN_DIR
//
// As kubelet.sh: the kubeconfig is RUN_DIR/kubeconfig and N is read from RUN_DIR/nodes, unless
// the flags say otherwise; logs go to stderr, which the supervisor appends to
// RUN_DIR/logs/kubelet.log. SIGTERM and SIGINT stop it (exit 0); 2 means bad flags or
// configuration.
#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <spdlog/spdlog.h>

#include "pkg/base/clock.h"
#include "pkg/cli/flag_set.h"
#include "pkg/kube/kubeconfig.h"
#include "pkg/kube/rest_client.h"
#include "pkg/log/log.h"
#include "test/testenv_kubelet/fake_kubelet.h"
#include "test/testenv_kubelet/fake_node.h"

namespace {

namespace net = boost::asio;
using egress::testenv::FakeKubelet;

constexpr int kExitUsage = 2;

int usage(const std::string& message) {
  std::fprintf(stderr, "egress-testenv-kubelet: %s\n", message.c_str());
  return kExitUsage;
}

net::awaitable<void> runKubelet(FakeKubelet* kubelet, net::io_context* ioc) {
  co_await FakeKubelet::run(kubelet);
  ioc->stop();  // idle pooled connections must not keep the process alive
}

}  // namespace

int main(int argc, char** argv) {
  egress::cli::FlagSet flags("egress-testenv-kubelet");
  std::string kubeconfig;
  int64_t nodes = -1;
  int64_t maxInFlight = 16;
  std::string logLevel = "info";
  bool help = false;
  flags.addString("kubeconfig", kubeconfig, "Path to the kubeconfig (default RUN_DIR/kubeconfig).");
  flags.addInt("nodes", nodes, "Fake nodes to register (default: the number in RUN_DIR/nodes).");
  flags.addInt("max-in-flight", maxInFlight, "Pod status patches and deletes in flight at once.");
  flags.addString("v", logLevel, "Log level: trace, debug, info, warn, error.");
  flags.addBool("help", help, "Print this help.");
  if (auto err = flags.parse(argc, argv); !err.empty() || help) {
    std::fprintf(help ? stdout : stderr,
                 "%s\n%s\nRUN_DIR: the run directory hack/testenv/up.sh made (kubeconfig, nodes)\n",
                 err.c_str(), flags.usage().c_str());
    return help ? 0 : kExitUsage;
  }
  const std::string runDir = flags.args().empty() ? "" : flags.args()[0];
  if (flags.args().size() > 1) {
    return usage("at most one RUN_DIR");
  }
  if (kubeconfig.empty() && !runDir.empty()) {
    kubeconfig = runDir + "/kubeconfig";
  }
  if (nodes < 0 && !runDir.empty()) {
    std::ifstream in(runDir + "/nodes");
    in >> nodes;
  }
  if (kubeconfig.empty() || nodes < 0) {
    return usage("give RUN_DIR, or --kubeconfig and --nodes");
  }
  if (nodes > egress::testenv::kMaxNodes) {
    return usage("at most " + std::to_string(egress::testenv::kMaxNodes) + " nodes");
  }
  if (maxInFlight < 1) {
    return usage("--max-in-flight must be at least 1");
  }
  auto level = egress::log::parseLevel(logLevel);
  if (!level) {
    return usage("unknown log level \"" + logLevel + "\"");
  }
  egress::log::configure({.level = *level, .format = egress::log::Format::Text});

  egress::kube::KubeconfigOptions kubeconfigOptions;
  kubeconfigOptions.paths = {kubeconfig};
  auto config = egress::kube::loadKubeconfig(kubeconfigOptions);
  if (!config) {
    return usage(config.error().message());
  }
  // The workers bound the writes in flight; a client-side token bucket would only slow them.
  config->qps = -1;
  net::io_context ioc;
  egress::kube::RestClientOptions clientOptions;
  // More idle connections than workers (and the watch), so none is closed and reopened.
  clientOptions.transport.maxIdleConnections = static_cast<size_t>(maxInFlight) + 4;
  auto client =
      egress::kube::RestClient::create(ioc.get_executor(), *config, nullptr, clientOptions);
  if (!client) {
    return usage(client.error().message());
  }
  egress::RealClock clock(ioc.get_executor());
  egress::testenv::FakeKubeletOptions options;
  options.nodes = static_cast<int>(nodes);
  options.maxInFlight = static_cast<int>(maxInFlight);
  FakeKubelet kubelet(**client, clock, ioc.get_executor(), options);

  net::signal_set signals(ioc, SIGTERM, SIGINT);
  signals.async_wait([&kubelet](const boost::system::error_code& ec, int sig) {
    if (!ec) {
      spdlog::info("signal {}: stopping", sig);
      kubelet.stop();
    }
  });
  spdlog::info("test kubelet: {} nodes, {} writes in flight, kubeconfig {}", nodes, maxInFlight,
               kubeconfig);
  net::co_spawn(ioc, runKubelet(&kubelet, &ioc), egress::rethrowUnhandled);
  ioc.run();
  return 0;
}
