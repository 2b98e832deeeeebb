// End-to-end: the egress-operator binary as its own process against the real local control plane
// (etcd, kube-apiserver 1.20, controller-manager with its garbage collector, scheduler, and the
// test kubelet that makes scheduled pods Running and Ready). Each test starts its own operator
// and its own namespaces and pools, and checks what a user sees: statuses, conditions, events,
// the gateway objects, the pods' annotations, and the operator's own /metrics.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "test/e2e/operator_helpers.h"
#include "test/e2e/testenv/child_process.h"
#include "test/e2e/testenv/environment.h"
#include "test/e2e/testenv/loopback.h"
#include "test/testutil/temp_dir.h"
#include <signal.h>
#include <sys/wait.h>

namespace egress {
namespace {

using namespace std::chrono_literals;
using testenv::controlPlane;
using ::testing::HasSubstr;
using namespace e2e;  // the shared helpers (operator_helpers.h) read as this file's own

class OperatorE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(installCrds(), ""); }

  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    static int counter = 0;
    suffix_ = std::to_string(::getpid() % 10000) + "-" + std::to_string(++counter);
    ns_ = "egw-e2e-" + suffix_;
    ASSERT_EQ(controlPlane().createNamespace(ns_), "");
  }
  void TearDown() override {
    operators_.clear();
    for (const auto& pod : held_) {
      release(pod);
    }
    // Waited for, so that the next test's operator does not see this one's policies go.
    controlPlane().kubectl({"delete", "namespace", ns_, "--timeout=180s"});
    for (const auto& p : pools_) {
      controlPlane().kubectl({"delete", "ipampool", p, "--ignore-not-found"});
    }
    controlPlane().kubectl({"delete", "operatorconfig", "default", "--ignore-not-found"});
  }

  // kubectl apply of a YAML document (or several, separated by ---).
  ::testing::AssertionResult apply(const std::string& yaml) {
    return applyYaml(tmp_.path() + "/apply-" + std::to_string(++applied_) + ".yaml", yaml);
  }
  ::testing::AssertionResult applyPool(const std::string& name,
                                       const std::vector<std::string>& cidrs,
                                       const std::vector<std::string>& exclude = {}) {
    pools_.push_back(name);
    return apply(poolYaml(name, cidrs, exclude));
  }
  Operator& startOperator(std::vector<std::string> args = {}) {
    const std::string name = "operator-" + std::to_string(operators_.size());
    operators_.push_back(std::make_unique<Operator>(tmp_.path(), name, std::move(args)));
    Operator& op = *operators_.back();
    EXPECT_TRUE(op.process().error().empty()) << op.process().error();
    return op;
  }
  // Waits until every policy in `names` is Ready=True; prints what is not on failure.
  ::testing::AssertionResult allReady(const std::vector<std::string>& names,
                                      std::chrono::seconds timeout) {
    return e2e::allReady(ns_, names, timeout, operators_);
  }

  // A finalizer keeps gateway pod `pod` of ns_ Terminating once deleted, as a slow gateway would
  // be; TearDown releases every pod still held.
  ::testing::AssertionResult hold(const std::string& pod) {
    held_.push_back(pod);
    auto r =
        controlPlane().kubectl({"patch", "pod", "-n", ns_, pod, "--type=merge", "-p",
                                R"({"metadata":{"finalizers":["e2e.egressgateway.dev/hold"]}})"});
    return r.ok() ? ::testing::AssertionSuccess() : ::testing::AssertionFailure() << r.output;
  }
  void release(const std::string& pod) {
    controlPlane().kubectl({"patch", "pod", "-n", ns_, pod, "--type=json", "-p",
                            R"([{"op":"remove","path":"/metadata/finalizers"}])"});
  }

  testutil::TempDir tmp_;
  std::vector<std::string> held_;
  std::string suffix_;
  std::string ns_;
  std::vector<std::string> pools_;
  std::vector<std::unique_ptr<Operator>> operators_;
  int applied_ = 0;
};

