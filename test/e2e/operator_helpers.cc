#include "test/e2e/operator_helpers.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include "test/e2e/testenv/environment.h"
#include "test/e2e/testenv/loopback.h"
#include <sys/wait.h>

namespace egress::e2e {

using namespace std::chrono_literals;
using testenv::controlPlane;

// Polls `check` until it holds or `timeout` passes; `what` describes the wait on failure.
bool eventually(const std::function<bool()>& check, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (check()) {
      return true;
    }
    std::this_thread::sleep_for(250ms);
  }
  return check();
}

// The sum of the samples of `name` whose labels include every pair of `labels`, in Prometheus
// text format; the labels' values may list alternatives separated by '|'.
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

Operator::Operator(const std::string& dir, const std::string& name,
                   std::vector<std::string> extraArgs, const OperatorLaunch& launch)
    : metricsPort_(testenv::freeLoopbackPort()), probePort_(testenv::freeLoopbackPort()) {
  std::vector<std::string> args = launch.wrapper;
  args.emplace_back(EGRESS_OPERATOR_BINARY);
  if (launch.adminKubeconfig) {
    args.push_back("--kubeconfig=" + controlPlane().kubeconfig());
  }
  for (std::string flag :
       {"--metrics-bind-address=127.0.0.1:" + std::to_string(metricsPort_),
        "--health-probe-bind-address=127.0.0.1:" + std::to_string(probePort_),
        std::string("--graceful-shutdown-timeout=10s"), std::string("--kube-api-qps=100"),
        std::string("--kube-api-burst=200")}) {
    args.push_back(std::move(flag));
  }
  args.insert(args.end(), extraArgs.begin(), extraArgs.end());
  logFile_ = dir + "/" + name + ".log";
  process_ = std::make_unique<testenv::ChildProcess>(args, logFile_);
}

std::string Operator::metricsTarget() const {
  return "127.0.0.1:" + std::to_string(metricsPort_);
}

std::string Operator::metrics() const {
  return testenv::httpGet(metricsPort_, "/metrics");
}

bool Operator::ready() const {
  return !testenv::httpGet(probePort_, "/readyz").empty();
}

double Operator::writes() const {
  return metricSum(metrics(), "rest_client_requests_total", {{"method", "POST|PUT|PATCH|DELETE"}});
}

