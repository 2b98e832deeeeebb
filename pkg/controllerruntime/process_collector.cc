#include "pkg/controllerruntime/process_collector.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>

#include <prometheus/client_metric.h>
#include <prometheus/metric_type.h>

#include <unistd.h>

namespace egress::controllerruntime {

namespace {

using prometheus::MetricType;

// procfs's value for "unlimited": the largest uint64, which Go exports as a float64.
constexpr double kUnlimited = 18446744073709551615.0;

std::optional<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  std::ostringstream out;
  out << in.rdbuf();
  return std::move(out).str();
}

std::optional<double> number(std::string_view text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

std::vector<std::string> words(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::vector<std::string> out;
  for (std::string word; in >> word;) {
    out.push_back(word);
  }
  return out;
}

// The fields of /proc/<pid>/stat we need, in clock ticks, bytes and pages.
struct Stat {
  double utime = 0;
  double stime = 0;
  double startTime = 0;
  double virtualBytes = 0;
  double residentPages = 0;
};

std::optional<Stat> parseStat(std::string_view text) {
  // The command name (field 2) is in parentheses and may itself hold spaces and ')': the
  // fields after it start past the last ')'. Then field 3 (state) is index 0.
  const auto close = text.rfind(')');
  if (close == std::string_view::npos) {
    return std::nullopt;
  }
  const auto fields = words(text.substr(close + 1));
  constexpr std::size_t kUtime = 11, kStime = 12, kStartTime = 19, kVsize = 20, kRss = 21;
  if (fields.size() <= kRss) {
    return std::nullopt;
  }
  const auto utime = number(fields[kUtime]);
  const auto stime = number(fields[kStime]);
  const auto start = number(fields[kStartTime]);
  const auto vsize = number(fields[kVsize]);
  const auto rss = number(fields[kRss]);
  if (!utime || !stime || !start || !vsize || !rss) {
    return std::nullopt;
  }
  return Stat{*utime, *stime, *start, *vsize, *rss};
}

// "btime <seconds>" from /proc/stat.
std::optional<double> bootTime(std::string_view procStat) {
  std::istringstream in{std::string(procStat)};
  for (std::string line; std::getline(in, line);) {
    const auto w = words(line);
    if (w.size() == 2 && w[0] == "btime") {
      return number(w[1]);
    }
  }
  return std::nullopt;
}

// The soft limit on the line of /proc/<pid>/limits that starts with `name`.
std::optional<double> softLimit(std::string_view limits, std::string_view name) {
  std::istringstream in{std::string(limits)};
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with(name)) {
      continue;
    }
    const auto w = words(std::string_view(line).substr(name.size()));
    if (w.empty()) {
      return std::nullopt;
    }
    return w[0] == "unlimited" ? std::optional<double>(kUnlimited) : number(w[0]);
  }
  return std::nullopt;
}

// InOctets and OutOctets of the "IpExt:" header and value lines of /proc/<pid>/net/netstat;
// 0 where absent, as Go reports them.
std::pair<double, double> ipOctets(std::string_view netstat) {
  std::istringstream in{std::string(netstat)};
  std::vector<std::string> header;
  double received = 0;
  double sent = 0;
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("IpExt:")) {
      continue;
    }
    if (header.empty()) {
      header = words(line);
      continue;
    }
    const auto values = words(line);
    for (std::size_t i = 1; i < header.size() && i < values.size(); ++i) {
      if (header[i] == "InOctets") {
        received = number(values[i]).value_or(0);
      } else if (header[i] == "OutOctets") {
        sent = number(values[i]).value_or(0);
      }
    }
    break;
  }
  return {received, sent};
}

void add(std::vector<prometheus::MetricFamily>& out, const char* name, const char* help,
         MetricType type, double value) {
  prometheus::ClientMetric metric;
  if (type == MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  out.push_back({name, help, type, {metric}});
}

}  // namespace

ProcessCollector::ProcessCollector() : ProcessCollector("/proc/self", "/proc") {}

ProcessCollector::ProcessCollector(std::string procSelf, std::string procRoot)
    : procSelf_(std::move(procSelf)),
      procRoot_(std::move(procRoot)),
      ticksPerSecond_(sysconf(_SC_CLK_TCK)),
      pageSize_(sysconf(_SC_PAGESIZE)) {}

std::vector<prometheus::MetricFamily> ProcessCollector::Collect() const {
  std::vector<prometheus::MetricFamily> out;
  const double ticks = static_cast<double>(ticksPerSecond_);
  if (auto text = readFile(procSelf_ + "/stat")) {
    if (auto stat = parseStat(*text)) {
      add(out, "process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
          MetricType::Counter, (stat->utime + stat->stime) / ticks);
      add(out, "process_virtual_memory_bytes", "Virtual memory size in bytes.", MetricType::Gauge,
          stat->virtualBytes);
      add(out, "process_resident_memory_bytes", "Resident memory size in bytes.", MetricType::Gauge,
          stat->residentPages * static_cast<double>(pageSize_));
      const auto boot = readFile(procRoot_ + "/stat");
      if (auto btime = boot ? bootTime(*boot) : std::nullopt) {
        add(out, "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds.", MetricType::Gauge,
            *btime + stat->startTime / ticks);
      }
    }
  }

  std::error_code ec;
  std::filesystem::directory_iterator fds(procSelf_ + "/fd", ec);
  if (!ec) {
    double open = 0;
    for (auto it = std::filesystem::begin(fds); it != std::filesystem::end(fds); it.increment(ec)) {
      if (ec) {
        break;
      }
      ++open;
    }
    if (!ec) {
      add(out, "process_open_fds", "Number of open file descriptors.", MetricType::Gauge, open);
    }
  }

  if (auto limits = readFile(procSelf_ + "/limits")) {
    if (auto maxFds = softLimit(*limits, "Max open files")) {
      add(out, "process_max_fds", "Maximum number of open file descriptors.", MetricType::Gauge,
          *maxFds);
    }
    if (auto maxVsize = softLimit(*limits, "Max address space")) {
      add(out, "process_virtual_memory_max_bytes",
          "Maximum amount of virtual memory available in bytes.", MetricType::Gauge, *maxVsize);
    }
  }

  if (auto netstat = readFile(procSelf_ + "/net/netstat")) {
    const auto [received, sent] = ipOctets(*netstat);
    add(out, "process_network_receive_bytes_total",
        "Number of bytes received by the process over the network.", MetricType::Counter, received);
    add(out, "process_network_transmit_bytes_total",
        "Number of bytes sent by the process over the network.", MetricType::Counter, sent);
  }
  return out;
}

}  // namespace egress::controllerruntime