// Acceptance 1 and 2: a pool, the OperatorConfig, three policies; then source pods come and go.
TEST_F(OperatorE2E, PoliciesGetDistinctAddressesGatewaysAndAViewThatFollowsTheirPods) {
  const std::string pool = "e2e-basic-" + suffix_;
  ASSERT_TRUE(applyPool(pool, {"198.51.100.0/28"}, {"198.51.100.1", "198.51.100.2"}));
  ASSERT_TRUE(apply(operatorConfigYaml("")));
  ASSERT_TRUE(apply(policyYaml(ns_, "alpha", pool, 2, "alpha") + "---\n" +
                    policyYaml(ns_, "beta", pool, 1, "beta") + "---\n" +
                    policyYaml(ns_, "gamma", pool, 2, "gamma", {"198.51.100.14"})));
  startOperator();
  ASSERT_TRUE(allReady({"alpha", "beta", "gamma"}, 180s));

  auto ps = policies(ns_);
  EXPECT_EQ(addressCount(ps), 5u);
  EXPECT_EQ(allAddresses(ps).size(), 5u) << "an address was given twice";
  for (const auto& a : allAddresses(ps)) {
    EXPECT_EQ(a.rfind("198.51.100.", 0), 0u) << a;
    EXPECT_NE(a, "198.51.100.0");
    EXPECT_NE(a, "198.51.100.1");
    EXPECT_NE(a, "198.51.100.2");
    EXPECT_NE(a, "198.51.100.15");
  }
  EXPECT_EQ(ps["gamma"].ledger.front(), std::vector<std::string>{"198.51.100.14"});
  expectGatewaysHoldTheirLedgers(ns_, ps, pool);
  EXPECT_TRUE(exists({"get", "pdb", "-n", ns_, "egw-alpha"}));
  EXPECT_FALSE(exists({"get", "pdb", "-n", ns_, "egw-beta"}));
  auto table = controlPlane().kubectl({"get", "egp", "-n", ns_});
  EXPECT_NE(table.output.find(ps["alpha"].egressIPs.front()), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("True"), std::string::npos) << table.output;
  EXPECT_TRUE(eventually([&] { return hasEvent(ns_, "alpha", "Allocated"); }, 30s));

  // The data-plane view: one cluster-scoped slice per policy here, the egress IPs with the node
  // of the gateway pod that holds each, no ConfigMap in the tenant's namespace.
  auto view = policySlices(ns_, "alpha");
  EXPECT_EQ(view.slices, 1u);
  ASSERT_EQ(view.egressIPs.size(), 2u);
  for (const auto& e : view.egressIPs) {
    EXPECT_NE(e.find("@egress-node-"), std::string::npos) << e << ": no holder";
  }
  EXPECT_FALSE(exists({"get", "configmap", "-n", ns_, "egw-alpha"}));

  // Source pods: the slices list each one's IP with its node; selectedPods follows.
  ASSERT_TRUE(apply(podYaml(ns_, "src-1", "alpha") + "---\n" + podYaml(ns_, "src-2", "alpha") +
                    "---\n" + podYaml(ns_, "other", "beta")));
  auto sources = [&] { return policySlices(ns_, "alpha").sources.size(); };
  ASSERT_TRUE(eventually([&] { return sources() == 2; }, 60s)) << sources();
  view = policySlices(ns_, "alpha");
  EXPECT_NE(view.sources.front().find("@egress-node-"), std::string::npos);
  EXPECT_EQ(view.destinations, std::vector<std::string>{"192.0.2.0/24"});
  EXPECT_EQ(view.excluded, (std::vector<std::string>{"10.244.0.0/16", "10.96.0.0/12"}));
  EXPECT_TRUE(eventually([&] { return policies(ns_)["alpha"].selectedPods == 2; }, 30s));
  EXPECT_TRUE(eventually([&] { return policies(ns_)["beta"].selectedPods == 1; }, 30s));
  controlPlane().kubectl({"delete", "pod", "-n", ns_, "src-1", "--wait=false"});
  EXPECT_TRUE(eventually([&] { return sources() == 1; }, 60s));
  EXPECT_TRUE(eventually([&] { return policies(ns_)["alpha"].selectedPods == 1; }, 30s));
}

