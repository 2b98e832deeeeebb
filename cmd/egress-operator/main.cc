// egress-operator: gives selected pods a stable, known source IP for traffic leaving the
// cluster. Wiring only: flags → logging → Manager (controllers, as they land) → io_context.run().
#include <cstdio>
#include <exception>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <spdlog/spdlog.h>

#include "pkg/cli/flag_set.h"
#include "pkg/controllerruntime/manager.h"
#include "pkg/log/log.h"

namespace {

constexpr int kExitUsage = 2;

}  // namespace

int main(int argc, char** argv) {
  egress::cli::FlagSet flags("egress-operator");
  bool showHelp = false;
  bool showVersion = false;
  std::string logLevel = "info";
  std::string logFormat = "text";
  flags.addBool("help", showHelp, "Print this help and exit.");
  flags.addBool("version", showVersion, "Print the version and exit.");
  flags.addString("log-level", logLevel,
                  "Log level: trace, debug, info, warn, error, critical or off.");
  flags.addString("log-format", logFormat, "Log format: text or json (one object per line).");
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
  egress::log::configure(logOptions);

  boost::asio::io_context ioc;
  auto manager = egress::controllerruntime::Manager::create(ioc.get_executor(), managerOptions, {});
  if (!manager) {
    spdlog::error("{}", manager.error());
    return egress::controllerruntime::kExitError;
  }
  // The controllers arrive with the next issue; until then the Manager serves /metrics and the
  // probes, elects a leader and waits for SIGTERM.
  spdlog::info("egress-operator {} starting", EGRESS_VERSION);
  int code = egress::controllerruntime::kExitError;
  boost::asio::co_spawn(ioc, (*manager)->run(), [&](const std::exception_ptr& e, int result) {
    if (e) {
      std::rethrow_exception(e);
    }
    code = result;
    // Whatever the Manager abandoned (work past the graceful timeout, or everything after a
    // second signal) must not keep the process alive.
    ioc.stop();
  });
  ioc.run();
  spdlog::info("egress-operator exiting with code {}", code);
  return code;
}
