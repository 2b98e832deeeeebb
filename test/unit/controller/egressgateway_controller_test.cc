// Component tests of the egressgateway subcontroller: the real EgressGatewayController (its event
// handlers, workers and processors) over the shared cache, fed by fake ListerWatchers, writing to
// the in-process API server of test/unit/kube. Which events cost a reconcile, and how the steps
// of a reconcile hand on what they decided when one of them fails.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "pkg/apis/networking/v1alpha1/zz_generated.codec.h"
#include "pkg/controller/conditions.h"
#include "pkg/controller/egressgateway/controller.h"
#include "pkg/controller/names.h"
#include "test/unit/cache/fake_lister_watcher.h"
#include "test/unit/controller/component_fixture.h"

namespace egress::controller {
namespace {

constexpr char kPoolJson[] =
    R"({"apiVersion":"networking.egressgateway.dev/v1alpha1","kind":"IPAMPool",)"
    R"("metadata":{"name":"pool","uid":"uid-pool","resourceVersion":"1",)"
    R"("creationTimestamp":"2026-11-01T00:00:00Z"},"spec":{"cidrs":["203.0.113.0/30"]}})";

constexpr char kConfigJson[] =
    R"({"apiVersion":"networking.egressgateway.dev/v1alpha1","kind":"OperatorConfig",)"
    R"("metadata":{"name":"default","resourceVersion":"1"},"spec":{"gatewayImage":"img"}})";

constexpr char kPolicyJson[] =
    R"({"apiVersion":"networking.egressgateway.dev/v1alpha1","kind":"EgressGatewayPolicy",)"
    R"("metadata":{"name":"web","namespace":"ns","uid":"uid-web","resourceVersion":"1",)"
    R"("generation":1},"spec":{"podSelector":{"matchLabels":{"app":"web"}},)"
    R"("egressIP":{"pool":"pool"}}})";

// Source pod web-1 at resourceVersion `rv`, labelled app=`app`, with the container's restart
// count `restarts` (what a kubelet status update changes, and the operator does not keep).
std::string sourcePodJson(const std::string& rv, const std::string& app, int restarts) {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"ns",)"
         R"("uid":"uid-web-1","resourceVersion":")" +
         rv + R"(","labels":{"app":")" + app +
         R"("}},"spec":{"nodeName":"node-1","containers":[{"name":"app","image":"img"}]},)"
         R"("status":{"phase":"Running","podIP":"10.244.1.5","podIPs":[{"ip":"10.244.1.5"}],)"
         R"("containerStatuses":[{"name":"app","ready":true,"restartCount":)" +
         std::to_string(restarts) + R"(,"image":"img","imageID":"img"}]}})";
}

class EgressGatewayControllerTest : public testing::ComponentTest {
 protected:
  // Starts the controller over a cache that lists ns/web and its source pod, and `more`.
  void start(const std::map<std::string, std::vector<std::string>>& more = {}) {
    lists_ = more;
    lists_["egressgatewaypolicies"] = {kPolicyJson};
    lists_["pods"] = {sourcePodJson("1", "web", 0)};
    makeContextFromLists();
    controller_ = startController<EgressGatewayController>("egressgateway", [&] {
      return cache_->pods().hasSynced() && cache_->policies().hasSynced() &&
             watches_.contains("pods");
    });
    quiesce();
  }

  ~EgressGatewayControllerTest() override {
    if (controller_) {
      controller_->stop();
    }
    settle();
  }