// Acceptance 3: restarts after SIGTERM and SIGKILL keep every address, and a restarted operator
// whose caches synced writes nothing.
TEST_F(OperatorE2E, RestartsKeepEveryAddressAndWriteNothing) {
  const std::string pool = "e2e-restart-" + suffix_;
  ASSERT_TRUE(applyPool(pool, {"198.51.100.16/28"}));
  ASSERT_TRUE(apply(operatorConfigYaml(pool)));
  std::string docs;
  for (int i = 0; i < 4; ++i) {
    docs += (i == 0 ? "" : "---\n") + policyYaml(ns_, "p" + std::to_string(i), "", 1 + i % 2, "x");
  }
  ASSERT_TRUE(apply(docs));
  startOperator();
  ASSERT_TRUE(allReady({"p0", "p1", "p2", "p3"}, 180s));
  const auto before = policies(ns_);
  for (const auto& [n, p] : before) {
    EXPECT_EQ(p.pool, pool) << "the default pool is recorded in status.pool";
  }

  for (int sig : {SIGTERM, SIGKILL}) {
    ASSERT_TRUE(operators_.back()->settle(5s, 60s));
    operators_.back()->process().signal(sig);
    auto code = exitCode(operators_.back()->process().reap(30s));
    ASSERT_TRUE(code);
    if (sig == SIGTERM) {
      EXPECT_EQ(*code, 0) << operators_.back()->process().log();
    }
    Operator& again = startOperator();
    ASSERT_TRUE(eventually([&] { return again.ready(); }, 60s)) << again.process().log();
    // Give it time to reconcile everything it has (and to write, if it were going to).
    ASSERT_TRUE(eventually([&] { return again.reconciles("egressgateway") >= 4; }, 60s));
    std::this_thread::sleep_for(5s);
    EXPECT_EQ(again.writes(), 0) << "after " << (sig == SIGTERM ? "SIGTERM" : "SIGKILL") << "\n"
                                 << again.metrics();
    const auto after = policies(ns_);
    for (const auto& [n, p] : before) {
      EXPECT_EQ(after.at(n).ledger, p.ledger) << n;
      EXPECT_TRUE(after.at(n).conditionIs("Ready", "True")) << n;
    }
  }
}

// A policy deleted and at once re-created naming another pool is another policy (another uid):
// it allocates afresh from the pool it names and gets gateways of its own, and the addresses of
// its predecessor are freed once no view of it is published and no live agent answers for them
// (here: no agent), however long its old gateway pods take to go: they carry nothing. Before,
// the allocator knew policies by name, and the new object went Ready with the old one's
// addresses and pool.
TEST_F(OperatorE2E, ARecreatedPolicyStartsAfreshAndItsPredecessorsAddressesFollowItsView) {
  const std::string poolA = "e2e-recreate-a-" + suffix_;
  const std::string poolB = "e2e-recreate-b-" + suffix_;
  ASSERT_TRUE(applyPool(poolA, {"198.51.100.112/30"}));
  ASSERT_TRUE(applyPool(poolB, {"198.51.100.116/30"}));
  ASSERT_TRUE(apply(operatorConfigYaml("")));
  ASSERT_TRUE(apply(policyYaml(ns_, "web", poolA, 2, "web")));
  startOperator();
  ASSERT_TRUE(allReady({"web"}, 180s));
  ASSERT_EQ(policies(ns_)["web"].pool, poolA);
  const auto oldPods = gatewayPods(ns_, "web");
  ASSERT_EQ(oldPods.size(), 2u);
  const std::string slow = oldPods.begin()->first;
  ASSERT_TRUE(hold(slow));

  ASSERT_TRUE(controlPlane().kubectl({"delete", "egp", "-n", ns_, "web", "--wait=false"}).ok());
  ASSERT_TRUE(apply(policyYaml(ns_, "web", poolB, 2, "web")));
  PolicyView web;
  ASSERT_TRUE(eventually(
      [&] {
        web = policies(ns_)["web"];
        return web.conditionIs("Ready", "True") && web.ledger.size() == 2;
      },
      180s))
      << web.pool << " " << web.reason("Ready") << "\n"
      << operators_.back()->process().log().substr(0, 4000);
  EXPECT_EQ(web.pool, poolB);
  for (const auto& entry : web.ledger) {
    EXPECT_THAT(entry.front(), ::testing::AnyOf("198.51.100.117", "198.51.100.118"));
  }
  for (const auto& [name, pod] : gatewayPods(ns_, "web")) {
    if (!pod.deleting) {
      EXPECT_EQ(oldPods.count(name), 0u) << name << ": the old gateway was adopted";
      EXPECT_THAT(pod.holds, ::testing::AnyOf("198.51.100.117", "198.51.100.118"));
    }
  }
  // The predecessor's slices are gone, so pool A frees both old addresses, while the old
  // gateway is still terminating.
  EXPECT_TRUE(eventually([&] { return poolField(poolA, ".status.ipv4.allocated") == "0"; }, 120s));
  EXPECT_TRUE(gatewayPods(ns_, "web")[slow].deleting) << "the test no longer tests the wait";
  // Said in the log (and in a Released Event on the new policy if it existed by then).
  EXPECT_NE(operators_.back()->process().log().find("is gone: released"), std::string::npos);
  release(slow);
}

