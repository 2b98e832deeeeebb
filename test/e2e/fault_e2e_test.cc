// End-to-end fault tolerance: the egress-operator process against the real control
// plane while something breaks — the apiserver killed, etcd compacted under every watch, a
// network partition, throttling and unavailability, the leader killed, conflicting writers,
// users damaging what the operator owns, a pool shrunk under its allocations. Every case runs on
// the same 50 Ready policies (55 addresses) selecting 500 source pods, made once for the binary,
// and ends with checkInvariants (fault_invariants.h). The proxy cases put a FaultProxy between
// the operator and the API server. Each case prints one "fault-case" line with its numbers, which
// docs/reliability.md reports.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "pkg/kube/kubeconfig.h"
#include "pkg/kube/rest_client.h"
#include "test/e2e/fault_invariants.h"
#include "test/e2e/operator_helpers.h"
#include "test/e2e/testenv/control_plane.h"
#include "test/e2e/testenv/environment.h"
#include "test/e2e/testenv/fault_proxy.h"
#include "test/testutil/temp_dir.h"
#include <signal.h>

namespace egress {
namespace {

using namespace std::chrono_literals;
using testenv::controlPlane;
using namespace e2e;
using Clock = std::chrono::steady_clock;

constexpr int kPolicies = 50;
constexpr int kSourcePods = 500;
// Lease renewals per second of a leader: the 2 s default retry period, and the "fast" 1 s.
constexpr double kDefaultRenewals = 0.5;
constexpr double kFastRenewals = 1.0;

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

void report(const std::string& kase, const InvariantReport& r, const std::string& extra) {
  std::printf("fault-case %s: %s %s\n", kase.c_str(), r.summary().c_str(), extra.c_str());
  std::fflush(stdout);
}

// Until `stop`: one coroutine per list annotates its policies of `ns` in turn (merge patches,
// client-side rate limit off), each success counted in `touches`.
void annotateUntil(const std::string& ns, const std::atomic<bool>& stop,
                   const std::vector<std::vector<std::string>>& lists, std::atomic<int>& touches) {
  kube::KubeconfigOptions options;
  options.paths = {controlPlane().kubeconfig()};
  auto config = kube::loadKubeconfig(options);
  ASSERT_TRUE(config) << config.error().message();
  config->qps = 10000;
  config->burst = 10000;
  boost::asio::io_context ioc;
  auto client = kube::RestClient::create(ioc.get_executor(), *config, nullptr);
  ASSERT_TRUE(client) << client.error().message();
  const kube::Resource policies{"networking.egressgateway.dev", "v1alpha1", "egressgatewaypolicies",
                                true};
  auto annotate = [&](const std::vector<std::string>& names) -> boost::asio::awaitable<void> {
    for (size_t i = 0; !stop; ++i) {
      const std::string body =
          R"({"metadata":{"annotations":{"fault-e2e/touch":")" + std::to_string(i) + R"("}}})";
      // Named arguments: g++ 12 destroys a temporary aggregate argument of a co_await twice.
      kube::WriteOptions opts;
      std::string name = names[i % names.size()];
      auto r = co_await (*client)->patch(policies, ns, std::move(name), kube::PatchType::Merge,
                                         body, std::move(opts), std::string());
      touches += r ? 1 : 0;
    }
  };
  for (const auto& names : lists) {
    boost::asio::co_spawn(ioc, annotate(names), boost::asio::detached);
  }
  ioc.run();
}

class FaultE2E : public ::testing::Test {
 protected:
  static std::string ns_;    // the 500 source pods and the 50 policies
  static std::string pool_;  // their pool (the OperatorConfig's default)
  static std::unique_ptr<testutil::TempDir> suiteDir_;

  // The 50 policies' YAML: p<i> selects app=a<i> (10 source pods each); every tenth has two
  // gateways.
  static std::string mainPolicy(int i, int replicas = 0) {
    return policyYaml(ns_, "p" + std::to_string(i), "", replicas > 0 ? replicas : 1 + (i % 10 == 0),
                      "a" + std::to_string(i));
  }
  static std::string sourcePod(const std::string& name, int app) {
    return podYaml(ns_, name, "a" + std::to_string(app));
  }

