#include "pkg/ipam/allocator.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace egress::ipam {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

constexpr Family kV4 = Family::kIPv4;
constexpr Family kV6 = Family::kIPv6;

Address ip(const std::string& text) {
  auto a = parseAddress(text);
  EXPECT_TRUE(a) << text;
  return a.value_or(Address{});
}

std::vector<std::string> texts(const std::vector<Entry>& entries) {
  std::vector<std::string> out;
  for (const auto& e : entries) {
    std::string s;
    for (const auto& a : e) {
      s += (s.empty() ? "" : ",") + a.toString();
    }
    out.push_back(s);
  }
  return out;
}

std::vector<std::string> texts(const std::vector<Address>& addresses) {
  std::vector<std::string> out;
  for (const auto& a : addresses) {
    out.push_back(a.toString());
  }
  return out;
}

PoolSpec pool(std::string name, int64_t created, std::vector<std::string> cidrs,
              std::vector<std::string> exclude = {}) {
  return PoolSpec{std::move(name), created, std::move(cidrs), std::move(exclude), false, ""};
}

AssignRequest request(std::string owner, std::string poolName, int replicas,
                      std::vector<Family> families = {kV4},
                      std::vector<std::string> explicitAddresses = {}) {
  AssignRequest r;
  r.owner = std::move(owner);
  r.pool = std::move(poolName);
  r.replicas = replicas;
  r.families = std::move(families);
  r.explicitAddresses = std::move(explicitAddresses);
  return r;
}

// assign() followed by a successful ledger write.
Assignment assignAndCommit(Allocator& a, const AssignRequest& r) {
  Assignment out = a.assign(r);
  a.commit(r.owner, out.pool, out.entries);
  return out;
}

TEST(Allocator, AllocatesTheLowestFreeAddressesOutsideExclusions) {
  Allocator a;
  a.rebuild({pool("p", 1, {"203.0.113.0/29"}, {"203.0.113.1"})}, {});
  auto out = assignAndCommit(a, request("ns/a", "p", 2));
  EXPECT_EQ(out.shortfall, Shortfall::kNone);
  EXPECT_THAT(texts(out.entries), ElementsAre("203.0.113.2", "203.0.113.3"));
  EXPECT_THAT(texts(out.allocated), ElementsAre("203.0.113.2", "203.0.113.3"));
  EXPECT_EQ(a.poolState("p").ipv4.allocated, 2);
  EXPECT_EQ(a.poolState("p").policies, 1);
}

TEST(Allocator, AssignIsStickyAndIdempotent) {
  Allocator a;
  a.rebuild({pool("p", 1, {"203.0.113.0/28"})}, {});
  auto first = assignAndCommit(a, request("ns/a", "p", 2));
  auto other = assignAndCommit(a, request("ns/b", "p", 1));
  auto again = a.assign(request("ns/a", "p", 2));
  EXPECT_EQ(texts(again.entries), texts(first.entries));
  EXPECT_THAT(again.allocated, IsEmpty());
  EXPECT_THAT(again.surplus, IsEmpty());
  EXPECT_THAT(texts(other.entries), ElementsAre("203.0.113.3"));
}

TEST(Allocator, ExplicitAddressesComeFirstInOrderThenThePool) {
  Allocator a;
  a.rebuild({pool("p", 1, {"203.0.113.0/28"})}, {});
  auto out = assignAndCommit(a, request("ns/a", "p", 3, {kV4}, {"203.0.113.10", "203.0.113.7"}));
  EXPECT_EQ(out.shortfall, Shortfall::kNone);
  EXPECT_THAT(texts(out.entries), ElementsAre("203.0.113.10", "203.0.113.7", "203.0.113.1"));
}

