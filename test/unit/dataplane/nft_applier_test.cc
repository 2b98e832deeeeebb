// Runs in its own network namespace (netns_main.cc): programs egw's nftables table into a real
// kernel and reads it back.
#include "pkg/dataplane/nft_applier.h"

#include <algorithm>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "pkg/dataplane/desired_state.h"
#include "test/unit/dataplane/topology.h"
#include <nftables/libnftables.h>

namespace egress::dataplane {
namespace {

using ::testing::HasSubstr;
using Kind = NftApplier::Change::Kind;

NftTable table(const std::string& self) {
  DataplaneConfig c;
  c.uplink = "eth0";
  auto s = computeDesiredState(testing::dualStackTopology(self), c);
  EXPECT_TRUE(s.ok());
  return s.ok() ? s->kernel.nft : NftTable{};
}

// A table as the kernel lists it, without what differs between two equal tables made in two
// ways: the handles, the metadata, and the order of set elements.
std::string canonical(const std::string& listing) {
  rapidjson::Document d;
  d.Parse(listing.c_str());
  EXPECT_FALSE(d.HasParseError());
  auto text = [](const rapidjson::Value& v) {
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    v.Accept(w);
    return std::string(buf.GetString(), buf.GetSize());
  };
  std::vector<std::string> items;
  for (auto& item : d["nftables"].GetArray()) {
    if (item.HasMember("metainfo")) {
      continue;
    }
    for (auto& [kind, body] : item.GetObject()) {
      body.RemoveMember("handle");
      if (body.HasMember("elem")) {
        std::vector<std::string> elems;
        for (const auto& e : body["elem"].GetArray()) {
          elems.push_back(text(e));
        }
        std::sort(elems.begin(), elems.end());
        std::string joined;
        for (const auto& e : elems) {
          joined += e + ";";
        }
        body["elem"].SetString(joined.c_str(), static_cast<rapidjson::SizeType>(joined.size()),
                               d.GetAllocator());
      }
    }
    items.push_back(text(item));
  }
  std::string out;
  for (const auto& i : items) {
    out += i + "\n";
  }
  return out;
}

// Node n1's table (the holder) with `sources` source pods of default/web on n3, from 10.244.3.2.
NftTable tableWithSources(int sources) {
  auto v = testing::topology("n1");
  v.policies[0].sources.clear();
  for (int i = 0; i < sources; ++i) {
    const int n = 2 + i;
    v.policies[0].sources.push_back(
        {testing::ip(
             ("10.244." + std::to_string(3 + n / 250) + "." + std::to_string(n % 250)).c_str()),
         "n3"});
  }
  DataplaneConfig c;
  c.uplink = "eth0";
  auto s = computeDesiredState(v, c);
  EXPECT_TRUE(s.ok());
  return s.ok() ? s->kernel.nft : NftTable{};
}

class NftApplierTest : public ::testing::Test {
 protected:
  void TearDown() override { ASSERT_TRUE(NftApplier().remove("egw").ok()); }
};

TEST_F(NftApplierTest, TheKernelTakesTheHoldersTableAndReportsItsDigest) {
  NftApplier nft;
  auto t = table("n1");
  auto r = nft.apply(t);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->kind, Kind::kReplaced);
  EXPECT_EQ(nft.appliedDigest("egw"), renderNftJson(t).digest);
  auto listing = nft.list("egw");
  ASSERT_TRUE(listing.ok());
  // The holder's SNAT: by the map from source to egress IP, which the kernel holds.
  EXPECT_THAT(*listing, HasSubstr(R"("data": "@p0_snat4")"));
  EXPECT_THAT(*listing, HasSubstr(R"("data": "@p0_snat6")"));
  EXPECT_THAT(*listing, HasSubstr(R"([["10.244.1.2", "192.168.50.200"], ["10.244.3.2", )"
                                  R"("192.168.50.200"]])"));
  EXPECT_THAT(*listing, HasSubstr(R"("prio": -90)"));
}

TEST_F(NftApplierTest, ApplyingAgainOrAfterARestartChangesNothing) {
  auto t = table("n3");
  {
    NftApplier nft;
    ASSERT_EQ(nft.apply(t)->kind, Kind::kReplaced);
    EXPECT_EQ(nft.apply(t)->kind, Kind::kNone);
  }
  NftApplier restarted;
  auto before = restarted.list("egw");
  EXPECT_EQ(restarted.apply(t)->kind, Kind::kNone);
  EXPECT_EQ(restarted.apply(t)->kind, Kind::kNone);
  // Not replaced: the kernel's handles are the same as before.
  EXPECT_EQ(*restarted.list("egw"), *before);
}

TEST_F(NftApplierTest, AChangedStateReplacesTheTableInOneTransaction) {
  NftApplier nft;
  ASSERT_EQ(nft.apply(table("n1"))->kind, Kind::kReplaced);
  auto moved = table("n3");  // the same cluster seen from a source node: no SNAT to held IPs
  ASSERT_EQ(nft.apply(moved)->kind, Kind::kReplaced) << "another shape";
  EXPECT_EQ(nft.appliedDigest("egw"), renderNftJson(moved).digest);
  EXPECT_THAT(*nft.list("egw"), ::testing::Not(HasSubstr(R"("addr": "192.168.50.200")")));
}

TEST_F(NftApplierTest, RemoveLeavesNoTableAndIsIdempotent) {
  NftApplier nft;
  ASSERT_EQ(nft.apply(table("n1"))->kind, Kind::kReplaced);
  ASSERT_TRUE(nft.remove("egw").ok());
  EXPECT_FALSE(nft.list("egw").ok());
  EXPECT_EQ(nft.appliedDigest("egw"), std::nullopt);
  EXPECT_TRUE(nft.remove("egw").ok());
}

// The counters come from a netlink dump of the table's counter objects: every named counter, at 0
// in a fresh table; no table is an error, as listing it would be.
TEST_F(NftApplierTest, CountersAreTheTablesNamedCountersAndNoTableIsAnError) {
  NftApplier nft;
  EXPECT_FALSE(nft.counters("egw").ok());
  ASSERT_EQ(nft.apply(table("n1"))->kind, Kind::kReplaced);
  auto counts = nft.counters("egw");
  ASSERT_TRUE(counts.ok()) << counts.error();
  std::vector<std::string> names;
  for (const auto& [name, count] : *counts) {
    names.push_back(name);
    EXPECT_EQ(count.packets, 0U) << name;
    EXPECT_EQ(count.bytes, 0U) << name;
  }
  EXPECT_THAT(names,
              ::testing::UnorderedElementsAre(kTunnelNotNode, kTunnelFromPod, kTunnelForged,
                                              "egress_192_168_50_200", "egress_fd00_50__200"));
}

// Runs an nft command as someone else would, by hand (libnftables: the nft tool is not needed).
void byHand(const std::string& command) {
  nft_ctx* ctx = nft_ctx_new(NFT_CTX_DEFAULT);
  nft_ctx_buffer_error(ctx);
  EXPECT_EQ(nft_run_cmd_from_buffer(ctx, command.c_str()), 0)
      << command << ": " << nft_ctx_get_error_buffer(ctx);
  nft_ctx_free(ctx);
}

// A sync that holds refreshes the fence's held elements and its gates' rules; the known sets are
// written again only when they change, when the tables are gone, and every 60th time.
TEST_F(NftApplierTest, TheFenceIsRefreshedInPlaceAndRewrittenWhenItChangedOrWentAway) {
  const auto a = testing::ip("192.168.50.200");
  const auto b = testing::ip("192.168.50.201");
  const auto c = testing::ip("192.168.50.202");
  FenceState state;
  state.known = {a, b};
  state.held = {a};
  state.remaining = std::chrono::seconds(30);
  NftApplier nft;
  ASSERT_TRUE(nft.applyFence(state).ok());
  // By hand: a gate's rules and a known address gone.
  byHand("flush chain inet egw_fence snat_gate");
  byHand("delete element inet egw_fence known4 { 192.168.50.201 }");

  state.held = {a, b};
  ASSERT_TRUE(nft.applyFence(state).ok());
  auto listing = *nft.list(kFenceTable);
  EXPECT_THAT(listing, HasSubstr(R"({"val": "192.168.50.201", "timeout": 30,)"));
  EXPECT_THAT(listing, HasSubstr(R"("chain": "snat_gate")")) << "the gate's rules are back";
  EXPECT_THAT(listing, ::testing::Not(HasSubstr(R"("192.168.50.201"]}})")))
      << "a refresh leaves the known sets alone";

  // Another known address: the known sets are written again.
  state.known = {a, b, c};
  ASSERT_TRUE(nft.applyFence(state).ok());
  listing = *nft.list(kFenceTable);
  EXPECT_THAT(listing,
              HasSubstr(R"("elem": ["192.168.50.200", "192.168.50.201", "192.168.50.202"])"));

  // Gone (someone deleted the tables): written whole again.
  ASSERT_TRUE(NftApplier().removeFence().ok());
  ASSERT_TRUE(nft.applyFence(state).ok());
  listing = *nft.list(kFenceTable);
  EXPECT_THAT(listing, HasSubstr(R"("chain": "snat_gate")"));
  EXPECT_THAT(listing, HasSubstr(R"({"val": "192.168.50.201", "timeout": 30,)"));
  EXPECT_THAT(listing,
              HasSubstr(R"("elem": ["192.168.50.200", "192.168.50.201", "192.168.50.202"])"));
  ASSERT_TRUE(nft.removeFence().ok());
}

// A restarted agent learns from the kernel what its predecessor held, and only while the fence
// still holds it.
TEST_F(NftApplierTest, TheFenceTellsWhatItHoldsUntilItTimesOut) {
  NftApplier nft;
  auto none = nft.fenceHeld();
  ASSERT_TRUE(none) << none.error();
  EXPECT_TRUE(none->empty()) << "no fence tables: nothing held";
  const auto a = testing::ip("192.168.50.200");
  const auto b = testing::ip("192.168.50.201");
  const auto v6 = testing::ip("fd00:50::200");
  FenceState state;
  state.known = {a, b, v6};
  state.held = {a, v6};
  state.remaining = std::chrono::seconds(30);
  ASSERT_TRUE(nft.applyFence(state).ok());
  auto held = NftApplier().fenceHeld();
  ASSERT_TRUE(held) << held.error();
  EXPECT_EQ(*held, (std::vector<ipam::Address>{a, v6}));
  state.remaining = std::chrono::milliseconds(300);
  ASSERT_TRUE(nft.applyFence(state).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_TRUE(NftApplier().fenceHeld()->empty()) << "timed out: no longer held";
  ASSERT_TRUE(nft.removeFence().ok());
}

// A promise about a peer (its restart grace) is kept in the kernel for the next agent: read
// back with at least the time it has left, and gone once that has passed.
TEST_F(NftApplierTest, PromisesAreKeptInTheKernelUntilTheyEnd) {
  NftApplier nft;
  auto none = nft.promises();
  ASSERT_TRUE(none) << none.error();
  EXPECT_TRUE(none->empty());
  ASSERT_TRUE(nft.promise("node-2", std::chrono::seconds(30)).ok());
  ASSERT_TRUE(nft.promise("node-3", std::chrono::milliseconds(1500)).ok());
  ASSERT_TRUE(nft.promise("node-2", std::chrono::seconds(20)).ok()) << "a new end replaces";
  auto kept = NftApplier().promises();
  ASSERT_TRUE(kept) << kept.error();
  ASSERT_EQ(kept->size(), 2u);
  const auto two = kept->at(promiseKey("node-2"));
  EXPECT_GE(two, std::chrono::seconds(19));
  EXPECT_LE(two, std::chrono::seconds(21));
  EXPECT_GE(kept->at(promiseKey("node-3")), std::chrono::milliseconds(1500));
  // A fence written afterwards leaves them alone.
  FenceState state;
  state.known = {testing::ip("192.168.50.200")};
  ASSERT_TRUE(nft.applyFence(state).ok());
  EXPECT_EQ(NftApplier().promises()->size(), 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  kept = NftApplier().promises();
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->size(), 1u) << "node-3's ended";
  ASSERT_TRUE(nft.removeFence().ok());
}

// One source pod more in a programmed 10,000-source state: a transaction of its elements alone
// (its pick, its SNAT entry on this holder, its tunnel source: 3), the table neither replaced
// nor listed whole, and what the kernel has afterwards is what a fresh render of the new state
// makes. The same for the pod going again.
TEST_F(NftApplierTest, OnePodMoreIsATransactionOfItsElementsAndEndsAsAFreshRenderWould) {
  const auto before = tableWithSources(10'000);
  const auto after = tableWithSources(10'001);
  ASSERT_EQ(after.policies[0].picks[0].size(), 10'001U);
  ASSERT_EQ(after.policies[0].snat[0].size(), 10'001U);
  EXPECT_EQ(nftShapeDigest(before), nftShapeDigest(after));
  NftApplier nft;
  ASSERT_EQ(nft.apply(before)->kind, Kind::kReplaced);
  auto added = nft.apply(after);
  ASSERT_TRUE(added.ok()) << added.error();
  EXPECT_EQ(added->kind, Kind::kElements);
  EXPECT_EQ(added->elements, 3U);
  EXPECT_EQ(nft.appliedDigest("egw"), renderNftJson(after).digest);
  const std::string incremental = canonical(*nft.list("egw"));

  NftApplier fresh;
  ASSERT_TRUE(fresh.remove("egw").ok());
  ASSERT_EQ(fresh.apply(after)->kind, Kind::kReplaced);
  EXPECT_EQ(incremental, canonical(*fresh.list("egw")));

  // And back: the pod goes.
  auto removed = fresh.apply(before);
  ASSERT_TRUE(removed.ok()) << removed.error();
  EXPECT_EQ(removed->kind, Kind::kElements);
  EXPECT_EQ(removed->elements, 3U);
  const std::string back = canonical(*fresh.list("egw"));
  ASSERT_TRUE(fresh.remove("egw").ok());
  ASSERT_EQ(fresh.apply(before)->kind, Kind::kReplaced);
  EXPECT_EQ(back, canonical(*fresh.list("egw")));
}

// A pod whose pick changes (its egress IP's holder went: refused now) is a changed map value: a
// deletion and an addition of its pick, and its SNAT entry gone. The kernel ends as a fresh
// render of the new state would make it.
TEST_F(NftApplierTest, AChangedPickIsItsDeletionAndAdditionAndEndsAsAFreshRenderWould) {
  const auto before = tableWithSources(1'000);
  auto after = before;
  auto& picks = after.policies[0].picks[0];
  auto& snat = after.policies[0].snat[0];
  ASSERT_TRUE(picks[500].egressIP.has_value());
  ASSERT_EQ(snat[500].source, picks[500].source);
  picks[500].egressIP.reset();
  snat.erase(snat.begin() + 500);
  ASSERT_TRUE(nftSameShape(before, after));
  NftApplier nft;
  ASSERT_EQ(nft.apply(before)->kind, Kind::kReplaced);
  auto changed = nft.apply(after);
  ASSERT_TRUE(changed.ok()) << changed.error();
  EXPECT_EQ(changed->kind, Kind::kElements);
  EXPECT_EQ(changed->elements, 3U);
  const std::string incremental = canonical(*nft.list("egw"));
  // The pick map's elements, as canonical() joins them: the pod now goes to the refusal.
  const std::string refused =
      R"([\")" + picks[500].source.toString() + R"(\",{\"goto\":{\"target\":\"refuse\"}}])";
  EXPECT_NE(incremental.find(refused), std::string::npos) << refused;
  NftApplier fresh;
  ASSERT_TRUE(fresh.remove("egw").ok());
  ASSERT_EQ(fresh.apply(after)->kind, Kind::kReplaced);
  EXPECT_EQ(incremental, canonical(*fresh.list("egw")));
}

// apply()'s beforeReplace runs right before each replacement (the agent reads the counters
// there, since a replaced table starts them at 0) and never for an element transaction or a
// table that is already right: a first apply, another shape, and a kernel table that someone
// else changed each run it once.
TEST_F(NftApplierTest, BeforeReplaceRunsBeforeEachReplacementAndOnlyThen) {
  const auto before = tableWithSources(100);
  auto fewerPods = before;
  fewerPods.policies[0].picks[0].pop_back();
  ASSERT_TRUE(nftSameShape(before, fewerPods));
  auto otherShape = before;
  otherShape.policies.pop_back();
  ASSERT_FALSE(nftSameShape(before, otherShape));
  NftApplier nft;
  int replacements = 0;
  const auto count = [&] { ++replacements; };
  ASSERT_EQ(nft.apply(before, count)->kind, Kind::kReplaced);
  EXPECT_EQ(replacements, 1);
  ASSERT_EQ(nft.apply(before, count)->kind, Kind::kNone);
  ASSERT_EQ(nft.apply(fewerPods, count)->kind, Kind::kElements);
  EXPECT_EQ(replacements, 1);
  ASSERT_EQ(nft.apply(otherShape, count)->kind, Kind::kReplaced);
  EXPECT_EQ(replacements, 2);
  // The table changed under the applier: replaced, and counted as such.
  ASSERT_TRUE(NftApplier().remove("egw").ok());
  ASSERT_EQ(nft.apply(otherShape, count)->kind, Kind::kReplaced);
  EXPECT_EQ(replacements, 3);
}

// nftSameShape stands in for comparing shape digests (the applier reuses the last shape digest
// when it says so): for each kind of change, it says "same" exactly when the digests are equal,
// and the table's digest changes with any element.
TEST(NftShapeTest, SameShapeExactlyWhenTheShapeDigestsAreEqual) {
  const auto base = tableWithSources(20);
  ASSERT_FALSE(base.policies.empty());
  ASSERT_FALSE(base.policies[0].picks[0].empty());
  ASSERT_FALSE(base.policies[0].snat[0].empty());
  ASSERT_FALSE(base.tunnelSources[0].empty());
  ASSERT_FALSE(base.nodes[0].empty());
  ASSERT_FALSE(base.egressIPs.empty());
  struct Change {
    const char* what;
    bool shape;  // whether it changes the shape
    std::function<void(NftTable&)> apply;
  };
  const std::vector<Change> changes = {
      {"name", true, [](NftTable& t) { t.name = "other"; }},
      {"tunnel", true, [](NftTable& t) { t.tunnel = "egw9"; }},
      {"mark mask", true, [](NftTable& t) { t.markMask = 0xff00; }},
      {"reply mark", true, [](NftTable& t) { t.replyMark ^= 1; }},
      {"refuse mark", true, [](NftTable& t) { t.refuseMark ^= 1; }},
      {"local mark", true, [](NftTable& t) { t.localMark ^= 1; }},
      {"symmetric reply", true, [](NftTable& t) { t.symmetricReply = !t.symmetricReply; }},
      {"an egress IP's mark", true, [](NftTable& t) { t.egressIPs[0].mark ^= 1; }},
      {"an egress IP held", true, [](NftTable& t) { t.egressIPs[0].held = !t.egressIPs[0].held; }},
      {"an egress IP more", true,
       [](NftTable& t) {
         t.egressIPs.push_back({testing::ip("192.168.50.99"), 1, false, "a/b"});
       }},
      {"in-cluster", true,
       [](NftTable& t) { t.inCluster[0].push_back(*ipam::parseCIDR("10.99.0.0/16")); }},
      {"tunnel port", true, [](NftTable& t) { t.tunnelPort = 4800; }},
      {"a policy's key", true, [](NftTable& t) { t.policies[0].key = "x/y"; }},
      {"a destination", true,
       [](NftTable& t) {
         t.policies[0].destinations[0].push_back(*ipam::parseCIDR("198.51.100.0/24"));
       }},
      {"an exclusion", true,
       [](NftTable& t) { t.policies[0].excluded[0].push_back(*ipam::parseCIDR("8.8.8.8/32")); }},
      {"a policy more", true, [](NftTable& t) { t.policies.push_back(t.policies[0]); }},
      {"no picks", true, [](NftTable& t) { t.policies[0].picks[0].clear(); }},
      {"no SNAT", true, [](NftTable& t) { t.policies[0].snat[0].clear(); }},
      {"a pick refused", false, [](NftTable& t) { t.policies[0].picks[0][0].egressIP.reset(); }},
      {"a pick fewer", false,
       [](NftTable& t) { t.policies[0].picks[0].erase(t.policies[0].picks[0].begin()); }},
      {"a SNAT entry fewer", false,
       [](NftTable& t) { t.policies[0].snat[0].erase(t.policies[0].snat[0].begin()); }},
      {"a tunnel source's MAC", false, [](NftTable& t) { t.tunnelSources[0][0].mac[5] ^= 1; }},
      {"no tunnel sources", false, [](NftTable& t) { t.tunnelSources[0].clear(); }},
      {"a node fewer", false, [](NftTable& t) { t.nodes[0].pop_back(); }},
  };
  const std::string shape = nftShapeDigest(base);
  const std::string digest = nftDigest(base);
  EXPECT_EQ(digest, renderNftJson(base).digest);
  for (const auto& c : changes) {
    auto t = base;
    c.apply(t);
    EXPECT_EQ(nftSameShape(base, t), !c.shape) << c.what;
    EXPECT_EQ(nftShapeDigest(t) == shape, !c.shape) << c.what;
    EXPECT_NE(nftDigest(t), digest) << c.what;
    EXPECT_EQ(nftDigest(t, nftShapeDigest(t)), nftDigest(t)) << c.what;
  }
}

// Two pods swapping egress IPs that differ only in the top bit of a 64-bit word: a hash that
// mixes words by FNV-1a's step alone would not see it (each flip of that bit flips only the
// state's top bit, and two flips cancel).
TEST(NftShapeTest, TwoPodsSwappingEgressIPsChangeTheDigest) {
  NftTable a;
  a.policies.resize(1);
  a.policies[0].destinations[1] = {*ipam::parseCIDR("2001:db8:ffff::/48")};
  const auto e1 = testing::ip("2001:db8::1");
  const auto e2 = testing::ip("2001:db8::8000:0:0:1");
  a.policies[0].picks[1] = {{testing::ip("fd00:244::1"), e1}, {testing::ip("fd00:244::2"), e2}};
  auto b = a;
  std::swap(b.policies[0].picks[1][0].egressIP, b.policies[0].picks[1][1].egressIP);
  ASSERT_TRUE(nftSameShape(a, b));
  EXPECT_NE(nftDigest(a), nftDigest(b));
}

// The elements hash covers where an element is, not only what it is: the same pick in another
// policy's map is another table.
TEST(NftShapeTest, AnElementMovedToAnotherMapChangesTheDigest) {
  NftTable a;
  a.policies.resize(2);
  for (auto& p : a.policies) {
    p.destinations[0] = {*ipam::parseCIDR("203.0.113.0/24")};
  }
  a.policies[0].picks[0] = {{testing::ip("10.0.0.1"), std::nullopt},
                            {testing::ip("10.0.0.2"), std::nullopt}};
  a.policies[1].picks[0] = {{testing::ip("10.0.0.3"), std::nullopt}};
  auto b = a;
  b.policies[1].picks[0].insert(b.policies[1].picks[0].begin(), b.policies[0].picks[0].back());
  b.policies[0].picks[0].pop_back();
  ASSERT_TRUE(nftSameShape(a, b));
  EXPECT_NE(nftDigest(a), nftDigest(b));
}

// The delta path trusts only a kernel that still has what this applier applied: a table someone
// else replaced (another digest) or removed is replaced whole.
TEST_F(NftApplierTest, AKernelThatIsNotWhatWasAppliedIsReplacedWhole) {
  NftApplier nft;
  ASSERT_EQ(nft.apply(tableWithSources(10))->kind, Kind::kReplaced);
  ASSERT_TRUE(NftApplier().remove("egw").ok());
  EXPECT_EQ(nft.apply(tableWithSources(11))->kind, Kind::kReplaced);
  ASSERT_EQ(NftApplier().apply(tableWithSources(5))->kind, Kind::kReplaced);
  EXPECT_EQ(nft.apply(tableWithSources(12))->kind, Kind::kReplaced);
  EXPECT_EQ(nft.appliedDigest("egw"), renderNftJson(tableWithSources(12)).digest);
  EXPECT_EQ(nft.apply(tableWithSources(13))->kind, Kind::kElements);
}

}  // namespace
}  // namespace egress::dataplane
