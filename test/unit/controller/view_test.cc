#include "pkg/controller/egressgateway/view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "pkg/apis/networking/v1alpha1/zz_generated.codec.h"
#include "pkg/controller/egressgateway/status.h"
#include "pkg/controller/names.h"
#include "test/unit/controller/policy_info_builder.h"

namespace egress::controller {
namespace {

using ::testing::ElementsAre;
using testing::entry;
using ::testing::IsEmpty;

v1alpha1::EgressGatewayPolicy policy(const std::string& family = "IPv4") {
  return testing::billingPolicy(family);
}

PodPtr pod(const std::string& name, const std::string& node, std::vector<std::string> ips,
           const std::string& phase = "Running") {
  auto p = std::make_shared<core::Pod>();
  p->metadata.name = name;
  p->spec.nodeName = node;
  p->status.phase = phase;
  p->status.podIPs = std::move(ips);
  return p;
}

std::vector<std::string> podsOf(const v1alpha1::EgressPolicySlice& s) {
  std::vector<std::string> out;
  for (const auto& src : s.spec.sources) {
    out.push_back(src.pod);
  }
  return out;
}

// `n` sources named s000, s001, ...
std::vector<v1alpha1::SliceSource> sources(size_t n, size_t from = 0) {
  std::vector<v1alpha1::SliceSource> out;
  for (size_t i = from; i < from + n; ++i) {
    char name[8];
    std::snprintf(name, sizeof name, "s%03zu", i);
    out.push_back({name, "n1", {"10.244.1." + std::to_string(i % 250 + 1)}});
  }
  return out;
}

// What the API server would hold after `plan` was carried out over `existing`.
std::vector<SlicePtr> carryOut(const SlicePlan& plan, std::vector<SlicePtr> existing) {
  std::erase_if(existing, [&](const SlicePtr& s) {
    for (const auto& w : plan.write) {
      if (w.metadata.name == s->metadata.name) {
        return true;
      }
    }
    for (const auto& r : plan.remove) {
      if (r->metadata.name == s->metadata.name) {
        return true;
      }
    }
    return false;
  });
  for (const auto& w : plan.write) {
    existing.push_back(std::make_shared<v1alpha1::EgressPolicySlice>(w));
  }
  std::sort(existing.begin(), existing.end(), [](const SlicePtr& a, const SlicePtr& b) {
    return a->metadata.name < b->metadata.name;
  });
  return existing;
}

TEST(View, TheGatewayPartListsTheLedgerWithHoldersDestinationsAndExclusions) {
  auto p = policy();
  p.spec.destinationCIDRs = {"192.0.2.0/24", "2001:db8::/64", "10.1.0.0/16"};
  p.spec.excludedCIDRs = {"192.0.2.8/29"};
  auto g = sliceGateway(p, {entry({"203.0.113.9"}), entry({"203.0.113.2"})},
                        {ViewHolder{"egw-billing-a", "pod-uid-a", "n1"}, std::nullopt},
                        {"10.244.0.0/16", "fd00::/48"});
  ASSERT_EQ(g.egressIPs.size(), 2u);
  EXPECT_THAT(g.egressIPs[0].ips, ElementsAre("203.0.113.9"));
  EXPECT_EQ(g.egressIPs[0].node, "n1");
  EXPECT_EQ(g.egressIPs[0].pod, "egw-billing-a");
  EXPECT_EQ(g.egressIPs[0].podUID, "pod-uid-a");
  EXPECT_THAT(g.egressIPs[1].ips, ElementsAre("203.0.113.2"));
  EXPECT_EQ(g.egressIPs[1].node, "") << "no holder: nobody may announce it";
  // IPv4 policy: the IPv6 destination and exclusion are not its family.
  EXPECT_THAT(g.destinationCIDRs, ElementsAre("10.1.0.0/16", "192.0.2.0/24"));
  EXPECT_THAT(g.excludedCIDRs, ElementsAre("10.244.0.0/16", "192.0.2.8/29"));
}

TEST(View, NoDestinationsMeansTheWholeFamilyMinusTheCluster) {
  auto g = sliceGateway(policy("DualStack"), {}, {}, {"10.96.0.0/12"});
  EXPECT_THAT(g.destinationCIDRs, ElementsAre("0.0.0.0/0", "::/0"));
  EXPECT_THAT(g.excludedCIDRs, ElementsAre("10.96.0.0/12"));
}

// A finished pod keeps status.podIPs, and the CNI hands those addresses to new pods of any
// namespace: it must not make them leave as this policy. A hostNetwork pod's address is its
// node's.
TEST(View, OnlyPodsThatCanSendAreSources) {
  auto host = std::const_pointer_cast<core::Pod>(pod("host", "n1", {"192.168.50.11"}));
  host->spec.hostNetwork = true;
  auto s = sliceSources(policy("DualStack"),
                        {pod("b", "n2", {"10.244.2.7", "fd00::7"}), pod("a", "n1", {"10.244.1.5"}),
                         pod("pending", "", {}), pod("done", "n1", {"10.244.1.9"}, "Succeeded"),
                         pod("crashed", "n1", {"10.244.1.10"}, "Failed"), host,
                         pod("starting", "n3", {"10.244.3.4"}, "Pending")});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].pod, "a");
  EXPECT_EQ(s[0].node, "n1");
  EXPECT_THAT(s[0].ips, ElementsAre("10.244.1.5"));
  EXPECT_EQ(s[1].pod, "b");
  EXPECT_THAT(s[1].ips, ElementsAre("10.244.2.7", "fd00::7"));
  EXPECT_EQ(s[2].pod, "starting");
  // An IPv4 policy lists a dual-stack pod's IPv4 only.
  // A pod being deleted may still send: it stays a source until it is gone.
  auto leaving = std::const_pointer_cast<core::Pod>(pod("leaving", "n1", {"10.244.1.8"}));
  leaving->metadata.deletionTimestamp = meta::Time(std::chrono::seconds(1));
  EXPECT_EQ(sliceSources(policy(), {leaving}).size(), 1u);
  auto v4 = sliceSources(policy(), {pod("b", "n2", {"10.244.2.7", "fd00::7"})});
  ASSERT_EQ(v4.size(), 1u);
  EXPECT_THAT(v4[0].ips, ElementsAre("10.244.2.7"));
}

