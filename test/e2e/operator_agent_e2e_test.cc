// End-to-end: the operator's side of the data plane, the egress-operator binary as
// its own process against the real control plane. With OperatorConfig spec.dataplane.agent the
// gateway Deployment's pods carry the agent's readiness gate and 10 s not-ready/unreachable
// tolerations, and the API server keeps them (its DefaultTolerationSeconds admission adds no
// 300 s ones); switched off again, the Deployment is what it was without the switch. And a
// ledger entry whose holder's node has no fresh agent Lease (the test writes the agents'
// Leases itself) moves, IP unchanged, to a gateway pod on a node whose agent Lease is fresh,
// within the Lease duration and a few seconds, with an Event; with the switch off it stays.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "test/e2e/operator_helpers.h"
#include "test/e2e/testenv/environment.h"
#include "test/testutil/temp_dir.h"

namespace egress::e2e {
namespace {

using namespace std::chrono_literals;
using testenv::controlPlane;

constexpr const char* kGate = "egressgateway.dev/ip-programmed";

class OperatorAgentE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(installCrds(), ""); }

  void SetUp() override {
    static int counter = 0;
    const std::string suffix = std::to_string(::getpid() % 10000) + "-" + std::to_string(++counter);
    ns_ = "egw-agent-op-" + suffix;
    leaseNs_ = "egw-agent-leases-" + suffix;
    pool_ = "e2e-agent-op-" + suffix;
    ASSERT_EQ(controlPlane().createNamespace(ns_), "");
  }
  void TearDown() override {
    operator_.reset();
    if (!stuckPod_.empty()) {
      controlPlane().kubectl({"patch", "pod", "-n", ns_, stuckPod_, "--type=merge", "-p",
                              R"({"metadata":{"finalizers":null}})"});
    }
    if (!cordoned_.empty()) {
      controlPlane().kubectl({"uncordon", cordoned_});
    }
    controlPlane().kubectl({"delete", "namespace", leaseNs_, "--ignore-not-found", "--wait=false"});
    controlPlane().kubectl({"delete", "namespace", ns_, "--timeout=180s"});
    controlPlane().kubectl({"delete", "ipampool", pool_, "--ignore-not-found"});
    controlPlane().kubectl({"delete", "operatorconfig", "default", "--ignore-not-found"});
  }

  ::testing::AssertionResult apply(const std::string& yaml) {
    return applyYaml(tmp_.path() + "/apply-" + std::to_string(++applied_) + ".yaml", yaml);
  }
  std::string configYaml(bool agent) const {
    return operatorConfigYaml("") + "  dataplane:\n    agent: " + (agent ? "true" : "false") + "\n";
  }
  // A JSON document of `kubectl get ARGS -o json`; an empty object if that fails.
  rapidjson::Document getJson(std::vector<std::string> args) const {
    args.insert(args.end(), {"-o", "json"});
    auto out = controlPlane().kubectl(args);
    return parseJson(out.ok() ? out.output : "{}");
  }