// Acceptance 4: 200 one-replica policies against a 150-address pool.
TEST_F(OperatorE2E, ExhaustionGivesExactlyThePoolAndReleasesGoToWaitingPolicies) {
  const std::string pool = "e2e-exhaust-" + suffix_;
  // 100.64.0.0/24 holds 254 usable addresses; excluding .151-.254 leaves .1-.150.
  ASSERT_TRUE(applyPool(pool, {"100.64.0.0/24"},
                        {"100.64.0.151", "100.64.0.152/29", "100.64.0.160/27", "100.64.0.192/26"}));
  ASSERT_TRUE(apply(operatorConfigYaml(pool)));
  std::string docs;
  for (int i = 0; i < 200; ++i) {
    docs += (i == 0 ? "" : "---\n") + policyYaml(ns_, "p" + std::to_string(i), "", 1, "x");
  }
  ASSERT_TRUE(apply(docs));
  Operator& op = startOperator({"--workers=8"});
  auto count = [&](const std::map<std::string, PolicyView>& ps, const std::string& status,
                   const std::string& reason) {
    return std::count_if(ps.begin(), ps.end(), [&](const auto& kv) {
      return kv.second.conditionIs("IPAllocated", status) &&
             (reason.empty() || kv.second.reason("IPAllocated") == reason);
    });
  };
  std::map<std::string, PolicyView> ps;
  ASSERT_TRUE(eventually(
      [&] {
        ps = policies(ns_);
        return count(ps, "True", "") == 150 && count(ps, "False", "PoolExhausted") == 50;
      },
      300s))
      << count(ps, "True", "") << " allocated, " << count(ps, "False", "PoolExhausted")
      << " exhausted\n"
      << op.process().log().substr(0, 4000);
  EXPECT_EQ(addressCount(ps), 150u);
  EXPECT_EQ(allAddresses(ps).size(), 150u) << "an address was given twice";
  std::vector<std::string> allocated;
  std::vector<std::string> waiting;
  for (const auto& [n, p] : ps) {
    (p.conditionIs("IPAllocated", "True") ? allocated : waiting).push_back(n);
  }
  // Events are written in the background, at the client's pace: 350 of them here.
  EXPECT_TRUE(eventually([&] { return hasEvent(ns_, waiting.front(), "PoolExhausted"); }, 60s));

  // Delete 10 allocated policies: 10 waiting ones get their addresses.
  for (int i = 0; i < 10; ++i) {
    controlPlane().kubectl({"delete", "egp", "-n", ns_, allocated[i], "--wait=false"});
  }
  ASSERT_TRUE(eventually(
      [&] {
        ps = policies(ns_);
        return ps.size() == 190 && count(ps, "True", "") == 150 &&
               count(ps, "False", "PoolExhausted") == 40;
      },
      240s))
      << ps.size() << " policies, " << count(ps, "True", "") << " allocated";
  EXPECT_EQ(allAddresses(ps).size(), 150u);
  // The pool's status and the metrics count what the policies hold.
  ASSERT_TRUE(eventually(
      [&] {
        return poolField(pool, ".status.ipv4.allocated") == "150" &&
               poolField(pool, ".status.ipv4.free") == "0";
      },
      60s));
  EXPECT_TRUE(eventually(
      [&] {
        const auto m = op.metrics();
        return metricSum(m, "egress_ipam_pool_addresses",
                         {{"pool", pool}, {"state", "allocated"}}) == 150 &&
               metricSum(m, "egress_ipam_pool_addresses", {{"pool", pool}, {"state", "free"}}) == 0;
      },
      30s));
  EXPECT_GE(metricSum(op.metrics(), "egress_ip_allocation_failures_total",
                      {{"pool", pool}, {"reason", "PoolExhausted"}}),
            50);
}

