// File: operator_process.h
//
// The egress-operator binary as an e2e test's own process against the test control plane: its
// /metrics and probes on free loopback ports, its log in a file, and what a test reads from it
// (the exposition, readiness, how many API writes it made, when it went quiet). metricSum()
// adds up samples of a Prometheus text exposition.
//
//   OperatorProcess op(EGRESS_OPERATOR_BINARY, tmp.path(), "operator-0", {"--leader-elect"});
//   ASSERT_TRUE(op.process().error().empty()) << op.process().error();
//   ASSERT_TRUE(eventually([&] { return op.ready(); }, 60s));
//   double writes = op.writes();
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "test/e2e/testenv/child_process.h"

namespace egress::testenv {

// The sum of the samples of `name` whose labels include every pair of `labels`, in Prometheus
// text format; the labels' values may list alternatives separated by '|'.
double metricSum(const std::string& text, const std::string& name,
                 const std::map<std::string, std::string>& labels = {});

class OperatorProcess {
 public:
  // Starts `binary` with the control plane's kubeconfig, loopback metrics and probe ports, a
  // 10 s graceful shutdown, a client-side limit high enough for bursts, and `extraArgs`; it logs
  // to <dir>/<name>.log.
  OperatorProcess(const std::string& binary, const std::string& dir, const std::string& name,
                  const std::vector<std::string>& extraArgs);

  ChildProcess& process() { return *process_; }
  const std::string& logFile() const { return logFile_; }
  // host:port of /metrics, as a scrape configuration names a target.
  std::string metricsTarget() const;
  std::string metrics() const;
  bool ready() const;
  // API writes this process made (every verb but GET), from its rest_client_requests_total.
  double writes() const;
  // Waits until this process has made no write for `quiet` (batched pool and summary recounts
  // land a second or two after the policies they count); false if it never goes quiet.
  bool settle(std::chrono::seconds quiet, std::chrono::seconds timeout) const;
  double reconciles(const std::string& controller) const;

 private:
  int metricsPort_;
  int probePort_;
  std::string logFile_;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace egress::testenv