  // A Lease as egw-agent on `node` renews it, last renewed at `renewed`, reporting `programmed`
  // (comma-separated egress IPs) programmed and `problems` (JSON, no single quote). A stand-in for
  // an agent that has seen every slice write there will be: its observed version is the largest
  // there is, so no release and no new leader's first allocation waits for it
  // (ippool_processor_test has the waiting).
  ::testing::AssertionResult writeAgentLease(const std::string& node,
                                             std::chrono::system_clock::time_point renewed,
                                             int durationSeconds,
                                             const std::string& programmed = "",
                                             const std::string& problems = "") {
    return apply("apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: egw-agent-" +
                 node + "\n  namespace: " + leaseNs_ +
                 "\n  annotations: {egressgateway.dev/programmed: \"" + programmed +
                 "\", egressgateway.dev/observed-slices: \"18446744073709551615\", "
                 "egressgateway.dev/problems: '" +
                 problems +
                 "'}\nspec:\n"
                 "  holderIdentity: " +
                 node + "\n  leaseDurationSeconds: " + std::to_string(durationSeconds) +
                 "\n  renewTime: \"" + microTime(renewed) + "\"\n");
  }
  static std::string microTime(std::chrono::system_clock::time_point t) {
    const std::time_t secs = std::chrono::system_clock::to_time_t(t);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                            t.time_since_epoch() % std::chrono::seconds(1))
                            .count();
    // Zero-padded by hand: g++'s -Wformat-truncation (with the sanitizers' flags) cannot bound
    // "%06lld" of a long long.
    std::string fraction = std::to_string(micros);
    fraction.insert(0, 6 - std::min<size_t>(6, fraction.size()), '0');
    return std::string(buf) + "." + fraction + "Z";
  }
  // Two gateways, one per node; then node `stale`'s holder "dies" as a dead node's pod does
  // (being deleted, never gone: a finalizer holds it) and its node is cordoned, so the
  // Deployment's replacement runs on the other node, holding nothing. Returns the stuck pod's
  // name, its entry and the replacement's name; `stale` is the stuck pod's node.
  void stickAHolder(bool agent, std::string& stuck, std::string& entry, std::string& replacement,
                    std::string& stale) {
    ASSERT_EQ(controlPlane().createNamespace(leaseNs_), "");
    const auto longAgo = std::chrono::system_clock::now();
    for (const char* node : {"egress-node-1", "egress-node-2"}) {
      ASSERT_TRUE(writeAgentLease(node, longAgo, 3600));
    }
    ASSERT_TRUE(apply(poolYaml(pool_, {"198.51.100.48/28"})));
    ASSERT_TRUE(apply(configYaml(agent)));
    ASSERT_TRUE(apply(policyYaml(ns_, "web", pool_, 2, "web")));
    operator_ = std::make_unique<Operator>(
        tmp_.path(), "operator", std::vector<std::string>{"--agent-lease-namespace=" + leaseNs_});
    ASSERT_TRUE(operator_->process().error().empty()) << operator_->process().error();
    ASSERT_TRUE(eventually(
        [&] {
          auto pods = gatewayPods(ns_, "web");
          return pods.size() == 2 && !pods.begin()->second.holds.empty() &&
                 !pods.rbegin()->second.holds.empty();
        },
        120s))
        << operator_->process().log();
    auto pods = gatewayPods(ns_, "web");
    stuck = pods.begin()->first;
    entry = pods.begin()->second.holds;
    stale = pods.begin()->second.node;
    ASSERT_TRUE(controlPlane().kubectl({"cordon", stale}).ok());
    cordoned_ = stale;
    auto held = controlPlane().kubectl({"patch", "pod", "-n", ns_, stuck, "--type=merge", "-p",
                                        R"({"metadata":{"finalizers":["egw.e2e/hold"]}})"});
    ASSERT_TRUE(held.ok()) << held.output;
    stuckPod_ = stuck;
    ASSERT_TRUE(controlPlane().kubectl({"delete", "pod", "-n", ns_, stuck, "--wait=false"}).ok());
    ASSERT_TRUE(eventually(
        [&] {
          for (const auto& [name, p] : gatewayPods(ns_, "web")) {
            if (!p.deleting && p.node != stale && name != stuck && podReady(name) &&
                p.holds.empty()) {
              replacement = name;
            }
          }
          return !replacement.empty() && gatewayPods(ns_, "web").size() == 3;
        },
        120s));
  }
  bool podReady(const std::string& pod) const {
    auto out =
        controlPlane().kubectl({"get", "pod", "-n", ns_, pod, "-o",
                                R"(jsonpath={.status.conditions[?(@.type=="Ready")].status})"});
    return out.ok() && out.output == "True";
  }
  std::set<std::string> ledgerAddresses() const {
    auto p = policies(ns_)["web"];
    return {p.egressIPs.begin(), p.egressIPs.end()};
  }

  testutil::TempDir tmp_;
  std::string ns_;
  std::string leaseNs_;
  std::string cordoned_;
  std::string stuckPod_;
  std::string pool_;
  std::unique_ptr<Operator> operator_;
  int applied_ = 0;
};