TEST(Allocator, ScaleDownReleasesTheEndOfTheLedgerOnlyAfterCommit) {
  Allocator a;
  a.rebuild({pool("p", 1, {"203.0.113.0/28"})}, {});
  assignAndCommit(a, request("ns/a", "p", 3));
  auto down = a.assign(request("ns/a", "p", 1));
  EXPECT_THAT(texts(down.entries), ElementsAre("203.0.113.1"));
  EXPECT_THAT(texts(down.surplus), ElementsAre("203.0.113.2", "203.0.113.3"));
  // Not yet written: another policy must not get them.
  auto b = a.assign(request("ns/b", "p", 1));
  EXPECT_THAT(texts(b.entries), ElementsAre("203.0.113.4"));
  auto released = a.commit("ns/a", "p", down.entries);
  EXPECT_THAT(texts(released), ElementsAre("203.0.113.2", "203.0.113.3"));
  EXPECT_EQ(a.holderOf(ip("203.0.113.2")), "");
  // Scale up again: the first entry stays, the rest are the lowest free.
  auto up = assignAndCommit(a, request("ns/a", "p", 3));
  EXPECT_THAT(texts(up.entries), ElementsAre("203.0.113.1", "203.0.113.2", "203.0.113.3"));
}

TEST(Allocator, AFailedLedgerWriteKeepsWhatWasTakenForTheNextTry) {
  Allocator a;
  a.rebuild({pool("p", 1, {"203.0.113.0/28"})}, {});
  auto first = a.assign(request("ns/a", "p", 2));  // the status write then fails: no commit
  auto retry = a.assign(request("ns/a", "p", 2));
  EXPECT_EQ(texts(retry.entries), texts(first.entries));
  EXPECT_THAT(retry.allocated, IsEmpty());
}

TEST(Allocator, ExhaustionKeepsWhatIsHeldAndRunsAsManyAsItCan) {
  Allocator a;
  a.rebuild({pool("p", 1, {"203.0.113.0/30"})}, {});  // .1 and .2
  assignAndCommit(a, request("ns/a", "p", 1));
  auto b = assignAndCommit(a, request("ns/b", "p", 3));
  EXPECT_EQ(b.shortfall, Shortfall::kPoolExhausted);
  EXPECT_THAT(texts(b.entries), ElementsAre("203.0.113.2"));
  EXPECT_THAT(a.waitingFor("p"), ElementsAre("ns/b"));
  a.commit("ns/a", "p", {});
  auto retry = assignAndCommit(a, request("ns/b", "p", 3));
  EXPECT_THAT(texts(retry.entries), ElementsAre("203.0.113.2", "203.0.113.1"));
}

TEST(Allocator, DualStackEntriesHoldOneAddressOfEachFamily) {
  Allocator a;
  a.rebuild({pool("p", 1, {"203.0.113.0/30", "2001:db8::/126"})}, {});
  auto out = assignAndCommit(a, request("ns/a", "p", 2, {kV4, kV6}));
  EXPECT_EQ(out.shortfall, Shortfall::kNone);
  EXPECT_THAT(texts(out.entries), ElementsAre("203.0.113.1,2001:db8::", "203.0.113.2,2001:db8::1"));
  // A third replica: no IPv4 left, so the entry is IPv6 only and the shortfall says why.
  auto more = a.assign(request("ns/a", "p", 3, {kV4, kV6}));
  EXPECT_EQ(more.shortfall, Shortfall::kPoolExhausted);
  EXPECT_THAT(texts(more.entries),
              ElementsAre("203.0.113.1,2001:db8::", "203.0.113.2,2001:db8::1", "2001:db8::2"));
}

TEST(Allocator, ExplicitAddressHeldByAnotherPolicyIsAConflict) {
  Allocator a;
  a.rebuild({pool("p", 1, {"203.0.113.0/28"})}, {});
  assignAndCommit(a, request("ns/a", "p", 1, {kV4}, {"203.0.113.5"}));
  auto b = a.assign(request("ns/b", "p", 1, {kV4}, {"203.0.113.5"}));
  EXPECT_EQ(b.shortfall, Shortfall::kAddressConflict);
  EXPECT_THAT(b.message, ::testing::HasSubstr("ns/a"));
  EXPECT_THAT(b.entries, IsEmpty());
}

