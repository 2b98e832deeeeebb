// egw-agent against the real control plane, as a process of its own (--dry-run: the kernel of
// the machine running the tests is never touched; test/unit/dataplane and the netns e2e program
// kernels). It starts, syncs its informers, renews its Lease egw-agent-<node> every 2 s with a 6 s
// duration, counts what it would program from the operator's view (an EgressPolicySlice naming
// this node as a holder) on /metrics and reports the address in its Lease
// (egressgateway.dev/programmed) once an IPAMPool holds the address (before, it refuses it),
// serves /healthz and /readyz, fences itself (holds nothing)
// while it cannot reach the API to renew its Lease and holds again once it can, withdraws when
// the view names another holder, and refuses a bad command line. What a namespace editor can
// write (a ConfigMap egw-*, a pod labelled and annotated as a gateway on this node) it ignores,
// and it writes no pod. Stopped, it tells an uninstall (its DaemonSet deleted) from a restart.
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "test/e2e/operator_helpers.h"
#include "test/e2e/testenv/child_process.h"
#include "test/e2e/testenv/control_plane.h"
#include "test/e2e/testenv/environment.h"
#include "test/e2e/testenv/loopback.h"
#include "test/testutil/temp_dir.h"

namespace egress::e2e {
namespace {

using namespace std::chrono_literals;
using testenv::controlPlane;

class AgentE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(installCrds(), ""); }

  void SetUp() override {
    // The last test's namespace may still be going (its TearDown does not wait).
    std::string created;
    ASSERT_TRUE(eventually(
        [&] { return (created = controlPlane().createNamespace(kLeaseNs)).empty(); }, 120s))
        << created;
    auto nodes =
        controlPlane().kubectl({"get", "nodes", "-o", "jsonpath={.items[0].metadata.name}"});
    ASSERT_TRUE(nodes.ok()) << nodes.output;
    node_ = nodes.output;
    ASSERT_FALSE(node_.empty());
  }
  void TearDown() override {
    agent_.reset();
    controlPlane().kubectl({"delete", "namespace", kLeaseNs, "--ignore-not-found", "--wait=false"});
    controlPlane().kubectl(
        {"delete", "configmap", "-n", "default", "egw-web", "--ignore-not-found"});
    controlPlane().kubectl({"delete", "egresspolicyslice", "default.web.0", "--ignore-not-found"});
    controlPlane().kubectl({"delete", "ipampool", kPool, "--ignore-not-found"});
    controlPlane().kubectl({"delete", "pod", "-n", "default", "egw-web-gw", "--ignore-not-found",
                            "--grace-period=0", "--force"});
  }

  void startAgent(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{
        EGRESS_AGENT_BINARY,
        "--kubeconfig=" + controlPlane().kubeconfig(),
        "--node-name=" + node_,
        std::string("--lease-namespace=") + kLeaseNs,
        "--uplink=lo",
        "--dry-run",
        "--metrics-bind-address=127.0.0.1:" + std::to_string(metrics_),
        "--health-probe-bind-address=127.0.0.1:" + std::to_string(probes_)};
    args.insert(args.end(), extra.begin(), extra.end());
    agent_ = std::make_unique<testenv::ChildProcess>(args, tmp_.path() + "/agent.log");
    ASSERT_TRUE(agent_->error().empty()) << agent_->error();
  }
  double metric(const std::string& name) const {
    return metricSum(testenv::httpGet(metrics_, "/metrics"), name);
  }
  double problemCount(const std::string& kind) const {
    return metricSum(testenv::httpGet(metrics_, "/metrics"), "egw_agent_problems",
                     {{"kind", kind}});
  }
  std::string leaseField(const std::string& jsonpath) const {
    auto out = controlPlane().kubectl({"get", "lease", "-n", kLeaseNs, "egw-agent-" + node_, "-o",
                                       "jsonpath={" + jsonpath + "}"});
    return out.ok() ? out.output : "";
  }

  std::string podField(const std::string& jsonpath) const {
    auto out = controlPlane().kubectl(
        {"get", "pod", "-n", "default", "egw-web-gw", "-o", "jsonpath={" + jsonpath + "}"});
    return out.ok() ? out.output : "";
  }
  std::string podCondition(const std::string& type) const {
    return podField(".status.conditions[?(@.type==\"" + type + "\")].status");
  }
  std::string gate() const { return podCondition("egressgateway.dev/ip-programmed"); }

