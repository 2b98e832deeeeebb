// Component tests of the IPPoolProcessor: one reconcile's allocation, ledger write and gateway-pod
// annotation, with the shared cache fed by fake ListerWatchers and the writes sent through the
// REST client to the in-process API server of test/unit/kube.
#include "pkg/controller/egressgateway/ippool_processor.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pkg/cache/informer_factory.h"
#include "pkg/controller/conditions.h"
#include "pkg/controller/egressgateway/status.h"
#include "pkg/controller/names.h"
#include "pkg/kube/rest_client.h"
#include "test/testutil/run_sync.h"
#include "test/unit/cache/fake_lister_watcher.h"
#include "test/unit/controller/policy_info_builder.h"
#include "test/unit/kube/fake_api_client.h"
#include "test/unit/kube/fake_api_server.h"

namespace egress::controller {
namespace {

using controllerruntime::ReconcileResult;
using kube::testing::FakeApiServer;
using kube::testing::FakeRequest;
using kube::testing::FakeResponse;

FakeResponse json(int status, std::string body) {
  FakeResponse r;
  r.status = status;
  r.headers = {{"Content-Type", "application/json"}};
  r.body = std::move(body);
  return r;
}

constexpr char kPoolJson[] =
    R"({"apiVersion":"networking.egressgateway.dev/v1alpha1","kind":"IPAMPool",)"
    R"("metadata":{"name":"pool","resourceVersion":"3","creationTimestamp":"2026-11-01T00:00:00Z"},)"
    R"("spec":{"cidrs":["203.0.113.0/30"]}})";

// The recorder's shutdown(), as an awaitable with a value for runSync.
net::awaitable<bool> flushEvents(controllerruntime::EventRecorder& recorder,
                                 Clock::TimePoint deadline) {
  co_await recorder.shutdown(deadline);
  co_return true;
}

class IPPoolProcessorTest : public ::testing::Test {
 protected:
  IPPoolProcessorTest() {
    factory_ = std::make_unique<cache::SharedInformerFactory>(
        [this](const kube::Resource& resource, const std::string&,
               const std::string&) -> std::unique_ptr<cache::ListerWatcher> {
          auto lw = std::make_unique<cache::testing::FakeListerWatcher>();
          const bool pools = resource.resource == "ipampools";
          lw->onList = [pools](const kube::ListOptions&) {
            std::vector<std::string> items;
            if (pools) {
              items.push_back(kPoolJson);
            }
            return kube::Result<rapidjson::Document>(cache::testing::listDoc(items, "10"));
          };
          lw->onWatch =
              [this](const kube::ListOptions&) -> kube::Result<std::unique_ptr<kube::Watch>> {
            return std::unique_ptr<kube::Watch>(
                std::make_unique<cache::testing::FakeWatch>(ioc_.get_executor()));
          };
          return lw;
        },
        clock_, ioc_.get_executor());
    cache_ = std::make_unique<Cache>(*factory_, true);
    factory_->start();
    runUntil([&] { return cache_->pools().hasSynced(); });

    auto c = kube::testing::clientFor(ioc_.get_executor(), server_);
    EXPECT_TRUE(c) << c.error().message();
    client_ = std::move(*c);
    recorder_ = std::make_unique<controllerruntime::EventRecorder>(
        ioc_.get_executor(), *client_, clock_, controllerruntime::EventRecorderOptions{}, nullptr);
    ctx_ = std::make_unique<Context>(
        Context{*client_, *cache_, allocator_, *recorder_, clock_, metrics_, agents_, {}, {}, {}});
  }

  ~IPPoolProcessorTest() override {
    recorder_.reset();
    factory_->stop();
    server_.closeAll();
    for (int i = 0; i < 100 && ioc_.poll() > 0; ++i) {
      ioc_.restart();
    }
  }

  void runUntil(const std::function<bool()>& done) {
    ASSERT_TRUE(testutil::runUntil(ioc_, done)) << "the io_context went idle first";
  }