  static void SetUpTestSuite() {
    ASSERT_EQ(installCrds(), "");
    suiteDir_ = std::make_unique<testutil::TempDir>();
    const std::string id = std::to_string(::getpid() % 10000);
    ns_ = "egw-fault-" + id;
    pool_ = "fault-" + id;
    ASSERT_EQ(controlPlane().createNamespace(ns_), "");
    ASSERT_TRUE(applyYaml(suiteDir_->path() + "/pool.yaml", poolYaml(pool_, {"100.64.16.0/22"})));
    ASSERT_TRUE(applyYaml(suiteDir_->path() + "/config.yaml", operatorConfigYaml(pool_)));
    std::string pods;
    for (int i = 0; i < kSourcePods; ++i) {
      pods += (i == 0 ? "" : "---\n") + sourcePod("src-" + std::to_string(i), i % kPolicies);
    }
    std::ofstream(suiteDir_->path() + "/pods.yaml") << pods;
    auto created = controlPlane().kubectl({"create", "-f", suiteDir_->path() + "/pods.yaml"});
    ASSERT_TRUE(created.ok()) << created.output.substr(0, 2000);
    std::string policiesDoc;
    std::vector<std::string> names;
    for (int i = 0; i < kPolicies; ++i) {
      policiesDoc += (i == 0 ? "" : "---\n") + mainPolicy(i);
      names.push_back("p" + std::to_string(i));
    }
    ASSERT_TRUE(applyYaml(suiteDir_->path() + "/policies.yaml", policiesDoc));
    // One operator brings them to Ready and goes; each case starts its own.
    std::vector<std::unique_ptr<Operator>> ops;
    ops.push_back(
        std::make_unique<Operator>(suiteDir_->path(), "setup", std::vector<std::string>{}));
    const auto start = Clock::now();
    ASSERT_TRUE(e2e::allReady(ns_, names, 300s, ops));
    ASSERT_TRUE(eventually(
        [] {
          auto got =
              controlPlane().kubectl({"get", "pods", "-n", ns_, "-l", "app", "-o",
                                      "jsonpath={range .items[*]}{.status.podIP}{\"\\n\"}{end}"});
          return std::count(got.output.begin(), got.output.end(), '.') >= 3 * kSourcePods;
        },
        300s))
        << "the source pods never all got IPs";
    ASSERT_TRUE(ops.front()->settle(3s, 120s));
    std::printf("fault-setup: %d policies Ready, %d source pods with IPs in %.1f s\n", kPolicies,
                kSourcePods, secondsSince(start));
    ops.front()->process().signal(SIGTERM);
    ops.front()->process().reap(30s);
  }

  static void TearDownTestSuite() {
    controlPlane().kubectl({"delete", "namespace", ns_, "--wait=false"});
    controlPlane().kubectl({"delete", "ipampool", pool_, "--ignore-not-found"});
    controlPlane().kubectl({"delete", "operatorconfig", "default", "--ignore-not-found"});
    suiteDir_.reset();
  }

  void SetUp() override {
    static int counter = 0;
    extraNs_ = ns_ + "-x" + std::to_string(++counter);
  }

  void TearDown() override {
    if (burstThread_.joinable()) {
      burstThread_.join();
    }
    operators_.clear();
    proxy_.reset();
    if (extraCreated_) {
      controlPlane().kubectl({"delete", "namespace", extraNs_, "--timeout=180s"});
    }
    for (const auto& p : pools_) {
      controlPlane().kubectl({"delete", "ipampool", p, "--ignore-not-found"});
    }
  }

  ::testing::AssertionResult apply(const std::string& yaml) {
    return applyYaml(tmp_.path() + "/apply-" + std::to_string(++applied_) + ".yaml", yaml);
  }
  // A namespace of the case's own, deleted after it.
  const std::string& extraNamespace() {
    if (!extraCreated_) {
      EXPECT_EQ(controlPlane().createNamespace(extraNs_), "");
      extraCreated_ = true;
    }
    return extraNs_;
  }

