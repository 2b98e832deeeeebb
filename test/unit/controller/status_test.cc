// The status a policy is given (desiredStatus), and when the StatusProcessor writes it: the
// processor runs against the in-process API server of test/unit/kube, and every status update
// it sends is counted.
#include "pkg/controller/egressgateway/status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "pkg/apis/networking/v1alpha1/zz_generated.codec.h"
#include "pkg/cache/informer_factory.h"
#include "pkg/controller/controller.h"
#include "pkg/controller/egressgateway/status_processor.h"
#include "pkg/controller/names.h"
#include "pkg/controllerruntime/event_recorder.h"
#include "test/testutil/run_sync.h"
#include "test/unit/controller/component_fixture.h"
#include "test/unit/controller/policy_info_builder.h"
#include "test/unit/kube/fake_api_client.h"
#include "test/unit/kube/fake_api_server.h"

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

// Policy ns/p at generation 4 with two gateways.
EgressGatewayPolicyInfo info() {
  return testing::policyInfo(4, 2);
}

// Its two entries allocated from IPAMPool "pool".
ipam::Assignment allocated(size_t entries = 2) {
  ipam::Assignment a;
  a.pool = "pool";
  a.entries = {entry("203.0.113.1"), entry("203.0.113.2")};
  a.entries.resize(entries);
  return a;
}

// What the IPPoolProcessor hands on: `a`'s ledger (none: the spec is invalid, and the ledger is
// the one the status records), each entry with the holder the status records.
LedgerPlan plan(const EgressGatewayPolicyInfo& i, const std::optional<ipam::Assignment>& a,
                validation::FieldErrors invalid = {}) {
  LedgerPlan p;
  p.invalid = std::move(invalid);
  p.assignment = a;
  p.entries = a ? a->entries : statusLedger(i.current->status);
  p.holders = entryHolders(i, i.current->status, p.entries);
  return p;
}

v1alpha1::EgressGatewayPolicyStatus desired(const EgressGatewayPolicyInfo& i,
                                            const ipam::Assignment& a, meta::Time now) {
  return desiredStatus(i, *i.current, plan(i, a), "", now);
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
  const auto a = allocated();
  auto s = desired(i, a, kNow);
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
  s = desired(i, a, kNow);
  EXPECT_EQ(cond(s, kConditionGatewayAvailable).status, "True");
  EXPECT_EQ(cond(s, kConditionReady).reason, "GatewaysNotReady");
  ASSERT_EQ(s.gateways.size(), 2u);
  EXPECT_EQ(s.gateways[0].pod, "");
  EXPECT_EQ(s.gateways[1].pod, "a");
  EXPECT_EQ(s.gateways[1].node, "node-a");

  testing::recordHolder(i, "b", "203.0.113.1");
  s = desired(i, a, kNow);
  EXPECT_EQ(cond(s, kConditionReady).status, "True");
  EXPECT_EQ(cond(s, kConditionReady).lastTransitionTime, kNow);
}

// Programmed says whether a data plane carries the policy: never without the agent (however
// Ready it is), and with it only once every holder is Ready through its IPProgrammed gate (a pod
// made before the agent was switched on is Ready without one). status.nodes lists the holders'
// nodes, each once.
TEST(DesiredStatus, ProgrammedOnlyWithTheAgentAndEveryHoldersGateOpen) {
  auto i = info();
  const auto a = allocated();
  addDeployment(i, 2, 2);
  addPod(i, "a", "203.0.113.1", true, 10);
  addPod(i, "b", "203.0.113.2", true, 11);
  auto s = desired(i, a, kNow);
  EXPECT_EQ(cond(s, kConditionReady).status, "True");
  EXPECT_EQ(cond(s, kConditionProgrammed).status, "False");
  EXPECT_EQ(cond(s, kConditionProgrammed).reason, "AgentDisabled");
  EXPECT_THAT(cond(s, kConditionReady).message, ::testing::HasSubstr("see Programmed"));
  EXPECT_THAT(s.nodes, ElementsAre("node-a", "node-b"));

  auto config = std::make_shared<v1alpha1::OperatorConfig>(*i.config);
  config->spec.dataplane = v1alpha1::DataplaneSpec{.agent = true};
  i.config = config;
  s = desired(i, a, kNow);
  EXPECT_EQ(cond(s, kConditionProgrammed).reason, "NotProgrammed") << "Ready, but no gate";
  EXPECT_EQ(cond(s, kConditionProgrammed).message,
            "0 of 2 egress IPs are programmed on a Ready holder's node");
  i.egressPods.at("a").programmed = true;
  i.egressPods.at("b").programmed = false;
  s = desired(i, a, kNow);
  EXPECT_EQ(cond(s, kConditionProgrammed).status, "False");
  i.egressPods.at("b").programmed = true;
  s = desired(i, a, kNow);
  EXPECT_EQ(cond(s, kConditionProgrammed).status, "True");
  EXPECT_EQ(cond(s, kConditionProgrammed).reason, "Programmed");
  EXPECT_THAT(cond(s, kConditionReady).message, ::testing::Not(::testing::HasSubstr("Programmed")));

  i.config = nullptr;
  s = desired(i, a, kNow);
  EXPECT_EQ(cond(s, kConditionProgrammed).reason, "NoOperatorConfig");
}