// The readiness gates' condition types of a pod spec (a Deployment's template or a pod).
std::vector<std::string> gates(const rapidjson::Value& spec) {
  std::vector<std::string> out;
  if (const auto* g = at(spec, {"readinessGates"}); g != nullptr && g->IsArray()) {
    for (const auto& item : g->GetArray()) {
      out.push_back(str(item, "conditionType"));
    }
  }
  return out;
}

// "key/effect/seconds" of every NoExecute toleration of `spec` whose key is a node condition's.
std::vector<std::string> nodeConditionTolerations(const rapidjson::Value& spec) {
  std::vector<std::string> out;
  if (const auto* ts = at(spec, {"tolerations"}); ts != nullptr && ts->IsArray()) {
    for (const auto& t : ts->GetArray()) {
      const std::string key = str(t, "key");
      if (key.rfind("node.kubernetes.io/", 0) != 0) {
        continue;
      }
      const auto* seconds = at(t, {"tolerationSeconds"});
      out.push_back(key + "/" + str(t, "effect") + "/" +
                    (seconds != nullptr && seconds->IsInt64() ? std::to_string(seconds->GetInt64())
                                                              : std::string("forever")));
    }
  }
  return out;
}

TEST_F(OperatorAgentE2E, WithTheAgentSwitchGatewayPodsCarryTheGateAndTenSecondTolerations) {
  ASSERT_TRUE(apply(poolYaml(pool_, {"198.51.100.32/28"})));
  ASSERT_TRUE(apply(configYaml(true)));
  ASSERT_TRUE(apply(policyYaml(ns_, "web", pool_, 2, "web")));
  operator_ = std::make_unique<Operator>(tmp_.path(), "operator", std::vector<std::string>{});
  ASSERT_TRUE(operator_->process().error().empty()) << operator_->process().error();

  const std::vector<std::string> wanted{"node.kubernetes.io/not-ready/NoExecute/10",
                                        "node.kubernetes.io/unreachable/NoExecute/10"};
  auto templateSpec = [&] {
    auto d = getJson({"get", "deployment", "-n", ns_, "egw-web"});
    rapidjson::Document spec;
    if (const auto* s = at(d, {"spec", "template", "spec"})) {
      spec.CopyFrom(*s, spec.GetAllocator());
    }
    return spec;
  };
  ASSERT_TRUE(
      eventually([&] { return gates(templateSpec()) == std::vector<std::string>{kGate}; }, 120s))
      << operator_->process().log();
  EXPECT_EQ(nodeConditionTolerations(templateSpec()), wanted);

  // The pods as the API server admitted them: our tolerations, not its 300 s defaults.
  auto podSpecs = [&] {
    std::vector<rapidjson::Document> out;
    auto list = getJson({"get", "pods", "-n", ns_, "-l", std::string(kPolicyLabel) + "=web"});
    if (const auto* items = at(list, {"items"}); items != nullptr && items->IsArray()) {
      for (const auto& item : items->GetArray()) {
        if (const auto* s = at(item, {"spec"})) {
          rapidjson::Document spec;
          spec.CopyFrom(*s, spec.GetAllocator());
          out.push_back(std::move(spec));
        }
      }
    }
    return out;
  };
  ASSERT_TRUE(eventually([&] { return podSpecs().size() == 2; }, 120s));
  for (const auto& spec : podSpecs()) {
    EXPECT_EQ(gates(spec), std::vector<std::string>{kGate});
    EXPECT_EQ(nodeConditionTolerations(spec), wanted);
  }

  // Switched off: the Deployment is re-applied without the gate and the tolerations.
  ASSERT_TRUE(apply(configYaml(false)));
  EXPECT_TRUE(eventually([&] { return gates(templateSpec()).empty(); }, 60s))
      << operator_->process().log();
  EXPECT_TRUE(nodeConditionTolerations(templateSpec()).empty());
}