TEST(Allocator, ExplicitAddressOutsideThePoolIsRefused) {
  Allocator a;
  a.rebuild({pool("p", 1, {"203.0.113.0/28"}, {"203.0.113.9"})}, {});
  auto out = a.assign(request("ns/a", "p", 2, {kV4}, {"198.51.100.1", "203.0.113.9"}));
  EXPECT_EQ(out.shortfall, Shortfall::kAddressNotInPool);
  EXPECT_THAT(out.entries, IsEmpty());
  EXPECT_EQ(a.holderOf(ip("198.51.100.1")), "");
}

TEST(Allocator, WithoutAPoolExplicitAddressesAreHeldAndTooFewIsNotEnough) {
  Allocator a;
  a.rebuild({}, {});
  auto out = assignAndCommit(a, request("ns/a", "", 2, {kV4}, {"198.51.100.7"}));
  EXPECT_EQ(out.shortfall, Shortfall::kNotEnoughAddresses);
  EXPECT_THAT(texts(out.entries), ElementsAre("198.51.100.7"));
  auto none = a.assign(request("ns/b", "", 1));
  EXPECT_EQ(none.shortfall, Shortfall::kNoPool);
  auto conflict = a.assign(request("ns/c", "", 1, {kV4}, {"198.51.100.7"}));
  EXPECT_EQ(conflict.shortfall, Shortfall::kAddressConflict);
}

TEST(Allocator, AnAddressHeldWithoutAPoolIsNeverHandedOutByAPool) {
  Allocator a;
  a.rebuild({pool("p", 1, {"203.0.113.0/30"})}, {});
  assignAndCommit(a, request("ns/explicit", "", 1, {kV4}, {"203.0.113.1"}));
  auto out = assignAndCommit(a, request("ns/a", "p", 2));
  EXPECT_EQ(out.shortfall, Shortfall::kPoolExhausted);
  EXPECT_THAT(texts(out.entries), ElementsAre("203.0.113.2"));
  // Once the explicit holder lets go, the pool can hand it out.
  a.releaseAll("ns/explicit");
  auto retry = a.assign(request("ns/a", "p", 2));
  EXPECT_THAT(texts(retry.entries), ElementsAre("203.0.113.2", "203.0.113.1"));
}

TEST(Allocator, RebuildRestoresLedgersAndTheOlderPolicyKeepsAConflict) {
  Allocator a;
  auto conflicts = a.rebuild({pool("p", 1, {"203.0.113.0/28"})},
                             {PolicyLedger{"ns/new", 20, "p", {{"203.0.113.5"}, {"203.0.113.6"}}},
                              PolicyLedger{"ns/old", 10, "p", {{"203.0.113.5"}}}});
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(conflicts[0].owner, "ns/new");
  EXPECT_EQ(conflicts[0].holder, "ns/old");
  EXPECT_EQ(conflicts[0].reason, Reason::kAlreadyAllocated);
  EXPECT_EQ(a.holderOf(ip("203.0.113.5")), "ns/old");
  EXPECT_EQ(a.holderOf(ip("203.0.113.6")), "ns/new");
  EXPECT_EQ(a.poolState("p").ipv4.allocated, 2);
  // The newer one keeps its other entry and gets a fresh address for the lost one.
  auto out = a.assign(request("ns/new", "p", 2));
  EXPECT_THAT(texts(out.entries), ElementsAre("203.0.113.6", "203.0.113.1"));
}

TEST(Allocator, RebuildKeepsAddressesOutsideThePoolHeldAndCountsThem) {
  Allocator a;
  auto conflicts = a.rebuild({pool("p", 1, {"203.0.113.0/29"}, {"203.0.113.2"})},
                             {PolicyLedger{"ns/a", 1, "p", {{"203.0.113.2"}, {"198.51.100.1"}}}});
  ASSERT_EQ(conflicts.size(), 2u);
  EXPECT_EQ(a.poolState("p").ipv4.outside, 2);
  EXPECT_EQ(a.holderOf(ip("203.0.113.2")), "ns/a");
  // They stay its own: still in its ledger, and nobody else gets them.
  auto out = a.assign(request("ns/a", "p", 2));
  EXPECT_THAT(texts(out.entries), ElementsAre("203.0.113.2", "198.51.100.1"));
  auto b = a.assign(request("ns/b", "p", 6));
  for (const auto& e : texts(b.entries)) {
    EXPECT_NE(e, "203.0.113.2");
  }
}

