// The chart's monitoring files (deploy/helm/egress-gateway-operator/files/) against a real
// Prometheus (Debian's 2.42) scraping two egress-operator processes (leader election on) that
// run against the real control plane: a pool, three Ready policies, and two more that fall short
// of addresses, so every family the files read has series. Beside them, in a job of their own
// and labelled with their `node` as the chart's PodMonitor labels them, egw-agent processes in
// dry runs (they compute and count what they would program, and touch no kernel): a healthy
// one, a fenced one, one whose every sync fails, and a target where no agent answers. Through
// Prometheus's HTTP API:
// - every query of the Grafana dashboard, with its variables substituted (by the values its
//   own variable queries find, and by their "All" values), evaluates without error and returns
//   data; except the panels named in kNoDataInADryRun, whose series only an agent that programs
//   a kernel has, and which must return none here (dataplane_e2e_test evaluates them);
// - the alert rules file loads, every rule is evaluated healthy, its expression evaluates, and
//   the alerts are in the state the cluster calls for: allocation failures firing, the full
//   pool and the short policies pending (their `for:` has not run out), no leader and
//   reconcile errors inactive; the fenced agent, the failing one's errors and missing syncs, and
//   the target that is down pending, each for its node alone, the tunnel alerts inactive; and
//   once the failing agent is killed, its node's target pending as down too.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <yaml-cpp/yaml.h>

#include "test/e2e/operator_helpers.h"
#include "test/e2e/testenv/child_process.h"
#include "test/e2e/testenv/environment.h"
#include "test/e2e/testenv/loopback.h"
#include "test/e2e/testenv/prometheus.h"
#include "test/testutil/temp_dir.h"

namespace egress {
namespace {

using namespace std::chrono_literals;
using testenv::controlPlane;
using testenv::PromRule;
using testenv::PromSample;
using ::testing::Contains;
using ::testing::UnorderedElementsAre;

constexpr const char* kJob = "egress-operator";
constexpr const char* kAgentJob = "egw-agent";
constexpr auto kWait = 120s;

// Dashboard panels (by title) that cannot have data here, and why: the per-policy egress
// counters are read from the kernel's nftables counters of the egress IPs a node holds, once a
// sync, and an agent in a dry run makes no table. Their queries must evaluate and return nothing
// here; dataplane_e2e_test (PrometheusReadsTheAgentsEgressCountersAndAlertsOnForgedTunnelPackets)
// evaluates them in a real Prometheus over agents that program their nodes' kernels.
const std::map<std::string, std::string> kNoDataInADryRun = {
    {"Egress bytes per policy",
     "egw_agent_egress_bytes_total: the kernel's counters, which a dry run does not make"},
    {"Egress packets per policy",
     "egw_agent_egress_packets_total: the kernel's counters, which a dry run does not make"},
};

std::string filesDir() {
  return testenv::sourceDir() + "/deploy/helm/egress-gateway-operator/files";
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

struct DashboardQuery {
  std::string panel;
  std::string expr;
};

// Every target's expression, of top-level panels and of panels inside (collapsed) rows.
void collectQueries(const rapidjson::Value& panels, std::vector<DashboardQuery>& out) {
  if (!panels.IsArray()) {
    return;
  }
  for (const auto& p : panels.GetArray()) {
    // Titles need not be unique: a panel is its id and title.
    const std::string title = (p.HasMember("id") ? std::to_string(p["id"].GetInt()) : "?") + " " +
                              (p.HasMember("title") ? p["title"].GetString() : "?");
    if (p.HasMember("targets") && p["targets"].IsArray()) {
      for (const auto& t : p["targets"].GetArray()) {
        if (t.HasMember("expr") && t["expr"].IsString()) {
          out.push_back({title, t["expr"].GetString()});
        }
      }
    }
    if (p.HasMember("panels")) {
      collectQueries(p["panels"], out);
    }
  }
}

struct DashboardVariable {
  std::string name;
  std::string query;     // Grafana's label_values(<series>, <label>)
  std::string allValue;  // what "All" stands for in a regex matcher
};

// Replaces $name and ${name} by their values, longest names first (so $pool never eats
// $poolSize); Grafana's built-in interval variables get fixed values.
std::string substitute(std::string expr, std::map<std::string, std::string> values) {
  values["__rate_interval"] = "1m";
  values["__interval"] = "15s";
  values["__range"] = "5m";
  std::vector<std::pair<std::string, std::string>> ordered(values.begin(), values.end());
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  for (const auto& [name, value] : ordered) {
    for (const std::string& token : {"${" + name + "}", "$" + name}) {
      for (auto at = expr.find(token); at != std::string::npos;
           at = expr.find(token, at + value.size())) {
        expr.replace(at, token.size(), value);
      }
    }
  }
  return expr;
}

// label_values(<series>, <label>) as PromQL: one sample per value of <label>, which `label`
// gets (a variable need not be named after its label: agent_job is a job).
std::string labelValuesQuery(const std::string& query, std::string& label) {
  const std::string prefix = "label_values(";
  const auto comma = query.rfind(',');
  if (query.rfind(prefix, 0) != 0 || comma == std::string::npos || query.back() != ')') {
    return "";
  }
  label = query.substr(comma + 1, query.size() - comma - 2);
  label.erase(0, label.find_first_not_of(' '));
  return "group by (" + label + ") (" + query.substr(prefix.size(), comma - prefix.size()) + ")";
}

class MonitoringE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    ASSERT_EQ(e2e::installCrds(), "");
    std::random_device rd;
    suffix_ = std::to_string(rd() % 1000000);
    ns_ = "monitoring-e2e-" + suffix_;
    agentNs_ = ns_ + "-agents";
    pool_ = "monitoring-" + suffix_;
    ASSERT_EQ(controlPlane().createNamespace(ns_), "");
    ASSERT_EQ(controlPlane().createNamespace(agentNs_), "");
  }

