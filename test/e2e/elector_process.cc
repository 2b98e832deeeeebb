// File: elector_process.cc
//
// One leader-election candidate as a process of its own, for leader_election_test.cc: a
// LeaderElector on a RealClock over a KubeLeaseLock, with releaseOnCancel. It writes
// "<leader|draining|follower> <CLOCK_MONOTONIC ns>\n" to --status-file at start (follower) and on
// every change, atomically (write + rename), so the test can read who believes it leads and since
// when on the same monotonic clock. "draining" stands for the guarded work still stopping after
// leadership ended: onStoppedLeading takes --drain to complete, and only then is the lease
// released. SIGTERM/SIGINT stop it gracefully (the lease is released); it also stops if its
// parent dies, so a crashed test leaves no candidates behind.
//
// Exit codes: 0 after a graceful stop, 1 when leadership was lost (as controller-runtime exits
// on "leader election lost"), 2 for bad flags or configuration.
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include "pkg/base/clock.h"
#include "pkg/cli/flag_set.h"
#include "pkg/kube/kubeconfig.h"
#include "pkg/kube/rest_client.h"
#include "pkg/leaderelection/kube_lease_lock.h"
#include "pkg/leaderelection/leader_elector.h"
#include <unistd.h>

namespace {

namespace net = boost::asio;
using egress::leaderelection::LeaderElector;

constexpr int kExitLost = 1;
constexpr int kExitUsage = 2;

// Writes the status file atomically: readers see the old or the new line, never half of one.
void writeStatus(const std::string& path, const char* state) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count();
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) {
    spdlog::error("cannot write {}: {}", tmp, std::strerror(errno));
    return;
  }
  std::fprintf(f, "%s %lld\n", state, static_cast<long long>(ns));
  std::fclose(f);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    spdlog::error("cannot rename {}: {}", tmp, std::strerror(errno));
  }
  spdlog::info("status: {}", state);
}

struct Process {
  net::io_context ioc;
  LeaderElector* elector = nullptr;
  bool signalled = false;
  bool finished = false;
  pid_t parent = getppid();
};

// The work the lease guards takes `drain` to stop once leadership ended.
net::awaitable<void> stopWork(const std::string* statusFile, std::chrono::milliseconds drain) {
  writeStatus(*statusFile, "draining");
  net::steady_timer timer(co_await net::this_coro::executor);
  timer.expires_after(drain);
  auto [ec] = co_await timer.async_wait(net::as_tuple(net::use_awaitable));
  (void)ec;
  writeStatus(*statusFile, "follower");
}

net::awaitable<void> runElector(Process* p) {
  co_await p->elector->run();
  p->finished = true;
  p->ioc.stop();
}

// Polls for the death of the parent (re-parenting changes getppid()).
void watchParent(Process* p, net::steady_timer* timer) {
  timer->expires_after(std::chrono::milliseconds(500));
  timer->async_wait([p, timer](const boost::system::error_code& ec) {
    if (ec || p->finished) {
      return;
    }
    if (getppid() != p->parent) {
      spdlog::warn("parent process died; stopping");
      p->signalled = true;
      p->elector->stop();
      return;
    }
    watchParent(p, timer);
  });
}

}  // namespace

int main(int argc, char** argv) {
  egress::cli::FlagSet flags("elector_process");
  std::string kubeconfig;
  std::string ns = "default";
  std::string lease;
  std::string identity;
  std::string statusFile;
  std::chrono::milliseconds leaseDuration{15'000};
  std::chrono::milliseconds renewDeadline{10'000};
  std::chrono::milliseconds retryPeriod{2'000};
  std::chrono::milliseconds drain{0};
  flags.addString("kubeconfig", kubeconfig, "Path to the kubeconfig file.");
  flags.addString("namespace", ns, "Namespace of the Lease.");
  flags.addString("lease", lease, "Name of the Lease.");
  flags.addString("identity", identity, "This candidate's identity.");
  flags.addString("status-file", statusFile, "Where to write leader/follower on every change.");
  flags.addDuration("lease-duration", leaseDuration, "LeaseDuration.");
  flags.addDuration("renew-deadline", renewDeadline, "RenewDeadline.");
  flags.addDuration("retry-period", retryPeriod, "RetryPeriod.");
  flags.addDuration("drain", drain, "How long the guarded work takes to stop after leading.");
  if (auto err = flags.parse(argc, argv); !err.empty()) {
    std::fprintf(stderr, "elector_process: %s\n", err.c_str());
    return kExitUsage;
  }
  if (kubeconfig.empty() || lease.empty() || identity.empty() || statusFile.empty()) {
    std::fprintf(stderr,
                 "elector_process: --kubeconfig, --lease, --identity and --status-file are "
                 "required\n");
    return kExitUsage;
  }
  spdlog::set_pattern("%H:%M:%S.%e [" + identity + "] %l %v");

  Process process;
  egress::kube::KubeconfigOptions kubeconfigOptions;
  kubeconfigOptions.paths = {kubeconfig};
  auto restConfig = egress::kube::loadKubeconfig(kubeconfigOptions);
  if (!restConfig) {
    std::fprintf(stderr, "elector_process: %s\n", restConfig.error().message().c_str());
    return kExitUsage;
  }
  restConfig->qps = 50;
  restConfig->burst = 100;
  // A request must not outlast a renewal: the elector stops waiting at the deadline anyway, but
  // the next attempt should not queue behind a dead connection. Retries are the elector's job.
  egress::kube::RestClientOptions clientOptions;
  clientOptions.maxRetries = 0;
  clientOptions.transport.connectTimeout = renewDeadline;
  clientOptions.transport.requestTimeout = renewDeadline;
  auto client = egress::kube::RestClient::create(process.ioc.get_executor(), *restConfig, nullptr,
                                                 clientOptions);
  if (!client) {
    std::fprintf(stderr, "elector_process: %s\n", client.error().message().c_str());
    return kExitUsage;
  }

  egress::RealClock clock(process.ioc.get_executor());
  egress::leaderelection::KubeLeaseLock lock(**client, ns, lease, identity);
  egress::leaderelection::LeaderElectionConfig config;
  config.lock = &lock;
  config.leaseDuration = leaseDuration;
  config.renewDeadline = renewDeadline;
  config.retryPeriod = retryPeriod;
  config.name = lease;
  config.releaseOnCancel = true;
  config.callbacks.onStartedLeading = [&statusFile] { writeStatus(statusFile, "leader"); };
  config.callbacks.onStoppedLeading = [&statusFile, drain] { return stopWork(&statusFile, drain); };
  config.callbacks.onNewLeader = [](const std::string& holder) {
    spdlog::info("new leader observed: \"{}\"", holder);
  };
  auto elector = LeaderElector::create(clock, std::move(config), nullptr);
  if (!elector) {
    std::fprintf(stderr, "elector_process: %s\n", elector.error().c_str());
    return kExitUsage;
  }
  process.elector = elector->get();
  writeStatus(statusFile, "follower");

  net::signal_set signals(process.ioc, SIGTERM, SIGINT);
  signals.async_wait([&process](const boost::system::error_code& ec, int sig) {
    if (ec) {
      return;
    }
    spdlog::info("signal {}: stopping (releasing the lease if held)", sig);
    process.signalled = true;
    process.elector->stop();
  });
  net::steady_timer parentTimer(process.ioc);
  watchParent(&process, &parentTimer);

  net::co_spawn(process.ioc, runElector(&process), net::detached);
  process.ioc.run();
  spdlog::info("exiting ({})", process.signalled ? "stopped" : "leadership lost");
  return process.signalled ? 0 : kExitLost;
}