// Acceptance 5: scale 3 -> 1 -> 3.
TEST_F(OperatorE2E, ScalingDownAndUpKeepsTheFirstEntryAndTheBudgetFollows) {
  const std::string pool = "e2e-scale-" + suffix_;
  ASSERT_TRUE(applyPool(pool, {"198.51.100.32/28"}));
  ASSERT_TRUE(apply(operatorConfigYaml("")));
  ASSERT_TRUE(apply(policyYaml(ns_, "s", pool, 3, "s")));
  startOperator();
  ASSERT_TRUE(allReady({"s"}, 180s));
  const auto first = policies(ns_)["s"].ledger;
  ASSERT_EQ(first.size(), 3u);
  EXPECT_TRUE(exists({"get", "pdb", "-n", ns_, "egw-s"}));

  ASSERT_TRUE(apply(policyYaml(ns_, "s", pool, 1, "s")));
  ASSERT_TRUE(eventually(
      [&] {
        auto p = policies(ns_)["s"];
        return p.ledger.size() == 1 && p.conditionIs("Ready", "True");
      },
      180s));
  EXPECT_EQ(policies(ns_)["s"].ledger.front(), first.front());
  EXPECT_TRUE(eventually([&] { return !exists({"get", "pdb", "-n", ns_, "egw-s"}); }, 60s));
  // The surplus went back to the pool.
  EXPECT_TRUE(eventually([&] { return poolField(pool, ".status.ipv4.allocated") == "1"; }, 60s));

  ASSERT_TRUE(apply(policyYaml(ns_, "s", pool, 3, "s")));
  ASSERT_TRUE(allReady({"s"}, 180s));
  auto again = policies(ns_)["s"];
  ASSERT_EQ(again.ledger.size(), 3u);
  EXPECT_EQ(again.ledger.front(), first.front());
  EXPECT_TRUE(eventually([&] { return exists({"get", "pdb", "-n", ns_, "egw-s"}); }, 60s));
}

// Acceptance 6: what the 1.20 schema lets through gets a condition and an event naming the field,
// keeps what it holds, and does not hot-loop.
TEST_F(OperatorE2E, InvalidObjectsGetAConditionAndAnEventAndKeepWhatTheyHold) {
  const std::string pool = "e2e-invalid-" + suffix_;
  const std::string fenced = "e2e-fenced-" + suffix_;
  const std::string newer = "e2e-newer-" + suffix_;
  ASSERT_TRUE(applyPool(pool, {"198.51.100.48/28"}));
  pools_.push_back(fenced);
  ASSERT_TRUE(apply(poolYaml(fenced, {"198.51.100.64/28"}) +
                    "  namespaceSelector:\n    matchLabels:\n      tenant: nobody\n"));
  ASSERT_TRUE(apply(operatorConfigYaml("")));
  ASSERT_TRUE(apply(policyYaml(ns_, "held", pool, 1, "held")));
  Operator& op = startOperator();
  ASSERT_TRUE(allReady({"held"}, 180s));
  const auto heldLedger = policies(ns_)["held"].ledger;

  // The held policy turns invalid (an excluded CIDR with host bits set): it keeps its address.
  ASSERT_TRUE(
      apply(policyYaml(ns_, "held", pool, 1, "held") + "  excludedCIDRs: [192.0.2.5/24]\n"));
  ASSERT_TRUE(apply(policyYaml(ns_, "outside", pool, 1, "out", {"203.0.113.77"}) + "---\n" +
                    policyYaml(ns_, "not-allowed", fenced, 1, "fenced")));
  ASSERT_TRUE(
      apply("apiVersion: networking.egressgateway.dev/v1alpha1\nkind: EgressGatewayPolicy\n"
            "metadata:\n  name: bad-selector\n  namespace: " +
            ns_ +
            "\nspec:\n  podSelector:\n    matchExpressions:\n      - {key: app, operator: In}\n"
            "  egressIP:\n    pool: " +
            pool + "\n"));
  ASSERT_TRUE(applyPool(newer, {"198.51.100.56/29"}));  // inside `pool`, and newer

  std::map<std::string, PolicyView> ps;
  ASSERT_TRUE(eventually(
      [&] {
        ps = policies(ns_);
        return ps["held"].reason("IPAllocated") == "InvalidSpec" &&
               ps["outside"].reason("IPAllocated") == "AddressNotInPool" &&
               ps["not-allowed"].reason("IPAllocated") == "PoolNotAllowed" &&
               ps["bad-selector"].reason("IPAllocated") == "InvalidSpec";
      },
      120s))
      << ps["held"].reason("IPAllocated") << " " << ps["outside"].reason("IPAllocated") << " "
      << ps["not-allowed"].reason("IPAllocated") << " " << ps["bad-selector"].reason("IPAllocated");
  EXPECT_NE(ps["held"].messages["IPAllocated"].find("spec.excludedCIDRs[0]"), std::string::npos)
      << ps["held"].messages["IPAllocated"];
  EXPECT_NE(ps["bad-selector"].messages["IPAllocated"].find("spec.podSelector.matchExpressions[0]"),
            std::string::npos)
      << ps["bad-selector"].messages["IPAllocated"];
  EXPECT_EQ(ps["held"].ledger, heldLedger) << "an invalid policy keeps what it holds";
  EXPECT_TRUE(eventually(
      [&] { return hasEvent(ns_, "held", "InvalidSpec", "spec.excludedCIDRs[0]"); }, 30s));
  EXPECT_TRUE(eventually([&] { return hasEvent(ns_, "outside", "AddressNotInPool"); }, 30s));
  EXPECT_TRUE(eventually([&] { return hasEvent(ns_, "not-allowed", "PoolNotAllowed"); }, 30s));
  // The newer overlapping pool says so.
  EXPECT_TRUE(eventually(
      [&] {
        return controlPlane()
                   .kubectl({"get", "ipampool", newer, "-o",
                             R"(jsonpath={.status.conditions[?(@.type=="Overlapping")].status})"})
                   .output == "True";
      },
      60s));
  // A pool with host bits set is refused for new allocations, with its field named.
  const std::string hostBits = "e2e-hostbits-" + suffix_;
  ASSERT_TRUE(applyPool(hostBits, {"198.51.100.81/28"}));
  EXPECT_TRUE(eventually(
      [&] {
        auto got = controlPlane().kubectl(
            {"get", "ipampool", hostBits, "-o",
             R"(jsonpath={.status.conditions[?(@.type=="Ready")].message})"});
        return got.output.find("spec.cidrs[0]") != std::string::npos;
      },
      60s));

  // No hot loop: the invalid objects cost a handful of reconciles a minute, not hundreds.
  const double before = op.reconciles("egressgateway");
  std::this_thread::sleep_for(60s);
  const double spent = op.reconciles("egressgateway") - before;
  EXPECT_LT(spent, 20) << "reconciles in a minute with only invalid objects changing";
  EXPECT_FALSE(op.process().reap(0s)) << "the operator exited";
}