// The ledger `entries` with the holders the policy's status records, as the IPPoolProcessor
// hands it on when nothing moves.
LedgerPlan recorded(const EgressGatewayPolicyInfo& info, std::vector<ipam::Entry> entries) {
  LedgerPlan plan;
  plan.holders = entryHolders(info, info.current->status, entries);
  plan.entries = std::move(entries);
  return plan;
}

TEST(View, HoldersAreProvenScheduledPodsThatAreNotLeaving) {
  auto info = testing::policyInfo(1, 3);
  testing::addGatewayPod(info, "a", 100);
  testing::recordHolder(info, "a", "203.0.113.1");
  auto& b = testing::addGatewayPod(info, "b", 101);
  testing::recordHolder(info, "b", "203.0.113.2");
  b.terminating = true;
  const auto ledger =
      recorded(info, {entry({"203.0.113.1"}), entry({"203.0.113.2"}), entry({"203.0.113.3"})});
  auto holders = viewHolders(info, ledger);
  ASSERT_EQ(holders.size(), 3u);
  ASSERT_TRUE(holders[0]);
  EXPECT_EQ(holders[0]->pod, "a");
  EXPECT_EQ(holders[0]->podUID, "uid-a");
  EXPECT_EQ(holders[0]->node, "node-a");
  EXPECT_FALSE(holders[1]) << "a pod being deleted holds nothing in the view";
  EXPECT_FALSE(holders[2]) << "an entry the status names no pod for has no holder";
}

