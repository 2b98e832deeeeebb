// Runs in its own network namespace (netns_main.cc): programs egw's nftables table into a real
// kernel and reads it back.
#include "pkg/dataplane/nft_applier.h"

#include <algorithm>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "pkg/dataplane/desired_state.h"
#include "test/unit/dataplane/topology.h"

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