  // A status update is answered as the API server does (its generation, the next
  // resourceVersion) and kept in statuses_; a Deployment's apply is refused while
  // refuseDeployments_; anything else is answered with itself.
  kube::testing::FakeResponse handle(const kube::testing::FakeRequest& r) override {
    auto out = ComponentTest::handle(r);
    if (r.target.find("/events") != std::string::npos && r.method == "POST") {
      rapidjson::Document d;
      d.Parse(r.body.c_str());
      events_.push_back(std::string(d["type"].GetString()) + " " + d["reason"].GetString());
    } else if (r.target.find("/events/") != std::string::npos) {
      events_.push_back(r.method + " (a repeat)");
    }
    if (refuseDeployments_ && r.target.find("/deployments/") != std::string::npos) {
      out.status = 403;
      out.body = R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden",)"
                 R"("code":403,"message":"deployments.apps \"egw-web\" is forbidden"})";
    }
    if (r.method == "PATCH" && r.target.find("/egresspolicyslices/") != std::string::npos) {
      // The applied slice, at the next resourceVersion: what its watch event brings back.
      out.status = 200;
      out.body = stored(r.body, false);
      slices_.push_back(out.body);
    }
    if (r.method == "PUT" && r.target.find("/status") != std::string::npos) {
      out.status = 200;
      out.body = stored(r.body, true);
      statuses_.push_back(out.body);
    }
    return out;
  }

  // `body` as the API server stores it: at the next resourceVersion (and generation 1).
  std::string stored(const std::string& body, bool generation) {
    rapidjson::Document d;
    d.Parse(body.c_str());
    auto& md = d["metadata"];
    if (generation) {
      md.AddMember("generation", 1, d.GetAllocator());
    }
    md.RemoveMember("resourceVersion");
    md.AddMember("resourceVersion",
                 rapidjson::Value(std::to_string(++version_).c_str(), d.GetAllocator()),
                 d.GetAllocator());
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    d.Accept(w);
    return buf.GetString();
  }

  // The condition `type` of the status last written.
  meta::Condition lastCondition(std::string_view type) {
    EXPECT_FALSE(statuses_.empty());
    rapidjson::Document d;
    d.Parse(statuses_.empty() ? "{}" : statuses_.back().c_str());
    auto policy = v1alpha1::decodeEgressGatewayPolicy(d);
    const auto* c = policy ? meta::findCondition(policy->status.conditions, type) : nullptr;
    return c != nullptr ? *c : meta::Condition{};
  }

  void quiesce() { ComponentTest::quiesce(*controller_); }

  // A watch event of `resource` modifying the object `json`, and whatever reconcile it causes.
  void modifiedAndReconciled(const std::string& resource, const std::string& json) {
    modified(resource, json);
    quiesce();
  }

  std::unique_ptr<EgressGatewayController> controller_;
  std::vector<std::string> statuses_;  // the policy as each status update left it
  std::vector<std::string> slices_;    // each EgressPolicySlice as its apply left it
  // "<type> <reason>" of each Event created, "PATCH (a repeat)" for each repeat counted
  std::vector<std::string> events_;
  bool refuseDeployments_ = false;
  int version_ = 1;
};

TEST_F(EgressGatewayControllerTest, OnlyAPodChangeTheOperatorKeepsCostsAReconcile) {
  start();
  const double first = reconciles();
  ASSERT_GE(first, 1) << "the policy's first reconcile";

  // A kubelet status update: the container restarted. The operator keeps nothing of it.
  modifiedAndReconciled("pods", sourcePodJson("2", "web", 1));
  EXPECT_EQ(reconciles(), first);

  // Its labels change: the policy no longer selects it.
  modifiedAndReconciled("pods", sourcePodJson("3", "other", 1));
  EXPECT_EQ(reconciles(), first + 1);
}

// Pods moving in and out of the selector: a change of the count alone, within two seconds of the
// last status write, is written once those two seconds have passed (the requeue carries it); one
// that comes after a quiet spell is written at once.
TEST_F(EgressGatewayControllerTest, ACountOfSelectedPodsAloneIsWrittenAtMostEveryTwoSeconds) {
  start();
  ASSERT_EQ(statuses_.size(), 1u) << "the first reconcile writes the status (NoPool)";
  auto selected = [&] {
    rapidjson::Document d;
    d.Parse(statuses_.back().c_str());
    return d["status"]["selectedPods"].GetInt();
  };
  EXPECT_EQ(selected(), 1);

  modifiedAndReconciled("pods", sourcePodJson("2", "other", 0));
  modifiedAndReconciled("pods", sourcePodJson("3", "web", 0));
  modifiedAndReconciled("pods", sourcePodJson("4", "other", 0));
  EXPECT_EQ(statuses_.size(), 1u) << "three changes of the count within the batch: no write yet";
  EXPECT_EQ(sum("egress_selected_pods"), 0) << "the metric is not batched";

  clock_.advance(StatusProcessor::kSelectedPodsBatch);
  quiesce();
  ASSERT_EQ(statuses_.size(), 2u) << "the batch's end writes the count once";
  EXPECT_EQ(selected(), 0);

  clock_.advance(std::chrono::seconds(10));
  modifiedAndReconciled("pods", sourcePodJson("5", "web", 0));
  ASSERT_EQ(statuses_.size(), 3u) << "after a quiet spell, at once";
  EXPECT_EQ(selected(), 1);
}

// The watch brings back the policy as this process's status update left it: nothing new, and no
// reconcile. Anyone else's write of the policy is one.
TEST_F(EgressGatewayControllerTest, TheEchoOfItsOwnStatusWriteCostsNoReconcile) {
  start();
  ASSERT_EQ(statuses_.size(), 1u) << "the first reconcile writes the status (NoPool)";
  const double first = reconciles();
  modifiedAndReconciled("egressgatewaypolicies", statuses_.back());
  EXPECT_EQ(reconciles(), first);

  rapidjson::Document d;
  d.Parse(statuses_.back().c_str());
  d["metadata"]["resourceVersion"].SetString("100", d.GetAllocator());
  d["metadata"]["labels"].SetObject().AddMember("team", "a", d.GetAllocator());
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  d.Accept(w);
  modifiedAndReconciled("egressgatewaypolicies", buf.GetString());
  EXPECT_EQ(reconciles(), first + 1);
}