  static constexpr const char* kLeaseNs = "egw-agent-e2e";
  static constexpr const char* kPool = "egw-agent-e2e";
  testutil::TempDir tmp_;
  std::string node_;
  int metrics_ = testenv::freeLoopbackPort();
  int probes_ = testenv::freeLoopbackPort();
  std::unique_ptr<testenv::ChildProcess> agent_;
};

TEST_F(AgentE2E, StartsSyncsRenewsItsLeaseAndCountsWhatItHoldsThenFencesItself) {
  startAgent();
  ASSERT_TRUE(eventually([&] { return !testenv::httpGet(probes_, "/readyz").empty(); }, 60s))
      << agent_->log();
  EXPECT_FALSE(testenv::httpGet(probes_, "/healthz").empty());
  // Its Lease: created, held by the node, 6 s, renewed every 2 s.
  ASSERT_TRUE(eventually([&] { return leaseField(".spec.holderIdentity") == node_; }, 30s))
      << agent_->log();
  EXPECT_EQ(leaseField(".spec.leaseDurationSeconds"), "6");
  const auto first = leaseField(".spec.renewTime");
  EXPECT_TRUE(eventually([&] { return leaseField(".spec.renewTime") != first; }, 10s));
  // Synced, nothing to program yet.
  ASSERT_TRUE(eventually(
      [&] { return metric("egw_agent_last_successful_sync_timestamp_seconds") > 0; }, 30s))
      << agent_->log();
  EXPECT_EQ(metric("egw_agent_programmed_policies"), 0);
  EXPECT_EQ(metric("egw_agent_held_egress_ips"), 0);
  EXPECT_EQ(metric("egw_agent_fenced"), 0);

  // What a namespace editor can write and the agent once believed: a ConfigMap egw-web and a
  // pod labelled and annotated as its gateway on this node. Ignored: nothing held or reported.
  ASSERT_TRUE(applyYaml(tmp_.path() + "/forged.yaml", R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: egw-web
  namespace: default
  labels: {egressgateway.dev/policy: web}
data:
  egress-ips: "192.0.2.200\n"
  destination-cidrs: "198.51.100.0/24\n"
  sources: "10.244.1.2@)" + node_ + R"(\n"
---
apiVersion: v1
kind: Pod
metadata:
  name: egw-web-gw
  namespace: default
  labels: {egressgateway.dev/policy: web}
  annotations: {egressgateway.dev/egress-ips: 192.0.2.200}
spec:
  nodeName: )" + node_ + R"(
  containers: [{name: gw, image: example.invalid/egress-gateway:e2e}]
)"));
  EXPECT_TRUE(eventually([&] { return podCondition("Ready") == "True"; }, 30s));
  // Three seconds of syncs (every sync re-runs each second) after the pod runs.
  const double synced = metric("egw_agent_last_successful_sync_timestamp_seconds");
  EXPECT_TRUE(eventually(
      [&] { return metric("egw_agent_last_successful_sync_timestamp_seconds") >= synced + 3; },
      30s));
  EXPECT_EQ(metric("egw_agent_programmed_policies"), 0);
  EXPECT_EQ(metric("egw_agent_held_egress_ips"), 0);
  EXPECT_EQ(leaseField(".metadata.annotations.egressgateway\\.dev/programmed"), "");

  // The operator's view (written here as the operator would): a policy whose only egress IP
  // this node holds.
  const std::string slice = R"(apiVersion: networking.egressgateway.dev/v1alpha1
kind: EgressPolicySlice
metadata:
  name: default.web.0
spec:
  policy: {namespace: default, name: web, uid: 0f0e0d0c-e2e0-4000-8000-000000000001}
  gateway:
    egressIPs: [{ips: [192.0.2.200], node: HOLDER, pod: egw-web-gw, podUID: u-gw}]
    destinationCIDRs: [198.51.100.0/24]
  sources: [{pod: src, node: )" +
                            node_ + R"(, ips: [10.244.1.2]}]
)";
  auto holderIs = [&](const std::string& holder) {
    std::string yaml = slice;
    yaml.replace(yaml.find("HOLDER"), 6, holder);
    return applyYaml(tmp_.path() + "/slice.yaml", yaml);
  };
  ASSERT_TRUE(holderIs(node_));
  // The operator checked the address against the pools; the agent does not take its word for
  // it: in no IPAMPool, it is refused (and says why), whatever the view says.
  EXPECT_TRUE(eventually(
      [&] {
        return agent_->log().find("192.0.2.200 of default/web refused: it is in no IPAMPool") !=
               std::string::npos;
      },
      30s))
      << agent_->log();
  EXPECT_EQ(metric("egw_agent_held_egress_ips"), 0);
  // Counted by kind, and reported on its Lease to the policy it concerns (by uid): the operator
  // turns that into the policy's Programmed and Ready.
  const std::string problems = ".metadata.annotations.egressgateway\\.dev/problems";
  EXPECT_EQ(problemCount("refused-address"), 1) << agent_->log();
  EXPECT_EQ(problemCount("contested-address"), 0);
  EXPECT_TRUE(eventually(
      [&] {
        rapidjson::Document d;
        d.Parse(leaseField(problems).c_str());
        return !d.HasParseError() && d.IsArray() && d.Size() == 1 &&
               std::string(d[0]["uid"].GetString()) == "0f0e0d0c-e2e0-4000-8000-000000000001" &&
               std::string(d[0]["policy"].GetString()) == "default/web" &&
               std::string(d[0]["reason"].GetString()) == "RefusedAddress" &&
               std::string(d[0]["message"].GetString()).find("in no IPAMPool") != std::string::npos;
      },
      30s))
      << leaseField(problems);
  ASSERT_TRUE(applyYaml(tmp_.path() + "/pool.yaml", poolYaml(kPool, {"192.0.2.192/26"})));
  EXPECT_TRUE(eventually([&] { return leaseField(problems).empty(); }, 30s))
      << leaseField(problems);
  EXPECT_EQ(problemCount("refused-address"), 0);
  EXPECT_TRUE(eventually([&] { return metric("egw_agent_programmed_policies") == 1; }, 30s))
      << agent_->log();
  EXPECT_TRUE(eventually([&] { return metric("egw_agent_held_egress_ips") == 1; }, 30s))
      << agent_->log();
  EXPECT_EQ(metric("egw_agent_sync_errors_total"), 0);
  // Its report, in its own Lease, written at once (not at the next 2 s renewal).
  EXPECT_TRUE(eventually(
      [&] {
        return leaseField(".metadata.annotations.egressgateway\\.dev/programmed") == "192.0.2.200";
      },
      30s))
      << agent_->log();
  // It writes no pod: the forged pod's conditions are the kubelet's alone.
  EXPECT_EQ(gate(), "");

  // Cut off from the API (the apiserver stopped with SIGSTOP, so no request of the agent's is
  // answered): within the 6 s duration and a resync it holds nothing, while sources keep their
  // rules (fail closed); once the API answers again it renews and holds the IP again.
  const std::string apiserver = controlPlane().dir() + "/apiserver.pid";
  ASSERT_EQ(std::system(("kill -STOP $(cat " + apiserver + ")").c_str()), 0);
  const bool fenced = eventually([&] { return metric("egw_agent_fenced") == 1; }, 30s);
  const double heldWhileFenced = metric("egw_agent_held_egress_ips");
  const double policiesWhileFenced = metric("egw_agent_programmed_policies");
  ASSERT_EQ(std::system(("kill -CONT $(cat " + apiserver + ")").c_str()), 0);
  EXPECT_TRUE(fenced) << agent_->log();
  EXPECT_EQ(heldWhileFenced, 0);
  EXPECT_EQ(policiesWhileFenced, 1) << "sources still route (fail closed)";
  EXPECT_TRUE(eventually([&] { return metric("egw_agent_fenced") == 0; }, 60s)) << agent_->log();
  EXPECT_TRUE(eventually([&] { return metric("egw_agent_held_egress_ips") == 1; }, 30s));
  EXPECT_TRUE(eventually(
      [&] {
        return leaseField(".metadata.annotations.egressgateway\\.dev/programmed") == "192.0.2.200";
      },
      30s));

  // The view names another holder (the operator moved the IP): it holds nothing and says so.
  ASSERT_TRUE(holderIs("some-other-node"));
  EXPECT_TRUE(eventually([&] { return metric("egw_agent_held_egress_ips") == 0; }, 30s));
  EXPECT_TRUE(eventually(
      [&] { return leaseField(".metadata.annotations.egressgateway\\.dev/programmed").empty(); },
      30s))
      << agent_->log();
  EXPECT_EQ(podCondition("Ready"), "True");
  agent_->signal(SIGTERM);
  EXPECT_EQ(exitCode(agent_->reap(30s)), 0) << agent_->log();
}

// What changes nothing in its view queues no sync of its own: a peer's Lease renewed while it is
// fresh (on 500 nodes, 250 renewals a second) and a Node written outside its addresses and pod
// CIDRs (status heartbeats, labels). Each would otherwise be a sync of the whole view one
// debounce (100 ms) later; the syncs are counted by controller_runtime_reconcile_total, against
// the one a second that the resync makes anyway.
TEST_F(AgentE2E, APeersRenewalsAndANodesOtherFieldsQueueNoSync) {
  startAgent();
  ASSERT_TRUE(eventually(
      [&] { return metric("egw_agent_last_successful_sync_timestamp_seconds") > 0; }, 60s))
      << agent_->log();
  auto microTime = [] {
    const auto now = std::chrono::system_clock::now();
    const auto t = std::chrono::system_clock::to_time_t(now);
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch() %
                                                                          std::chrono::seconds(1))
                        .count();
    char buf[64];
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<long>(us));
    return std::string(buf);
  };
  const std::string peer = "e2e-peer-node";
  ASSERT_TRUE(applyYaml(tmp_.path() + "/peer.yaml",
                        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: "
                        "egw-agent-" +
                            peer + "\n  namespace: " + kLeaseNs +
                            "\nspec:\n  holderIdentity: " + peer +
                            "\n  leaseDurationSeconds: 6\n  renewTime: \"" + microTime() + "\"\n"));
  std::this_thread::sleep_for(2s);
  constexpr int kWrites = 20;
  auto syncsDuring = [&](const std::function<bool(int)>& write) {
    const double before = metric("controller_runtime_reconcile_total");
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kWrites; ++i) {
      EXPECT_TRUE(write(i));
      std::this_thread::sleep_for(150ms);  // past the debounce: each write its own sync, if any
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return std::make_pair(metric("controller_runtime_reconcile_total") - before, seconds);
  };
  const auto [leaseSyncs, leaseSeconds] = syncsDuring([&](int) {
    return controlPlane()
        .kubectl({"patch", "lease", "-n", kLeaseNs, "egw-agent-" + peer, "--type=merge", "-p",
                  "{\"spec\":{\"renewTime\":\"" + microTime() + "\"}}"})
        .ok();
  });
  // The resync's one a second, and the odd one for the agent's own renewals' reports: far
  // fewer than the writes.
  EXPECT_LE(leaseSyncs, leaseSeconds + 3) << kWrites << " renewals in " << leaseSeconds << " s";
  const auto [nodeSyncs, nodeSeconds] = syncsDuring([&](int i) {
    return controlPlane()
        .kubectl({"label", "node", node_, "--overwrite", "egw-e2e/touch=" + std::to_string(i)})
        .ok();
  });
  EXPECT_LE(nodeSyncs, nodeSeconds + 3) << kWrites << " label writes in " << nodeSeconds << " s";
  controlPlane().kubectl({"label", "node", node_, "egw-e2e/touch-"});
  // That writes which do change the view still sync at once is not shown here: the resync
  // (1 s) would hide a missing one. dataplane_e2e's failover cases show a stale holder's and a
  // returning one's effect on packets.
  EXPECT_EQ(metric("egw_agent_sync_errors_total"), 0) << agent_->log();
}

