// File: process_collector.h
//
// The process metrics every Go binary exports by default (client_golang's process collector),
// with its names, types and help, read from /proc at scrape time:
//   process_cpu_seconds_total               counter  utime + stime          (/proc/self/stat)
//   process_virtual_memory_bytes            gauge    vsize                  (/proc/self/stat)
//   process_resident_memory_bytes           gauge    rss pages * page size  (/proc/self/stat)
//   process_start_time_seconds              gauge    boot time + starttime  (/proc/stat btime)
//   process_open_fds                        gauge    entries of /proc/self/fd
//   process_max_fds                         gauge    "Max open files" soft limit
//   (/proc/self/limits) process_virtual_memory_max_bytes        gauge    "Max address space" soft
//   limit process_network_receive_bytes_total     counter  IpExt InOctets  (/proc/self/net/netstat)
//   process_network_transmit_bytes_total    counter  IpExt OutOctets
// As in Go, "unlimited" is 2^64-1, and a source that cannot be read leaves its metrics out of
// that scrape instead of failing it. prometheus-cpp has no such collector.
#pragma once

#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

namespace egress::controllerruntime {

class ProcessCollector : public prometheus::Collectable {
 public:
  // The process directory and the proc root it lives in; tests point both at a fixture tree.
  ProcessCollector();
  ProcessCollector(std::string procSelf, std::string procRoot);

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  std::string procSelf_;
  std::string procRoot_;
  long ticksPerSecond_;
  long pageSize_;
};

}  // namespace egress::controllerruntime
