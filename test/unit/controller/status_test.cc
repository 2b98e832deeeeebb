#include "pkg/controller/egressgateway/status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "pkg/controller/controller.h"
#include "pkg/controller/names.h"
#include "test/unit/controller/policy_info_builder.h"

namespace egress::controller {
namespace {

using testing::addDeployment;
using ::testing::ElementsAre;

const meta::Time kNow = meta::Time(std::chrono::seconds(1'800'000'000));

ipam::Entry entry(const std::string& text) {
  return {*ipam::parseAddress(text)};
}

const meta::Condition& cond(const v1alpha1::EgressGatewayPolicyStatus& s, std::string_view type) {
  const auto* c = meta::findCondition(s.conditions, type);
  EXPECT_NE(c, nullptr) << type;
  static const meta::Condition kNone;
  return c != nullptr ? *c : kNone;
}

// Policy ns/p at generation 4 with two gateways, its two entries allocated.
EgressGatewayPolicyInfo info() {
  auto i = testing::policyInfo(4, 2);
  ipam::Assignment a;
  a.pool = "pool";
  a.entries = {entry("203.0.113.1"), entry("203.0.113.2")};
  i.assignment = a;
  return i;
}

// Gateway pod `name`, recorded in the status as holding `holds` ("" for nothing).
void addPod(EgressGatewayPolicyInfo& i, const std::string& name, const std::string& holds,
            bool ready, int64_t created) {
  auto& p = testing::addGatewayPod(i, name, created);
  p.ready = ready;
  testing::recordHolder(i, name, holds);
}

TEST(DesiredStatus, ReadyOnlyWhenEveryEntryIsHeldByAReadyPodOfARolledOutDeployment) {
  auto i = info();
  auto s = desiredStatus(i, kNow);
  EXPECT_EQ(s.pool, "pool");
  EXPECT_THAT(s.egressIPs, ElementsAre("203.0.113.1", "203.0.113.2"));
  EXPECT_EQ(s.observedGeneration, 4);
  EXPECT_EQ(cond(s, kConditionIPAllocated).status, "True");
  // What it will say once the Deployment, applied in this reconcile, appears with no pod.
  EXPECT_EQ(cond(s, kConditionGatewayAvailable).reason, "Progressing");
  EXPECT_EQ(cond(s, kConditionGatewayAvailable).message, "0 of 2 gateway pods available");
  EXPECT_EQ(cond(s, kConditionReady).status, "False");

  addDeployment(i, 2, 2);
  addPod(i, "a", "203.0.113.2", true, 10);
  addPod(i, "b", "", true, 11);
  s = desiredStatus(i, kNow);
  EXPECT_EQ(cond(s, kConditionGatewayAvailable).status, "True");
  EXPECT_EQ(cond(s, kConditionReady).reason, "GatewaysNotReady");
  ASSERT_EQ(s.gateways.size(), 2u);
  EXPECT_EQ(s.gateways[0].pod, "");
  EXPECT_EQ(s.gateways[1].pod, "a");
  EXPECT_EQ(s.gateways[1].node, "node-a");

  testing::recordHolder(i, "b", "203.0.113.1");
  s = desiredStatus(i, kNow);
  EXPECT_EQ(cond(s, kConditionReady).status, "True");
  EXPECT_EQ(cond(s, kConditionReady).lastTransitionTime, kNow);
}

TEST(DesiredStatus, OnlyAProvenGatewayPodOfTheRecordedUidHolds) {
  auto i = info();
  addPod(i, "a", "203.0.113.1", true, 5);
  addPod(i, "b", "203.0.113.2", true, 6);
  EXPECT_THAT(entryHolders(i, i.assignment->entries), ElementsAre("a", "b"));
  // A pod of the same name made later (another uid) holds nothing the status names.
  auto pod = std::make_shared<core::Pod>(*i.egressPods["a"].pod);
  pod->metadata.uid = "uid-a-later";
  i.egressPods["a"].pod = pod;
  // And a pod the status names that is no (longer a) proven gateway pod of the policy holds
  // nothing either: only i.egressPods are.
  i.egressPods.erase("b");
  EXPECT_THAT(entryHolders(i, i.assignment->entries), ElementsAre("", ""));
}

TEST(DesiredStatus, AShortfallIsTheReasonAndAnInvalidSpecKeepsTheWrittenLedger) {
  auto i = info();
  i.assignment->shortfall = ipam::Shortfall::kPoolExhausted;
  i.assignment->message = "IPAMPool pool has no free IPv4 address";
  i.assignment->entries.pop_back();
  auto s = desiredStatus(i, kNow);
  EXPECT_EQ(cond(s, kConditionIPAllocated).reason, "PoolExhausted");
  EXPECT_EQ(cond(s, kConditionReady).reason, "PoolExhausted");

  auto bad = info();
  bad.assignment.reset();
  bad.current->status.pool = "pool";
  bad.current->status.gateways = {{{"203.0.113.7"}, "", "", "", false}};
  bad.invalid = {{"spec.excludedCIDRs[0]", "has host bits set"}};
  s = desiredStatus(bad, kNow);
  EXPECT_THAT(s.egressIPs, ElementsAre("203.0.113.7"));
  EXPECT_EQ(cond(s, kConditionIPAllocated).reason, "InvalidSpec");
  EXPECT_NE(cond(s, kConditionIPAllocated).message.find("spec.excludedCIDRs[0]"),
            std::string::npos);
}

TEST(DesiredStatus, AnUnchangedViewGivesAnEqualStatusSoNothingIsWritten) {
  auto i = info();
  addDeployment(i, 2, 2);
  addPod(i, "a", "203.0.113.1", true, 1);
  addPod(i, "b", "203.0.113.2", true, 2);
  auto s = desiredStatus(i, kNow);
  i.current->status = s;
  EXPECT_EQ(desiredStatus(i, kNow + std::chrono::hours(1)), s);
}

// One gateway, as a cold start makes it: the ledger written, the Deployment not cached yet.
EgressGatewayPolicyInfo oneGateway() {
  auto i = info();
  auto policy = std::make_shared<v1alpha1::EgressGatewayPolicy>(*i.policy);
  policy->spec.gateway.replicas = 1;
  i.policy = policy;
  i.current = *policy;
  i.assignment->entries.pop_back();
  return i;
}

// The Deployment `egw-p` as the Deployment controller reports it at each step of a rollout.
struct DeploymentState {
  int64_t observedGeneration = 1;
  int replicas = 1;
  int updated = 1;
  int available = 0;
  std::vector<apps::DeploymentCondition> conditions;
};

void setDeployment(EgressGatewayPolicyInfo& i, const DeploymentState& state) {
  auto d = std::make_shared<apps::Deployment>();
  d->metadata.name = "egw-p";
  d->metadata.generation = 1;
  d->spec.replicas = 1;
  d->status.observedGeneration = state.observedGeneration;
  d->status.replicas = state.replicas;
  d->status.updatedReplicas = state.updated;
  d->status.availableReplicas = state.available;
  d->status.readyReplicas = state.available;
  d->status.unavailableReplicas = state.replicas - state.available;
  d->status.conditions = state.conditions;
  i.deployment.deployment = d;
}

// The StatusProcessor's rule: the status is written only when the desired one differs.
struct StatusWrites {
  std::vector<v1alpha1::EgressGatewayPolicyStatus> written;

  void reconcile(EgressGatewayPolicyInfo& i, meta::Time now) {
    auto s = desiredStatus(i, now);
    if (s != i.current->status) {
      i.current->status = s;
      written.push_back(std::move(s));
    }
  }
};

TEST(DesiredStatus, AColdStartWritesTheStatusTwiceTheLedgerThenReady) {
  auto i = oneGateway();
  StatusWrites w;
  meta::Time now = kNow;
  auto step = [&] {
    now += std::chrono::seconds(1);
    w.reconcile(i, now);
  };
  step();  // allocated: the IPPoolProcessor writes the ledger, then the Deployment is applied
  step();  // a resync before the Deployment is cached
  setDeployment(i, {.observedGeneration = 0, .replicas = 0, .updated = 0, .conditions = {}});
  step();  // cached, its generation not observed yet
  const apps::DeploymentCondition created{"Progressing", "True", {}, "NewReplicaSetCreated", ""};
  setDeployment(i, {.replicas = 0, .updated = 0, .conditions = {created}});
  step();  // observed, its ReplicaSet made, no pod yet
  setDeployment(i, {.conditions = {created}});
  step();  // its pod made, not available
  addPod(i, "egw-p-1", "", false, 100);
  step();  // the pod in the cache, before it is Ready or told its entry
  testing::recordHolder(i, "egw-p-1", "203.0.113.1");
  i.egressPods["egw-p-1"].ready = true;
  step();  // the pod Ready and holding its entry; the Deployment does not count it yet
  const meta::Time readyAt = now;
  const apps::DeploymentCondition available{
      "Progressing", "True", {}, "NewReplicaSetAvailable", ""};
  setDeployment(i, {.available = 1, .conditions = {available}});
  step();  // the Deployment available
  step();  // a resync

  ASSERT_EQ(w.written.size(), 2u);
  const auto& ledger = w.written[0];
  EXPECT_THAT(ledger.egressIPs, ElementsAre("203.0.113.1"));
  EXPECT_EQ(cond(ledger, kConditionGatewayAvailable).reason, "Progressing");
  EXPECT_EQ(cond(ledger, kConditionGatewayAvailable).message, "0 of 1 gateway pods available");
  EXPECT_EQ(cond(ledger, kConditionReady).reason, "Progressing");
  const auto& ready = w.written[1];
  EXPECT_EQ(cond(ready, kConditionGatewayAvailable).status, "True");
  EXPECT_EQ(cond(ready, kConditionGatewayAvailable).message, "1 of 1 gateway pods available");
  EXPECT_EQ(cond(ready, kConditionReady).status, "True");
  EXPECT_EQ(cond(ready, kConditionReady).lastTransitionTime, readyAt);
  EXPECT_EQ(cond(ready, kConditionIPAllocated).lastTransitionTime, kNow + std::chrono::seconds(1));
  ASSERT_EQ(ready.gateways.size(), 1u);
  EXPECT_EQ(ready.gateways[0].pod, "egw-p-1");
  EXPECT_TRUE(ready.gateways[0].ready);
}

TEST(DesiredStatus, APodCountChangeIsWrittenButNotTheRolloutsSteps) {
  auto i = info();
  StatusWrites w;
  w.reconcile(i, kNow);
  setDeployment(i, {.observedGeneration = 0, .replicas = 0, .updated = 0, .conditions = {}});
  w.reconcile(i, kNow);
  auto d = std::make_shared<apps::Deployment>(*i.deployment.deployment);
  d->spec.replicas = 2;
  d->status = {1, 2, 2, 1, 1, 1, {}};
  i.deployment.deployment = d;
  w.reconcile(i, kNow);  // one of the two available: the Deployment's count, a real change
  ASSERT_EQ(w.written.size(), 2u);
  EXPECT_EQ(cond(w.written[1], kConditionGatewayAvailable).message,
            "1 of 2 gateway pods available");
}

TEST(DesiredStatus, AFailedRolloutIsReportedWithWhatStopsIt) {
  auto i = oneGateway();
  addPod(i, "egw-p-1", "203.0.113.1", false, 100);
  setDeployment(i, {.conditions = {{"Progressing",
                                    "False",
                                    {},
                                    "ProgressDeadlineExceeded",
                                    "ReplicaSet \"egw-p-5d9\" has timed out progressing."}}});
  auto s = desiredStatus(i, kNow);
  EXPECT_EQ(cond(s, kConditionGatewayAvailable).status, "False");
  EXPECT_EQ(cond(s, kConditionGatewayAvailable).reason, "ProgressDeadlineExceeded");
  EXPECT_EQ(cond(s, kConditionGatewayAvailable).message,
            "0 of 1 gateway pods available: deployment \"egw-p\" exceeded its progress deadline");
  EXPECT_EQ(cond(s, kConditionReady).reason, "ProgressDeadlineExceeded");

  // Pods the ReplicaSet cannot make: said at once, not only at the progress deadline.
  const std::string forbidden =
      "pods \"egw-p-5d9-\" is forbidden: violates PodSecurity \"baseline:latest\"";
  setDeployment(i, {.replicas = 0,
                    .updated = 0,
                    .conditions = {{"Progressing", "True", {}, "NewReplicaSetCreated", ""},
                                   {"ReplicaFailure", "True", {}, "FailedCreate", forbidden}}});
  s = desiredStatus(i, kNow);
  EXPECT_EQ(cond(s, kConditionGatewayAvailable).reason, "ReplicaFailure");
  EXPECT_EQ(cond(s, kConditionGatewayAvailable).message,
            "0 of 1 gateway pods available: " + forbidden);
  EXPECT_EQ(cond(s, kConditionReady).reason, "ReplicaFailure");

  // Old pods left after every new one came: not a step of a rollout with maxSurge 0.
  setDeployment(i, {.replicas = 2, .available = 1, .conditions = {}});
  s = desiredStatus(i, kNow);
  EXPECT_EQ(cond(s, kConditionGatewayAvailable).reason, "Progressing");
  EXPECT_NE(cond(s, kConditionGatewayAvailable).message.find("1 old replicas are pending"),
            std::string::npos);
}

TEST(DesiredStatus, AGatewayThatCannotBeAppliedSaysSoUntilItIs) {
  auto i = oneGateway();
  StatusWrites w;
  w.reconcile(i, kNow);  // the ledger
  const std::string failure =
      "applying Deployment egw-p: Forbidden: deployments.apps \"egw-p\" is forbidden";
  i.applyFailure = failure;  // the DeploymentProcessor's apply failed
  w.reconcile(i, kNow + std::chrono::seconds(1));
  ASSERT_EQ(w.written.size(), 2u);
  const auto& failed = w.written[1];
  EXPECT_EQ(cond(failed, kConditionGatewayAvailable).reason, "ApplyFailed");
  EXPECT_EQ(cond(failed, kConditionGatewayAvailable).message,
            "0 of 1 gateway pods available: " + failure);
  EXPECT_EQ(cond(failed, kConditionReady).reason, "ApplyFailed");
  // Still False: the transition is the ledger's.
  EXPECT_EQ(cond(failed, kConditionGatewayAvailable).lastTransitionTime, kNow);

  w.reconcile(i, kNow + std::chrono::seconds(30));  // a retry that fails the same way
  EXPECT_EQ(w.written.size(), 2u);

  i.applyFailure.clear();  // applied at last
  w.reconcile(i, kNow + std::chrono::seconds(60));
  ASSERT_EQ(w.written.size(), 3u);
  EXPECT_EQ(cond(w.written[2], kConditionGatewayAvailable).reason, "Progressing");
  EXPECT_EQ(cond(w.written[2], kConditionGatewayAvailable).lastTransitionTime, kNow);
}

TEST(LedgerFromRaw, ReadsTheLedgerEvenOfAnObjectTheTypedDecoderRefuses) {
  rapidjson::Document d;
  d.Parse(R"({"metadata": {"name": "p", "namespace": "ns", "uid": "u",
                "creationTimestamp": "2026-01-01T00:00:00Z"},
              "spec": {"podSelector": 7},
              "status": {"pool": "pool",
                         "gateways": [{"egressIPs": ["203.0.113.1", "2001:db8::1"]},
                                      {"egressIPs": "broken"}],
                         "egressIPs": ["203.0.113.1", "2001:db8::1", "203.0.113.9"]}})");
  auto raw = ledgerFromRaw(d);
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->ledger.owner, "u") << "by uid: a re-created policy is another owner";
  EXPECT_EQ(raw->ledger.name, "ns/p");
  EXPECT_EQ(raw->ledger.pool, "pool");
  EXPECT_EQ(raw->ledger.created, 1767225600);
  EXPECT_EQ(raw->ref.uid, "u");
  ASSERT_EQ(raw->ledger.entries.size(), 2u);
  EXPECT_THAT(raw->ledger.entries[0], ElementsAre("203.0.113.1", "2001:db8::1"));
  // Held though in no entry: never handed to someone else.
  EXPECT_THAT(raw->ledger.entries[1], ElementsAre("203.0.113.9"));
  rapidjson::Document nameless;
  nameless.Parse(R"({"metadata": {}})");
  EXPECT_FALSE(ledgerFromRaw(nameless));
}

}  // namespace
}  // namespace egress::controller
