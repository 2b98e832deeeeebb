#include "pkg/controller/egressgateway/status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "pkg/controller/controller.h"
#include "pkg/controller/names.h"

namespace egress::controller {
namespace {

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

EgressGatewayPolicyInfo info() {
  EgressGatewayPolicyInfo i;
  i.key = "ns/p";
  i.ns = "ns";
  i.name = "p";
  auto policy = std::make_shared<v1alpha1::EgressGatewayPolicy>();
  policy->metadata.name = "p";
  policy->metadata.namespace_ = "ns";
  policy->metadata.generation = 4;
  policy->spec.gateway.replicas = 2;
  i.policy = policy;
  i.current = *policy;
  auto config = std::make_shared<v1alpha1::OperatorConfig>();
  config->spec.gatewayImage = "img";
  i.config = config;
  ipam::Assignment a;
  a.pool = "pool";
  a.entries = {entry("203.0.113.1"), entry("203.0.113.2")};
  i.assignment = a;
  return i;
}

void addPod(EgressGatewayPolicyInfo& i, const std::string& name, const std::string& annotation,
            bool ready, int64_t created) {
  auto pod = std::make_shared<core::Pod>();
  pod->metadata.name = name;
  pod->metadata.creationTimestamp = meta::Time(std::chrono::seconds(created));
  pod->spec.nodeName = "node-" + name;
  EgressPodInfo p;
  p.pod = pod;
  p.egressIPs = annotation;
  p.ready = ready;
  i.egressPods[name] = p;
}

void addDeployment(EgressGatewayPolicyInfo& i, int replicas, int available) {
  auto d = std::make_shared<apps::Deployment>();
  d->metadata.generation = 1;
  d->spec.replicas = replicas;
  d->status.observedGeneration = 1;
  d->status.replicas = replicas;
  d->status.updatedReplicas = replicas;
  d->status.availableReplicas = available;
  d->status.readyReplicas = available;
  i.deployment.deployment = d;
}

TEST(DesiredStatus, ReadyOnlyWhenEveryEntryIsHeldByAReadyPodOfARolledOutDeployment) {
  auto i = info();
  auto s = desiredStatus(i, kNow);
  EXPECT_EQ(s.pool, "pool");
  EXPECT_THAT(s.egressIPs, ElementsAre("203.0.113.1", "203.0.113.2"));
  EXPECT_EQ(s.observedGeneration, 4);
  EXPECT_EQ(cond(s, kConditionIPAllocated).status, "True");
  EXPECT_EQ(cond(s, kConditionGatewayAvailable).reason, "Pending");
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

  i.egressPods["b"].egressIPs = "203.0.113.1";
  s = desiredStatus(i, kNow);
  EXPECT_EQ(cond(s, kConditionReady).status, "True");
  EXPECT_EQ(cond(s, kConditionReady).lastTransitionTime, kNow);
}

TEST(DesiredStatus, TheOlderPodKeepsAnEntryTwoPodsClaim) {
  auto i = info();
  addPod(i, "young", "203.0.113.1", true, 20);
  addPod(i, "old", "203.0.113.1", true, 5);
  auto holders = entryHolders(i, i.assignment->entries);
  EXPECT_THAT(holders, ElementsAre("old", ""));
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
  bad.current->status.gateways = {{{"203.0.113.7"}, "", "", false}};
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
  EXPECT_EQ(raw->ledger.owner, "ns/p");
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