// Acceptance 4: the stuck holder's node stops renewing its agent Lease; within its 6 s and a few
// seconds the entry moves to the replacement on the node whose Lease is fresh: the same IP, the
// same ledger, the stuck pod no longer named in the status, and an Event that says so.
TEST_F(OperatorAgentE2E, AStaleHoldersIPMovesToAReadyPodOnANodeWithAFreshAgentLease) {
  std::string stuck, entry, replacement, stale;
  stickAHolder(true, stuck, entry, replacement, stale);
  if (HasFatalFailure()) {
    return;
  }
  const auto ledgerBefore = ledgerAddresses();
  ASSERT_EQ(ledgerBefore.size(), 2u);
  // While the stuck pod's node's agent Lease is fresh, its holder keeps the entry.
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(gatewayPods(ns_, "web")[replacement].holds, "");
  EXPECT_EQ(gatewayPods(ns_, "web")[stuck].holds, entry);

  const auto renewed = std::chrono::system_clock::now();
  ASSERT_TRUE(writeAgentLease(stale, renewed, 6));  // its last renewal
  ASSERT_TRUE(eventually([&] { return gatewayPods(ns_, "web")[replacement].holds == entry; }, 30s))
      << operator_->process().log();
  const double seconds =
      std::chrono::duration<double>(std::chrono::system_clock::now() - renewed).count();
  std::printf("[ moved    ] %s moved %.1f s after the last renewal of a 6 s agent Lease\n",
              entry.c_str(), seconds);
  EXPECT_GE(seconds, 5.0) << "moved while the Lease was still fresh";
  EXPECT_LE(seconds, 6.0 + 4.0) << "not within the Lease duration and a few seconds";
  EXPECT_TRUE(eventually([&] { return gatewayPods(ns_, "web")[stuck].holds.empty(); }, 10s));
  EXPECT_EQ(ledgerAddresses(), ledgerBefore) << "the IP moves, it is never reallocated";
  EXPECT_TRUE(eventually([&] { return hasEvent(ns_, "web", "Moved", entry); }, 30s));
  EXPECT_TRUE(eventually(
      [&] {
        auto p = policies(ns_)["web"];
        return std::find(p.ledgerPods.begin(), p.ledgerPods.end(), replacement) !=
               p.ledgerPods.end();
      },
      30s))
      << "status.gateways names the new holder";
}

TEST_F(OperatorAgentE2E, WithTheSwitchOffAStaleHolderKeepsItsIP) {
  std::string stuck, entry, replacement, stale;
  stickAHolder(false, stuck, entry, replacement, stale);
  if (HasFatalFailure()) {
    return;
  }
  ASSERT_TRUE(writeAgentLease(stale, std::chrono::system_clock::now(), 6));
  std::this_thread::sleep_for(6s + 6s);
  auto pods = gatewayPods(ns_, "web");
  EXPECT_EQ(pods[stuck].holds, entry);
  EXPECT_EQ(pods[replacement].holds, "");
  EXPECT_FALSE(hasEvent(ns_, "web", "Moved"));
}