// Stopped, an agent keeps the node's kernel state unless the DaemonSet that runs it
// (--owner-daemonset), which it has seen, is being deleted or gone: an uninstall. A dry run says
// what it would do; helm_e2e_test checks the kernel of nodes that carry packets.
TEST_F(AgentE2E, StoppedItTellsAnUninstallFromARestartByItsDaemonSet) {
  const std::string ds = "egw-agent-e2e";
  const std::string owner = std::string("--owner-daemonset=") + kLeaseNs + "/" + ds;
  // No pod of it is ever scheduled; a finalizer holds it in deletion until the test lets go.
  std::ofstream(tmp_.path() + "/ds.yaml")
      << "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: " << ds
      << "\n  namespace: " << kLeaseNs
      << "\n  finalizers: [egw-e2e/hold]\nspec:\n  selector:\n    matchLabels: {app: " << ds
      << "}\n  template:\n    metadata:\n      labels: {app: " << ds
      << "}\n    spec:\n      nodeSelector: {egw-e2e/none: \"true\"}\n      containers: "
         "[{name: agent, image: example.invalid/agent:1}]\n";
  auto stopped = [&](
                     const std::vector<std::string>& extra,
                     const std::function<void()>& meanwhile = [] {}) {
    startAgent(extra);
    EXPECT_TRUE(eventually(
        [&] { return metric("egw_agent_last_successful_sync_timestamp_seconds") > 0; }, 60s))
        << agent_->log();
    meanwhile();
    agent_->signal(SIGTERM);
    EXPECT_EQ(exitCode(agent_->reap(30s)), 0) << agent_->log();
    return agent_->log();
  };
  auto dsField = [&](const std::string& jsonpath) {
    return controlPlane()
        .kubectl({"get", "daemonset", "-n", kLeaseNs, ds, "-o", "jsonpath={" + jsonpath + "}"})
        .output;
  };

  // Not there when it starts (a wrong name, say): its absence proves nothing.
  EXPECT_THAT(stopped({owner}), ::testing::HasSubstr("the kernel state stays"));
  // There: a restart or a rolling update.
  ASSERT_TRUE(controlPlane().kubectl({"apply", "-f", tmp_.path() + "/ds.yaml"}).ok());
  auto log = stopped({owner});
  EXPECT_THAT(log, ::testing::HasSubstr("watching DaemonSet " + std::string(kLeaseNs) + "/" + ds));
  EXPECT_THAT(log, ::testing::HasSubstr("the kernel state stays"));
  // Without the flag, the same, and it says that an uninstall would go unnoticed.
  EXPECT_THAT(stopped({}), ::testing::HasSubstr("no --owner-daemonset"));
  // Being deleted (foreground deletion looks the same: a deletionTimestamp, then gone).
  ASSERT_TRUE(
      controlPlane().kubectl({"delete", "daemonset", "-n", kLeaseNs, ds, "--wait=false"}).ok());
  ASSERT_TRUE(eventually([&] { return !dsField(".metadata.deletionTimestamp").empty(); }, 30s));
  EXPECT_THAT(stopped({owner}),
              ::testing::HasSubstr("DaemonSet " + std::string(kLeaseNs) + "/" + ds +
                                   " is being deleted: a dry run removes nothing"));
  // Gone while it runs: what helm uninstall does (background deletion).
  log = stopped({owner}, [&] {
    ASSERT_TRUE(controlPlane()
                    .kubectl({"patch", "daemonset", "-n", kLeaseNs, ds, "--type=json", "-p",
                              R"([{"op":"remove","path":"/metadata/finalizers"}])"})
                    .ok());
    ASSERT_TRUE(eventually(
        [&] {
          return !controlPlane().kubectl({"get", "daemonset", "-n", kLeaseNs, ds}).ok();
        },
        30s));
    EXPECT_TRUE(eventually(
        [&] { return agent_->log().find("will remove its kernel state") != std::string::npos; },
        30s));
  });
  EXPECT_THAT(log, ::testing::HasSubstr("DaemonSet " + std::string(kLeaseNs) + "/" + ds +
                                        " was deleted: a dry run removes nothing"));
}

