// Component test of the operator subcontroller: the real OperatorController over the shared
// cache, fed by fake ListerWatchers, writing the OperatorConfig's status to the in-process API
// server. The summary (status.policies, status.readyPolicies, egress_policies{state}) follows the
// policies as the cache holds them, whenever their status reaches it, and an update that does
// not change what the summary counts costs no recount.
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "pkg/controller/operator/controller.h"
#include "test/unit/cache/fake_lister_watcher.h"
#include "test/unit/controller/component_fixture.h"

namespace egress::controller {
namespace {

using namespace std::chrono_literals;

constexpr char kConfigJson[] =
    R"({"apiVersion":"networking.egressgateway.dev/v1alpha1","kind":"OperatorConfig",)"
    R"("metadata":{"name":"default","resourceVersion":"1","generation":1},)"
    R"("spec":{"gatewayImage":"img"}})";

// Policy ns/web at resourceVersion `rv` whose Ready condition is `ready` ("True"/"False"),
// selecting `selected` pods.
std::string policyJson(const std::string& rv, const std::string& ready, int selected) {
  return R"({"apiVersion":"networking.egressgateway.dev/v1alpha1","kind":"EgressGatewayPolicy",)"
         R"("metadata":{"name":"web","namespace":"ns","uid":"uid-web","resourceVersion":")" +
         rv +
         R"(","generation":1},"spec":{"podSelector":{},"egressIP":{"pool":"pool"}},)"
         R"("status":{"observedGeneration":1,"selectedPods":)" +
         std::to_string(selected) + R"(,"conditions":[{"type":"Ready","status":")" + ready +
         R"(","reason":"Ready","message":"","lastTransitionTime":"2026-12-06T10:00:00Z"}]}})";
}

class OperatorControllerTest : public testing::ComponentTest {
 protected:
  OperatorControllerTest() {
    lists_["operatorconfigs"] = {kConfigJson};
    lists_["egressgatewaypolicies"] = {policyJson("2", "False", 1)};
    makeContextFromLists();
    controller_ = startController<OperatorController>("operator", [&] {
      return cache_->policies().hasSynced() && cache_->operatorConfigs().hasSynced() &&
             watches_.contains("egressgatewaypolicies");
    });
    pass(3s);
  }

  ~OperatorControllerTest() override {
    controller_->stop();
    settle();
  }

  // The OperatorConfig's status updates are answered with the body sent, and counted.
  kube::testing::FakeResponse handle(const kube::testing::FakeRequest& r) override {
    auto out = ComponentTest::handle(r);
    if (r.method == "PUT" &&
        r.target.find("/operatorconfigs/default/status") != std::string::npos) {
      out.status = 200;
      rapidjson::Document d;
      d.Parse(r.body.c_str());
      readyPolicies_ = d["status"]["readyPolicies"].GetInt();
      ++statusWrites_;
    }
    return out;
  }

  // Lets `d` of fake time pass, and runs until no reconcile is queued or running (one may wait
  // for the API server's answer).
  void pass(Clock::Duration d) {
    clock_.advance(d);
    quiesce(*controller_);
  }

  std::unique_ptr<OperatorController> controller_;
  int readyPolicies_ = -1;
  int statusWrites_ = 0;
};

// The policy's status reaches the cache long after whoever wrote it (a throttled watch, a
// relist): the summary follows the cache, not the writer.
TEST_F(OperatorControllerTest, ThePolicyStatusReachingTheCacheRecountsTheSummary) {
  ASSERT_EQ(readyPolicies_, 0) << "the first summary: one policy, not Ready";
  const int writes = statusWrites_;

  // Ready as the watch brings it, whoever wrote it: one recount, within the batch.
  modified("egressgatewaypolicies", policyJson("3", "True", 1));
  pass(3s);
  EXPECT_EQ(readyPolicies_, 1);
  EXPECT_EQ(statusWrites_, writes + 1);

  // A change the summary does not count (the selected pods): no recount at all.
  const double before = reconciles();
  modified("egressgatewaypolicies", policyJson("4", "True", 2));
  pass(3s);
  EXPECT_EQ(reconciles(), before);
  EXPECT_EQ(statusWrites_, writes + 1);

  // Deleted: counted out.
  watches_.at("egressgatewaypolicies")
      ->push(cache::testing::event(kube::WatchEventType::Deleted, policyJson("5", "True", 2)));
  settle();
  pass(3s);
  EXPECT_EQ(readyPolicies_, 0);
}

}  // namespace
}  // namespace egress::controller