// An address a live agent still reports programmed after its policy let it go (a scale-down the
// agent has yet to see) stays held by that policy, so the policy waiting for an address does not
// get it; after a leader change the next leader may hand it out, but the new owner's view names
// no node for it until that agent lets go: never two nodes answering for one address. The agent
// here is one on a node that runs no gateway ("egress-node-x"), so the waiting policy's own
// holder is certainly another node.
TEST_F(OperatorAgentE2E, AnAddressAnAgentStillAnswersForGetsNoOtherHolderAcrossALeaderChange) {
  ASSERT_EQ(controlPlane().createNamespace(leaseNs_), "");
  const auto now = std::chrono::system_clock::now();
  for (const char* node : {"egress-node-1", "egress-node-2", "egress-node-x"}) {
    ASSERT_TRUE(writeAgentLease(node, now, 3600));
  }
  ASSERT_TRUE(apply(poolYaml(pool_, {"198.51.100.60/30"})));  // .61 and .62
  ASSERT_TRUE(apply(configYaml(true)));
  ASSERT_TRUE(apply(policyYaml(ns_, "a", pool_, 2, "a")));
  const std::vector<std::string> args{"--agent-lease-namespace=" + leaseNs_};
  operator_ = std::make_unique<Operator>(tmp_.path(), "operator", args);
  ASSERT_TRUE(eventually([&] { return policies(ns_)["a"].ledger.size() == 2; }, 120s))
      << operator_->process().log();
  ASSERT_TRUE(apply(policyYaml(ns_, "b", pool_, 1, "b")));
  ASSERT_TRUE(eventually(
      [&] { return policies(ns_)["b"].reason("IPAllocated") == "PoolExhausted"; }, 120s));
  const std::string carried = policies(ns_)["a"].ledger.back().front();
  ASSERT_TRUE(writeAgentLease("egress-node-x", std::chrono::system_clock::now(), 3600, carried));
  ASSERT_TRUE(apply(policyYaml(ns_, "a", pool_, 1, "a")));
  ASSERT_TRUE(eventually([&] { return policies(ns_)["a"].ledger.size() == 1; }, 120s));
  ASSERT_TRUE(operator_->settle(5s, 60s));
  EXPECT_TRUE(policies(ns_)["b"].ledger.empty())
      << "freed while egress-node-x answers for " << carried;

  operator_->process().signal(SIGKILL);
  ASSERT_TRUE(exitCode(operator_->process().reap(30s)));
  operator_ = std::make_unique<Operator>(tmp_.path(), "operator-2", args);
  ASSERT_TRUE(eventually([&] { return operator_->ready(); }, 60s)) << operator_->process().log();
  ASSERT_TRUE(operator_->settle(5s, 60s));
  const auto afterChange = policySlices(ns_, "b").egressIPs;
  std::printf("[ view     ] b after the leader change: %s\n",
              afterChange.empty() ? "(no address)" : afterChange.front().c_str());
  for (const auto& e : afterChange) {
    EXPECT_EQ(e, carried + "@") << "a holder named while egress-node-x still answers for it";
  }

  // The agent lets go: now b gets the address, with a holder of its own.
  ASSERT_TRUE(writeAgentLease("egress-node-x", std::chrono::system_clock::now(), 3600));
  EXPECT_TRUE(eventually(
      [&] {
        const auto b = policySlices(ns_, "b").egressIPs;
        return b.size() == 1 && b.front().rfind(carried + "@egress-node-", 0) == 0 &&
               b.front() != carried + "@egress-node-x";
      },
      120s))
      << operator_->process().log().substr(0, 4000);
}