  void TearDown() override {
    prometheus_.reset();
    operators_.clear();
    agents_.clear();
    controlPlane().kubectl({"delete", "namespace", agentNs_, "--timeout=180s"});
    controlPlane().kubectl({"delete", "namespace", ns_, "--timeout=180s"});
    controlPlane().kubectl({"delete", "ipampool", pool_, "--ignore-not-found"});
    controlPlane().kubectl({"delete", "operatorconfig", "default", "--ignore-not-found"});
  }

  // egw-agent in a dry run as `node`, renewing its Lease in `leaseNamespace`; its /metrics
  // address (host:port).
  std::string startAgent(const std::string& node, const std::string& leaseNamespace) {
    const int metrics = unusedPort();
    const int probes = unusedPort();
    agents_.push_back(std::make_unique<testenv::ChildProcess>(
        std::vector<std::string>{EGRESS_AGENT_BINARY, "--kubeconfig=" + controlPlane().kubeconfig(),
                                 "--node-name=" + node, "--lease-namespace=" + leaseNamespace,
                                 "--uplink=lo", "--dry-run",
                                 "--metrics-bind-address=127.0.0.1:" + std::to_string(metrics),
                                 "--health-probe-bind-address=127.0.0.1:" + std::to_string(probes)},
        tmp_.path() + "/agent-" + node + ".log"));
    EXPECT_TRUE(agents_.back()->error().empty()) << agents_.back()->error();
    return "127.0.0.1:" + std::to_string(metrics);
  }

  // A free loopback port this test has not handed out before: the kernel may offer the port it
  // just offered again, and two agents' (or an agent's two) listeners must not clash.
  int unusedPort() {
    for (;;) {
      const int port = testenv::freeLoopbackPort();
      if (handedOut_.insert(port).second) {
        return port;
      }
    }
  }

  ::testing::AssertionResult apply(const std::string& yaml) {
    return e2e::applyYaml(tmp_.path() + "/apply-" + std::to_string(++applied_) + ".yaml", yaml);
  }

  std::vector<PromSample> waitFor(const std::string& promql) {
    std::string error;
    auto samples = prometheus_->waitForSeries(promql, kWait, error);
    EXPECT_FALSE(samples.empty()) << error << "\n" << logs();
    return samples;
  }