// ns/web was deleted and re-created (uid-old, then uid-web) while the old one's slice still
// named its address. The new policy's first view write takes the slice over (same name, its own
// uid); the echo of that write is the event the former owner's release waits for: it costs a
// reconcile, which frees the address. (Filtered as an own write's echo, the address stayed held
// for nobody until something else queued the policy: the operator model's seed 12 found it.)
TEST_F(EgressGatewayControllerTest,
       TheEchoOfAViewWriteThatReplacedAFormerPolicysSliceFreesItsAddress) {
  const std::string held = "203.0.113.1";
  ipam::PolicyLedger old;
  old.owner = "uid-old";
  old.name = "ns/web";
  old.pool = "pool";
  old.entries = {{held}};
  ASSERT_TRUE(allocator_.rebuild({}, {old}).empty());
  start({{"ipampools", {kPoolJson}},
         {"operatorconfigs", {kConfigJson}},
         {"egresspolicyslices",
          {R"({"apiVersion":"networking.egressgateway.dev/v1alpha1","kind":"EgressPolicySlice",)"
           R"("metadata":{"name":"ns.web.0","resourceVersion":"5"},"spec":{"policy":)"
           R"({"namespace":"ns","name":"web","uid":"uid-old"},"gateway":{"egressIPs":)"
           R"([{"ips":["203.0.113.1"],"node":"node-1","pod":"gw-old","podUID":"uid-gw-old"}],)"
           R"("destinationCIDRs":["0.0.0.0/0"]}}})"}}});
  ASSERT_FALSE(slices_.empty()) << "the new policy's view took the slice over";
  ASSERT_EQ(allocator_.holderOf(*ipam::parseAddress(held)), "uid-old")
      << "held while the cache shows the former policy's slice";

  const double before = reconciles();
  modifiedAndReconciled("egresspolicyslices", slices_.back());
  EXPECT_GT(reconciles(), before);
  EXPECT_NE(allocator_.holderOf(*ipam::parseAddress(held)), "uid-old")
      << "freed (and perhaps taken again: the new policy may want it)";
  EXPECT_THAT(allocator_.ownersNamed("ns/web"), ::testing::ElementsAre("uid-web"));
}

// The Deployment cannot be written: the reconcile fails with the apply's error, the status (after
// the ledger) says ApplyFailed, and one Warning Event says so; a retry that fails the same way
// writes nothing and sends no second Event.
TEST_F(EgressGatewayControllerTest, AFailedApplyIsReportedOnceByTheStatusStepAfterIt) {
  refuseDeployments_ = true;
  start({{"ipampools", {kPoolJson}}, {"operatorconfigs", {kConfigJson}}});
  EXPECT_GE(sum("controller_runtime_reconcile_errors_total"), 1);
  ASSERT_EQ(statuses_.size(), 2u) << "the ledger, then what the apply's failure left";
  const auto available = lastCondition(kConditionGatewayAvailable);
  EXPECT_EQ(available.reason, kReasonApplyFailed);
  EXPECT_THAT(available.message, ::testing::HasSubstr("is forbidden"));
  EXPECT_EQ(lastCondition(kConditionReady).reason, kReasonApplyFailed);

  const double first = reconciles();
  clock_.advance(std::chrono::seconds(1));  // past the first backoff
  quiesce();
  EXPECT_GT(reconciles(), first) << "retried";
  EXPECT_EQ(statuses_.size(), 2u);
  testutil::runUntil(ioc_, [&] { return events_.size() >= 2; });
  EXPECT_THAT(events_, ::testing::UnorderedElementsAre("Normal Allocated", "Warning ApplyFailed"));
}

// While the apply keeps failing, the reconcile's result is the apply's error (retried with
// backoff): a change of the count alone is written at once, not left for a requeue that the
// error would drop.
TEST_F(EgressGatewayControllerTest, WhileTheApplyFailsACountChangeIsWrittenAtOnce) {
  refuseDeployments_ = true;
  start({{"ipampools", {kPoolJson}}, {"operatorconfigs", {kConfigJson}}});
  ASSERT_EQ(statuses_.size(), 2u) << "the ledger, then what the apply's failure left";
  modifiedAndReconciled("pods", sourcePodJson("2", "other", 0));
  ASSERT_EQ(statuses_.size(), 3u);
  rapidjson::Document d;
  d.Parse(statuses_.back().c_str());
  EXPECT_EQ(d["status"]["selectedPods"].GetInt(), 0);
  EXPECT_EQ(lastCondition(kConditionReady).reason, kReasonApplyFailed);
}

}  // namespace
}  // namespace egress::controller