  // The API server: a status update is answered with what was sent, a pod patch with the pod
  // (404 for the pods in gone_), an Event with itself.
  FakeResponse handle(const FakeRequest& r) {
    if (r.method == "PATCH" && r.target.find("/pods/") != std::string::npos) {
      const std::string name = r.target.substr(r.target.rfind('/') + 1);
      const std::string pod = name.substr(0, name.find('?'));
      patched_.push_back(pod + " " + r.body);
      if (gone_.count(pod) != 0) {
        return json(404,
                    R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound",)"
                    R"("code":404,"message":"pods \")" +
                        pod + R"(\" not found"})");
      }
      return json(200, R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + pod +
                           R"(","namespace":"ns","resourceVersion":"20"}})");
    }
    if (r.target.find("/events") != std::string::npos) {
      events_.push_back(r.method + " " + r.body);
    }
    if (r.method == "PUT" && r.target.find("/status") != std::string::npos) {
      ++statusWrites_;
      return json(200, r.body);
    }
    return json(201, r.body);
  }

  // A policy of one replica from IPAMPool "pool", its ledger not yet written, and its Deployment
  // already rolled out (as after an operator restart, or a Deployment that came up fast).
  EgressGatewayPolicyInfo info() {
    auto i = testing::policyInfo(1, 1);
    i.poolName = "pool";
    i.pool = cache_->pool("pool");
    testing::addDeployment(i, 1, 1);
    return i;
  }

  void addPod(EgressGatewayPolicyInfo& i, const std::string& name, int64_t created) {
    auto& p = testing::addGatewayPod(i, name, created);
    p.ready = true;
    p.containersReady = true;
  }

  ReconcileResult process(EgressGatewayPolicyInfo& i) {
    IPPoolProcessor processor(*ctx_);
    auto result = testutil::runSync(ioc_, processor.process(i));
    return result;
  }

  net::io_context ioc_;
  FakeClock clock_{ioc_.get_executor()};
  FakeApiServer server_{ioc_, [this](const FakeRequest& r) { return handle(r); }};
  std::unique_ptr<kube::RestClient> client_;
  std::unique_ptr<cache::SharedInformerFactory> factory_;
  std::unique_ptr<Cache> cache_;
  ipam::Allocator allocator_;
  Metrics metrics_{nullptr};
  Agents agents_;
  std::unique_ptr<controllerruntime::EventRecorder> recorder_;
  std::unique_ptr<Context> ctx_;
  std::set<std::string> gone_;
  std::vector<std::string> patched_;
  std::vector<std::string> events_;
  int statusWrites_ = 0;
};