// Acceptance 7: two replicas with leader election; the leader is killed in a burst.
TEST_F(OperatorE2E, OnlyTheLeaderWritesAndTheStandbyFinishesABurstAfterTheLeaderDies) {
  const std::string pool = "e2e-leader-" + suffix_;
  ASSERT_TRUE(applyPool(pool, {"100.64.1.0/24"}));
  ASSERT_TRUE(apply(operatorConfigYaml(pool)));
  const std::vector<std::string> le = {"--leader-elect",
                                       "--leader-election-namespace=" + ns_,
                                       "--leader-election-id=egw-e2e",
                                       "--leader-elect-lease-duration=6s",
                                       "--leader-elect-renew-deadline=4s",
                                       "--leader-elect-retry-period=1s"};
  Operator& first = startOperator(le);
  ASSERT_TRUE(eventually([&] { return first.ready(); }, 60s));
  ASSERT_TRUE(eventually(
      [&] { return metricSum(first.metrics(), "leader_election_master_status") == 1; }, 60s));
  Operator& second = startOperator(le);
  ASSERT_TRUE(eventually([&] { return second.ready(); }, 60s));

  std::string docs;
  for (int i = 0; i < 100; ++i) {
    docs += (i == 0 ? "" : "---\n") + policyYaml(ns_, "b" + std::to_string(i), "", 1, "x");
  }
  ASSERT_TRUE(apply(docs));
  // Mid-burst: some policies have their addresses, not all.
  ASSERT_TRUE(eventually(
      [&] {
        auto ps = policies(ns_);
        return std::count_if(ps.begin(), ps.end(),
                             [](const auto& kv) { return !kv.second.egressIPs.empty(); }) >= 10;
      },
      120s));
  EXPECT_EQ(metricSum(second.metrics(), "leader_election_master_status"), 0);
  EXPECT_EQ(second.writes(), 0) << "the standby wrote";
  const auto midBurst = policies(ns_);
  first.process().signal(SIGKILL);
  std::vector<std::string> names;
  for (int i = 0; i < 100; ++i) {
    names.push_back("b" + std::to_string(i));
  }
  ASSERT_TRUE(allReady(names, 300s));
  auto ps = policies(ns_);
  EXPECT_EQ(addressCount(ps), 100u);
  EXPECT_EQ(allAddresses(ps).size(), 100u) << "an address was given twice";
  for (const auto& [n, p] : midBurst) {
    if (!p.ledger.empty()) {
      EXPECT_EQ(ps[n].ledger, p.ledger) << n << ": a ledger written before the failover changed";
    }
  }
}

