// Component tests of the IPPoolProcessor: one reconcile's allocation, holders and ledger write
// (with the DeploymentProcessor where the view it writes matters), with the shared cache fed by
// fake ListerWatchers and the writes sent through the REST client to the in-process API server
// of test/unit/kube.
#include "pkg/controller/egressgateway/ippool_processor.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "pkg/cache/informer_factory.h"
#include "pkg/controller/conditions.h"
#include "pkg/controller/egressgateway/deployment_processor.h"
#include "pkg/controller/egressgateway/status.h"
#include "pkg/controller/egressgateway/status_processor.h"
#include "pkg/controller/names.h"
#include "pkg/controller/pool_sync.h"
#include "pkg/kube/rest_client.h"
#include "test/testutil/run_sync.h"
#include "test/unit/cache/fake_lister_watcher.h"
#include "test/unit/controller/component_fixture.h"
#include "test/unit/controller/policy_info_builder.h"
#include "test/unit/kube/fake_api_client.h"
#include "test/unit/kube/fake_api_server.h"

namespace egress::controller {
namespace {

using controllerruntime::ReconcileResult;
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

class IPPoolProcessorTest : public testing::ComponentTest {
 protected:
  IPPoolProcessorTest() {
    makeContext([this](const kube::Resource& resource, const std::string&,
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
      lw->onWatch = [this](const kube::ListOptions&) -> kube::Result<std::unique_ptr<kube::Watch>> {
        return std::unique_ptr<kube::Watch>(
            std::make_unique<cache::testing::FakeWatch>(ioc_.get_executor()));
      };
      return lw;
    });
    factory_->start();
    runUntil([&] { return cache_->pools().hasSynced(); });
  }

