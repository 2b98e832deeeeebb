// egress-operator: gives selected pods a stable, known source IP for traffic leaving the
// cluster. Wiring only: flags → logging → (controllers, as they land) → io_context.run().
#include <cstdio>
#include <string>

#include <spdlog/spdlog.h>

#include "pkg/cli/flag_set.h"
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
  egress::log::configure(logOptions);

  // The controllers arrive with their issues (API client, informers, controllers); until then
  // the binary refuses to pretend it does anything.
  spdlog::error("egress-operator {}: no controllers are built into this version yet",
                EGRESS_VERSION);
  return 1;
}