// No pool, no address; and no pool hands out what the cluster itself uses: a node's address, an
// address inside the cluster's CIDRs, the API server's address (here KUBERNETES_SERVICE_HOST, as
// in a pod), even when the pool's CIDRs contain it. Each refusal is a condition and an Event that
// say why; allocation skips them.
TEST_F(OperatorE2E, NoPoolNoAddressAndTheClustersOwnAddressesAreNeverHandedOut) {
  const std::string pool = "e2e-reserved-" + suffix_;
  ASSERT_TRUE(applyPool(pool, {"198.51.100.64/29", "10.96.7.0/30"}));
  ASSERT_TRUE(apply(operatorConfigYaml("")));
  // A node that has (also) an address inside the pool (addresses merge by type: the test
  // kubelet's InternalIP stays).
  auto patched = controlPlane().kubectl(
      {"patch", "node", "egress-node-1", "--subresource=status", "--type=strategic", "-p",
       R"({"status":{"addresses":[{"type":"ExternalIP","address":"198.51.100.66"}]}})"});
  ASSERT_TRUE(patched.ok()) << patched.output;
  ASSERT_TRUE(apply(policyYaml(ns_, "nopool", "", 1, "x", {"198.51.100.70"}) + "---\n" +
                    policyYaml(ns_, "nodeip", pool, 1, "x", {"198.51.100.66"}) + "---\n" +
                    policyYaml(ns_, "incluster", pool, 1, "x", {"10.96.7.1"}) + "---\n" +
                    policyYaml(ns_, "apiserver", pool, 1, "x", {"198.51.100.67"}) + "---\n" +
                    policyYaml(ns_, "auto", pool, 3, "x")));
  operators_.push_back(std::make_unique<Operator>(
      tmp_.path(), "operator-reserved", std::vector<std::string>{},
      OperatorLaunch{.wrapper = {"/usr/bin/env", "KUBERNETES_SERVICE_HOST=198.51.100.67"}}));
  ASSERT_TRUE(operators_.back()->process().error().empty());
  struct Refused {
    const char* policy;
    const char* reason;
    const char* says;
  };
  for (const auto& r :
       std::vector<Refused>{{"nopool", "NoPool", "explicit address 198.51.100.70 has no pool"},
                            {"nodeip", "AddressReserved", "node egress-node-1's ExternalIP"},
                            {"incluster", "AddressReserved", "cluster CIDR 10.96.0.0/12"},
                            {"apiserver", "AddressReserved", "the API server's address"}}) {
    EXPECT_TRUE(
        eventually([&] { return policies(ns_)[r.policy].reason("IPAllocated") == r.reason; }, 120s))
        << r.policy << ": " << policies(ns_)[r.policy].reason("IPAllocated");
    EXPECT_TRUE(policies(ns_)[r.policy].egressIPs.empty()) << r.policy;
    EXPECT_THAT(policies(ns_)[r.policy].messages["IPAllocated"], HasSubstr(r.says)) << r.policy;
    EXPECT_TRUE(eventually([&] { return hasEvent(ns_, r.policy, r.reason, r.says); }, 30s))
        << r.policy;
  }
  ASSERT_TRUE(eventually([&] { return policies(ns_)["auto"].egressIPs.size() == 3; }, 120s));
  const auto got = policies(ns_)["auto"].egressIPs;
  for (const char* never : {"198.51.100.66", "198.51.100.67", "10.96.7.1", "10.96.7.2"}) {
    EXPECT_EQ(std::count(got.begin(), got.end(), never), 0) << never << " was handed out";
  }
  controlPlane().kubectl({"patch", "node", "egress-node-1", "--subresource=status",
                          "--type=strategic", "-p",
                          R"({"status":{"addresses":[{"type":"ExternalIP","$patch":"delete"}]}})"});

  // A deleted policy leaves no metric series behind, whether or not it ever held an address.
  const std::string series = "policy=\"nopool\"";
  ASSERT_TRUE(eventually(
      [&] { return operators_.back()->metrics().find(series) != std::string::npos; }, 30s));
  ASSERT_TRUE(controlPlane().kubectl({"delete", "egp", "-n", ns_, "nopool"}).ok());
  EXPECT_TRUE(eventually(
      [&] { return operators_.back()->metrics().find(series) == std::string::npos; }, 30s))
      << operators_.back()->metrics();
}