  // The rules once every one of them has been evaluated (none is "unknown" any more).
  std::vector<PromRule> evaluatedRules() {
    std::vector<PromRule> rules;
    std::string error;
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (std::chrono::steady_clock::now() < deadline) {
      auto got = prometheus_->rules(error);
      if (got && !got->empty() && std::none_of(got->begin(), got->end(), [](const PromRule& r) {
            return r.health == "unknown";
          })) {
        return std::move(*got);
      }
      std::this_thread::sleep_for(500ms);
    }
    ADD_FAILURE() << "the rules were not all evaluated within " << kWait.count() << " s: " << error
                  << "\n"
                  << prometheus_->log();
    return rules;
  }

  // The alerting rule `name` once its state is `state` (Prometheus evaluates every second).
  PromRule ruleInState(const std::string& name, const std::string& state) {
    return ruleInState(name, state, std::nullopt);
  }

  // ... and, with `nodes`, once its alerts are exactly one for each of these nodes (an agent
  // alert is per node; one that has not synced yet may be pending for a moment).
  PromRule ruleInState(const std::string& name, const std::string& state,
                       const std::optional<std::set<std::string>>& nodes) {
    PromRule last;
    std::string error;
    auto alertNodes = [](const PromRule& r) {
      std::multiset<std::string> out;
      for (const auto& a : r.alerts) {
        out.insert(a.labels.count("node") != 0 ? a.labels.at("node") : "");
      }
      return out;
    };
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (std::chrono::steady_clock::now() < deadline) {
      if (auto got = prometheus_->rules(error)) {
        for (const auto& r : *got) {
          if (r.name == name) {
            last = r;
          }
        }
        if (last.state == state &&
            (!nodes ||
             alertNodes(last) == std::multiset<std::string>(nodes->begin(), nodes->end()))) {
          return last;
        }
      }
      std::this_thread::sleep_for(500ms);
    }
    std::string got;
    for (const auto& n : alertNodes(last)) {
      got += " " + n;
    }
    ADD_FAILURE() << name << " is " << last.state << " for nodes [" << got << " ], not " << state
                  << (nodes ? " for exactly the nodes asked for" : "") << " (" << last.query
                  << ")\n"
                  << logs();
    return last;
  }

  std::string logs() {
    std::string out;
    for (auto& op : operators_) {
      const std::string log = op->process().log();
      out += "--- " + op->logFile() + " (tail)\n" +
             log.substr(log.size() > 3000 ? log.size() - 3000 : 0);
    }
    for (auto& agent : agents_) {
      const std::string log = agent->log();
      out += "--- an agent's log (tail)\n" + log.substr(log.size() > 2000 ? log.size() - 2000 : 0);
    }
    return out;
  }