  // A proxy in front of the API server and a kubeconfig that goes through it.
  std::string proxiedKubeconfig() {
    const auto apiPort =
        std::stoi(controlPlane().server().substr(controlPlane().server().rfind(':') + 1));
    std::string error;
    proxy_ = testenv::FaultProxy::start({apiPort, controlPlane().dir() + "/pki/apiserver.crt",
                                         controlPlane().dir() + "/pki/apiserver.key"},
                                        error);
    EXPECT_TRUE(proxy_) << error;
    std::string path = tmp_.path() + "/kubeconfig-proxy";
    EXPECT_EQ(proxy_->writeKubeconfig(controlPlane().kubeconfig(), controlPlane().server(), path),
              "");
    return path;
  }

  Operator& startOperator(std::vector<std::string> args, const std::string& kubeconfig = "") {
    OperatorLaunch launch;
    if (!kubeconfig.empty()) {
      launch.adminKubeconfig = false;
      args.push_back("--kubeconfig=" + kubeconfig);
    }
    const std::string name = "operator-" + std::to_string(operators_.size());
    operators_.push_back(std::make_unique<Operator>(tmp_.path(), name, std::move(args), launch));
    Operator& op = *operators_.back();
    EXPECT_TRUE(op.process().error().empty()) << op.process().error();
    return op;
  }

  // Started, caught up with the 50 Ready policies, and quiet (but for its Lease renewals).
  ::testing::AssertionResult caughtUp(Operator& op, double leaseRenewalsPerSecond = 0) {
    if (!eventually([&] { return op.ready(); }, 60s) ||
        !eventually([&] { return op.reconciles("egressgateway") >= kPolicies; }, 120s) ||
        !quiesce(op, leaseRenewalsPerSecond, 3s, 60s)) {
      return ::testing::AssertionFailure() << "the operator did not catch up\n"
                                           << op.process().log().substr(0, 4000);
    }
    return ::testing::AssertionSuccess();
  }

  std::vector<std::string> leaderElection(const std::string& timings) {
    std::vector<std::string> le = {"--leader-elect", "--leader-election-namespace=" + ns_,
                                   "--leader-election-id=egw-fault-" + extraNs_};
    if (timings == "fast") {
      for (const char* f : {"--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s",
                            "--leader-elect-retry-period=1s"}) {
        le.emplace_back(f);
      }
    }
    return le;
  }

  static bool leads(const Operator& op) {
    return metricSum(op.metrics(), "leader_election_master_status") == 1;
  }

  // The YAML of `n` one-replica policies b<first>... in the case's namespace, selecting nothing.
  std::string burstYaml(int first, int n) {
    std::string docs;
    for (int i = first; i < first + n; ++i) {
      docs += (i == first ? "" : "---\n") +
              policyYaml(extraNamespace(), "b" + std::to_string(i), "", 1, "none");
    }
    return docs;
  }
  std::vector<std::string> burst(int n) {
    EXPECT_TRUE(apply(burstYaml(0, n)));
    std::vector<std::string> names;
    for (int i = 0; i < n; ++i) {
      names.push_back("b" + std::to_string(i));
    }
    return names;
  }
  // The same, created from a thread ten at a time, so that the case can strike while they still
  // arrive; finishBurst() waits for it and applies them all again (the ones a fault made fail).
  void startBurst(int n) {
    burstSize_ = n;
    std::vector<std::string> files;
    for (int first = 0; first < n; first += 10) {
      files.push_back(tmp_.path() + "/burst-" + std::to_string(first) + ".yaml");
      std::ofstream(files.back()) << burstYaml(first, std::min(10, n - first));
    }
    burstThread_ = std::thread([files] {
      for (const auto& f : files) {
        controlPlane().kubectl({"apply", "-f", f});
      }
    });
  }
  void finishBurst() {
    burstThread_.join();
    EXPECT_TRUE(apply(burstYaml(0, burstSize_)));
  }
  int allocatedIn(const std::string& ns) {
    auto ps = policies(ns);
    return static_cast<int>(std::count_if(
        ps.begin(), ps.end(), [](const auto& kv) { return !kv.second.egressIPs.empty(); }));
  }

