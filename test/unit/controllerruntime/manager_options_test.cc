// The Manager's flags: names and defaults as controller-runtime's users know them, parsed into
// ManagerOptions, and the checks the flags cannot make on their own.
#include "pkg/controllerruntime/manager_options.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace egress::controllerruntime {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;

std::string parse(ManagerOptions& options, std::vector<const char*> args) {
  cli::FlagSet flags("test");
  addManagerFlags(flags, options);
  args.insert(args.begin(), "test");
  return flags.parse(static_cast<int>(args.size()), args.data());
}

TEST(ManagerOptionsTest, DefaultsAreControllerRuntimes) {
  ManagerOptions options;
  ASSERT_EQ(parse(options, {}), "");
  EXPECT_EQ(options.kubeconfig, "");
  EXPECT_FALSE(options.leaderElect);
  EXPECT_EQ(options.leaseDuration, seconds(15));
  EXPECT_EQ(options.renewDeadline, seconds(10));
  EXPECT_EQ(options.retryPeriod, seconds(2));
  EXPECT_EQ(options.metricsBindAddress, ":8080");
  EXPECT_EQ(options.healthProbeBindAddress, ":8081");
  EXPECT_EQ(options.gracefulShutdownTimeout, seconds(30));
  EXPECT_EQ(options.cacheSyncTimeout, minutes(2));
  EXPECT_EQ(options.syncPeriod, std::chrono::hours(10));
  EXPECT_EQ(options.heapReleasePeriod, seconds(30));
  EXPECT_TRUE(validateManagerOptions(options));

  cli::FlagSet flags("test");
  addManagerFlags(flags, options);
  const std::string usage = flags.usage();
  EXPECT_THAT(usage, HasSubstr("--graceful-shutdown-timeout value"));
  EXPECT_THAT(usage, HasSubstr("(default 30s)"));
  EXPECT_THAT(usage, HasSubstr("(default 2m)"));
}

TEST(ManagerOptionsTest, EveryFlagSetsItsField) {
  ManagerOptions options;
  ASSERT_EQ(
      parse(options, {"--kubeconfig=/k", "--leader-elect", "--leader-elect-lease-duration=20s",
                      "--leader-elect-renew-deadline=12s", "--leader-elect-retry-period=3s",
                      "--leader-election-id=lock", "--leader-election-namespace=ops",
                      "--metrics-bind-address=0", "--health-probe-bind-address=:9000",
                      "--graceful-shutdown-timeout=1m", "--cache-sync-timeout=500ms",
                      "--sync-period=90s", "--heap-release-period=2s"}),
      "");
  EXPECT_EQ(options.kubeconfig, "/k");
  EXPECT_TRUE(options.leaderElect);
  EXPECT_EQ(options.leaseDuration, seconds(20));
  EXPECT_EQ(options.renewDeadline, seconds(12));
  EXPECT_EQ(options.retryPeriod, seconds(3));
  EXPECT_EQ(options.leaderElectionId, "lock");
  EXPECT_EQ(options.leaderElectionNamespace, "ops");
  EXPECT_EQ(options.metricsBindAddress, "0");
  EXPECT_EQ(options.healthProbeBindAddress, ":9000");
  EXPECT_EQ(options.gracefulShutdownTimeout, minutes(1));
  EXPECT_EQ(options.cacheSyncTimeout, milliseconds(500));
  EXPECT_EQ(options.syncPeriod, seconds(90));
  EXPECT_EQ(options.heapReleasePeriod, seconds(2));
  EXPECT_TRUE(validateManagerOptions(options));
}

TEST(ManagerOptionsTest, InvalidValuesNameTheirFlag) {
  ManagerOptions options;
  options.metricsBindAddress = "example.com:80";
  EXPECT_THAT(validateManagerOptions(options).error(), HasSubstr("--metrics-bind-address"));
  options = {};
  options.healthProbeBindAddress = ":99999";
  EXPECT_THAT(validateManagerOptions(options).error(), HasSubstr("--health-probe-bind-address"));
  options = {};
  options.cacheSyncTimeout = milliseconds(0);
  EXPECT_THAT(validateManagerOptions(options).error(), HasSubstr("--cache-sync-timeout"));
  options = {};
  options.syncPeriod = milliseconds(-1);
  EXPECT_THAT(validateManagerOptions(options).error(), HasSubstr("--sync-period"));
  options = {};
  options.heapReleasePeriod = milliseconds(0);
  EXPECT_THAT(validateManagerOptions(options).error(), HasSubstr("--heap-release-period"));
  options = {};
  options.leaderElect = true;
  options.leaderElectionId = "";
  EXPECT_THAT(validateManagerOptions(options).error(), HasSubstr("--leader-election-id"));
  // Without leader election the id is not used.
  options.leaderElect = false;
  EXPECT_TRUE(validateManagerOptions(options));
}

// Two servers on one port would fail to bind at start: refused with the flags, unless one is
// off, on port 0 (the kernel picks) or on another address. Durations past kMaxDuration, whose
// deadlines would overflow the clock, are refused; kMaxDuration itself is not.
TEST(ManagerOptionsTest, SharedPortsAndOverlongDurationsAreRefused) {
  const auto check = [](const char* metrics, const char* probes) {
    ManagerOptions options;
    options.metricsBindAddress = metrics;
    options.healthProbeBindAddress = probes;
    return validateManagerOptions(options);
  };
  EXPECT_THAT(check(":8080", ":8080").error(), HasSubstr("must not share port 8080"));
  EXPECT_THAT(check(":8080", "127.0.0.1:8080").error(), HasSubstr("must not share port 8080"));
  EXPECT_THAT(check("[::1]:9000", "[::1]:9000").error(), HasSubstr("must not share port 9000"));
  EXPECT_THAT(check("0.0.0.0:8080", "127.0.0.1:8080").error(), HasSubstr("must not share port"));
  EXPECT_THAT(check("127.0.0.1:8080", "[::]:8080").error(), HasSubstr("must not share port"));
  EXPECT_TRUE(check("127.0.0.1:8080", "127.0.0.2:8080"));
  EXPECT_TRUE(check(":0", ":0"));
  EXPECT_TRUE(check("0", ":8081"));
  EXPECT_TRUE(check(":1", ":65535"));

  ManagerOptions options;
  ASSERT_EQ(parse(options, {"--graceful-shutdown-timeout=1000000h", "--sync-period=1000000h",
                            "--cache-sync-timeout=1000000h"}),
            "");
  EXPECT_TRUE(validateManagerOptions(options));
  for (const char* flag : {"--leader-elect-lease-duration", "--leader-elect-renew-deadline",
                           "--leader-elect-retry-period", "--graceful-shutdown-timeout",
                           "--cache-sync-timeout", "--sync-period", "--heap-release-period"}) {
    options = {};
    const std::string arg = std::string(flag) + "=1000000h1ms";
    ASSERT_EQ(parse(options, {arg.c_str()}), "") << flag;
    EXPECT_THAT(validateManagerOptions(options).error(),
                HasSubstr(std::string(flag) + " must be at most 1000000h"));
  }
}

}  // namespace
}  // namespace egress::controllerruntime