// A live agent that cannot program the policy (its report, by uid) makes Programmed and Ready
// False with the problem's kind as the reason, the first node's problem as the message; without
// the agent, reports count for nothing (no node programs anything anyway).
TEST(DesiredStatus, AnAgentsProblemMakesProgrammedAndReadyFalseWithItsReason) {
  auto i = info();
  const auto a = allocated();
  addDeployment(i, 2, 2);
  addPod(i, "a", "203.0.113.1", true, 10);
  addPod(i, "b", "203.0.113.2", true, 11);
  i.dataplaneProblems = {{"node-c", "ContestedAddress", "egress IP 203.0.113.1 is in x/y, ns/web"},
                         {"node-d", "RefusedAddress", "egress IP 203.0.113.2 refused"}};
  auto s = desired(i, a, kNow);
  EXPECT_EQ(cond(s, kConditionReady).status, "True") << "no agent, no data plane";
  EXPECT_EQ(cond(s, kConditionProgrammed).reason, "AgentDisabled");

  auto config = std::make_shared<v1alpha1::OperatorConfig>(*i.config);
  config->spec.dataplane = v1alpha1::DataplaneSpec{.agent = true};
  i.config = config;
  i.egressPods.at("a").programmed = true;
  i.egressPods.at("b").programmed = true;
  s = desired(i, a, kNow);
  EXPECT_EQ(cond(s, kConditionProgrammed).status, "False");
  EXPECT_EQ(cond(s, kConditionProgrammed).reason, "ContestedAddress");
  EXPECT_EQ(cond(s, kConditionProgrammed).message,
            "egw-agent on node node-c: egress IP 203.0.113.1 is in x/y, ns/web (and 1 more nodes "
            "report problems)");
  EXPECT_EQ(cond(s, kConditionReady).status, "False");
  EXPECT_EQ(cond(s, kConditionReady).reason, "ContestedAddress");
  EXPECT_EQ(cond(s, kConditionReady).message, cond(s, kConditionProgrammed).message);

  i.dataplaneProblems.clear();
  s = desired(i, a, kNow);
  EXPECT_EQ(cond(s, kConditionProgrammed).status, "True");
  EXPECT_EQ(cond(s, kConditionReady).status, "True");
}

TEST(DesiredStatus, OnlyAProvenGatewayPodOfTheRecordedUidHolds) {
  auto i = info();
  const auto ledger = allocated().entries;
  addPod(i, "a", "203.0.113.1", true, 5);
  addPod(i, "b", "203.0.113.2", true, 6);
  EXPECT_THAT(entryHolders(i, i.current->status, ledger), ElementsAre("a", "b"));
  // A pod of the same name made later (another uid) holds nothing the status names.
  auto pod = std::make_shared<core::Pod>(*i.egressPods["a"].pod);
  pod->metadata.uid = "uid-a-later";
  i.egressPods["a"].pod = pod;
  // And a pod the status names that is no (longer a) proven gateway pod of the policy holds
  // nothing either: only i.egressPods are.
  i.egressPods.erase("b");
  EXPECT_THAT(entryHolders(i, i.current->status, ledger), ElementsAre("", ""));
}

TEST(DesiredStatus, AShortfallIsTheReasonAndAnInvalidSpecKeepsTheWrittenLedger) {
  auto i = info();
  auto a = allocated(1);
  a.shortfall = ipam::Shortfall::kPoolExhausted;
  a.message = "IPAMPool pool has no free IPv4 address";
  auto s = desired(i, a, kNow);
  EXPECT_EQ(cond(s, kConditionIPAllocated).reason, "PoolExhausted");
  EXPECT_EQ(cond(s, kConditionReady).reason, "PoolExhausted");

  auto bad = info();
  bad.current->status.pool = "pool";
  bad.current->status.gateways = {{{"203.0.113.7"}, "", "", "", false}};
  s = desiredStatus(bad, *bad.current,
                    plan(bad, std::nullopt, {{"spec.excludedCIDRs[0]", "has host bits set"}}), "",
                    kNow);
  EXPECT_THAT(s.egressIPs, ElementsAre("203.0.113.7"));
  EXPECT_EQ(cond(s, kConditionIPAllocated).reason, "InvalidSpec");
  EXPECT_NE(cond(s, kConditionIPAllocated).message.find("spec.excludedCIDRs[0]"),
            std::string::npos);
}