TEST(AgentFlags, ABadCommandLineIsAClearErrorAndExitCode2) {
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--lease-namespace=x"}, "--node-name (or $NODE_NAME) is required"},
           {{"--node-name=n", "--lease-namespace=x", "--mark-mask=5"}, "--mark-mask"},
           // Two bits are the reply and refuse marks and one more: no node could hold anything.
           {{"--node-name=n", "--lease-namespace=x", "--mark-mask=0x3"},
            "--mark-mask must be contiguous bits, at least 3 of them"},
           {{"--node-name=n", "--lease-namespace=x", "--mark-mask=0xfg"}, "not an integer"},
           // With the default mask (0xff) tables 100..355: main and local among them.
           {{"--node-name=n", "--lease-namespace=x", "--table-base=100"},
            "must not include 253-255"},
           {{"--node-name=n", "--lease-namespace=x", "--mark-mask=0xffff0000",
             "--table-base=2147480000"},
            "must end by 2147483647"},
           {{"--node-name=n", "--lease-namespace=x", "--reply=maybe"}, "--reply"},
           {{"--node-name=n", "--lease-namespace=x", "--owner-daemonset=egw-agent"},
            "--owner-daemonset must be <namespace>/<name>"},
           {{"--node-name=n", "--lease-namespace=x", "--owner-daemonset=a.b/egw-agent"},
            "--owner-daemonset must be <namespace>/<name>"},
           {{"--node-name=n", "--lease-namespace=x", "--owner-daemonset=ns/Agent"},
            "--owner-daemonset must be <namespace>/<name>"},
           {{"--node-name=n", "--lease-namespace=x", "--leader-elect"}, "--leader-elect"}}) {
    std::vector<std::string> argv{EGRESS_AGENT_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = testenv::runCommand(argv, {"NODE_NAME=", "POD_NAMESPACE="});
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_THAT(r.output, ::testing::HasSubstr(message));
  }
}

}  // namespace
}  // namespace egress::e2e
