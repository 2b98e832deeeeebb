// File: controller_process.cc
//
// The operator's main() in miniature, for controller_e2e_test's real-signal cases: a Manager
// (every Manager flag, e.g. --leader-elect; SIGTERM/SIGINT handled as in production) running one
// AnnotatingController (annotating_controller.h) over the ConfigMaps of --namespace, whose
// reconciles wait --reconcile-delay before they write `e2e.egress.io/reconciled-by: <identity>`.
// What happens is appended to --events-file, one line per event, so the test can order it:
//
//   <event> <key or -> <CLOCK_MONOTONIC ns>
//
// with event = signal (SIGTERM/SIGINT arrived; the Manager sees it in the same turn of the event
// loop), started (the controller's start hook: the lease is ours), start / finish (a reconcile of
// key), stop (the controller takes no new keys), exit (run() returned; the key field is the exit
// code). The process dies with its parent, so a crashed test leaves no controller behind.
//
// Exit codes: the Manager's (0 after a graceful shutdown, 1 otherwise), 2 for bad flags.
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "pkg/cli/flag_set.h"
#include "pkg/controllerruntime/manager.h"
#include "pkg/controllerruntime/manager_options.h"
#include "test/e2e/annotating_controller.h"
#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

namespace {

namespace net = boost::asio;
using egress::controllerruntime::kExitError;

constexpr int kExitUsage = 2;

// One line per write(2) on an O_APPEND descriptor: lines are whole and in the order written.
class EventLog {
 public:
  explicit EventLog(const std::string& path)
      : fd_(open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {}
  ~EventLog() {
    if (fd_ >= 0) {
      close(fd_);
    }
  }
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  bool ok() const { return fd_ >= 0; }
  void write(std::string_view event, const std::string& key) const {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count();
    const std::string line = fmt::format("{} {} {}\n", event, key.empty() ? "-" : key, ns);
    if (::write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
      spdlog::error("writing the events file: {}", std::strerror(errno));
    }
  }

 private:
  int fd_;
};

// Beside the Manager's own handler: asio hands a signal to every signal_set waiting for it in
// the same turn, so this line marks the moment the Manager learns of it.
void recordSignals(net::signal_set& signals, const EventLog& events) {
  signals.async_wait([&signals, &events](const boost::system::error_code& ec, int) {
    if (ec) {
      return;
    }
    events.write("signal", "");
    recordSignals(signals, events);
  });
}

}  // namespace

int main(int argc, char** argv) {
  // Dies with the test that started it (checked once: the parent may already be gone).
  const pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) {
    return kExitUsage;
  }

  egress::cli::FlagSet flags("controller_process");
  egress::controllerruntime::ManagerOptions options;
  egress::controllerruntime::addManagerFlags(flags, options);
  std::string ns;
  std::string identity;
  std::string eventsFile;
  std::chrono::milliseconds delay{2000};
  int64_t workers = 2;
  flags.addString("namespace", ns, "Namespace of the ConfigMaps to reconcile.");
  flags.addString("identity", identity, "Leader-election identity and annotation value.");
  flags.addString("events-file", eventsFile, "Where to append one line per event.");
  flags.addDuration("reconcile-delay", delay, "How long a reconcile waits before it writes.");
  flags.addInt("workers", workers, "Concurrent reconciles.");
  if (auto err = flags.parse(argc, argv); !err.empty()) {
    std::fprintf(stderr, "controller_process: %s\n", err.c_str());
    return kExitUsage;
  }
  if (ns.empty() || identity.empty() || eventsFile.empty()) {
    std::fprintf(stderr,
                 "controller_process: --namespace, --identity and --events-file are required\n");
    return kExitUsage;
  }
  spdlog::set_pattern("%H:%M:%S.%e [" + identity + "] %l %v");
  const EventLog events(eventsFile);
  if (!events.ok()) {
    std::fprintf(stderr, "controller_process: %s: %s\n", eventsFile.c_str(), std::strerror(errno));
    return kExitUsage;
  }

  net::io_context ioc;
  net::signal_set signals(ioc, SIGTERM, SIGINT);
  recordSignals(signals, events);
  egress::controllerruntime::ManagerDeps deps;
  deps.identity = identity;
  auto manager =
      egress::controllerruntime::Manager::create(ioc.get_executor(), options, std::move(deps));
  if (!manager) {
    std::fprintf(stderr, "controller_process: %s\n", manager.error().c_str());
    return kExitUsage;
  }
  auto& m = **manager;
  egress::e2e::AnnotatingControllerOptions sample;
  sample.namespace_ = ns;
  sample.value = identity;
  sample.delay = delay;
  sample.observer = [&events](std::string_view event, const std::string& key) {
    events.write(event, key);
  };
  m.add(std::make_unique<egress::e2e::AnnotatingController>(
      egress::controllerruntime::Controller::Options{"annotate", static_cast<int>(workers),
                                                     m.clock(), ioc.get_executor(), &m.registry()},
      m.client(), std::move(sample)));

  int code = kExitError;
  net::co_spawn(ioc, m.run(), [&](const std::exception_ptr& e, int result) {
    if (e) {
      std::rethrow_exception(e);
    }
    code = result;
    // What the Manager abandoned (after a second signal) must not keep the process alive.
    ioc.stop();
  });
  ioc.run();
  events.write("exit", std::to_string(code));
  spdlog::info("exiting with {}", code);
  return code;
}