// What a live agent reports it cannot program of a policy (on its Lease, by the policy's uid)
// makes the policy's Programmed and Ready False with the problem's kind as the reason, with a
// Warning Event; a report for another uid under the same name (a deleted predecessor's) changes
// nothing; once the reporting agent is stale, the policy is Ready again.
TEST_F(OperatorAgentE2E, AProblemALiveAgentReportsMakesThePolicyNotReadyWithItsReason) {
  ASSERT_EQ(controlPlane().createNamespace(leaseNs_), "");
  const auto now = std::chrono::system_clock::now();
  for (const char* node : {"egress-node-1", "egress-node-2"}) {
    ASSERT_TRUE(writeAgentLease(node, now, 3600));
  }
  ASSERT_TRUE(apply(poolYaml(pool_, {"198.51.100.64/28"})));
  ASSERT_TRUE(apply(configYaml(true)));
  ASSERT_TRUE(apply(policyYaml(ns_, "web", pool_, 1, "web")));
  operator_ = std::make_unique<Operator>(
      tmp_.path(), "operator", std::vector<std::string>{"--agent-lease-namespace=" + leaseNs_});
  ASSERT_TRUE(operator_->process().error().empty()) << operator_->process().error();
  std::string holderNode, entry;
  ASSERT_TRUE(eventually(
      [&] {
        for (const auto& [name, p] : gatewayPods(ns_, "web")) {
          if (!p.holds.empty()) {
            holderNode = p.node;
            entry = p.holds;
          }
        }
        return !entry.empty();
      },
      120s))
      << operator_->process().log();
  // The holder's agent reports the address programmed: Ready and Programmed.
  ASSERT_TRUE(writeAgentLease(holderNode, now, 3600, entry));
  auto policy = [&] { return policies(ns_)["web"]; };
  ASSERT_TRUE(eventually(
      [&] {
        auto p = policy();
        return p.conditionIs("Ready", "True") && p.conditionIs("Programmed", "True");
      },
      120s))
      << operator_->process().log();
  const std::string other = holderNode == "egress-node-1" ? "egress-node-2" : "egress-node-1";
  auto report = [&](const std::string& uid) {
    return R"([{"uid":")" + uid + R"(","policy":")" + ns_ +
           R"(/web","reason":"ContestedAddress","message":"egress IP )" + entry + R"( is in )" +
           ns_ + R"(/web, x/forged: held by none of them","count":1}])";
  };
  // A report for a uid that is not this policy's (a predecessor of the same name): nothing.
  ASSERT_TRUE(
      writeAgentLease(other, now, 3600, "", report("0f0e0d0c-0000-4000-8000-0000000000ff")));
  std::this_thread::sleep_for(5s);
  EXPECT_TRUE(policy().conditionIs("Ready", "True")) << policy().reason("Ready");

  auto uid = controlPlane().kubectl(
      {"get", "egressgatewaypolicy", "-n", ns_, "web", "-o", "jsonpath={.metadata.uid}"});
  ASSERT_TRUE(uid.ok() && !uid.output.empty()) << uid.output;
  // For its uid, from a live agent: Programmed and Ready False, the reason the agent's kind.
  const auto reported = std::chrono::system_clock::now();
  ASSERT_TRUE(writeAgentLease(other, reported, 6, "", report(uid.output)));
  ASSERT_TRUE(eventually(
      [&] {
        auto p = policy();
        return p.reason("Programmed") == "ContestedAddress" &&
               p.reason("Ready") == "ContestedAddress";
      },
      30s))
      << operator_->process().log();
  auto p = policy();
  EXPECT_TRUE(p.conditionIs("Ready", "False"));
  EXPECT_TRUE(p.conditionIs("Programmed", "False"));
  EXPECT_EQ(p.messages["Programmed"], "egw-agent on node " + other + ": egress IP " + entry +
                                          " is in " + ns_ + "/web, x/forged: held by none of them");
  EXPECT_EQ(p.messages["Ready"], p.messages["Programmed"]);
  EXPECT_TRUE(eventually([&] { return hasEvent(ns_, "web", "ContestedAddress", entry); }, 30s));
  // The reporting agent goes stale (its Lease of 6 s is not renewed): its problems no longer
  // count, and the policy is Ready again.
  EXPECT_TRUE(eventually(
      [&] {
        auto q = policy();
        return q.conditionIs("Ready", "True") && q.conditionIs("Programmed", "True");
      },
      30s))
      << operator_->process().log();
  const double seconds =
      std::chrono::duration<double>(std::chrono::system_clock::now() - reported).count();
  EXPECT_GE(seconds, 5.0) << "the agent was still live";
}

}  // namespace
}  // namespace egress::e2e
