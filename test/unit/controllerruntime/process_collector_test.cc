// The process collector against a fixture /proc tree (exact values, names, types and help as
// client_golang's) and against this process's real /proc.
#include "pkg/controllerruntime/process_collector.h"

#include <chrono>
#include <map>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/metric_type.h>

#include "test/testutil/temp_dir.h"
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

namespace egress::controllerruntime {
namespace {

using prometheus::MetricType;
using ::testing::ElementsAre;

struct Sample {
  MetricType type;
  std::string help;
  double value;
};

std::map<std::string, Sample> collect(const ProcessCollector& collector) {
  std::map<std::string, Sample> out;
  for (const auto& family : collector.Collect()) {
    EXPECT_EQ(family.metric.size(), 1u) << family.name;
    EXPECT_TRUE(family.metric.front().label.empty()) << family.name;
    const auto& m = family.metric.front();
    const double value = family.type == MetricType::Counter ? m.counter.value : m.gauge.value;
    EXPECT_FALSE(out.contains(family.name)) << family.name;
    out[family.name] = {family.type, family.help, value};
  }
  return out;
}

constexpr const char* kLimits =
    "Limit                     Soft Limit           Hard Limit           Units     \n"
    "Max cpu time              unlimited            unlimited            seconds   \n"
    "Max file size             unlimited            unlimited            bytes     \n"
    "Max open files            1024                 1048576              files     \n"
    "Max locked memory         8388608              8388608              bytes     \n"
    "Max address space         unlimited            unlimited            bytes     \n";

constexpr const char* kNetstat =
    "TcpExt: SyncookiesSent SyncookiesRecv\n"
    "TcpExt: 0 0\n"
    "IpExt: InNoRoutes InTruncatedPkts InMcastPkts OutMcastPkts InBcastPkts OutBcastPkts "
    "InOctets OutOctets InMcastOctets\n"
    "IpExt: 0 0 0 0 0 0 123456 654321 0\n";

// A /proc with one process: comm with spaces and a ')' (it ends at the last ')'), utime 250,
// stime 150, starttime 500 ticks after a boot at 1700000000, vsize 100 MiB, 2560 resident pages.
class FixtureProc {
 public:
  FixtureProc() {
    dir_.write("stat", "cpu  1 2 3 4\nintr 5\nbtime 1700000000\nprocesses 9\n");
    dir_.write("self/stat",
               "4242 (egress (op) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 3 0 "
               "500 104857600 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n");
    dir_.write("self/limits", kLimits);
    dir_.write("self/net/netstat", kNetstat);
    for (const char* fd : {"0", "1", "2"}) {
      dir_.write(std::string("self/fd/") + fd, "");
    }
  }
  ProcessCollector collector() const { return ProcessCollector(self(), dir_.path()); }
  std::string self() const { return dir_.path() + "/self"; }
  void write(const std::string& name, const std::string& contents) { dir_.write(name, contents); }
  void remove(const std::string& name) { std::filesystem::remove_all(dir_.path() + "/" + name); }

