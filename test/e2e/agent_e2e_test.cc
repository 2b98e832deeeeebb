// egw-agent against the real control plane, as a process of its own (--dry-run: the kernel of
// the machine running the tests is never touched; test/unit/dataplane and the netns e2e program
// kernels). It starts, syncs its informers, renews its Lease egw-agent-<node> every 2 s with a 6 s
// duration, counts what it would program from the operator's objects (a policy's ConfigMap and
// a gateway pod annotated on its node) on /metrics, serves /healthz and /readyz, fences itself
// (holds nothing) while it cannot reach the API to renew its Lease and holds again once it can,
// sets its gateway pod's readiness gate (egressgateway.dev/ip-programmed) True while it holds the
// pod's IP and False once it does not, and refuses a bad command line.
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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
  void SetUp() override {
    ASSERT_EQ(controlPlane().createNamespace(kLeaseNs), "");
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
    controlPlane().kubectl({"delete", "pod", "-n", "default", "egw-web-gw", "--ignore-not-found",
                            "--grace-period=0", "--force"});
  }

  void startAgent() {
    std::vector<std::string> args{
        EGRESS_AGENT_BINARY,
        "--kubeconfig=" + controlPlane().kubeconfig(),
        "--node-name=" + node_,
        std::string("--lease-namespace=") + kLeaseNs,
        "--uplink=lo",
        "--dry-run",
        "--metrics-bind-address=127.0.0.1:" + std::to_string(metrics_),
        "--health-probe-bind-address=127.0.0.1:" + std::to_string(probes_)};
    agent_ = std::make_unique<testenv::ChildProcess>(args, tmp_.path() + "/agent.log");
    ASSERT_TRUE(agent_->error().empty()) << agent_->error();
  }
  double metric(const std::string& name) const {
    return metricSum(testenv::httpGet(metrics_, "/metrics"), name);
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

  // What the operator writes for a policy whose gateway pod runs on this node.
  ASSERT_TRUE(applyYaml(tmp_.path() + "/policy.yaml", R"(apiVersion: v1
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
  EXPECT_TRUE(eventually([&] { return metric("egw_agent_programmed_policies") == 1; }, 30s))
      << agent_->log();
  EXPECT_TRUE(eventually([&] { return metric("egw_agent_held_egress_ips") == 1; }, 30s))
      << agent_->log();
  EXPECT_EQ(metric("egw_agent_sync_errors_total"), 0);
  // The readiness gate, set through pods/status after the (dry) apply; the test kubelet's own
  // conditions, written by a strategic merge patch too, stay beside it whichever came first.
  EXPECT_TRUE(eventually([&] { return gate() == "True"; }, 30s)) << agent_->log();
  EXPECT_TRUE(eventually([&] { return podCondition("Ready") == "True"; }, 30s));
  EXPECT_EQ(gate(), "True");
  EXPECT_EQ(podField(".status.conditions[?(@.type==\"egressgateway.dev/ip-programmed\")].reason"),
            "Programmed");

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
  EXPECT_TRUE(eventually([&] { return gate() == "True"; }, 30s)) << agent_->log();

  // The IP taken from the pod (its annotation removed, as when the operator moves it): the
  // agent holds nothing and withdraws the gate; the kubelet's Ready stays.
  auto removed = controlPlane().kubectl(
      {"annotate", "pod", "-n", "default", "egw-web-gw", "egressgateway.dev/egress-ips-"});
  ASSERT_TRUE(removed.ok()) << removed.output;
  EXPECT_TRUE(eventually([&] { return metric("egw_agent_held_egress_ips") == 0; }, 30s));
  EXPECT_TRUE(eventually([&] { return gate() == "False"; }, 30s)) << agent_->log();
  EXPECT_EQ(podCondition("Ready"), "True");
  agent_->signal(SIGTERM);
  EXPECT_EQ(exitCode(agent_->reap(30s)), 0) << agent_->log();
}

TEST(AgentFlags, ABadCommandLineIsAClearErrorAndExitCode2) {
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--lease-namespace=x"}, "--node-name (or $NODE_NAME) is required"},
           {{"--node-name=n", "--lease-namespace=x", "--mark-mask=5"}, "--mark-mask"},
           {{"--node-name=n", "--lease-namespace=x", "--reply=maybe"}, "--reply"},
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