  // `i` from "pool", with a Deployment of two available gateway pods, gw-a and gw-b.
  void fromPoolWithTwoGateways(EgressGatewayPolicyInfo& i) {
    i.poolName = "pool";
    i.pool = cache_->pool("pool");
    testing::addDeployment(i, 2, 2);
    addPod(i, "gw-a", 10);
    addPod(i, "gw-b", 11);
  }
  // A policy of two replicas from "pool", both gateway pods running, reconciled once.
  EgressGatewayPolicyInfo twoGateways() {
    auto two = testing::policyInfo(1, 2);
    fromPoolWithTwoGateways(two);
    EXPECT_TRUE(process(two).isDone());
    EXPECT_EQ(plan_.assignment->entries.size(), 2u);
    return two;
  }
  // `two` scaled down to one replica, gw-b gone; its status as `current` has it, or as `two`'s.
  EgressGatewayPolicyInfo scaledDown(const EgressGatewayPolicyInfo& two,
                                     const EgressGatewayPolicyInfo* current) {
    auto one = testing::policyInfo(2, 1);
    one.poolName = "pool";
    one.pool = cache_->pool("pool");
    if (current != nullptr) {
      one.current = current->current;
    } else {
      one.current->status = two.current->status;
    }
    testing::addDeployment(one, 1, 1);
    addPod(one, "gw-a", 10);
    return one;
  }
  // Node `node`'s agent Lease, renewed `renewed` s after a fixed moment, reporting `programmed`
  // and the slices' version `observed` ("": none reported).
  static coordination::Lease agentLease(const std::string& node, int renewed,
                                        const std::string& programmed,
                                        const std::string& observed) {
    coordination::Lease lease;
    lease.metadata.name = "egw-agent-" + node;
    lease.spec.holderIdentity = node;
    lease.spec.renewTime = meta::Time(std::chrono::seconds(1'800'000'000 + renewed));
    lease.spec.leaseDurationSeconds = 6;
    lease.metadata.annotations[std::string(kProgrammedAnnotation)] = programmed;
    if (!observed.empty()) {
      lease.metadata.annotations[std::string(kObservedSlicesAnnotation)] = observed;
    }
    return lease;
  }

  // The API server: a status update is answered with what was sent, an apply with what was
  // sent at the next resourceVersion (from 30), an Event with itself. Pods are never written.
  FakeResponse handle(const FakeRequest& r) override {
    if (r.target.find("/pods/") != std::string::npos) {
      podWrites_.push_back(r.method + " " + r.target);
    }
    if (r.target.find("/events") != std::string::npos) {
      events_.push_back(r.method + " " + r.body);
    }
    if (r.method == "PUT" && r.target.find("/status") != std::string::npos) {
      if (conflicts_ > 0) {
        --conflicts_;
        return json(409,
                    R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Conflict",)"
                    R"("code":409,"message":"the object has been modified"})");
      }
      ++statusWrites_;
      return json(200, r.body);
    }
    if (r.method == "PATCH" && r.target.find("/egresspolicyslices/") != std::string::npos) {
      rapidjson::Document d;
      d.Parse(r.body.c_str());
      auto& md = d["metadata"];
      const std::string rv = std::to_string(nextVersion_++);
      md.AddMember("resourceVersion", rapidjson::Value(rv.c_str(), d.GetAllocator()),
                   d.GetAllocator());
      rapidjson::StringBuffer buf;
      rapidjson::Writer<rapidjson::StringBuffer> w(buf);
      d.Accept(w);
      return json(200, buf.GetString());
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

  // The IPPoolProcessor's step as the controller runs it: plan_ is what it decided, and i.current
  // becomes the policy as written (the next reconcile starts from it until the watch shows it).
  ReconcileResult process(EgressGatewayPolicyInfo& i) {
    IPPoolProcessor processor(*ctx_);
    PolicyWriter writer(*ctx_, i);
    auto out = testutil::runSync(ioc_, processor.process(i, writer));
    i.current = writer.policy();
    plan_ = out.plan;
    return out.result;
  }

  std::vector<std::string> podWrites_;
  std::vector<std::string> events_;
  int statusWrites_ = 0;
  int conflicts_ = 0;  // status writes still to be answered 409
  int nextVersion_ = 30;
  LedgerPlan plan_;  // the last process()'s
};

// The holder is named in the same status write as the ledger, by pod name and uid, and the
// status this reconcile writes already counts the pod as holding its entry (Ready at once, not
// one more write later). No pod is written: a pod's annotations are anyone's in its namespace,
// so they are no record of who holds what.
TEST_F(IPPoolProcessorTest, TheLedgerWriteNamesTheHolderAndNoPodIsWritten) {
  auto i = info();
  addPod(i, "gw-a", 10);
  auto result = process(i);
  ASSERT_TRUE(result.isDone());
  ASSERT_TRUE(plan_.assignment);
  ASSERT_EQ(plan_.assignment->entries.size(), 1u);
  EXPECT_EQ(statusWrites_, 1);  // the ledger with its holder
  EXPECT_TRUE(podWrites_.empty()) << ::testing::PrintToString(podWrites_);
  ASSERT_EQ(i.current->status.gateways.size(), 1u);
  EXPECT_EQ(i.current->status.gateways[0].pod, "gw-a");
  EXPECT_EQ(i.current->status.gateways[0].podUID, "uid-gw-a");
  EXPECT_THAT(i.current->status.gateways[0].egressIPs, ::testing::ElementsAre("203.0.113.1"));

  const auto status =
      desiredStatus(i, *i.current, plan_, "", meta::Time(std::chrono::seconds(1'800'000'000)));
  const auto* ready = meta::findCondition(status.conditions, kConditionReady);
  ASSERT_NE(ready, nullptr);
  EXPECT_EQ(ready->status, "True") << ready->reason << ": " << ready->message;

  // Nothing changed: nothing is written again.
  ASSERT_TRUE(process(i).isDone());
  EXPECT_EQ(statusWrites_, 1);
}

// A ledger write that conflicts (someone wrote the policy since the cache saw it) requeues and
// tells nobody anything: no holder is named anywhere, no Event says Allocated, nothing is freed;
// the allocator keeps what it took, so the next try writes the same addresses, and its Event
// says Allocated (it did not: the allocator's "newly taken" was the first try's).
TEST_F(IPPoolProcessorTest, AConflictingLedgerWriteRequeuesAndTheRetryWritesTheSameLedger) {
  auto i = info();
  addPod(i, "gw-a", 10);
  conflicts_ = 1;
  auto result = process(i);
  EXPECT_EQ(result, ReconcileResult::requeue());
  EXPECT_EQ(statusWrites_, 0);
  EXPECT_TRUE(i.current->status.gateways.empty()) << "the copy the next try starts from";
  const auto taken = plan_.assignment->entries;
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(ctx_->allocator.holderOf(taken[0].front()), "ns/p");

  auto retry = info();
  addPod(retry, "gw-a", 10);
  ASSERT_TRUE(process(retry).isDone());
  EXPECT_EQ(statusWrites_, 1);
  EXPECT_EQ(plan_.assignment->entries, taken);
  EXPECT_EQ(retry.current->status.gateways.at(0).pod, "gw-a");
  testutil::runSync(ioc_, flushEvents(*recorder_, clock_.now() + std::chrono::seconds(30)));
  ASSERT_EQ(events_.size(), 1u) << ::testing::PrintToString(events_);
  EXPECT_THAT(events_[0], ::testing::HasSubstr("Allocated"));
}

// A ledger write fails, and before the retry the spec turns invalid (replicas: 0): an invalid
// policy is not assigned again, so nothing would ever return what the allocator took for the
// write that never landed. The status write that reports InvalidSpec is a compare-and-swap on a
// ledger without it; once it succeeds, the address goes back to the pool. (Found by the model
// test, seed 7: a pool full of addresses nobody held.)
TEST_F(IPPoolProcessorTest, AnAddressTakenForALedgerWriteThatFailedIsReturnedOnceTheSpecIsInvalid) {
  auto i = info();
  addPod(i, "gw-a", 10);
  conflicts_ = 1;
  ASSERT_EQ(process(i), ReconcileResult::requeue());
  const auto taken = plan_.assignment->entries.at(0).front();
  ASSERT_EQ(ctx_->allocator.holderOf(taken), "ns/p");

  auto invalid = testing::policyInfo(2, 0);
  invalid.poolName = "pool";
  invalid.pool = cache_->pool("pool");
  ASSERT_TRUE(process(invalid).isDone());
  ASSERT_FALSE(plan_.assignment);
  EXPECT_EQ(ctx_->allocator.holderOf(taken), "ns/p") << "not before a write confirms the ledger";

  StatusProcessor status(*ctx_);
  PolicyWriter writer(*ctx_, invalid);
  ASSERT_TRUE(testutil::runSync(ioc_, status.process(invalid, plan_, "", writer)).isDone());
  EXPECT_EQ(statusWrites_, 1);
  EXPECT_EQ(ctx_->allocator.holderOf(taken), "") << "the write confirmed a ledger without it";
}

// The same, while a live agent has yet to observe the slices' version (it may have read a view
// naming the address): the InvalidSpec write leaves it held. Once the agent has caught up, the
// policy's next reconcile returns it, though its status has nothing new to write. (It stayed held
// for nobody until a spec change: the operator model's seed 22 found it.)
TEST_F(IPPoolProcessorTest, AnInvalidPolicysUnwrittenAddressIsReturnedOnceTheAgentsCaughtUp) {
  agents_.observe(agentLease("node-a", 0, "", "9"), clock_.now());
  auto i = info();
  addPod(i, "gw-a", 10);
  conflicts_ = 1;
  ASSERT_EQ(process(i), ReconcileResult::requeue());
  const auto taken = plan_.assignment->entries.at(0).front();

  auto invalid = testing::policyInfo(2, 0);
  invalid.poolName = "pool";
  invalid.pool = cache_->pool("pool");
  ASSERT_TRUE(process(invalid).isDone());
  StatusProcessor status(*ctx_);
  PolicyWriter writer(*ctx_, invalid);
  ASSERT_TRUE(testutil::runSync(ioc_, status.process(invalid, plan_, "", writer)).isDone());
  ASSERT_EQ(statusWrites_, 1);
  EXPECT_EQ(ctx_->allocator.holderOf(taken), "ns/p") << "node-a is behind the slices' version";

  agents_.observe(agentLease("node-a", 2, "", "10"), clock_.now());
  EXPECT_EQ(agents_.settle(clock_.now()), std::set<std::string>{"ns/p"});
  invalid.current = writer.policy();
  invalid.current->metadata.generation = 2;  // this fake answers a status update without it
  ASSERT_TRUE(process(invalid).isDone());
  PolicyWriter unchanged(*ctx_, invalid);
  ASSERT_TRUE(testutil::runSync(ioc_, status.process(invalid, plan_, "", unchanged)).isDone());
  EXPECT_EQ(statusWrites_, 1) << "nothing new to write";
  EXPECT_EQ(ctx_->allocator.holderOf(taken), "");
}

// A holder being deleted keeps its entry until it is gone; then the oldest waiting pod takes it,
// in one status write.
TEST_F(IPPoolProcessorTest, AHolderBeingDeletedKeepsItsEntryUntilGoneThenTheOldestWaiterTakesIt) {
  auto i = info();
  addPod(i, "gw-a", 10);
  ASSERT_TRUE(process(i).isDone());
  i.egressPods["gw-a"].terminating = true;
  addPod(i, "gw-c", 30);
  addPod(i, "gw-b", 20);
  ASSERT_TRUE(process(i).isDone());
  EXPECT_EQ(statusWrites_, 1);
  EXPECT_EQ(i.current->status.gateways.at(0).pod, "gw-a");
  i.egressPods.erase("gw-a");
  ASSERT_TRUE(process(i).isDone());
  EXPECT_EQ(statusWrites_, 2);
  ASSERT_EQ(i.current->status.gateways.size(), 1u);
  EXPECT_EQ(i.current->status.gateways[0].pod, "gw-b");
  EXPECT_EQ(i.current->status.gateways[0].podUID, "uid-gw-b");
}

// Scaled down, an address leaves the ledger at once but stays held while a live agent still
// answers for it (another policy's holder must not take it before that agent lets go); once its
// report no longer lists it, the next commit frees it.
TEST_F(IPPoolProcessorTest, AnAddressALiveAgentStillAnswersForIsNotFreed) {
  auto two = twoGateways();
  const auto second = plan_.assignment->entries[1].front();
  ASSERT_EQ(ctx_->allocator.holderOf(second), "ns/p");
  agents_.observe(agentLease("node-gw-b", 0, second.toString(), ""), clock_.now());

  auto one = scaledDown(two, nullptr);
  ASSERT_TRUE(process(one).isDone());
  EXPECT_EQ(plan_.assignment->entries.size(), 1u);
  EXPECT_EQ(ctx_->allocator.holderOf(second), "ns/p") << "freed while node-gw-b answers for it";

  // The agent let go (its view no longer lists the address), from a read of the slices that
  // the cache has seen too: freed.
  agents_.observe(agentLease("node-gw-b", 2, "", "10"), clock_.now());
  auto again = scaledDown(two, &one);
  ASSERT_TRUE(process(again).isDone());
  EXPECT_EQ(ctx_->allocator.holderOf(second), "");
}

// A new leader finds free what its predecessor may have dropped from the view moments before,
// while an agent that read the older view answers for it without having said so. So until every
// live agent reports the slices as of the leader's start, nothing is handed out afresh: the
// policy says why (AgentsCatchingUp), and is queued again once they have.
TEST_F(IPPoolProcessorTest, ANewLeaderAllocatesNothingUntilEveryLiveAgentObservedItsStart) {
  agents_.observe(agentLease("node-a", 0, "", "9"), clock_.now());
  agents_.setStartVersion("10");
  auto fresh = [&](int64_t generation) {
    auto info = testing::policyInfo(generation, 1);
    info.poolName = "pool";
    info.pool = cache_->pool("pool");
    testing::addDeployment(info, 1, 1);
    addPod(info, "gw-a", 10);
    return info;
  };
  auto first = fresh(1);
  ASSERT_TRUE(process(first).isDone());
  EXPECT_TRUE(plan_.assignment->entries.empty());
  EXPECT_EQ(plan_.assignment->shortfall, ipam::Shortfall::kAgentsCatchingUp);
  EXPECT_TRUE(agents_.settle(clock_.now()).empty());

  agents_.observe(agentLease("node-a", 2, "", "10"), clock_.now());
  EXPECT_EQ(agents_.settle(clock_.now()), std::set<std::string>{"ns/p"});
  EXPECT_FALSE(agents_.startPending(clock_.now()));
  auto second = fresh(2);
  ASSERT_TRUE(process(second).isDone());
  EXPECT_EQ(plan_.assignment->entries.size(), 1u);
}

// The allocator reports a policy's first shortfall only: one the start barrier held back is
// queued again when it clears whatever was reported first (here a loopback explicit address,
// AddressReserved, ahead of the pool address the barrier kept it from).
TEST_F(IPPoolProcessorTest, APolicyTheStartBarrierHeldBackIsQueuedWhateverItsFirstShortfall) {
  agents_.observe(agentLease("node-a", 0, "", "9"), clock_.now());
  agents_.setStartVersion("10");
  auto info = testing::policyInfo(1, 2);
  auto policy = std::make_shared<v1alpha1::EgressGatewayPolicy>(*info.policy);
  policy->spec.egressIP.addresses = {"127.0.0.1"};
  info.policy = policy;
  info.current = *policy;
  fromPoolWithTwoGateways(info);
  ASSERT_TRUE(process(info).isDone());
  EXPECT_EQ(plan_.assignment->shortfall, ipam::Shortfall::kAddressReserved);
  EXPECT_TRUE(plan_.assignment->entries.empty());
  agents_.observe(agentLease("node-a", 2, "", "10"), clock_.now());
  EXPECT_EQ(agents_.settle(clock_.now()), std::set<std::string>{"ns/p"});
}

// An agent programs what it read and reports it on its next Lease write: between the two, its
// report says nothing of an address it already answers for. So an address the view dropped
// stays held until every live agent reports having observed the slices as of the drop (the
// cache shows them at version 10 here), whatever its report lists; an agent gone stale no
// longer counts. Then the policy is queued again (settle) and its release goes through.
TEST_F(IPPoolProcessorTest, AnAddressTheViewDroppedStaysHeldUntilEveryLiveAgentObservedTheDrop) {
  auto two = twoGateways();
  const auto second = plan_.assignment->entries[1].front();
  // node-a is up to date; node-b read the slices before the drop (version 9), and its report
  // claims nothing: it may have programmed `second` and not said so yet.
  agents_.observe(agentLease("node-a", 0, "", "10"), clock_.now());
  agents_.observe(agentLease("node-b", 0, "", "9"), clock_.now());

  auto one = scaledDown(two, nullptr);
  ASSERT_TRUE(process(one).isDone());
  EXPECT_EQ(plan_.assignment->entries.size(), 1u);
  EXPECT_EQ(ctx_->allocator.holderOf(second), "ns/p") << "freed before node-b observed the drop";
  EXPECT_TRUE(agents_.settle(clock_.now()).empty());

  // A renewal that has not caught up changes nothing; an agent that never reported a version
  // (a predecessor's Lease, or one that has not synced) counts as behind.
  agents_.observe(agentLease("node-b", 2, "", "9"), clock_.now());
  agents_.observe(agentLease("node-c", 2, "", ""), clock_.now());
  auto again = scaledDown(two, &one);
  ASSERT_TRUE(process(again).isDone());
  EXPECT_EQ(ctx_->allocator.holderOf(second), "ns/p");
  EXPECT_TRUE(agents_.settle(clock_.now()).empty());

  // node-b catches up; node-c's Lease runs out (a stale agent has fenced itself): the policy is
  // queued once, and its next reconcile frees the address.
  agents_.observe(agentLease("node-b", 4, "", "12"), clock_.now());
  clock_.advance(std::chrono::seconds(7));
  agents_.observe(agentLease("node-a", 7, "", "12"), clock_.now());
  agents_.observe(agentLease("node-b", 7, "", "12"), clock_.now());
  EXPECT_EQ(agents_.settle(clock_.now()), std::set<std::string>{"ns/p"});
  EXPECT_TRUE(agents_.settle(clock_.now()).empty()) << "woken once per catching up";
  auto last = scaledDown(two, &one);
  ASSERT_TRUE(process(last).isDone());
  EXPECT_EQ(ctx_->allocator.holderOf(second), "");
  EXPECT_EQ(agents_.withdrawals(), 0u) << "forgotten once free";
}

// A policy deleted and re-created under the same name is another owner: it allocates afresh, and
// its predecessor's address stays held while a slice of the predecessor's uid is still
// published (an agent may program it), then is freed (with an Event on the new policy).
TEST_F(IPPoolProcessorTest, ARecreatedPolicyStartsAfreshAndItsPredecessorWaitsForItsView) {
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
  const auto first = plan_.assignment->entries.at(0).front();
  ASSERT_EQ(ctx_->allocator.holderOf(first), "uid-old");

  auto fresh = withUid("uid-new");
  addPod(fresh, "gw-new", 20);
  auto oldSlice = std::make_shared<v1alpha1::EgressPolicySlice>();
  oldSlice->metadata.name = "ns.p.0";
  oldSlice->spec.policy.namespace_ = "ns";
  oldSlice->spec.policy.name = "p";
  oldSlice->spec.policy.uid = "uid-old";
  oldSlice->spec.gateway.emplace();
  oldSlice->spec.gateway->egressIPs.push_back({{first.toString()}, "node-gw-old", "gw-old", ""});
  fresh.deployment.slices = {oldSlice};
  ASSERT_TRUE(process(fresh).isDone());
  ASSERT_EQ(plan_.assignment->entries.size(), 1u);
  EXPECT_NE(plan_.assignment->entries[0].front(), first) << "inherited the predecessor's address";
  EXPECT_EQ(ctx_->allocator.holderOf(plan_.assignment->entries[0].front()), "uid-new");

  IPPoolProcessor processor(*ctx_);
  EXPECT_FALSE(processor.releaseFormerOwners(fresh)) << "its view still names it";
  EXPECT_EQ(ctx_->allocator.holderOf(first), "uid-old");
  // A pod labelled as the name's gateway, whatever it carries, holds nothing back: only the
  // view and the agents' reports do.
  fresh.deployment.slices.clear();
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
  ASSERT_EQ(plan_.assignment->shortfall, ipam::Shortfall::kPoolExhausted);
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

// The slice cache lags the apply that published an address with its holder. A scale-down
// reconciled in that window must not free the address an agent may already program (and hand
// it to another policy): the reconcile reads the view as this process wrote it, until the cache
// shows that write.
TEST_F(IPPoolProcessorTest, AnAddressTheViewJustNamedIsNotFreedBeforeTheCacheShowsIt) {
  // One of each across the reconciles: the DeploymentProcessor remembers its writes.
  IPPoolProcessor ipPool(*ctx_);
  DeploymentProcessor deployment(*ctx_);
  auto withPods = [&](int64_t generation, int32_t replicas) {
    auto i = testing::policyInfo(generation, replicas);
    i.poolName = "pool";
    i.pool = cache_->pool("pool");
    testing::addDeployment(i, replicas, replicas);
    addPod(i, "gw-a", 10);
    addPod(i, "gw-b", 11);
    return i;
  };
  auto reconcile = [&](EgressGatewayPolicyInfo& i) {
    deployment.useOwnViewWrites(i);
    PolicyWriter writer(*ctx_, i);
    auto ledger = testutil::runSync(ioc_, ipPool.process(i, writer));
    ASSERT_TRUE(ledger.result.isDone());
    auto applied = testutil::runSync(ioc_, deployment.process(i, writer.policy(), ledger.plan));
    ASSERT_TRUE(applied.result.isDone());
    i.current = writer.policy();
    plan_ = ledger.plan;
  };
  auto two = withPods(1, 2);
  reconcile(two);
  const auto second = *ipam::parseAddress("203.0.113.2");
  ASSERT_EQ(two.current->status.gateways.at(1).pod, "gw-b");

  auto one = withPods(2, 1);  // scaled down; the cache has no slice yet
  one.current->status = two.current->status;
  reconcile(one);
  ASSERT_EQ(plan_.assignment->entries.size(), 1u);
  EXPECT_TRUE(one.viewInFlight.contains(second));
  EXPECT_EQ(ctx_->allocator.holderOf(second), "ns/p") << "freed while the view names it";

  // The cache shows the latest write (resourceVersion 31: the slice without the address): the
  // cache is believed again, and the address no view names any more is freed.
  auto caughtUp = withPods(2, 1);
  caughtUp.current = one.current;
  auto slice = std::make_shared<v1alpha1::EgressPolicySlice>();
  slice->metadata.name = "ns.p.0";
  slice->metadata.resourceVersion = "31";
  slice->spec.policy.namespace_ = "ns";
  slice->spec.policy.name = "p";
  slice->spec.gateway.emplace();
  slice->spec.gateway->egressIPs.push_back({{"203.0.113.1"}, "node-gw-a", "gw-a", "uid-gw-a"});
  caughtUp.deployment.slices = {slice};
  reconcile(caughtUp);
  EXPECT_TRUE(caughtUp.viewInFlight.empty());
  EXPECT_EQ(ctx_->allocator.holderOf(second), "");
}

// A new leader finds a deleted policy's addresses only in its published view (no ledger: the
// policy is gone, so its owner has no pool on record). Once the view is gone they are freed, and
// the policy waiting for an address of their pool is queued: the freed addresses say which pool
// they return to. (Found by the model test, seed 20: a pool with free addresses and a policy
// that waited for them for good.)
TEST_F(IPPoolProcessorTest, AnAddressHeldOnlyForAViewWakesThePolicyWaitingForItsPoolWhenFreed) {
  syncPoolFromCache(*ctx_, "pool");
  const auto spec = *ctx_->allocator.poolSpec("pool");
  ctx_->allocator.rebuild(
      {spec}, {},
      {{"uid-gone", "ns/gone", "EgressPolicySlice ns.gone.0", {"203.0.113.1", "203.0.113.2"}}});
  auto i = info();
  addPod(i, "gw-a", 10);
  ASSERT_TRUE(process(i).isDone());
  ASSERT_EQ(plan_.assignment->shortfall, ipam::Shortfall::kPoolExhausted);

  testing::RecordingController policies({"policies", 1, clock_, ioc_.get_executor(), nullptr});
  ctx_->policies.connect(policies.enqueuer());
  net::co_spawn(ioc_, policies.run(), net::detached);
  EgressGatewayPolicyInfo gone;
  gone.key = "ns/gone";
  gone.ns = "ns";
  gone.name = "gone";
  IPPoolProcessor processor(*ctx_);
  EXPECT_TRUE(processor.releaseFormerOwners(gone));
  settle();
  EXPECT_THAT(policies.keys, ::testing::ElementsAre("ns/p"));
  policies.stop();
  settle();
}

}  // namespace
}  // namespace egress::controller
