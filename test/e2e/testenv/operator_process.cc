#include "test/e2e/testenv/operator_process.h"

#include <sstream>
#include <thread>

#include "test/e2e/testenv/environment.h"
#include "test/e2e/testenv/loopback.h"

namespace egress::testenv {

double metricSum(const std::string& text, const std::string& name,
                 const std::map<std::string, std::string>& labels) {
  double sum = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.compare(0, name.size(), name) != 0) {
      continue;
    }
    const char next = line.size() > name.size() ? line[name.size()] : '\0';
    if (next != '{' && next != ' ') {
      continue;
    }
    bool match = true;
    for (const auto& [k, alternatives] : labels) {
      bool any = false;
      std::istringstream alts(alternatives);
      std::string v;
      while (std::getline(alts, v, '|')) {
        any = any || line.find(k + "=\"" + v + "\"") != std::string::npos;
      }
      match = match && any;
    }
    if (match) {
      sum += std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return sum;
}

OperatorProcess::OperatorProcess(const std::string& binary, const std::string& dir,
                                 const std::string& name, const std::vector<std::string>& extraArgs)
    : metricsPort_(freeLoopbackPort()), probePort_(freeLoopbackPort()) {
  std::vector<std::string> args = {
      binary,
      "--kubeconfig=" + controlPlane().kubeconfig(),
      "--metrics-bind-address=" + metricsTarget(),
      "--health-probe-bind-address=127.0.0.1:" + std::to_string(probePort_),
      "--graceful-shutdown-timeout=10s",
      "--kube-api-qps=100",
      "--kube-api-burst=200"};
  args.insert(args.end(), extraArgs.begin(), extraArgs.end());
  logFile_ = dir + "/" + name + ".log";
  process_ = std::make_unique<ChildProcess>(args, logFile_);
}

std::string OperatorProcess::metricsTarget() const {
  return "127.0.0.1:" + std::to_string(metricsPort_);
}

std::string OperatorProcess::metrics() const {
  return httpGet(metricsPort_, "/metrics");
}

bool OperatorProcess::ready() const {
  return !httpGet(probePort_, "/readyz").empty();
}

double OperatorProcess::writes() const {
  return metricSum(metrics(), "rest_client_requests_total", {{"method", "POST|PUT|PATCH|DELETE"}});
}

bool OperatorProcess::settle(std::chrono::seconds quiet, std::chrono::seconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  double last = writes();
  auto since = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const double now = writes();
    if (now != last) {
      last = now;
      since = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - since >= quiet) {
      return true;
    }
  }
  return false;
}

double OperatorProcess::reconciles(const std::string& controller) const {
  return metricSum(metrics(), "controller_runtime_reconcile_total", {{"controller", controller}});
}

}  // namespace egress::testenv