// A move never has two nodes answering for one address: while another node's live agent still
// reports it programmed, the entry has no holder; its own node's report is no obstacle.
TEST(View, AnEntryAnotherLiveNodeStillHoldsHasNoHolderYet) {
  auto info = testing::policyInfo(1, 2);
  testing::addGatewayPod(info, "a", 100);
  testing::recordHolder(info, "a", "203.0.113.1");
  testing::addGatewayPod(info, "b", 101);
  testing::recordHolder(info, "b", "203.0.113.2,2001:db8::2");
  const auto ledger =
      recorded(info, {entry({"203.0.113.1"}), entry({"203.0.113.2", "2001:db8::2"})});
  std::map<ipam::Address, std::set<std::string>> claims;
  claims[*ipam::parseAddress("203.0.113.1")] = {"node-a"};    // its own node: fine
  claims[*ipam::parseAddress("2001:db8::2")] = {"node-old"};  // the old holder, still live
  auto holders = viewHolders(info, ledger, claims);
  ASSERT_TRUE(holders[0]);
  EXPECT_EQ(holders[0]->node, "node-a");
  EXPECT_FALSE(holders[1]) << "node-old still answers for one of the entry's addresses";
  // Once it lets go, the new holder is named.
  claims.erase(*ipam::parseAddress("2001:db8::2"));
  holders = viewHolders(info, ledger, claims);
  ASSERT_TRUE(holders[1]);
  EXPECT_EQ(holders[1]->node, "node-b");
  // Two nodes claiming one address, the holder's among them: still the other must let go.
  claims[*ipam::parseAddress("203.0.113.1")] = {"node-a", "node-x"};
  EXPECT_FALSE(viewHolders(info, ledger, claims)[0]);
}

TEST(View, AFewSourcesAreOneSliceThatCarriesTheGateway) {
  auto p = policy();
  auto g = sliceGateway(p, {entry({"203.0.113.9"})}, {}, {});
  auto plan = planSlices(p, g, sources(3), {});
  EXPECT_THAT(plan.remove, IsEmpty());
  ASSERT_EQ(plan.write.size(), 1u);
  const auto& s = plan.write[0];
  EXPECT_EQ(s.metadata.name, "team-a.billing.0");
  EXPECT_EQ(s.metadata.labels.at(std::string(kPolicyLabel)), "billing");
  EXPECT_EQ(s.metadata.labels.at(std::string(kPolicyNamespaceLabel)), "team-a");
  EXPECT_EQ(s.spec.policy.uid, "uid-1");
  ASSERT_TRUE(s.spec.gateway);
  EXPECT_EQ(*s.spec.gateway, g);
  EXPECT_THAT(podsOf(s), ElementsAre("s000", "s001", "s002"));
  // Carried out, the same inputs write nothing: a resync costs no API call.
  auto again = planSlices(p, g, sources(3), carryOut(plan, {}));
  EXPECT_THAT(again.write, IsEmpty());
  EXPECT_THAT(again.remove, IsEmpty());
}

TEST(View, APolicyWithoutSourcesStillHasItsFirstSlice) {
  auto plan = planSlices(policy(), {}, {}, {});
  ASSERT_EQ(plan.write.size(), 1u);
  EXPECT_TRUE(plan.write[0].spec.gateway);
  EXPECT_THAT(plan.write[0].spec.sources, IsEmpty());
}

TEST(View, ManySourcesAreSlicedAndEachSliceIsBounded) {
  auto p = policy();
  auto plan = planSlices(p, {}, sources(250), {}, 100);
  ASSERT_EQ(plan.write.size(), 3u);
  EXPECT_EQ(plan.write[0].metadata.name, "team-a.billing.0");
  EXPECT_EQ(plan.write[1].metadata.name, "team-a.billing.1");
  EXPECT_EQ(plan.write[2].metadata.name, "team-a.billing.2");
  EXPECT_EQ(plan.write[0].spec.sources.size(), 100u);
  EXPECT_EQ(plan.write[1].spec.sources.size(), 100u);
  EXPECT_EQ(plan.write[2].spec.sources.size(), 50u);
  EXPECT_TRUE(plan.write[0].spec.gateway);
  EXPECT_FALSE(plan.write[1].spec.gateway) << "only the first slice carries the gateway part";
  EXPECT_FALSE(plan.write[2].spec.gateway);
}