  // Replaces source pods `names` by as many new ones with the same apps (a change the operator
  // must see in its EgressPolicySlices and selectedPods).
  void churnSourcePods(const std::vector<int>& which, const std::string& tag) {
    std::vector<std::string> del = {"delete", "pod", "-n", ns_, "--wait=false"};
    std::string docs;
    for (int i : which) {
      del.push_back("src-" + std::to_string(i));
      docs += (docs.empty() ? "" : "---\n") +
              sourcePod("src-" + tag + "-" + std::to_string(i), i % kPolicies);
    }
    EXPECT_TRUE(controlPlane().kubectl(del).ok());
    EXPECT_TRUE(apply(docs));
  }

  testutil::TempDir tmp_;
  std::string extraNs_;
  bool extraCreated_ = false;
  std::vector<std::string> pools_;
  std::unique_ptr<testenv::FaultProxy> proxy_;
  std::vector<std::unique_ptr<Operator>> operators_;
  int applied_ = 0;
  std::thread burstThread_;
  int burstSize_ = 0;
};

std::string FaultE2E::ns_;
std::string FaultE2E::pool_;
std::unique_ptr<testutil::TempDir> FaultE2E::suiteDir_;

// Case 1: the apiserver SIGKILLed while the operator allocates 30 new policies, then restarted.
TEST_F(FaultE2E, ApiServerKilledAndRestartedDuringAnAllocationBurst) {
  Operator& op = startOperator({});
  ASSERT_TRUE(caughtUp(op));
  const auto before = clusterPolicies();
  const double r0 = op.reconciles("egressgateway");
  startBurst(30);
  ASSERT_TRUE(eventually([&] { return allocatedIn(extraNs_) >= 3; }, 60s));
  const int atKill = allocatedIn(extraNs_);
  const auto killed = Clock::now();
  // The supervisor restarts a component it was asked to restart; SIGKILL, no grace.
  auto kill = testenv::runCommand(
      {"bash", "-c", "touch \"$0/restart-apiserver\" && kill -KILL \"$(cat \"$0/apiserver.pid\")\"",
       controlPlane().dir()});
  ASSERT_TRUE(kill.ok()) << kill.output;
  ASSERT_TRUE(eventually(
      [&] {
        return controlPlane().kubectl({"get", "--raw", "/readyz"}).ok();
      },
      120s));
  const double down = secondsSince(killed);
  finishBurst();
  EXPECT_LT(atKill, 30) << "the burst was over before the apiserver died";
  const auto r = checkInvariants(before, op, {&op}, r0, killed,
                                 {.pool = pool_, .ready = 180s, .maxCaseReconciles = 2000});
  EXPECT_EQ(allocatedIn(extraNs_), 30);
  report("apiserver-kill", r,
         "allocated_at_kill=" + std::to_string(atKill) +
             "/30 apiserver_down_s=" + std::to_string(down));
}

// Case 2: the operator's connections held (a partition) while things change, etcd compacted and
// the apiserver restarted so its watch cache forgets: every watch resumes from a compacted
// resourceVersion, gets 410 Gone, and relists what it missed.
TEST_F(FaultE2E, EtcdCompactedSoEveryWatchGets410AndTheOperatorRelists) {
  Operator& op = startOperator({"--log-level=debug"}, proxiedKubeconfig());
  ASSERT_TRUE(caughtUp(op));
  const auto before = clusterPolicies();
  const double r0 = op.reconciles("egressgateway");
  const auto faultStart = Clock::now();
  proxy_->setMode(testenv::FaultMode::Blackhole);
  churnSourcePods({0, 1, 2, 3, 4}, "c2");
  ASSERT_TRUE(apply(mainPolicy(1, 2)));  // p1: one gateway more
  auto compact = controlPlane().ctl({"compact"});
  ASSERT_TRUE(compact.ok()) << compact.output;
  auto restart = controlPlane().ctl({"restart", "apiserver"});
  ASSERT_TRUE(restart.ok()) << restart.output;
  proxy_->setMode(testenv::FaultMode::PassThrough);
  const auto healed = Clock::now();
  const auto r = checkInvariants(before, op, {&op}, r0, healed,
                                 {.pool = pool_, .ready = 180s, .maxCaseReconciles = 1000});
  EXPECT_EQ(policies(ns_)["p1"].ledger.size(), 2u);
  // Every informer relisted after a 410 (the reflector logs it at debug).
  const std::string log = op.process().log();
  size_t relists = 0;
  for (auto at = log.find("(relisting)"); at != std::string::npos;
       at = log.find("(relisting)", at + 1)) {
    ++relists;
  }
  EXPECT_GE(relists, 5u) << "reflectors that saw 410 Gone\n" << log.substr(0, 3000);
  report("etcd-compaction", r,
         "relists_after_410=" + std::to_string(relists) + " fault_s=" +
             std::to_string(std::chrono::duration<double>(healed - faultStart).count()));
}

// Case 3: two replicas, the leader behind the proxy; a 30 s partition. The leader cannot renew,
// stops writing past its renew deadline and exits during the partition; the standby takes over
// and serves a policy created during the partition; the old leader, restarted, stays a standby
// that writes nothing.
TEST_F(FaultE2E, PartitionedLeaderLosesItsLeaseStopsWritingAndResumesCleanly) {
  const auto le = leaderElection("default");  // 15 s lease, 10 s renew deadline, 2 s retry
  const std::string kubeconfig = proxiedKubeconfig();
  Operator& a = startOperator(le, kubeconfig);
  ASSERT_TRUE(eventually([&] { return leads(a); }, 60s));
  ASSERT_TRUE(caughtUp(a, kDefaultRenewals));
  Operator& b = startOperator(le);
  ASSERT_TRUE(eventually([&] { return b.ready(); }, 60s));
  const auto before = clusterPolicies();
  const auto start = Clock::now();
  proxy_->setMode(testenv::FaultMode::Blackhole);
  const auto policyDuring = burst(1);
  // Sample the partitioned leader's writes while it lives; note when the standby leads.
  double writesAtDeadline = -1;
  double lastWrites = a.writes();
  double bLeadsAfter = -1;
  bool aExited = false;
  double aExitedAfter = -1;
  double movedAfterDeadline = 0;
  while (secondsSince(start) < 30) {
    std::this_thread::sleep_for(500ms);
    if (!aExited && a.process().reap(0s)) {
      aExited = true;
      aExitedAfter = secondsSince(start);
    }
    if (!aExited) {
      const double w = a.writes();
      if (secondsSince(start) >= 12 && writesAtDeadline < 0) {
        writesAtDeadline = w;  // 10 s renew deadline, 2 s for requests in flight at it
      }
      if (writesAtDeadline >= 0 && !a.metrics().empty()) {
        movedAfterDeadline = std::max(movedAfterDeadline, w - writesAtDeadline);
      }
      lastWrites = w;
    }
    if (bLeadsAfter < 0 && leads(b)) {
      bLeadsAfter = secondsSince(start);
    }
  }
  EXPECT_EQ(movedAfterDeadline, 0) << "the partitioned leader's writes moved past its deadline";
  // Its renewal in flight is cancelled at the renew deadline, so nothing keeps the deposed
  // leader's process alive until the link heals (it used to linger exactly that long).
  EXPECT_TRUE(aExited) << "the deposed leader still ran when the partition healed";
  EXPECT_GT(bLeadsAfter, 0) << "the standby never took over during the partition";
  // The new leader serves what changed during the partition.
  EXPECT_TRUE(allReady(extraNs_, policyDuring, 60s, operators_));
  proxy_->setMode(testenv::FaultMode::PassThrough);
  const auto healed = Clock::now();
  // A lost lease ends the process with 1 (client-go's leaderelection lost); a restart rejoins.
  auto status = a.process().reap(30s);
  const double exitedAfterHeal = aExited ? 0 : secondsSince(healed);
  ASSERT_TRUE(status) << "the old leader still runs\n" << a.process().log().substr(0, 3000);
  if (const auto lost = a.process().log().find("leader election lost"); lost != std::string::npos) {
    std::printf("old leader after losing its lease:\n%s\n",
                a.process().log().substr(lost, 3000).c_str());
  }
  EXPECT_EQ(exitCode(status), 1);
  EXPECT_NE(a.process().log().find("leader election lost"), std::string::npos);
  Operator& again = startOperator(le, kubeconfig);
  ASSERT_TRUE(eventually([&] { return again.ready(); }, 60s));
  const auto r = checkInvariants(before, b, {&b, &again}, 0, healed,
                                 {.pool = pool_, .leaseRenewalsPerSecond = kDefaultRenewals});
  EXPECT_TRUE(leads(b));
  EXPECT_FALSE(leads(again));
  EXPECT_EQ(again.writes(), 0) << "the restarted replica wrote as a standby";
  report("partition", r,
         "leader_writes_after_deadline=" + std::to_string(movedAfterDeadline) +
             " standby_leads_after_s=" + std::to_string(bLeadsAfter) +
             " old_leader_exited_after_s=" + std::to_string(aExitedAfter) +
             " old_leader_exited_after_heal_s=" + std::to_string(exitedAfterHeal) +
             " old_leader_writes_total=" + std::to_string(lastWrites));
}

// Case 4: every request answered 429 with Retry-After: 2 for 10 s, then 503 for 10 s.
TEST_F(FaultE2E, ThrottledAndUnavailableFor20SecondsTheOperatorBacksOffAndCatchesUp) {
  Operator& op = startOperator({}, proxiedKubeconfig());
  ASSERT_TRUE(caughtUp(op));
  const auto before = clusterPolicies();
  const double r0 = op.reconciles("egressgateway");
  proxy_->setHttpFault({429, 2});
  proxy_->setMode(testenv::FaultMode::HttpError);
  const auto start = Clock::now();
  churnSourcePods({10, 11, 12, 13, 14}, "c4");
  burst(5);
  std::this_thread::sleep_for(10s - (Clock::now() - start));
  proxy_->setHttpFault({503, -1});
  std::this_thread::sleep_for(20s - (Clock::now() - start));
  const int answered = proxy_->faultsAnswered();
  proxy_->setMode(testenv::FaultMode::PassThrough);
  const auto healed = Clock::now();
  const auto r = checkInvariants(before, op, {&op}, r0, healed,
                                 {.pool = pool_, .ready = 120s, .maxCaseReconciles = 1000});
  const auto m = op.metrics();
  EXPECT_GT(metricSum(m, "rest_client_requests_total", {{"code", "429"}}), 0);
  EXPECT_GT(metricSum(m, "rest_client_requests_total", {{"code", "503"}}), 0);
  // Backing off: a client retrying without pause would send thousands in 20 s.
  EXPECT_LT(answered, 1500) << "requests answered with a fault in 20 s";
  report("throttle", r, "faults_answered=" + std::to_string(answered));
}

// Case 5: the leader SIGKILLed during a burst of 100 policy creations; the standby finishes it.
TEST_F(FaultE2E, LeaderKilledDuringABurstOf100PoliciesTheStandbyFinishesIt) {
  const auto le = leaderElection("fast");
  Operator& a = startOperator(le);
  ASSERT_TRUE(eventually([&] { return leads(a); }, 60s));
  ASSERT_TRUE(caughtUp(a, kFastRenewals));
  Operator& b = startOperator(le);
  ASSERT_TRUE(eventually([&] { return b.ready(); }, 60s));
  startBurst(100);
  ASSERT_TRUE(eventually([&] { return allocatedIn(extraNs_) >= 10; }, 120s));
  EXPECT_EQ(b.writes(), 0) << "the standby wrote";
  const auto midBurst = clusterPolicies();
  const int atKill = allocatedIn(extraNs_);
  a.process().signal(SIGKILL);
  const auto killed = Clock::now();
  ASSERT_TRUE(eventually([&] { return leads(b); }, 60s));
  const double takeover = secondsSince(killed);
  finishBurst();
  EXPECT_LT(atKill, 100) << "the burst was over before the leader died";
  const auto r =
      checkInvariants(midBurst, b, {&b}, 0, killed,
                      {.pool = pool_, .ready = 240s, .leaseRenewalsPerSecond = kFastRenewals});
  EXPECT_EQ(allocatedIn(extraNs_), 100);
  report("leader-kill", r,
         "allocated_at_kill=" + std::to_string(atKill) +
             "/100 takeover_s=" + std::to_string(takeover));
}

// Case 6: another writer updates every policy while the operator writes their status: its
// compare-and-swap updates conflict, it rereads and retries, and the status ends right.
TEST_F(FaultE2E, ConflictingWritersDoNotLoseStatusOrAddresses) {
  Operator& op = startOperator({});
  ASSERT_TRUE(caughtUp(op));
  const auto before = clusterPolicies();
  const double r0 = op.reconciles("egressgateway");
  std::atomic<bool> stop{false};
  std::atomic<int> touches{0};
  // Other writers of the policies: one annotates every policy in turn, three more the ten whose
  // status changes below, as fast as the API server answers. A conflict needs an update to land
  // between the operator's read of a policy (its cache) and its status write; kubectl (a process
  // per update, a few a second on this machine) made that rare enough that some runs saw none.
  std::vector<std::string> every;
  for (int i = 0; i < kPolicies; ++i) {
    every.push_back("p" + std::to_string(i));
  }
  const std::vector<std::string> churned(every.begin() + 20, every.begin() + 30);
  std::thread writers([&] {
    annotateUntil(ns_, stop, {every, churned, churned, churned}, touches);
  });
  const auto start = Clock::now();
  // Status changes meanwhile: the ledgers of two policies (scaled), and selectedPods of ten
  // (their source pods replaced, round after round, for 20 s).
  ASSERT_TRUE(apply(mainPolicy(2, 2) + "---\n" + mainPolicy(3, 2)));
  std::string previous;
  int rounds = 0;
  for (; Clock::now() - start < 20s; ++rounds) {
    const int round = rounds;
    std::vector<std::string> del = {"delete", "pod", "-n", ns_, "--wait=false"};
    std::string docs;
    const std::string tag = "src-c6-" + std::to_string(round) + "-";
    for (int i = 20; i < 30; ++i) {
      del.push_back((round == 0 ? std::string("src-") : previous) + std::to_string(i));
      docs += (docs.empty() ? "" : "---\n") + sourcePod(tag + std::to_string(i), i);
    }
    EXPECT_TRUE(controlPlane().kubectl(del).ok());
    EXPECT_TRUE(apply(docs));
    previous = tag;
  }
  stop = true;
  writers.join();
  const auto ended = Clock::now();
  // Every annotation is an update event for the policy it touched, and every replaced source
  // pod is a handful (added, bound, Running with an IP, deleting, deleted) for the policy that
  // selects it: each may cost one reconcile, so the bound follows how fast the writers ran on this
  // machine. Twice that plus a margin still catches a loop, which reconciles thousands a second.
  const int triggers = touches + rounds * 10 * 2 * 5;
  const auto r = checkInvariants(before, op, {&op}, r0, ended,
                                 {.pool = pool_, .maxCaseReconciles = 2.0 * triggers + 500});
  const double conflicts = metricSum(op.metrics(), "rest_client_requests_total", {{"code", "409"}});
  EXPECT_GT(conflicts, 0) << "no write conflicted: the case tested nothing";
  EXPECT_EQ(policies(ns_)["p2"].ledger.size(), 2u);
  report("conflicts", r,
         "conflicts_409=" + std::to_string(conflicts) + " other_writes=" +
             std::to_string(touches.load()) + " source_pod_rounds=" + std::to_string(rounds) +
             " triggers=" + std::to_string(triggers));
}

// Case 7: a user deletes a gateway Deployment, an administrator edits a policy's
// EgressPolicySlice (no tenant may), and a user annotates a gateway pod with another address (as
// the operator's own records once did); the operator restores the first two and ignores the
// third.
TEST_F(FaultE2E, UserDamageToGatewayObjectsIsRestored) {
  Operator& op = startOperator({});
  ASSERT_TRUE(caughtUp(op));
  const auto before = clusterPolicies();
  const double r0 = op.reconciles("egressgateway");
  const auto pods = gatewayPods(ns_, "p5");
  ASSERT_EQ(pods.size(), 1u);
  const auto start = Clock::now();
  ASSERT_TRUE(controlPlane().kubectl({"delete", "deployment", "-n", ns_, "egw-p3"}).ok());
  ASSERT_TRUE(
      controlPlane()
          .kubectl({"patch", "egresspolicyslice", ns_ + ".p4.0", "--type=merge", "-p",
                    R"({"spec":{"sources":[{"pod":"x","node":"nowhere","ips":["10.9.9.9"]}]}})"})
          .ok());
  ASSERT_TRUE(controlPlane()
                  .kubectl({"annotate", "pod", "-n", ns_, pods.begin()->first,
                            "egressgateway.dev/egress-ips=198.51.100.250"})
                  .ok());
  const auto r =
      checkInvariants(before, op, {&op}, r0, start, {.pool = pool_, .maxCaseReconciles = 500});
  EXPECT_EQ(gatewayPods(ns_, "p5").begin()->second.holds,
            before.at(ns_ + "/p5").ledger.front().front());
  report("user-damage", r, "");
}

// Case 8: a pool's second CIDR removed while two policies hold addresses in it: they keep them,
// the pool says AllocatedOutsidePool until both are released, then Ready again.
TEST_F(FaultE2E, PoolCidrRemovedWhileInUseKeepsAddressesUntilReleased) {
  const std::string pool = pool_ + "-cidr";
  pools_.push_back(pool);
  ASSERT_TRUE(apply(poolYaml(pool, {"198.51.100.0/28", "198.51.100.16/28"})));
  const std::string& ns = extraNamespace();
  ASSERT_TRUE(apply(policyYaml(ns, "inside", pool, 1, "none", {"198.51.100.5"}) + "---\n" +
                    policyYaml(ns, "out-a", pool, 1, "none", {"198.51.100.20"}) + "---\n" +
                    policyYaml(ns, "out-b", pool, 1, "none", {"198.51.100.21"})));
  Operator& op = startOperator({});
  ASSERT_TRUE(caughtUp(op));
  ASSERT_TRUE(allReady(ns, {"inside", "out-a", "out-b"}, 120s, operators_));
  const auto before = clusterPolicies();
  const double r0 = op.reconciles("egressgateway");
  auto poolReady = [&] {
    auto got = controlPlane().kubectl(
        {"get", "ipampool", pool, "-o",
         R"(jsonpath={.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].reason}/{.status.conditions[?(@.type=="Ready")].message})"});
    return got.output;
  };
  const auto start = Clock::now();
  ASSERT_TRUE(apply(poolYaml(pool, {"198.51.100.0/28"})));
  ASSERT_TRUE(
      eventually([&] { return poolReady().rfind("False/AllocatedOutsidePool/2 ", 0) == 0; }, 60s))
      << poolReady();
  const double reported = secondsSince(start);
  auto ps = policies(ns);
  EXPECT_EQ(ps["out-a"].egressIPs, std::vector<std::string>{"198.51.100.20"});
  EXPECT_EQ(ps["out-b"].egressIPs, std::vector<std::string>{"198.51.100.21"});
  EXPECT_EQ(poolField(pool, ".status.allocated"), "3");
  // Still reported while one is in use; Ready once both are released.
  ASSERT_TRUE(controlPlane().kubectl({"delete", "egp", "-n", ns, "out-a"}).ok());
  EXPECT_TRUE(
      eventually([&] { return poolReady().rfind("False/AllocatedOutsidePool/1 ", 0) == 0; }, 60s))
      << poolReady();
  ASSERT_TRUE(controlPlane().kubectl({"delete", "egp", "-n", ns, "out-b"}).ok());
  EXPECT_TRUE(eventually([&] { return poolReady().rfind("True/", 0) == 0; }, 60s)) << poolReady();
  EXPECT_EQ(policies(ns)["inside"].egressIPs, std::vector<std::string>{"198.51.100.5"});
  const auto r =
      checkInvariants(before, op, {&op}, r0, start, {.pool = pool_, .maxCaseReconciles = 500});
  report("pool-cidr-removed", r, "outside_reported_after_s=" + std::to_string(reported));
}

}  // namespace
}  // namespace egress