// The pod's annotation reaches the cache only with the watch's next event; the status this
// reconcile writes must already count the pod as holding its entry. Otherwise a pod that is Ready
// by then is reported as holding nothing (Ready=False GatewaysNotReady, no gateways[].pod), and
// the watch event costs a second status write that says Ready.
TEST_F(IPPoolProcessorTest, TheReconcileThatAnnotatesAPodSeesItHoldItsEntry) {
  auto i = info();
  addPod(i, "gw-a", 10);
  auto result = process(i);
  ASSERT_TRUE(result.isDone());
  ASSERT_TRUE(i.assignment);
  ASSERT_EQ(i.assignment->entries.size(), 1u);
  EXPECT_EQ(statusWrites_, 1);  // the ledger
  ASSERT_EQ(patched_.size(), 1u);
  EXPECT_THAT(patched_[0], ::testing::HasSubstr("203.0.113.1"));

  EXPECT_EQ(i.egressPods["gw-a"].egressIPs, "203.0.113.1");
  const auto status = desiredStatus(i, meta::Time(std::chrono::seconds(1'800'000'000)));
  const auto* ready = meta::findCondition(status.conditions, kConditionReady);
  ASSERT_NE(ready, nullptr);
  EXPECT_EQ(ready->status, "True") << ready->reason << ": " << ready->message;
  ASSERT_EQ(status.gateways.size(), 1u);
  EXPECT_EQ(status.gateways[0].pod, "gw-a");
}

// A pod deleted before its patch holds nothing: the entry stays free for the pod that replaces
// it, and the status does not report a holder that is gone.
TEST_F(IPPoolProcessorTest, APodGoneBeforeItsPatchHoldsNothing) {
  auto i = info();
  addPod(i, "gw-a", 10);
  gone_.insert("gw-a");
  auto result = process(i);
  ASSERT_TRUE(result.isDone());
  ASSERT_EQ(patched_.size(), 1u);
  EXPECT_EQ(i.egressPods["gw-a"].egressIPs, "");
  const auto status = desiredStatus(i, meta::Time(std::chrono::seconds(1'800'000'000)));
  ASSERT_EQ(status.gateways.size(), 1u);
  EXPECT_EQ(status.gateways[0].pod, "");
}

// Scaled down, an address leaves the ledger at once but stays held while a live agent still
// answers for it (another policy's holder must not take it before that agent lets go); once its
// report no longer lists it, the next commit frees it.
TEST_F(IPPoolProcessorTest, AnAddressALiveAgentStillAnswersForIsNotFreed) {
  auto two = testing::policyInfo(1, 2);
  two.poolName = "pool";
  two.pool = cache_->pool("pool");
  testing::addDeployment(two, 2, 2);
  addPod(two, "gw-a", 10);
  addPod(two, "gw-b", 11);
  ASSERT_TRUE(process(two).isDone());
  ASSERT_EQ(two.assignment->entries.size(), 2u);
  const auto second = two.assignment->entries[1].front();
  ASSERT_EQ(ctx_->allocator.holderOf(second), "ns/p");

  coordination::Lease lease;
  lease.metadata.name = "egw-agent-node-gw-b";
  lease.spec.holderIdentity = "node-gw-b";
  lease.spec.renewTime = meta::Time(std::chrono::seconds(1'800'000'000));
  lease.spec.leaseDurationSeconds = 6;
  lease.metadata.annotations[std::string(kProgrammedAnnotation)] = second.toString();
  agents_.observe(lease, clock_.now());

  auto scaledDown = [&] {
    auto one = testing::policyInfo(2, 1);
    one.poolName = "pool";
    one.pool = cache_->pool("pool");
    one.current->status = two.current->status;
    testing::addDeployment(one, 1, 1);
    addPod(one, "gw-a", 10);
    one.egressPods["gw-a"].egressIPs = two.egressPods["gw-a"].egressIPs;
    return one;
  };
  auto one = scaledDown();
  ASSERT_TRUE(process(one).isDone());
  EXPECT_EQ(one.assignment->entries.size(), 1u);
  EXPECT_EQ(ctx_->allocator.holderOf(second), "ns/p") << "freed while node-gw-b answers for it";

  // The agent let go (its view no longer lists the address): freed.
  lease.spec.renewTime = meta::Time(std::chrono::seconds(1'800'000'002));
  lease.metadata.annotations[std::string(kProgrammedAnnotation)] = "";
  agents_.observe(lease, clock_.now());
  auto again = scaledDown();
  again.current = one.current;
  ASSERT_TRUE(process(again).isDone());
  EXPECT_EQ(ctx_->allocator.holderOf(second), "");
}

// A policy deleted and re-created under the same name is another owner: it allocates afresh, and
// its predecessor's address stays held while a pod of the name that is not the new policy's own
// is left, then is freed (with an Event on the new policy).
TEST_F(IPPoolProcessorTest, ARecreatedPolicyStartsAfreshAndItsPredecessorWaitsForItsPods) {
  auto withUid = [&](const std::string& uid) {
    auto i = info();
    auto policy = std::make_shared<v1alpha1::EgressGatewayPolicy>(*i.policy);
    policy->metadata.uid = uid;
    i.policy = policy;
    i.current = *policy;
    return i;
  };
  auto old = withUid("uid-old");
  addPod(old, "gw-old", 10);
  ASSERT_TRUE(process(old).isDone());
  const auto first = old.assignment->entries.at(0).front();
  ASSERT_EQ(ctx_->allocator.holderOf(first), "uid-old");

  auto fresh = withUid("uid-new");
  addPod(fresh, "gw-new", 20);
  auto oldPod = std::make_shared<core::Pod>(*old.egressPods.at("gw-old").pod);
  oldPod->metadata.annotations[std::string(kEgressIPsAnnotation)] = first.toString();
  fresh.unprovenGatewayPods.push_back(oldPod);
  ASSERT_TRUE(process(fresh).isDone());
  ASSERT_EQ(fresh.assignment->entries.size(), 1u);
  EXPECT_NE(fresh.assignment->entries[0].front(), first) << "inherited the predecessor's address";
  EXPECT_EQ(ctx_->allocator.holderOf(fresh.assignment->entries[0].front()), "uid-new");

  IPPoolProcessor processor(*ctx_);
  EXPECT_FALSE(processor.releaseFormerOwners(fresh)) << "its old gateway still carries it";
  EXPECT_EQ(ctx_->allocator.holderOf(first), "uid-old");
  // A pod of the name that carries none of its addresses (a forgery, or a gateway of the new
  // policy) does not hold the old addresses back.
  auto forged = std::make_shared<core::Pod>(*oldPod);
  forged->metadata.annotations[std::string(kEgressIPsAnnotation)] = "203.0.113.3";
  fresh.unprovenGatewayPods = {forged};
  EXPECT_TRUE(processor.releaseFormerOwners(fresh));
  EXPECT_EQ(ctx_->allocator.holderOf(first), "");
  EXPECT_THAT(ctx_->allocator.ownersNamed("ns/p"), ::testing::ElementsAre("uid-new"));
}

// A shortfall is reported once per transition, also while the watch has yet to deliver the
// status that says so: the check reads what this process wrote (info.current, which
// useOwnWrite makes the newer copy), not the cached policy.
TEST_F(IPPoolProcessorTest, AShortfallIsReportedOnceBeforeTheWatchCatchesUp) {
  auto three = [&] {
    auto i = testing::policyInfo(1, 3);  // the pool has two addresses
    i.poolName = "pool";
    i.pool = cache_->pool("pool");
    testing::addDeployment(i, 2, 2);
    return i;
  };
  auto first = three();
  ASSERT_TRUE(process(first).isDone());
  ASSERT_EQ(first.assignment->shortfall, ipam::Shortfall::kPoolExhausted);
  ASSERT_EQ(statusWrites_, 1);
  auto again = three();  // the cached policy has no status yet; our own write is newer
  again.current = first.current;
  ASSERT_TRUE(process(again).isDone());
  EXPECT_EQ(statusWrites_, 1);
  // Every queued Event written (the writers run concurrently: polling alone may stop before the
  // last one's request is answered).
  testutil::runSync(ioc_, flushEvents(*recorder_, clock_.now() + std::chrono::seconds(30)));
  // Allocated and PoolExhausted, each created once; a repeat would be a PATCH of its count.
  ASSERT_EQ(events_.size(), 2u) << ::testing::PrintToString(events_);
  EXPECT_THAT(events_[1], ::testing::HasSubstr("PoolExhausted"));
}

// The pod cache lags the patch that gave a pod its entry. A scale-down reconciled in that window
// must not free the address the pod now carries (and hand it to another policy): the reconcile
// reads the pod's annotation as this process wrote it, until the cache shows that write.
TEST_F(IPPoolProcessorTest, AnAddressJustGivenToAPodIsNotFreedBeforeTheCacheShowsIt) {
  IPPoolProcessor processor(*ctx_);  // one across the reconciles: it remembers its writes
  auto withPods = [&](int64_t generation, int32_t replicas) {
    auto i = testing::policyInfo(generation, replicas);
    i.poolName = "pool";
    i.pool = cache_->pool("pool");
    testing::addDeployment(i, replicas, replicas);
    for (const auto& [name, created] :
         {std::pair<std::string, int64_t>{"gw-a", 10}, {"gw-b", 11}}) {
      addPod(i, name, created);
      auto pod = std::make_shared<core::Pod>(*i.egressPods[name].pod);
      pod->metadata.uid = "uid-" + name;
      pod->metadata.resourceVersion = "10";  // as cached before the patches (which return "20")
      i.egressPods[name].pod = pod;
    }
    return i;
  };
  auto two = withPods(1, 2);
  ASSERT_TRUE(testutil::runSync(ioc_, processor.process(two)).isDone());
  ASSERT_EQ(two.egressPods["gw-b"].egressIPs, "203.0.113.2");

  auto one = withPods(2, 1);  // scaled down; the cache has neither annotation yet
  one.current->status = two.current->status;
  processor.useOwnPodWrites(one);
  EXPECT_EQ(one.egressPods["gw-b"].egressIPs, "203.0.113.2");
  ASSERT_TRUE(testutil::runSync(ioc_, processor.process(one)).isDone());
  ASSERT_EQ(one.assignment->entries.size(), 1u);
  EXPECT_EQ(ctx_->allocator.holderOf(*ipam::parseAddress("203.0.113.2")), "ns/p")
      << "freed while gw-b carries it";
  EXPECT_EQ(one.egressPods["gw-b"].egressIPs, "") << "its surplus entry is taken back";

  // The cache shows the patches (resourceVersion 20): the cache is believed again, and the
  // address that no pod carries any more is freed.
  auto caughtUp = withPods(2, 1);
  caughtUp.current = one.current;
  for (auto& [name, p] : caughtUp.egressPods) {
    auto pod = std::make_shared<core::Pod>(*p.pod);
    pod->metadata.resourceVersion = "20";
    p.pod = pod;
  }
  caughtUp.egressPods["gw-a"].egressIPs = "203.0.113.1";
  processor.useOwnPodWrites(caughtUp);
  ASSERT_TRUE(testutil::runSync(ioc_, processor.process(caughtUp)).isDone());
  EXPECT_EQ(ctx_->allocator.holderOf(*ipam::parseAddress("203.0.113.2")), "");
}

}  // namespace
}  // namespace egress::controller