  testutil::TempDir tmp_;
  std::string suffix_;
  std::string ns_;
  std::string agentNs_;
  std::string pool_;
  std::vector<std::unique_ptr<e2e::Operator>> operators_;
  std::vector<std::unique_ptr<testenv::ChildProcess>> agents_;
  std::set<int> handedOut_;
  int applied_ = 0;
  std::unique_ptr<testenv::Prometheus> prometheus_;
};

TEST_F(MonitoringE2E, EveryDashboardQueryAndAlertRuleEvaluatesOnRunningOperatorsAndAgents) {
  // Six usable addresses (198.51.100.17-22).
  ASSERT_TRUE(apply(e2e::poolYaml(pool_, {"198.51.100.16/29"})));
  ASSERT_TRUE(apply(e2e::operatorConfigYaml(pool_)));
  ASSERT_TRUE(apply(e2e::policyYaml(ns_, "alpha", "", 2, "alpha") + "---\n" +
                    e2e::policyYaml(ns_, "beta", "", 1, "beta") + "---\n" +
                    e2e::policyYaml(ns_, "gamma", "", 2, "gamma") + "---\n" +
                    e2e::podYaml(ns_, "alpha-client", "alpha")));
  const std::vector<std::string> leaderElection = {"--leader-elect",
                                                   "--leader-election-namespace=" + ns_,
                                                   "--leader-election-id=monitoring-e2e",
                                                   "--leader-elect-lease-duration=6s",
                                                   "--leader-elect-renew-deadline=4s",
                                                   "--leader-elect-retry-period=1s"};
  std::vector<std::string> targets;
  for (int i = 0; i < 2; ++i) {
    operators_.push_back(std::make_unique<e2e::Operator>(
        tmp_.path(), "operator-" + std::to_string(i), leaderElection));
    ASSERT_TRUE(operators_.back()->process().error().empty())
        << operators_.back()->process().error();
    targets.push_back(operators_.back()->metricsTarget());
  }
  // The agents, one for each case the agent alerts tell apart: a healthy one; a fenced one (its
  // Lease namespace does not exist, so every renewal fails and it holds nothing from its first
  // sync on); one named after a node that does not exist (every sync fails: "node ... is not in
  // the cache", and none ever succeeded); and a target where no agent answers (down).
  auto nodes = controlPlane().kubectl({"get", "nodes", "-o", "jsonpath={.items[*].metadata.name}"});
  ASSERT_TRUE(nodes.ok()) << nodes.output;
  std::istringstream nodeNames(nodes.output);
  std::vector<std::string> nodeList;
  for (std::string n; nodeNames >> n;) {
    nodeList.push_back(n);
  }
  ASSERT_GE(nodeList.size(), 2u) << nodes.output;
  const std::string healthy = nodeList[0];
  const std::string fenced = nodeList[1];
  const std::string failing = "monitoring-e2e-ghost-" + suffix_;
  const std::string down = "monitoring-e2e-down-" + suffix_;
  std::vector<testenv::PrometheusTarget> agentTargets;
  for (const auto& [node, leaseNamespace] : std::vector<std::pair<std::string, std::string>>{
           {healthy, agentNs_}, {fenced, ns_ + "-no-such-namespace"}, {failing, agentNs_}}) {
    agentTargets.push_back({startAgent(node, leaseNamespace), {{"node", node}}});
  }
  agentTargets.push_back({"127.0.0.1:" + std::to_string(unusedPort()), {{"node", down}}});
  const std::string rulesFile = filesDir() + "/prometheus-rules.yaml";
  std::string error;
  prometheus_ = testenv::Prometheus::start({.targets = targets,
                                            .job = kJob,
                                            .ruleFiles = {rulesFile},
                                            .moreJobs = {{kAgentJob, agentTargets}}},
                                           error);
  ASSERT_NE(prometheus_, nullptr) << error;

  // Both replicas scraped, one leads, the three policies are Ready and the pool counted.
  const std::string j = "{job=\"" + std::string(kJob) + "\"";
  ASSERT_FALSE(waitFor("count(up" + j + "} == 1) == 2").empty());
  ASSERT_FALSE(waitFor("sum(leader_election_master_status" + j + "}) == 1").empty());
  ASSERT_FALSE(waitFor("max(egress_policies" + j + ",state=\"ready\"}) == 3").empty());
  ASSERT_FALSE(
      waitFor("max(egress_ipam_pool_addresses" + j + ",state=\"allocated\"}) == 5").empty());

  // Two policies fall short: short-1 gets one of its two addresses (the pool is then full),
  // short-2 none. The second failure comes once Prometheus has the first one, so the counter
  // increases in its eyes (a series' first sample is no increase).
  ASSERT_TRUE(apply(e2e::policyYaml(ns_, "short-1", "", 2, "short")));
  ASSERT_FALSE(waitFor("sum(egress_ip_allocation_failures_total" + j + ",pool=\"" + pool_ +
                       "\",reason=\"PoolExhausted\"}) == 1")
                   .empty());
  ASSERT_TRUE(apply(e2e::policyYaml(ns_, "short-2", "", 1, "short")));
  ASSERT_FALSE(waitFor("sum(egress_ip_allocation_failures_total" + j + ",pool=\"" + pool_ +
                       "\",reason=\"PoolExhausted\"}) == 2")
                   .empty());
  ASSERT_FALSE(waitFor("max(egress_policies" + j + ",state=\"not_ready\"}) == 2").empty());
  ASSERT_FALSE(waitFor("max(egress_ipam_pool_addresses" + j + ",state=\"free\"}) == 0").empty());
  // The agents, as their cases say: three scraped, one down; the healthy and the fenced one
  // synced (the fenced one fenced), the failing one with errors and no sync.
  const std::string a = "{job=\"" + std::string(kAgentJob) + "\"";
  auto node = [&](const std::string& n) { return a + ",node=\"" + n + "\"}"; };
  ASSERT_FALSE(waitFor("count(up" + a + "} == 1) == 3").empty());
  ASSERT_FALSE(waitFor("up" + node(down) + " == 0").empty());
  for (const auto& n : {healthy, fenced}) {
    ASSERT_FALSE(
        waitFor("egw_agent_last_successful_sync_timestamp_seconds" + node(n) + " > 0").empty())
        << n;
  }
  ASSERT_FALSE(waitFor("egw_agent_fenced" + node(healthy) + " == 0").empty());
  ASSERT_FALSE(waitFor("egw_agent_fenced" + node(fenced) + " == 1").empty());
  ASSERT_FALSE(waitFor("egw_agent_sync_errors_total" + node(failing) + " > 0").empty());
  ASSERT_FALSE(waitFor("egw_agent_last_successful_sync_timestamp_seconds" + node(failing) + " == 0")
                   .empty());

  // ---- The dashboard ------------------------------------------------------------------------
  rapidjson::Document dashboard;
  const std::string dashboardText = readFile(filesDir() + "/grafana-dashboard.json");
  dashboard.Parse(dashboardText.c_str());
  ASSERT_FALSE(dashboard.HasParseError());
  std::vector<DashboardVariable> variables;
  for (const auto& v : dashboard["templating"]["list"].GetArray()) {
    if (std::string(v["type"].GetString()) == "query") {
      variables.push_back({v["name"].GetString(), v["definition"].GetString(),
                           v.HasMember("allValue") ? v["allValue"].GetString() : ".*"});
    }
  }
  ASSERT_EQ(variables.size(), 4u);
  // Each variable's query, with the variables before it set, finds this cluster's values.
  const std::map<std::string, std::string> expected = {
      {"job", kJob}, {"pool", pool_}, {"agent_job", kAgentJob}, {"node", healthy}};
  std::map<std::string, std::string> chosen;
  std::map<std::string, std::string> all;
  for (const auto& v : variables) {
    std::string label;
    const std::string promql = labelValuesQuery(substitute(v.query, chosen), label);
    ASSERT_FALSE(promql.empty()) << v.name << ": " << v.query;
    std::set<std::string> values;
    for (const auto& s : waitFor(promql)) {
      values.insert(s.label(label));
    }
    ASSERT_TRUE(expected.count(v.name)) << "a variable the test does not know: " << v.name;
    EXPECT_THAT(values, Contains(expected.at(v.name))) << promql;
    chosen[v.name] = expected.at(v.name);
    all[v.name] = v.allValue;
  }
  std::vector<DashboardQuery> queries;
  collectQueries(dashboard["panels"], queries);
  EXPECT_GE(queries.size(), 40u);
  std::set<std::string> panelsWithData;
  std::set<std::string> panels;
  std::set<std::string> withoutData;
  int nanResults = 0;
  for (const auto& q : queries) {
    // A panel is its id and title (collectQueries).
    const std::string title = q.panel.substr(q.panel.find(' ') + 1);
    for (const auto* values : {&chosen, &all}) {
      const std::string promql = substitute(q.expr, *values);
      EXPECT_EQ(promql.find('$'), std::string::npos) << q.panel << ": " << promql;
      std::string queryError;
      auto result = prometheus_->query(promql, queryError);
      ASSERT_TRUE(result) << q.panel << ": " << promql << ": " << queryError;
      if (kNoDataInADryRun.count(title) != 0) {
        // It evaluates, and has no data for the reason given: were that no longer so, this
        // panel would belong with the others.
        EXPECT_TRUE(result->empty()) << q.panel << " has data: drop it from kNoDataInADryRun";
        withoutData.insert(q.panel);
        continue;
      }
      panels.insert(q.panel);
      // Rates need two scrapes inside their window; everything else is there already.
      auto samples = prometheus_->waitForSeries(promql, 60s, queryError);
      EXPECT_FALSE(samples.empty()) << q.panel << ": no data for " << promql;
      if (!samples.empty() && values == &chosen) {
        panelsWithData.insert(q.panel);
      }
      for (const auto& s : samples) {
        nanResults += s.value == "NaN" ? 1 : 0;
      }
    }
  }
  EXPECT_EQ(panelsWithData, panels);
  EXPECT_EQ(withoutData.size(), kNoDataInADryRun.size());
  std::printf(
      "[monitoring-e2e] dashboard: %zu queries of %zu panels evaluated twice (chosen and "
      "All values), %zu panels with data, %d NaN samples (quantiles of idle histograms)\n",
      queries.size(), panels.size() + withoutData.size(), panelsWithData.size(), nanResults);
  for (const auto& [title, why] : kNoDataInADryRun) {
    std::printf("[monitoring-e2e] dashboard: no data in a dry run, as expected: %s (%s)\n",
                title.c_str(), why.c_str());
  }

  // ---- The alert rules ------------------------------------------------------------------------
  std::set<std::string> inFile;
  for (const auto& group : YAML::LoadFile(rulesFile)["groups"]) {
    for (const auto& rule : group["rules"]) {
      inFile.insert(rule["alert"].as<std::string>());
    }
  }
  EXPECT_EQ(inFile.size(), 11u);
  const auto rules = evaluatedRules();
  std::set<std::string> loaded;
  for (const auto& r : rules) {
    loaded.insert(r.name);
    EXPECT_EQ(r.type, "alerting") << r.name;
    EXPECT_EQ(r.health, "ok") << r.name << ": " << r.lastError;
    std::string queryError;
    EXPECT_TRUE(prometheus_->query(r.query, queryError)) << r.name << ": " << queryError;
  }
  EXPECT_EQ(loaded, inFile);

  // The shortfalls: firing at once (no for:), for the pool and reason.
  const auto failures = ruleInState("EgressIPAllocationFailures", "firing");
  ASSERT_EQ(failures.alerts.size(), 1u);
  EXPECT_EQ(failures.alerts[0].labels.at("pool"), pool_);
  EXPECT_EQ(failures.alerts[0].labels.at("reason"), "PoolExhausted");
  EXPECT_EQ(failures.alerts[0].labels.at("severity"), "warning");
  EXPECT_NE(failures.alerts[0].annotations.at("summary").find(pool_), std::string::npos);
  // The full pool and the two short policies: pending (15 and 10 minutes are not over).
  const auto full = ruleInState("EgressIPAMPoolNearlyFull", "pending");
  ASSERT_EQ(full.alerts.size(), 1u);
  EXPECT_EQ(full.alerts[0].labels.at("pool"), pool_);
  EXPECT_EQ(full.alerts[0].labels.at("family"), "IPv4");
  EXPECT_NE(full.alerts[0].annotations.at("summary").find("100%"), std::string::npos)
      << full.alerts[0].annotations.at("summary");
  const auto notReady = ruleInState("EgressGatewayPolicyNotReady", "pending");
  std::vector<std::string> shortPolicies;
  for (const auto& a : notReady.alerts) {
    EXPECT_EQ(a.labels.at("namespace"), ns_);
    EXPECT_NE(a.annotations.at("runbook").find("kubectl describe egp -n " + ns_),
              std::string::npos);
    shortPolicies.push_back(a.labels.at("policy"));
  }
  EXPECT_THAT(shortPolicies, UnorderedElementsAre("short-1", "short-2"));
  // A leader runs: nothing to say. Reconcile errors: none unless the operator really had one.
  EXPECT_EQ(ruleInState("EgressGatewayOperatorNoLeader", "inactive").alerts.size(), 0u);
  std::string rulesError;
  const auto now = prometheus_->rules(rulesError);
  ASSERT_TRUE(now) << rulesError;
  for (const auto& r : *now) {
    if (r.name == "EgressGatewayOperatorReconcileErrors" && r.state != "inactive") {
      EXPECT_GT(
          std::stod(
              waitFor("sum(controller_runtime_reconcile_errors_total" + j + "})").at(0).value),
          0)
          << "the errors alert is " << r.state << " without a reconcile error";
    }
  }

  // The agents: each alert pending (its `for:` has not run out) for its case's node alone.
  const auto fencedAlert =
      ruleInState("EgressGatewayAgentFenced", "pending", std::set<std::string>{fenced});
  ASSERT_EQ(fencedAlert.alerts.size(), 1u);
  EXPECT_EQ(fencedAlert.alerts[0].labels.at("job"), kAgentJob);
  EXPECT_EQ(fencedAlert.alerts[0].labels.at("severity"), "warning");
  EXPECT_EQ(fencedAlert.alerts[0].annotations.at("summary"),
            "egw-agent on " + fenced + " has been fenced for 5 minutes.");
  EXPECT_NE(fencedAlert.alerts[0]
                .annotations.at("description")
                .find("The egw-agent on " + fenced + " has had no majority"),
            std::string::npos);
  const auto errors =
      ruleInState("EgressGatewayAgentSyncErrors", "pending", std::set<std::string>{failing});
  ASSERT_EQ(errors.alerts.size(), 1u);
  EXPECT_NE(errors.alerts[0].annotations.at("description").find("The egw-agent on " + failing),
            std::string::npos);
  // Its timestamp is 0: the description says it never synced, with the real clock's time().
  const auto notSyncing =
      ruleInState("EgressGatewayAgentNotSyncing", "pending", std::set<std::string>{failing});
  ASSERT_EQ(notSyncing.alerts.size(), 1u);
  EXPECT_EQ(notSyncing.alerts[0].labels.at("severity"), "critical");
  EXPECT_NE(notSyncing.alerts[0].annotations.at("description").find("since it started"),
            std::string::npos)
      << notSyncing.alerts[0].annotations.at("description");
  const auto agentDown =
      ruleInState("EgressGatewayAgentDown", "pending", std::set<std::string>{down});
  ASSERT_EQ(agentDown.alerts.size(), 1u);
  EXPECT_EQ(agentDown.alerts[0].annotations.at("summary"),
            "egw-agent on " + down + " has been down for 5 minutes.");
  // A dry run drops no packet: the tunnel alerts have nothing to say.
  for (const char* tunnel :
       {"EgressGatewayAgentTunnelForgedPackets", "EgressGatewayAgentTunnelDrops"}) {
    EXPECT_EQ(ruleInState(tunnel, "inactive").alerts.size(), 0u) << tunnel;
  }
  EXPECT_FALSE(waitFor("sum(egw_agent_tunnel_dropped_packets_total" + a + "}) == 0").empty());

  // One replica gone: the other leads (or takes over), and the leader alert stays inactive.
  operators_.front()->process().signal(SIGKILL);
  ASSERT_FALSE(waitFor("count(up" + j + "} == 1) == 1").empty());
  ASSERT_FALSE(waitFor("sum(leader_election_master_status" + j + "}) == 1").empty());
  EXPECT_EQ(ruleInState("EgressGatewayOperatorNoLeader", "inactive").state, "inactive");
  // The failing agent gone: its target is down too (known as an agent's by its series).
  agents_.back()->signal(SIGKILL);
  ASSERT_FALSE(waitFor("up" + node(failing) + " == 0").empty());
  EXPECT_EQ(ruleInState("EgressGatewayAgentDown", "pending", std::set<std::string>{down, failing})
                .alerts.size(),
            2u);
}

}  // namespace
}  // namespace egress