 private:
  testutil::TempDir dir_{"process_collector_test"};
};

TEST(ProcessCollectorTest, ReadsEveryMetricOfGosProcessCollector) {
  FixtureProc proc;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  const auto samples = collect(proc.collector());
  auto is = [&](const std::string& name, MetricType type, const std::string& help, double value) {
    auto it = samples.find(name);
    ASSERT_NE(it, samples.end()) << name;
    EXPECT_EQ(it->second.type, type) << name;
    EXPECT_EQ(it->second.help, help) << name;
    EXPECT_DOUBLE_EQ(it->second.value, value) << name;
  };
  is("process_cpu_seconds_total", MetricType::Counter,
     "Total user and system CPU time spent in seconds.", 400 / ticks);
  is("process_virtual_memory_bytes", MetricType::Gauge, "Virtual memory size in bytes.", 104857600);
  is("process_resident_memory_bytes", MetricType::Gauge, "Resident memory size in bytes.",
     2560 * page);
  is("process_start_time_seconds", MetricType::Gauge,
     "Start time of the process since unix epoch in seconds.", 1700000000 + 500 / ticks);
  is("process_open_fds", MetricType::Gauge, "Number of open file descriptors.", 3);
  is("process_max_fds", MetricType::Gauge, "Maximum number of open file descriptors.", 1024);
  is("process_virtual_memory_max_bytes", MetricType::Gauge,
     "Maximum amount of virtual memory available in bytes.", 18446744073709551615.0);
  is("process_network_receive_bytes_total", MetricType::Counter,
     "Number of bytes received by the process over the network.", 123456);
  is("process_network_transmit_bytes_total", MetricType::Counter,
     "Number of bytes sent by the process over the network.", 654321);
  EXPECT_EQ(samples.size(), 9u);
}

TEST(ProcessCollectorTest, AnUnreadableSourceLeavesOnlyItsMetricsOut) {
  FixtureProc proc;
  proc.remove("self/stat");
  proc.remove("self/net");
  auto samples = collect(proc.collector());
  std::vector<std::string> names;
  for (const auto& [name, sample] : samples) {
    names.push_back(name);
  }
  EXPECT_THAT(names, ElementsAre("process_max_fds", "process_open_fds",
                                 "process_virtual_memory_max_bytes"));

  proc.remove("self/limits");
  proc.remove("self/fd");
  proc.write("self/stat", "4242 (x) S 1 2 3\n");  // truncated: no metrics, no crash
  EXPECT_TRUE(collect(proc.collector()).empty());
}

TEST(ProcessCollectorTest, WithoutBootTimeTheStartTimeIsLeftOut) {
  FixtureProc proc;
  proc.write("stat", "cpu  1 2 3 4\n");
  auto samples = collect(proc.collector());
  EXPECT_FALSE(samples.contains("process_start_time_seconds"));
  EXPECT_TRUE(samples.contains("process_cpu_seconds_total"));
}

TEST(ProcessCollectorTest, FiniteLimitsAndMissingNetstatColumns) {
  FixtureProc proc;
  proc.write("self/limits",
             "Limit                     Soft Limit           Hard Limit           Units     \n"
             "Max open files            unlimited            unlimited            files     \n"
             "Max address space         4294967296           unlimited            bytes     \n");
  proc.write("self/net/netstat", "IpExt: InNoRoutes\nIpExt: 7\n");
  auto samples = collect(proc.collector());
  EXPECT_DOUBLE_EQ(samples["process_max_fds"].value, 18446744073709551615.0);
  EXPECT_DOUBLE_EQ(samples["process_virtual_memory_max_bytes"].value, 4294967296.0);
  // Go's collector reports 0 when the counters are absent from a readable file.
  EXPECT_DOUBLE_EQ(samples["process_network_receive_bytes_total"].value, 0);
  EXPECT_DOUBLE_EQ(samples["process_network_transmit_bytes_total"].value, 0);
}

TEST(ProcessCollectorTest, ThisProcess) {
  ProcessCollector collector;
  auto before = collect(collector);
  ASSERT_EQ(before.size(), 9u);

  // Open fds are counted as they come and go.
  int fds[5];
  for (int& fd : fds) {
    fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
  }
  auto opened = collect(collector);
  for (int fd : fds) {
    close(fd);
  }
  EXPECT_EQ(opened["process_open_fds"].value, before["process_open_fds"].value + 5);

  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  EXPECT_EQ(opened["process_max_fds"].value, static_cast<double>(limit.rlim_cur));

  // Resident memory grows with memory touched.
  std::vector<char> touched(64 << 20, 1);
  auto grown = collect(collector);
  EXPECT_GE(grown["process_resident_memory_bytes"].value,
            before["process_resident_memory_bytes"].value + (32 << 20));
  EXPECT_GE(grown["process_virtual_memory_bytes"].value,
            grown["process_resident_memory_bytes"].value);

  // CPU time moves once this thread has burnt some (until getrusage says a tick has passed).
  rusage start{};
  getrusage(RUSAGE_SELF, &start);
  volatile unsigned sink = static_cast<unsigned char>(touched[0]);
  for (;;) {
    for (int i = 0; i < 1000000; ++i) {
      sink = sink * 31 + i;
    }
    rusage now{};
    getrusage(RUSAGE_SELF, &now);
    auto us = [](const rusage& r) {
      return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1000000L + r.ru_utime.tv_usec +
             r.ru_stime.tv_usec;
    };
    if (us(now) - us(start) >= 50000) {
      break;
    }
  }
  EXPECT_GT(collect(collector)["process_cpu_seconds_total"].value,
            before["process_cpu_seconds_total"].value);

  // Started in the past, after the epoch's year 2020.
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LE(before["process_start_time_seconds"].value, now + 1);
  EXPECT_GT(before["process_start_time_seconds"].value, 1577836800.0);
}

}  // namespace
}  // namespace egress::controllerruntime