TEST(Allocator, ALedgerWhosePoolIsMissingStaysHeldUntilThePoolComes) {
  Allocator a;
  a.rebuild({}, {PolicyLedger{"ns/a", 1, "later", {{"203.0.113.1"}}}});
  EXPECT_EQ(a.holderOf(ip("203.0.113.1")), "ns/a");
  auto out = a.assign(request("ns/a", "later", 2));
  EXPECT_EQ(out.shortfall, Shortfall::kPoolNotFound);
  EXPECT_THAT(texts(out.entries), ElementsAre("203.0.113.1"));
  a.setPool(pool("later", 5, {"203.0.113.0/29"}));
  EXPECT_EQ(a.poolState("later").ipv4.allocated, 1);
  auto after = assignAndCommit(a, request("ns/a", "later", 2));
  EXPECT_THAT(texts(after.entries), ElementsAre("203.0.113.1", "203.0.113.2"));
}

TEST(Allocator, TheNewerOfTwoOverlappingPoolsMakesNoNewAllocations) {
  Allocator a;
  a.rebuild({pool("old", 1, {"203.0.113.0/29"}), pool("new", 2, {"203.0.113.4/30"})}, {});
  EXPECT_EQ(a.poolState("new").overlaps, "old");
  EXPECT_EQ(a.poolState("old").overlaps, "");
  auto out = a.assign(request("ns/a", "new", 1));
  EXPECT_EQ(out.shortfall, Shortfall::kPoolOverlapping);
  EXPECT_THAT(out.entries, IsEmpty());
  EXPECT_TRUE(assignAndCommit(a, request("ns/b", "old", 1)).shortfall == Shortfall::kNone);
  // Same age: the name decides.
  Allocator b;
  b.rebuild({pool("b", 1, {"10.0.0.0/24"}), pool("a", 1, {"10.0.0.128/25"})}, {});
  EXPECT_EQ(b.poolState("b").overlaps, "a");
}

TEST(Allocator, AddressesHeldInAnOverlappingPoolAreNeverHandedOutTwice) {
  Allocator a;
  a.rebuild({pool("old", 1, {"203.0.113.0/30"}), pool("new", 2, {"203.0.113.0/30"})},
            {PolicyLedger{"ns/x", 1, "new", {{"203.0.113.1"}}}});
  auto out = assignAndCommit(a, request("ns/a", "old", 2));
  EXPECT_EQ(out.shortfall, Shortfall::kPoolExhausted);
  EXPECT_THAT(texts(out.entries), ElementsAre("203.0.113.2"));
  EXPECT_EQ(a.holderOf(ip("203.0.113.1")), "ns/x");
}

TEST(Allocator, ADisabledPoolKeepsWhatIsHeldAndMakesNoNewAllocations) {
  Allocator a;
  a.rebuild({pool("p", 1, {"203.0.113.0/28"})}, {});
  assignAndCommit(a, request("ns/a", "p", 1));
  auto spec = pool("p", 1, {"203.0.113.0/28"});
  spec.disabled = true;
  a.setPool(spec);
  auto out = a.assign(request("ns/a", "p", 2));
  EXPECT_EQ(out.shortfall, Shortfall::kPoolDisabled);
  EXPECT_THAT(texts(out.entries), ElementsAre("203.0.113.1"));
}

TEST(Allocator, ShrinkingAPoolKeepsAddressesInUseAsOutside) {
  Allocator a;
  a.rebuild({pool("p", 1, {"203.0.113.0/28"})}, {});
  assignAndCommit(a, request("ns/a", "p", 3));
  a.setPool(pool("p", 1, {"203.0.113.0/28"}, {"203.0.113.2"}));
  auto s = a.poolState("p");
  EXPECT_EQ(s.ipv4.outside, 1);
  EXPECT_EQ(s.ipv4.allocated, 2);
  auto out = a.assign(request("ns/a", "p", 3));
  EXPECT_THAT(texts(out.entries), ElementsAre("203.0.113.1", "203.0.113.2", "203.0.113.3"));
  // Released, it does not come back into the pool.
  a.commit("ns/a", "p", {});
  EXPECT_EQ(a.poolState("p").ipv4.outside, 0);
  auto b = a.assign(request("ns/b", "p", 2));
  EXPECT_THAT(texts(b.entries), ElementsAre("203.0.113.1", "203.0.113.3"));
}

