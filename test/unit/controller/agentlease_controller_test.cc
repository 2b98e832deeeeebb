// Component test of the agentlease subcontroller: the real AgentLeaseController over the shared
// cache, fed by fake ListerWatchers (two policies with a gateway pod each, on two nodes, and
// their nodes' agent Leases), with the Context's `policies` trigger connected to a controller
// that records the keys it is asked to reconcile. An agent's change queues only the policies with
// a gateway on its node, never every policy in the cluster.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pkg/cache/informer_factory.h"
#include "pkg/controller/agentlease/controller.h"
#include "pkg/controller/names.h"
#include "pkg/kube/rest_client.h"
#include "test/testutil/run_sync.h"
#include "test/unit/cache/fake_lister_watcher.h"
#include "test/unit/controller/component_fixture.h"

namespace egress::controller {
namespace {

using namespace std::chrono_literals;

std::string policyJson(const std::string& name) {
  return R"({"apiVersion":"networking.egressgateway.dev/v1alpha1","kind":"EgressGatewayPolicy",)"
         R"("metadata":{"name":")" +
         name + R"(","namespace":"ns","uid":"uid-)" + name +
         R"(","resourceVersion":"1","generation":1},)"
         R"("spec":{"podSelector":{},"egressIP":{"pool":"pool"}}})";
}

// Policy `policy`'s gateway pod on `node`.
std::string gatewayPodJson(const std::string& policy, const std::string& node) {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"egw-)" + policy +
         R"(-1","namespace":"ns","uid":"uid-pod-)" + policy +
         R"(","resourceVersion":"1","labels":{")" + std::string(kPolicyLabel) + R"(":")" + policy +
         R"("}},"spec":{"nodeName":")" + node +
         R"(","containers":[{"name":"gw","image":"img"}]},"status":{"phase":"Running"}})";
}

// Node `node`'s agent Lease, renewed at `renewed` (RFC 3339), reporting `programmed` and a
// problem with the policy of uid `problemUID` (none if "").
std::string leaseJson(const std::string& node, const std::string& rv, const std::string& renewed,
                      const std::string& programmed, const std::string& problemUID = "") {
  const std::string problems =
      problemUID.empty()
          ? ""
          : R"([{\"uid\":\")" + problemUID + R"(\",\"policy\":\"ns/)" + problemUID.substr(4) +
                R"(\",\"reason\":\"NoMark\",\"message\":\"m\",\"count\":1}])";
  return R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":")" +
         std::string(kAgentLeasePrefix) + node + R"(","namespace":"egw","resourceVersion":")" + rv +
         R"(","annotations":{")" + std::string(kProgrammedAnnotation) + R"(":")" + programmed +
         R"(",")" + std::string(kProblemsAnnotation) + R"(":")" + problems +
         R"("}},"spec":{"holderIdentity":")" + node +
         R"(","leaseDurationSeconds":6,"renewTime":")" + renewed + R"("}})";
}

constexpr char kConfigJson[] =
    R"({"apiVersion":"networking.egressgateway.dev/v1alpha1","kind":"OperatorConfig",)"
    R"("metadata":{"name":"default","resourceVersion":"1"},)"
    R"("spec":{"gatewayImage":"img","dataplane":{"agent":true}}})";

class AgentLeaseControllerTest : public testing::ComponentTest {
 protected:
  AgentLeaseControllerTest() {
    lists_["egressgatewaypolicies"] = {policyJson("a"), policyJson("b")};
    lists_["pods"] = {gatewayPodJson("a", "node-1"), gatewayPodJson("b", "node-2")};
    lists_["leases"] = {leaseJson("node-1", "1", "2026-12-06T10:00:00.000000Z", ""),
                        leaseJson("node-2", "1", "2026-12-06T10:00:00.000000Z", "")};
    lists_["operatorconfigs"] = {kConfigJson};
    makeContextFromLists();
    cache_->watchAgentLeases(*factory_, "egw");
    auto opts = [&](const char* name) {
      return controllerruntime::Controller::Options{name, 1, clock_, ioc_.get_executor(), nullptr};
    };
    policies_ = std::make_unique<testing::RecordingController>(opts("policies"));
    ctx_->policies.connect(policies_->enqueuer());
    agentLease_ = std::make_unique<AgentLeaseController>(opts("agentlease"), *ctx_);
    EXPECT_TRUE(agentLease_->setUp(*factory_));
    factory_->start();
    runUntil([&] {
      return cache_->pods().hasSynced() && cache_->agentLeases()->hasSynced() &&
             cache_->policies().hasSynced() && cache_->operatorConfigs().hasSynced() &&
             watches_.contains("leases");
    });
    net::co_spawn(ioc_, policies_->run(), net::detached);
    net::co_spawn(ioc_, agentLease_->run(), net::detached);
    settle();
  }

  ~AgentLeaseControllerTest() override {
    agentLease_->stop();
    policies_->stop();
    settle();
  }

  // The agent of `node` renews its Lease, reporting `programmed` (and a problem with the policy
  // of `problemUID`).
  void renew(const std::string& node, const std::string& rv, const std::string& programmed,
             const std::string& problemUID = "") {
    modified("leases",
             leaseJson(node, rv, "2026-12-06T10:00:0" + rv + ".000000Z", programmed, problemUID));
  }

  std::unique_ptr<testing::RecordingController> policies_;
  std::unique_ptr<AgentLeaseController> agentLease_;
};

TEST_F(AgentLeaseControllerTest, AnAgentsChangeQueuesOnlyThePoliciesWithAGatewayOnItsNode) {
  // Two live agents that report nothing: a first sight changes nothing.
  EXPECT_THAT(policies_->keys, ::testing::IsEmpty());

  // node-1's agent reports an address programmed: the policy with a gateway there, not ns/b.
  renew("node-1", "2", "203.0.113.1");
  EXPECT_THAT(policies_->keys, ::testing::ElementsAre("ns/a"));

  // A renewal that reports the same: nothing.
  policies_->keys.clear();
  clock_.advance(4s);
  renew("node-1", "3", "203.0.113.1");
  EXPECT_THAT(policies_->keys, ::testing::IsEmpty());

  // node-2's agent goes stale (6 s without a renewal seen; node-1's was seen 2.5 s ago): its
  // policy may move its holder, and only it is queued.
  clock_.advance(2500ms);
  settle();
  EXPECT_THAT(policies_->keys, ::testing::ElementsAre("ns/b"));
}

// A problem report queues the policy it names, wherever its gateways run; so does its end, and
// the reporting agent going stale (its problems stop counting).
TEST_F(AgentLeaseControllerTest, AProblemReportQueuesThePolicyItNames) {
  renew("node-1", "2", "", "uid-b");
  EXPECT_THAT(policies_->keys, ::testing::ElementsAre("ns/b"));
  policies_->keys.clear();
  renew("node-1", "3", "", "uid-b");
  EXPECT_THAT(policies_->keys, ::testing::IsEmpty()) << "the same report";
  renew("node-1", "4", "");
  EXPECT_THAT(policies_->keys, ::testing::ElementsAre("ns/b"));
  policies_->keys.clear();
  renew("node-1", "5", "", "uid-b");
  EXPECT_THAT(policies_->keys, ::testing::ElementsAre("ns/b"));
  // node-1 goes stale: ns/a (its gateway is there) and ns/b (node-1's problem) are queued.
  policies_->keys.clear();
  clock_.advance(6500ms);
  settle();
  EXPECT_THAT(policies_->keys, ::testing::UnorderedElementsAre("ns/a", "ns/b"));
}

}  // namespace
}  // namespace egress::controller