TEST(DesiredStatus, AnUnchangedViewGivesAnEqualStatusSoNothingIsWritten) {
  auto i = info();
  const auto a = allocated();
  addDeployment(i, 2, 2);
  addPod(i, "a", "203.0.113.1", true, 1);
  addPod(i, "b", "203.0.113.2", true, 2);
  auto s = desired(i, a, kNow);
  i.current->status = s;
  EXPECT_EQ(desired(i, a, kNow + std::chrono::hours(1)), s);
}

// One gateway, as a cold start makes it: its entry allocated, the Deployment not cached yet.
EgressGatewayPolicyInfo oneGateway() {
  auto i = info();
  auto policy = std::make_shared<v1alpha1::EgressGatewayPolicy>(*i.policy);
  policy->spec.gateway.replicas = 1;
  i.policy = policy;
  i.current = *policy;
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

// The StatusProcessor against an API server that takes every status update (and counts it).
class StatusProcessorTest : public testing::ComponentTest {
 protected:
  // Nothing is listed or watched: the processor reads only the info view it is given.
  StatusProcessorTest() {
    makeContext([](const kube::Resource&, const std::string&, const std::string&) {
      return std::unique_ptr<cache::ListerWatcher>();
    });
  }

  // One StatusProcessor step of a reconcile at the clock's time, the IPPoolProcessor having
  // handed it `a`'s ledger; i.current becomes what it wrote, as the next reconcile reads it.
  void reconcile(EgressGatewayPolicyInfo& i, const ipam::Assignment& a,
                 const std::string& applyFailure = "") {
    StatusProcessor processor(*ctx_);
    PolicyWriter writer(*ctx_, i);
    auto r = testutil::runSync(ioc_, processor.process(i, plan(i, a), applyFailure, writer));
    EXPECT_TRUE(r.isDone()) << toString(r);
    i.current = writer.policy();
  }

  // Every status update answered as the API server does: the object sent, with its generation
  // (which a client does not send) and the next resourceVersion.
  kube::testing::FakeResponse handle(const kube::testing::FakeRequest& r) override {
    kube::testing::FakeResponse out;
    out.status = 201;
    out.headers = {{"Content-Type", "application/json"}};
    out.body = r.body;
    if (r.method == "PUT" && r.target.find("/status") != std::string::npos) {
      rapidjson::Document d;
      d.Parse(r.body.c_str());
      auto& md = d["metadata"];
      md.AddMember("generation", kGeneration, d.GetAllocator());
      md["resourceVersion"].SetString(std::to_string(++version_).c_str(), d.GetAllocator());
      auto policy = v1alpha1::decodeEgressGatewayPolicy(d);
      EXPECT_TRUE(policy) << r.body;
      if (policy) {
        written_.push_back(policy->status);
      }
      out.status = 200;
      rapidjson::StringBuffer buf;
      rapidjson::Writer<rapidjson::StringBuffer> w(buf);
      d.Accept(w);
      out.body = buf.GetString();
    }
    return out;
  }

  static constexpr int64_t kGeneration = 4;  // info()'s
  std::vector<v1alpha1::EgressGatewayPolicyStatus> written_;
  int version_ = 5;

  // The clock's wall time at the start, as the status records times (whole seconds).
  const meta::Time start_ = meta::truncateToSeconds(clock_.wallNow());
};

TEST_F(StatusProcessorTest, AColdStartWritesTheStatusTwiceTheLedgerThenReady) {
  auto i = oneGateway();
  const auto a = allocated(1);
  auto step = [&] {
    clock_.advance(std::chrono::seconds(1));
    reconcile(i, a);
  };
  step();  // allocated: the ledger is written (in a reconcile, by the IPPoolProcessor)
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
  const meta::Time readyAt = clock_.wallNow();
  const apps::DeploymentCondition available{
      "Progressing", "True", {}, "NewReplicaSetAvailable", ""};
  setDeployment(i, {.available = 1, .conditions = {available}});
  step();  // the Deployment available
  step();  // a resync

  ASSERT_EQ(written_.size(), 2u);
  const auto& ledger = written_[0];
  EXPECT_THAT(ledger.egressIPs, ElementsAre("203.0.113.1"));
  EXPECT_EQ(cond(ledger, kConditionGatewayAvailable).reason, "Progressing");
  EXPECT_EQ(cond(ledger, kConditionGatewayAvailable).message, "0 of 1 gateway pods available");
  EXPECT_EQ(cond(ledger, kConditionReady).reason, "Progressing");
  const auto& ready = written_[1];
  EXPECT_EQ(cond(ready, kConditionGatewayAvailable).status, "True");
  EXPECT_EQ(cond(ready, kConditionGatewayAvailable).message, "1 of 1 gateway pods available");
  EXPECT_EQ(cond(ready, kConditionReady).status, "True");
  EXPECT_EQ(cond(ready, kConditionReady).lastTransitionTime, readyAt);
  EXPECT_EQ(cond(ready, kConditionIPAllocated).lastTransitionTime,
            start_ + std::chrono::seconds(1));
  ASSERT_EQ(ready.gateways.size(), 1u);
  EXPECT_EQ(ready.gateways[0].pod, "egw-p-1");
  EXPECT_TRUE(ready.gateways[0].ready);
}

TEST_F(StatusProcessorTest, APodCountChangeIsWrittenButNotTheRolloutsSteps) {
  auto i = info();
  const auto a = allocated();
  reconcile(i, a);
  setDeployment(i, {.observedGeneration = 0, .replicas = 0, .updated = 0, .conditions = {}});
  reconcile(i, a);
  auto d = std::make_shared<apps::Deployment>(*i.deployment.deployment);
  d->spec.replicas = 2;
  d->status = {1, 2, 2, 1, 1, 1, {}};
  i.deployment.deployment = d;
  reconcile(i, a);  // one of the two available: the Deployment's count, a real change
  ASSERT_EQ(written_.size(), 2u);
  EXPECT_EQ(cond(written_[1], kConditionGatewayAvailable).message, "1 of 2 gateway pods available");
}

TEST(DesiredStatus, AFailedRolloutIsReportedWithWhatStopsIt) {
  auto i = oneGateway();
  const auto a = allocated(1);
  addPod(i, "egw-p-1", "203.0.113.1", false, 100);
  setDeployment(i, {.conditions = {{"Progressing",
                                    "False",
                                    {},
                                    "ProgressDeadlineExceeded",
                                    "ReplicaSet \"egw-p-5d9\" has timed out progressing."}}});
  auto s = desired(i, a, kNow);
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
  s = desired(i, a, kNow);
  EXPECT_EQ(cond(s, kConditionGatewayAvailable).reason, "ReplicaFailure");
  EXPECT_EQ(cond(s, kConditionGatewayAvailable).message,
            "0 of 1 gateway pods available: " + forbidden);
  EXPECT_EQ(cond(s, kConditionReady).reason, "ReplicaFailure");

  // Old pods left after every new one came: not a step of a rollout with maxSurge 0.
  setDeployment(i, {.replicas = 2, .available = 1, .conditions = {}});
  s = desired(i, a, kNow);
  EXPECT_EQ(cond(s, kConditionGatewayAvailable).reason, "Progressing");
  EXPECT_NE(cond(s, kConditionGatewayAvailable).message.find("1 old replicas are pending"),
            std::string::npos);
}

TEST_F(StatusProcessorTest, AGatewayThatCannotBeAppliedSaysSoUntilItIs) {
  auto i = oneGateway();
  const auto a = allocated(1);
  reconcile(i, a);  // the ledger
  const std::string failure =
      "applying Deployment egw-p: Forbidden: deployments.apps \"egw-p\" is forbidden";
  clock_.advance(std::chrono::seconds(1));
  reconcile(i, a, failure);  // the DeploymentProcessor's apply failed
  ASSERT_EQ(written_.size(), 2u);
  const auto& failed = written_[1];
  EXPECT_EQ(cond(failed, kConditionGatewayAvailable).reason, "ApplyFailed");
  EXPECT_EQ(cond(failed, kConditionGatewayAvailable).message,
            "0 of 1 gateway pods available: " + failure);
  EXPECT_EQ(cond(failed, kConditionReady).reason, "ApplyFailed");
  // Still False: the transition is the ledger's.
  EXPECT_EQ(cond(failed, kConditionGatewayAvailable).lastTransitionTime, start_);

  clock_.advance(std::chrono::seconds(29));
  reconcile(i, a, failure);  // a retry that fails the same way
  EXPECT_EQ(written_.size(), 2u);

  clock_.advance(std::chrono::seconds(30));
  reconcile(i, a);  // applied at last
  ASSERT_EQ(written_.size(), 3u);
  EXPECT_EQ(cond(written_[2], kConditionGatewayAvailable).reason, "Progressing");
  EXPECT_EQ(cond(written_[2], kConditionGatewayAvailable).lastTransitionTime, start_);
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