TEST(Allocator, NotAllowedKeepsWhatIsHeldButTakesNothingNew) {
  Allocator a;
  a.rebuild({pool("p", 1, {"203.0.113.0/28"})}, {});
  assignAndCommit(a, request("ns/a", "p", 1));
  auto r = request("ns/a", "p", 2);
  r.allowNew = false;
  r.deniedMessage = "namespace ns may not use IPAMPool p";
  auto out = a.assign(r);
  EXPECT_EQ(out.shortfall, Shortfall::kNotAllowed);
  EXPECT_EQ(out.message, "namespace ns may not use IPAMPool p");
  EXPECT_THAT(texts(out.entries), ElementsAre("203.0.113.1"));
}

TEST(Allocator, ReleaseAllFreesEverythingAndForgetsTheOwner) {
  Allocator a;
  a.rebuild({pool("p", 1, {"203.0.113.0/28"})}, {});
  assignAndCommit(a, request("ns/a", "p", 2));
  EXPECT_THAT(texts(a.releaseAll("ns/a")), UnorderedElementsAre("203.0.113.1", "203.0.113.2"));
  EXPECT_EQ(a.poolState("p").ipv4.allocated, 0);
  EXPECT_FALSE(a.committedPool("ns/a"));
  EXPECT_THAT(a.owners(), IsEmpty());
}

// Many owners churning over two overlapping pools and explicit addresses, with ledger writes
// that sometimes fail and rebuilds from what was written: no two owners' ledgers ever share an
// address, whether written or about to be.
TEST(Allocator, RandomChurnNeverHandsAnAddressOutTwice) {
  const std::vector<PoolSpec> pools = {pool("p", 1, {"203.0.113.0/27"}),
                                       pool("q", 2, {"203.0.113.16/28"})};
  for (uint32_t seed : {1u, 7u, 12345u}) {
    Allocator a;
    a.rebuild(pools, {});
    std::map<std::string, std::vector<Entry>> latest;  // what each owner would write next
    auto next = [&seed](uint32_t n) {
      seed = seed * 1103515245u + 12345u;
      return (seed >> 16) % n;
    };
    for (int step = 0; step < 3000; ++step) {
      const std::string owner = "ns/" + std::to_string(next(12));
      const uint32_t op = next(5);
      if (op == 0) {
        a.releaseAll(owner);
        latest.erase(owner);
      } else if (op == 4) {
        std::vector<PolicyLedger> written;
        for (const auto& o : a.owners()) {
          PolicyLedger l{o, static_cast<int64_t>(next(3)), a.committedPool(o).value_or(""), {}};
          for (const auto& e : a.committedEntries(o)) {
            l.entries.push_back({});
            for (const auto& addr : e) {
              l.entries.back().push_back(addr.toString());
            }
          }
          written.push_back(l);
        }
        a.rebuild(pools, written);
        latest.clear();
      } else {
        std::vector<std::string> explicitAddresses;
        if (op == 3) {
          explicitAddresses.push_back("203.0.113." + std::to_string(1 + next(30)));
        }
        auto out = a.assign(request(owner, next(2) == 0 ? "p" : "q", static_cast<int>(next(5)),
                                    {kV4}, explicitAddresses));
        latest[owner] = out.entries;
        if (next(3) != 0) {
          a.commit(owner, out.pool, out.entries);
        }
      }
      std::map<Address, std::string> seen;
      for (const auto& [o, entries] : latest) {
        for (const auto& e : entries) {
          for (const auto& addr : e) {
            auto [it, inserted] = seen.emplace(addr, o);
            ASSERT_TRUE(inserted) << addr << " in the ledgers of " << it->second << " and " << o
                                  << " (seed " << seed << ", step " << step << ")";
            ASSERT_EQ(a.holderOf(addr), o);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace egress::ipam