// One pod more or less rewrites one slice, not every slice after it.
TEST(View, PlacementIsStable) {
  auto p = policy();
  auto have = carryOut(planSlices(p, {}, sources(250), {}, 100), {});
  // s010 goes (slice 0), s300 comes: it fills the room s010 left.
  auto now = sources(250);
  now.erase(now.begin() + 10);
  auto more = sources(1, 300);
  now.insert(now.end(), more.begin(), more.end());
  auto plan = planSlices(p, {}, now, have, 100);
  ASSERT_EQ(plan.write.size(), 1u);
  EXPECT_EQ(plan.write[0].metadata.name, "team-a.billing.0");
  EXPECT_EQ(plan.write[0].spec.sources.size(), 100u);
  EXPECT_THAT(plan.remove, IsEmpty());
  // A source that only changed address rewrites its own slice.
  have = carryOut(plan, have);
  now[150].ips = {"10.244.9.9"};
  plan = planSlices(p, {}, now, have, 100);
  ASSERT_EQ(plan.write.size(), 1u);
  EXPECT_EQ(plan.write[0].metadata.name, "team-a.billing.1");
}

TEST(View, AnEmptiedSliceIsDeletedAndAMostlyEmptyPolicyIsRepacked) {
  auto p = policy();
  auto have = carryOut(planSlices(p, {}, sources(300), {}, 100), {});
  ASSERT_EQ(have.size(), 3u);
  // Slice 2's sources all go: it is deleted, the others stay as they are.
  auto plan = planSlices(p, {}, sources(200), have, 100);
  EXPECT_THAT(plan.write, IsEmpty());
  ASSERT_EQ(plan.remove.size(), 1u);
  EXPECT_EQ(plan.remove[0]->metadata.name, "team-a.billing.2");
  have = carryOut(plan, have);
  // Then most of the rest: one source left in slice 1, none in slice 0 -- still two slices for
  // what fits in one, below the repack threshold.
  auto left = sources(1, 150);
  plan = planSlices(p, {}, left, have, 100);
  have = carryOut(plan, have);
  EXPECT_EQ(have.size(), 2u);
  // A large policy that shrank to a few sources spread over many slices is repacked.
  auto big = carryOut(planSlices(p, {}, sources(1000), {}, 100), {});
  ASSERT_EQ(big.size(), 10u);
  std::vector<v1alpha1::SliceSource> sparse;
  for (size_t i = 0; i < 1000; i += 100) {
    auto one = sources(1, i);
    sparse.push_back(one[0]);
  }
  plan = planSlices(p, {}, sparse, big, 100);
  big = carryOut(plan, big);
  ASSERT_EQ(big.size(), 1u);
  EXPECT_EQ(big[0]->spec.sources.size(), 10u);
}

// A policy deleted and re-created under the same name is another policy: its slices are
// rewritten with the new uid, whatever they listed.
TEST(View, ASliceOfAnotherUidIsRewritten) {
  auto p = policy();
  auto have = carryOut(planSlices(p, {}, sources(3), {}), {});
  p.metadata.uid = "uid-2";
  auto plan = planSlices(p, {}, sources(3), have);
  ASSERT_EQ(plan.write.size(), 1u);
  EXPECT_EQ(plan.write[0].spec.policy.uid, "uid-2");
}

TEST(View, TheApplyBodyIsAClusterScopedSliceTheCodecReadsBack) {
  auto p = policy();
  auto g = sliceGateway(p, {entry({"203.0.113.9"})}, {ViewHolder{"egw-a", "u-a", "n1"}}, {});
  auto plan = planSlices(p, g, sources(2), {});
  auto r = renderSlice(plan.write[0]);
  EXPECT_EQ(r.name, "team-a.billing.0");
  rapidjson::Document d;
  d.Parse(r.body.c_str());
  ASSERT_FALSE(d.HasParseError()) << r.body;
  EXPECT_STREQ(d["apiVersion"].GetString(), "networking.egressgateway.dev/v1alpha1");
  EXPECT_STREQ(d["kind"].GetString(), "EgressPolicySlice");
  EXPECT_FALSE(d["metadata"].HasMember("namespace"));
  auto back = v1alpha1::decodeEgressPolicySlice(d);
  ASSERT_TRUE(back) << back.error().toString();
  EXPECT_EQ(back->spec, plan.write[0].spec);
}

}  // namespace
}  // namespace egress::controller
