// The chart's monitoring files (deploy/helm/egress-gateway-operator/files/) against a real
// Prometheus (Debian's 2.42) scraping two egress-operator processes (leader election on) that
// run against the real control plane: a pool, three Ready policies, and two more that fall short
// of addresses, so every family the files read has series. Through Prometheus's HTTP API:
// - every query of the Grafana dashboard, with its variables substituted (by the values its
//   own variable queries find, and by their "All" values), evaluates without error and returns
//   data;
// - the alert rules file loads, every rule is evaluated healthy, its expression evaluates, and
//   the alerts are in the state the cluster calls for: allocation failures firing, the full
//   pool and the short policies pending (their `for:` has not run out), no leader and
//   reconcile errors inactive.
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
#include "test/e2e/testenv/environment.h"
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
constexpr auto kWait = 120s;

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

// label_values(<series>, <label>) as PromQL: one sample per value of <label>.
std::string labelValuesQuery(const std::string& query) {
  const std::string prefix = "label_values(";
  const auto comma = query.rfind(',');
  if (query.rfind(prefix, 0) != 0 || comma == std::string::npos || query.back() != ')') {
    return "";
  }
  std::string label = query.substr(comma + 1, query.size() - comma - 2);
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
    pool_ = "monitoring-" + suffix_;
    ASSERT_EQ(controlPlane().createNamespace(ns_), "");
  }

  void TearDown() override {
    prometheus_.reset();
    operators_.clear();
    controlPlane().kubectl({"delete", "namespace", ns_, "--timeout=180s"});
    controlPlane().kubectl({"delete", "ipampool", pool_, "--ignore-not-found"});
    controlPlane().kubectl({"delete", "operatorconfig", "default", "--ignore-not-found"});
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
    PromRule last;
    std::string error;
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (std::chrono::steady_clock::now() < deadline) {
      if (auto got = prometheus_->rules(error)) {
        for (const auto& r : *got) {
          if (r.name == name) {
            last = r;
          }
        }
        if (last.state == state) {
          return last;
        }
      }
      std::this_thread::sleep_for(500ms);
    }
    ADD_FAILURE() << name << " is " << last.state << ", not " << state << " (" << last.query
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
    return out;
  }

  testutil::TempDir tmp_;
  std::string suffix_;
  std::string ns_;
  std::string pool_;
  std::vector<std::unique_ptr<e2e::Operator>> operators_;
  int applied_ = 0;
  std::unique_ptr<testenv::Prometheus> prometheus_;
};

TEST_F(MonitoringE2E, EveryDashboardQueryAndAlertRuleEvaluatesOnARunningOperator) {
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
  const std::string rulesFile = filesDir() + "/prometheus-rules.yaml";
  std::string error;
  prometheus_ = testenv::Prometheus::start(
      {.targets = targets, .job = kJob, .ruleFiles = {rulesFile}}, error);
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
  ASSERT_EQ(variables.size(), 2u);
  // Each variable's query, with the variables before it set, finds this cluster's values.
  const std::map<std::string, std::string> expected = {{"job", kJob}, {"pool", pool_}};
  std::map<std::string, std::string> chosen;
  std::map<std::string, std::string> all;
  for (const auto& v : variables) {
    const std::string promql = labelValuesQuery(substitute(v.query, chosen));
    ASSERT_FALSE(promql.empty()) << v.name << ": " << v.query;
    std::set<std::string> values;
    for (const auto& s : waitFor(promql)) {
      values.insert(s.label(v.name));
    }
    ASSERT_TRUE(expected.count(v.name)) << "a variable the test does not know: " << v.name;
    EXPECT_THAT(values, Contains(expected.at(v.name))) << promql;
    chosen[v.name] = expected.at(v.name);
    all[v.name] = v.allValue;
  }
  std::vector<DashboardQuery> queries;
  collectQueries(dashboard["panels"], queries);
  EXPECT_GE(queries.size(), 20u);
  std::set<std::string> panelsWithData;
  std::set<std::string> panels;
  int nanResults = 0;
  for (const auto& q : queries) {
    panels.insert(q.panel);
    for (const auto* values : {&chosen, &all}) {
      const std::string promql = substitute(q.expr, *values);
      EXPECT_EQ(promql.find('$'), std::string::npos) << q.panel << ": " << promql;
      std::string queryError;
      auto result = prometheus_->query(promql, queryError);
      ASSERT_TRUE(result) << q.panel << ": " << promql << ": " << queryError;
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
  std::printf(
      "[monitoring-e2e] dashboard: %zu queries of %zu panels evaluated twice (chosen and "
      "All values), %zu panels with data, %d NaN samples (quantiles of idle histograms)\n",
      queries.size(), panels.size(), panelsWithData.size(), nanResults);

  // ---- The alert rules ------------------------------------------------------------------------
  std::set<std::string> inFile;
  for (const auto& group : YAML::LoadFile(rulesFile)["groups"]) {
    for (const auto& rule : group["rules"]) {
      inFile.insert(rule["alert"].as<std::string>());
    }
  }
  EXPECT_EQ(inFile.size(), 5u);
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

  // One replica gone: the other leads (or takes over), and the leader alert stays inactive.
  operators_.front()->process().signal(SIGKILL);
  ASSERT_FALSE(waitFor("count(up" + j + "} == 1) == 1").empty());
  ASSERT_FALSE(waitFor("sum(leader_election_master_status" + j + "}) == 1").empty());
  EXPECT_EQ(ruleInState("EgressGatewayOperatorNoLeader", "inactive").state, "inactive");
}

}  // namespace
}  // namespace egress