// Acceptance 8: deleting a policy garbage-collects its objects and returns its addresses.
TEST_F(OperatorE2E, DeletingAPolicyCollectsItsObjectsAndReturnsItsAddresses) {
  const std::string pool = "e2e-delete-" + suffix_;
  ASSERT_TRUE(applyPool(pool, {"198.51.100.96/28"}));
  ASSERT_TRUE(apply(operatorConfigYaml("")));
  ASSERT_TRUE(apply(policyYaml(ns_, "gone", pool, 2, "g")));
  startOperator();
  ASSERT_TRUE(allReady({"gone"}, 180s));
  ASSERT_TRUE(eventually([&] { return poolField(pool, ".status.ipv4.allocated") == "2"; }, 60s));
  ASSERT_TRUE(controlPlane().kubectl({"delete", "egp", "-n", ns_, "gone"}).ok());
  EXPECT_TRUE(eventually(
      [&] {
        return !exists({"get", "deployment", "-n", ns_, "egw-gone"}) &&
               policySlices(ns_, "gone").slices == 0 &&
               !exists({"get", "pdb", "-n", ns_, "egw-gone"});
      },
      120s));
  EXPECT_TRUE(eventually([&] { return poolField(pool, ".status.ipv4.allocated") == "0"; }, 120s));
}

// Acceptance 9: 100 Ready policies and a 10 s resync: not one write in a minute.
TEST_F(OperatorE2E, ResyncsOfReadyPoliciesWriteNothing) {
  const std::string pool = "e2e-resync-" + suffix_;
  ASSERT_TRUE(applyPool(pool, {"100.64.2.0/24"}));
  ASSERT_TRUE(apply(operatorConfigYaml(pool)));
  std::string docs;
  std::vector<std::string> names;
  for (int i = 0; i < 100; ++i) {
    names.push_back("r" + std::to_string(i));
    docs += (i == 0 ? "" : "---\n") + policyYaml(ns_, names.back(), "", 1, "x");
  }
  ASSERT_TRUE(apply(docs));
  Operator& op = startOperator({"--sync-period=10s", "--workers=8"});
  ASSERT_TRUE(allReady(names, 300s));
  ASSERT_TRUE(op.settle(5s, 60s));
  const double writes = op.writes();
  const double reconciles = op.reconciles("egressgateway");
  std::this_thread::sleep_for(60s);
  EXPECT_EQ(op.writes() - writes, 0) << op.metrics();
  EXPECT_GE(op.reconciles("egressgateway") - reconciles, 100)
      << "the resyncs did not reach the controller";
}

// The daemon's own errors: a bad flag exits 2 naming it, an API server that cannot be reached
// exits 1 saying so, before anything starts.
TEST_F(OperatorE2E, BadFlagsAndAnUnreachableServerAreClearErrorsAndNonZeroExits) {
  {
    testenv::ChildProcess p({EGRESS_OPERATOR_BINARY, "--workers=many"}, tmp_.path() + "/flag.log");
    EXPECT_EQ(exitCode(p.reap(30s)), 2);
    EXPECT_NE(p.log().find("--workers"), std::string::npos) << p.log();
  }
  {
    testenv::ChildProcess p({EGRESS_OPERATOR_BINARY, "--frobnicate"}, tmp_.path() + "/unknown.log");
    EXPECT_EQ(exitCode(p.reap(30s)), 2);
    EXPECT_NE(p.log().find("unknown flag: --frobnicate"), std::string::npos) << p.log();
  }
  {
    // The control plane's kubeconfig, pointed at a port nobody listens on.
    std::ifstream in(controlPlane().kubeconfig());
    std::stringstream ss;
    ss << in.rdbuf();
    std::string config = ss.str();
    const auto at = config.find(controlPlane().server());
    ASSERT_NE(at, std::string::npos);
    config.replace(at, controlPlane().server().size(),
                   "https://127.0.0.1:" + std::to_string(testenv::freeLoopbackPort()));
    const std::string path = tmp_.path() + "/dead-kubeconfig";
    std::ofstream(path) << config;
    testenv::ChildProcess p({EGRESS_OPERATOR_BINARY, "--kubeconfig=" + path,
                             "--metrics-bind-address=0", "--health-probe-bind-address=0"},
                            tmp_.path() + "/dead.log");
    EXPECT_EQ(exitCode(p.reap(120s)), 1) << p.log();
    EXPECT_NE(p.log().find("cannot use the API server"), std::string::npos) << p.log();
  }
}

}  // namespace
}  // namespace egress