bool Operator::settle(std::chrono::seconds quiet, std::chrono::seconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  double last = writes();
  auto since = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(500ms);
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

double Operator::reconciles(const std::string& controller) const {
  return metricSum(metrics(), "controller_runtime_reconcile_total", {{"controller", controller}});
}

// How a reaped process ended, as a shell says it: its exit code, or 128 + the signal.
std::optional<int> exitCode(const std::optional<int>& waitStatus) {
  if (!waitStatus) {
    return std::nullopt;
  }
  return WIFEXITED(*waitStatus) ? WEXITSTATUS(*waitStatus) : 128 + WTERMSIG(*waitStatus);
}

rapidjson::Document parseJson(const std::string& text) {
  rapidjson::Document d;
  d.Parse<rapidjson::kParseIterativeFlag>(text.c_str());
  return d;
}

std::string str(const rapidjson::Value& v, const char* name) {
  if (!v.IsObject()) {
    return "";
  }
  auto it = v.FindMember(name);
  return it != v.MemberEnd() && it->value.IsString() ? it->value.GetString() : "";
}

const rapidjson::Value* at(const rapidjson::Value& v, std::initializer_list<const char*> path) {
  const rapidjson::Value* cur = &v;
  for (const char* p : path) {
    if (!cur->IsObject()) {
      return nullptr;
    }
    auto it = cur->FindMember(p);
    if (it == cur->MemberEnd()) {
      return nullptr;
    }
    cur = &it->value;
  }
  return cur;
}

bool PolicyView::conditionIs(const std::string& type, const std::string& status) const {
  auto it = conditions.find(type);
  return it != conditions.end() && it->second.first == status;
}

std::string PolicyView::reason(const std::string& type) const {
  auto it = conditions.find(type);
  return it == conditions.end() ? "" : it->second.second;
}

std::vector<std::string> strings(const rapidjson::Value* v) {
  std::vector<std::string> out;
  if (v != nullptr && v->IsArray()) {
    for (const auto& s : v->GetArray()) {
      if (s.IsString()) {
        out.emplace_back(s.GetString());
      }
    }
  }
  return out;
}

PolicyView viewOf(const rapidjson::Value& item) {
  PolicyView p;
  p.name = str(*at(item, {"metadata"}), "name");
  if (const auto* st = at(item, {"status"})) {
    p.pool = str(*st, "pool");
    p.egressIPs = strings(at(*st, {"egressIPs"}));
    if (const auto* gws = at(*st, {"gateways"}); gws != nullptr && gws->IsArray()) {
      for (const auto& g : gws->GetArray()) {
        p.ledger.push_back(strings(at(g, {"egressIPs"})));
        p.ledgerPods.push_back(str(g, "pod"));
        p.ledgerPodUIDs.push_back(str(g, "podUID"));
      }
    }
    if (const auto* sel = at(*st, {"selectedPods"}); sel != nullptr && sel->IsInt()) {
      p.selectedPods = sel->GetInt();
    }
    if (const auto* cs = at(*st, {"conditions"}); cs != nullptr && cs->IsArray()) {
      for (const auto& c : cs->GetArray()) {
        p.conditions[str(c, "type")] = {str(c, "status"), str(c, "reason")};
        p.messages[str(c, "type")] = str(c, "message");
      }
    }
  }
  return p;
}

std::map<std::string, PolicyView> policies(const std::string& ns) {
  std::map<std::string, PolicyView> out;
  auto got = controlPlane().kubectl({"get", "egp", "-n", ns, "-o", "json"});
  if (!got.ok()) {
    return out;
  }
  auto doc = parseJson(got.output);
  if (const auto* items = at(doc, {"items"}); items != nullptr && items->IsArray()) {
    for (const auto& item : items->GetArray()) {
      auto v = viewOf(item);
      out[v.name] = v;
    }
  }
  return out;
}

std::map<std::string, PodView> gatewayPods(const std::string& ns, const std::string& policy) {
  std::map<std::string, std::string> heldByUid;
  auto egp = controlPlane().kubectl({"get", "egp", "-n", ns, policy, "-o", "json"});
  if (egp.ok()) {
    const auto view = viewOf(parseJson(egp.output));
    for (size_t i = 0; i < view.ledger.size() && i < view.ledgerPodUIDs.size(); ++i) {
      std::string entry;
      for (const auto& ip : view.ledger[i]) {
        entry += (entry.empty() ? "" : ",") + ip;
      }
      if (!view.ledgerPodUIDs[i].empty()) {
        heldByUid[view.ledgerPodUIDs[i]] = entry;
      }
    }
  }
  std::map<std::string, PodView> out;
  auto got = controlPlane().kubectl(
      {"get", "pods", "-n", ns, "-l", std::string(kPolicyLabel) + "=" + policy, "-o", "json"});
  auto doc = parseJson(got.output);
  if (const auto* items = at(doc, {"items"}); items != nullptr && items->IsArray()) {
    for (const auto& item : items->GetArray()) {
      PodView p;
      if (auto it = heldByUid.find(str(*at(item, {"metadata"}), "uid")); it != heldByUid.end()) {
        p.holds = it->second;
      }
      p.node = str(*at(item, {"spec"}), "nodeName");
      p.deleting = at(item, {"metadata", "deletionTimestamp"}) != nullptr;
      out[str(*at(item, {"metadata"}), "name")] = p;
    }
  }
  return out;
}

// A pool's status field through jsonpath, "" read as "0".
std::string poolField(const std::string& pool, const std::string& path) {
  auto got = controlPlane().kubectl({"get", "ipampool", pool, "-o", "jsonpath={" + path + "}"});
  return got.output.empty() ? "0" : got.output;
}

SliceView policySlices(const std::string& ns, const std::string& policy) {
  SliceView out;
  auto got = controlPlane().kubectl(
      {"get", "egresspolicyslices", "-l",
       "egressgateway.dev/policy-namespace=" + ns + ",egressgateway.dev/policy=" + policy, "-o",
       "json"});
  if (!got.ok()) {
    return out;
  }
  auto doc = parseJson(got.output);
  auto strings = [](const rapidjson::Value* list, std::vector<std::string>& into) {
    if (list != nullptr && list->IsArray()) {
      for (const auto& v : list->GetArray()) {
        into.push_back(v.IsString() ? v.GetString() : "?");
      }
    }
  };
  if (const auto* items = at(doc, {"items"}); items != nullptr && items->IsArray()) {
    for (const auto& item : items->GetArray()) {
      ++out.slices;
      if (const auto* sources = at(item, {"spec", "sources"}); sources && sources->IsArray()) {
        for (const auto& src : sources->GetArray()) {
          std::vector<std::string> ips;
          strings(at(src, {"ips"}), ips);
          for (const auto& ip : ips) {
            out.sources.push_back(ip + "@" + str(src, "node"));
          }
        }
      }
      const auto* gateway = at(item, {"spec", "gateway"});
      if (gateway == nullptr) {
        continue;
      }
      strings(at(*gateway, {"destinationCIDRs"}), out.destinations);
      strings(at(*gateway, {"excludedCIDRs"}), out.excluded);
      if (const auto* eips = at(*gateway, {"egressIPs"}); eips && eips->IsArray()) {
        for (const auto& e : eips->GetArray()) {
          std::vector<std::string> ips;
          strings(at(e, {"ips"}), ips);
          for (const auto& ip : ips) {
            out.egressIPs.push_back(ip + "@" + str(e, "node"));
          }
        }
      }
    }
  }
  for (auto* v : {&out.sources, &out.destinations, &out.excluded, &out.egressIPs}) {
    std::sort(v->begin(), v->end());
  }
  return out;
}

bool exists(const std::vector<std::string>& args) {
  return controlPlane().kubectl(args).ok();
}

// Every Event's reason and message about `name` in `ns`.
std::vector<std::pair<std::string, std::string>> eventsAbout(const std::string& ns,
                                                             const std::string& name) {
  std::vector<std::pair<std::string, std::string>> out;
  auto got = controlPlane().kubectl(
      {"get", "events", "-n", ns, "--field-selector", "involvedObject.name=" + name, "-o", "json"});
  auto doc = parseJson(got.output);
  if (const auto* items = at(doc, {"items"}); items != nullptr && items->IsArray()) {
    for (const auto& e : items->GetArray()) {
      out.emplace_back(str(e, "reason"), str(e, "message"));
    }
  }
  return out;
}

bool hasEvent(const std::string& ns, const std::string& name, const std::string& reason,
              const std::string& fragment) {
  for (const auto& [r, m] : eventsAbout(ns, name)) {
    if (r == reason && m.find(fragment) != std::string::npos) {
      return true;
    }
  }
  return false;
}

std::string policyYaml(const std::string& ns, const std::string& name, const std::string& pool,
                       int replicas, const std::string& app,
                       const std::vector<std::string>& addresses) {
  std::string y =
      "apiVersion: networking.egressgateway.dev/v1alpha1\nkind: EgressGatewayPolicy\n"
      "metadata:\n  name: " +
      name + "\n  namespace: " + ns +
      "\nspec:\n  podSelector:\n    matchLabels:\n      app: " + app +
      "\n  destinationCIDRs: [192.0.2.0/24]\n  egressIP:" +
      (pool.empty() && addresses.empty() ? " {}\n" : "\n");
  if (!pool.empty()) {
    y += "    pool: " + pool + "\n";
  }
  if (!addresses.empty()) {
    y += "    addresses:\n";
    for (const auto& a : addresses) {
      y += "      - " + a + "\n";
    }
  }
  y += "  gateway:\n    replicas: " + std::to_string(replicas) + "\n";
  return y;
}

std::string poolYaml(const std::string& name, const std::vector<std::string>& cidrs,
                     const std::vector<std::string>& exclude) {
  std::string y =
      "apiVersion: networking.egressgateway.dev/v1alpha1\nkind: IPAMPool\nmetadata:\n"
      "  name: " +
      name + "\nspec:\n  cidrs:\n";
  for (const auto& c : cidrs) {
    y += "    - " + c + "\n";
  }
  if (!exclude.empty()) {
    y += "  exclude:\n";
    for (const auto& e : exclude) {
      y += "    - " + e + "\n";
    }
  }
  return y;
}

std::string operatorConfigYaml(const std::string& defaultPool) {
  return "apiVersion: networking.egressgateway.dev/v1alpha1\nkind: OperatorConfig\nmetadata:\n"
         "  name: default\nspec:\n  gatewayImage: " +
         std::string(kImage) + "\n" +
         (defaultPool.empty() ? "" : "  defaultPool: " + defaultPool + "\n") +
         "  clusterCIDRs: [10.244.0.0/16, 10.96.0.0/12]\n";
}

std::string podYaml(const std::string& ns, const std::string& name, const std::string& app) {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  namespace: " + ns +
         "\n  labels:\n    app: " + app +
         "\nspec:\n  containers:\n    - name: c\n      image: example.invalid/app:1\n";
}

std::set<std::string> allAddresses(const std::map<std::string, PolicyView>& ps) {
  std::set<std::string> out;
  for (const auto& [n, p] : ps) {
    out.insert(p.egressIPs.begin(), p.egressIPs.end());
  }
  return out;
}

size_t addressCount(const std::map<std::string, PolicyView>& ps) {
  size_t n = 0;
  for (const auto& [name, p] : ps) {
    n += p.egressIPs.size();
  }
  return n;
}

std::string installCrds() {
  auto apply = controlPlane().kubectl({"apply", "-f", testenv::sourceDir() + "/manifests/"});
  if (!apply.ok()) {
    return "kubectl apply -f manifests/: " + apply.output;
  }
  auto wait = controlPlane().kubectl({"wait", "--for", "condition=established", "--timeout=60s",
                                      "crd/ipampools.networking.egressgateway.dev",
                                      "crd/egressgatewaypolicies.networking.egressgateway.dev",
                                      "crd/egresspolicyslices.networking.egressgateway.dev",
                                      "crd/operatorconfigs.networking.egressgateway.dev"});
  return wait.ok() ? "" : "kubectl wait for the CRDs: " + wait.output;
}

::testing::AssertionResult applyYaml(const std::string& file, const std::string& yaml) {
  std::ofstream(file) << yaml;
  auto r = controlPlane().kubectl({"apply", "-f", file});
  if (!r.ok()) {
    return ::testing::AssertionFailure() << "kubectl apply -f " << file << ": " << r.output;
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult allReady(const std::string& ns, const std::vector<std::string>& names,
                                    std::chrono::seconds timeout,
                                    const std::vector<std::unique_ptr<Operator>>& operators) {
  std::map<std::string, PolicyView> last;
  const bool ok = eventually(
      [&] {
        last = policies(ns);
        return std::all_of(names.begin(), names.end(), [&](const std::string& n) {
          auto it = last.find(n);
          return it != last.end() && it->second.conditionIs("Ready", "True");
        });
      },
      timeout);
  if (ok) {
    return ::testing::AssertionSuccess();
  }
  auto failure = ::testing::AssertionFailure();
  for (const auto& n : names) {
    auto it = last.find(n);
    failure << n << ": "
            << (it == last.end() ? "missing"
                                 : it->second.reason("Ready") + " " + it->second.messages["Ready"])
            << "\n";
  }
  for (const auto& op : operators) {
    failure << "--- " << op->logFile() << " (tail)\n";
    const std::string log = op->process().log();
    failure << log.substr(log.size() > 4000 ? log.size() - 4000 : 0);
  }
  return failure;
}

void expectGatewaysHoldTheirLedgers(const std::string& ns,
                                    const std::map<std::string, PolicyView>& ps,
                                    const std::string& pool) {
  for (const auto& [name, p] : ps) {
    EXPECT_EQ(p.pool, pool) << name;
    // Every gateway pod holds a distinct entry of its policy's ledger.
    auto pods = gatewayPods(ns, name);
    std::set<std::string> held;
    for (const auto& [podName, pod] : pods) {
      if (!pod.deleting) {
        EXPECT_TRUE(held.insert(pod.holds).second) << podName << " " << pod.holds;
      }
    }
    std::set<std::string> ledger;
    for (const auto& e : p.ledger) {
      ledger.insert(e.front());
    }
    EXPECT_EQ(held, ledger) << name;
    auto deploy = controlPlane().kubectl({"get", "deployment", "-n", ns, "egw-" + name, "-o",
                                          "jsonpath={.status.availableReplicas}"});
    EXPECT_EQ(deploy.output, std::to_string(p.ledger.size())) << name;
  }
}

}  // namespace egress::e2e
