#include "pkg/ipam/allocator.h"

#include <optional>
#include <string>
#include <tuple>
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
  EXPECT_THAT(a.waitingFor({ip("203.0.113.1")}), ElementsAre("ns/b"));
  // A freed address of a family it is not short of, or of another pool, wakes nothing.
  EXPECT_THAT(a.waitingFor({ip("2001:db8::1")}), IsEmpty());
  EXPECT_THAT(a.waitingFor({ip("198.51.100.1")}), IsEmpty());
  a.commit("ns/a", "p", {});
  auto retry = assignAndCommit(a, request("ns/b", "p", 3));
  EXPECT_THAT(texts(retry.entries), ElementsAre("203.0.113.2", "203.0.113.1"));
}

TEST(Allocator, DualStackEntriesHoldOneAddressOfEachFamily) {
  Allocator a;
  a.rebuild({pool("p", 1, {"203.0.113.0/30", "2001:db8::/126"})}, {});
  auto out = assignAndCommit(a, request("ns/a", "p", 2, {kV4, kV6}));
  EXPECT_EQ(out.shortfall, Shortfall::kNone);
  EXPECT_THAT(texts(out.entries),
              ElementsAre("203.0.113.1,2001:db8::1", "203.0.113.2,2001:db8::2"));
  // A third replica: no IPv4 left, so the entry is IPv6 only and the shortfall says why.
  auto more = a.assign(request("ns/a", "p", 3, {kV4, kV6}));
  EXPECT_EQ(more.shortfall, Shortfall::kPoolExhausted);
  EXPECT_THAT(texts(more.entries),
              ElementsAre("203.0.113.1,2001:db8::1", "203.0.113.2,2001:db8::2", "2001:db8::3"));
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

// An address no IPAMPool admitted could be any address of the cluster's network.
TEST(Allocator, WithoutAPoolNewExplicitAddressesAreRefused) {
  Allocator a;
  a.rebuild({pool("p", 1, {"198.51.100.0/24"})}, {});
  auto out = assignAndCommit(a, request("ns/a", "", 2, {kV4}, {"198.51.100.7"}));
  EXPECT_EQ(out.shortfall, Shortfall::kNoPool);
  EXPECT_EQ(out.message,
            "explicit address 198.51.100.7 has no pool: addresses come only from an IPAMPool "
            "(spec.egressIP.pool or the OperatorConfig's defaultPool) whose namespaceSelector "
            "admits the policy's namespace");
  EXPECT_THAT(out.entries, IsEmpty());
  EXPECT_THAT(out.allocated, IsEmpty());
  EXPECT_EQ(a.holderOf(ip("198.51.100.7")), "");
  EXPECT_EQ(a.poolState("p").ipv4.allocated, 0);
  auto none = a.assign(request("ns/b", "", 1));
  EXPECT_EQ(none.shortfall, Shortfall::kNoPool);
  EXPECT_EQ(none.message,
            "no pool: name one in spec.egressIP.pool or set the OperatorConfig's defaultPool");
  EXPECT_EQ(shortfallName(Shortfall::kNoPool), "NoPool");
}

// Existing ledgers keep theirs: dropping an address a gateway may still carry would let another
// policy take it.
// Owners are uids: a policy re-created under the same name starts afresh, and its predecessor
// keeps what it holds until released; messages name the policy, not the uid.
TEST(Allocator, OwnersAreUidsAndMessagesNameThem) {
  Allocator a;
  a.rebuild({pool("p", 1, {"203.0.113.0/30"}), pool("q", 2, {"198.51.100.0/30"})},
            {PolicyLedger{"uid-1", 1, "p", {{"203.0.113.1"}, {"203.0.113.2"}}, "ns/web"}});
  AssignRequest again = request("uid-2", "q", 2);
  again.name = "ns/web";
  auto out = assignAndCommit(a, again);
  EXPECT_EQ(out.shortfall, Shortfall::kNone) << out.message;
  EXPECT_EQ(out.pool, "q");
  EXPECT_THAT(texts(out.entries), ElementsAre("198.51.100.1", "198.51.100.2"));
  EXPECT_THAT(a.ownersNamed("ns/web"), UnorderedElementsAre("uid-1", "uid-2"));
  EXPECT_EQ(a.holderOf(*parseAddress("203.0.113.1")), "uid-1");
  EXPECT_EQ(a.ownerName("uid-1"), "ns/web");

  AssignRequest thief = request("uid-3", "p", 1, {kV4}, {"203.0.113.2"});
  thief.name = "ns/thief";
  out = a.assign(thief);
  EXPECT_EQ(out.shortfall, Shortfall::kAddressConflict);
  EXPECT_EQ(out.message, "explicit address 203.0.113.2 is held by ns/web");

  EXPECT_THAT(texts(a.releaseAll("uid-1")), ElementsAre("203.0.113.1", "203.0.113.2"));
  EXPECT_THAT(a.ownersNamed("ns/web"), ElementsAre("uid-2"));
}

// What the published view shows in use is held beyond the ledger after a rebuild, until a
// commit no longer finds it in use; an address two owners' views show goes to the first.
TEST(Allocator, RebuildHoldsWhatIsInUseBeyondTheLedgers) {
  Allocator a;
  const std::vector<PoolSpec> pools = {pool("p", 1, {"203.0.113.0/29"}, {"203.0.113.6"}),
                                       pool("q", 2, {"198.51.100.0/29"})};
  const auto conflicts =
      a.rebuild(pools, {PolicyLedger{"uid-a", 1, "p", {{"203.0.113.1"}}, "ns/a"}},
                {InUse{"uid-a", "ns/a", "EgressPolicySlice ns.a.0", {"203.0.113.1", "203.0.113.2"}},
                 InUse{"uid-gone", "ns/gone", "EgressPolicySlice ns.gone.0", {"198.51.100.2"}},
                 InUse{"uid-x", "ns/x", "EgressPolicySlice ns.x.0", {"203.0.113.2", "not-an-ip"}}});
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_TRUE(conflicts[0].inUse);
  EXPECT_EQ(conflicts[0].address, "203.0.113.2");
  EXPECT_EQ(conflicts[0].message,
            "203.0.113.2 is carried by EgressPolicySlice ns.x.0 of ns/x, but another policy "
            "holds it");
  EXPECT_EQ(a.holderOf(*parseAddress("203.0.113.2")), "uid-a");
  EXPECT_EQ(a.holderOf(*parseAddress("198.51.100.2")), "uid-gone");
  EXPECT_EQ(a.poolState("p").ipv4.allocated, 2);
  EXPECT_EQ(a.poolState("q").ipv4.allocated, 1);

  // Another policy of pool p gets neither .1 nor .2.
  auto other = assignAndCommit(a, request("uid-b", "p", 1));
  EXPECT_THAT(texts(other.entries), ElementsAre("203.0.113.3"));
  // What is held only because a view showed it never grows the ledger: a second entry for ns/a
  // is a new address, and .2 stays beyond the ledger until no view names it.
  AssignRequest two = request("uid-a", "p", 2);
  two.name = "ns/a";
  auto grown = a.assign(two);
  EXPECT_THAT(texts(grown.entries), ElementsAre("203.0.113.1", "203.0.113.4"));
  const std::vector<Entry> ledger = grown.entries;
  EXPECT_THAT(a.commit("uid-a", "p", ledger, {*parseAddress("203.0.113.2")}), IsEmpty());
  EXPECT_THAT(texts(a.commit("uid-a", "p", ledger, {})), ElementsAre("203.0.113.2"));
  EXPECT_THAT(texts(a.releaseAll("uid-gone")), ElementsAre("198.51.100.2"));
}

TEST(Allocator, WithoutAPoolALedgersExplicitAddressesStayHeld) {
  Allocator a;
  EXPECT_THAT(a.rebuild({}, {PolicyLedger{"ns/a", 1, "", {{"198.51.100.7"}}, ""}}), IsEmpty());
  auto out = assignAndCommit(a, request("ns/a", "", 2, {kV4}, {"198.51.100.7", "198.51.100.8"}));
  EXPECT_EQ(out.shortfall, Shortfall::kNoPool);
  EXPECT_THAT(out.message, ::testing::HasSubstr("198.51.100.8 has no pool"));
  EXPECT_THAT(texts(out.entries), ElementsAre("198.51.100.7"));
  EXPECT_THAT(out.allocated, IsEmpty());
  EXPECT_EQ(a.holderOf(ip("198.51.100.7")), "ns/a");
  EXPECT_EQ(a.holderOf(ip("198.51.100.8")), "");
  // Still its own with fewer explicit addresses than replicas: no pool for the rest.
  auto fewer = assignAndCommit(a, request("ns/a", "", 2, {kV4}, {"198.51.100.7"}));
  EXPECT_EQ(fewer.shortfall, Shortfall::kNoPool);
  EXPECT_THAT(texts(fewer.entries), ElementsAre("198.51.100.7"));
  auto conflict = a.assign(request("ns/c", "", 1, {kV4}, {"198.51.100.7"}));
  EXPECT_EQ(conflict.shortfall, Shortfall::kAddressConflict);
}

TEST(Allocator, AnAddressHeldWithoutAPoolIsNeverHandedOutByAPool) {
  Allocator a;
  a.rebuild({pool("p", 1, {"203.0.113.0/30"})},
            {PolicyLedger{"ns/explicit", 1, "", {{"203.0.113.1"}}, ""}});
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
  auto conflicts =
      a.rebuild({pool("p", 1, {"203.0.113.0/28"})},
                {PolicyLedger{"ns/new", 20, "p", {{"203.0.113.5"}, {"203.0.113.6"}}, ""},
                 PolicyLedger{"ns/old", 10, "p", {{"203.0.113.5"}}, ""}});
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
  auto conflicts =
      a.rebuild({pool("p", 1, {"203.0.113.0/29"}, {"203.0.113.2"})},
                {PolicyLedger{"ns/a", 1, "p", {{"203.0.113.2"}, {"198.51.100.1"}}, ""}});
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
  a.rebuild({}, {PolicyLedger{"ns/a", 1, "later", {{"203.0.113.1"}}, ""}});
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
            {PolicyLedger{"ns/x", 1, "new", {{"203.0.113.1"}}, ""}});
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

// ---- reservations and special-use addresses --------------------------------------------------

Reservation reservation(const std::string& cidr, std::string why) {
  auto p = parseAddressOrCIDR(cidr);
  EXPECT_TRUE(p) << cidr;
  return Reservation{p.value_or(Prefix{}), std::move(why)};
}

TEST(Allocator, AReservedAddressIsNeverHandedOut) {
  Allocator a;
  a.setReserved({reservation("192.0.2.1", "node n1's InternalIP")});
  a.rebuild({pool("p", 1, {"192.0.2.0/29"})}, {});
  auto out = assignAndCommit(a, request("ns/a", "p", 1));
  EXPECT_EQ(out.shortfall, Shortfall::kNone);
  EXPECT_THAT(texts(out.entries), ElementsAre("192.0.2.2"));
  EXPECT_EQ(a.poolState("p").ipv4, (FamilyCounts{5, 1, 4, 0}));
  EXPECT_EQ(a.reservedReason(ip("192.0.2.1")), "node n1's InternalIP");
  EXPECT_EQ(a.reservedReason(ip("192.0.2.2")), std::nullopt);
  // Set after the pool, too.
  Allocator b;
  b.rebuild({pool("p", 1, {"192.0.2.0/29"})}, {});
  b.setReserved({reservation("192.0.2.1", "node n1's InternalIP")});
  EXPECT_THAT(texts(assignAndCommit(b, request("ns/a", "p", 1)).entries), ElementsAre("192.0.2.2"));
}

TEST(Allocator, ReservedReasonIsTheFirstReservationContainingTheAddress) {
  Allocator a;
  a.setReserved({reservation("10.96.0.0/12", "a cluster CIDR (OperatorConfig spec.clusterCIDRs)"),
                 reservation("10.96.0.1", "the API server's address"),
                 reservation("2001:db8::5", "node n2's InternalIP")});
  EXPECT_EQ(a.reservedReason(ip("10.96.0.1")), "a cluster CIDR (OperatorConfig spec.clusterCIDRs)");
  EXPECT_EQ(a.reservedReason(ip("10.111.255.255")),
            "a cluster CIDR (OperatorConfig spec.clusterCIDRs)");
  EXPECT_EQ(a.reservedReason(ip("10.112.0.0")), std::nullopt);
  EXPECT_EQ(a.reservedReason(ip("2001:db8::5")), "node n2's InternalIP");
  // Families do not mix: ::5 is not 0.0.0.5, nor 2001:db8::5's IPv4 twin.
  EXPECT_EQ(a.reservedReason(Address{kV4, ip("2001:db8::5").value}), std::nullopt);
  a.setReserved({});
  EXPECT_EQ(a.reservedReason(ip("10.96.0.1")), std::nullopt);
}

TEST(Allocator, AnExplicitReservedAddressIsRefused) {
  Allocator a;
  a.setReserved({reservation("192.0.2.1", "node n1's InternalIP"),
                 reservation("10.96.0.0/12", "a cluster CIDR (OperatorConfig spec.clusterCIDRs)")});
  a.rebuild({pool("p", 1, {"192.0.2.0/29"})}, {});
  auto out = a.assign(request("ns/a", "p", 1, {kV4}, {"192.0.2.1"}));
  EXPECT_EQ(out.shortfall, Shortfall::kAddressReserved);
  EXPECT_EQ(shortfallName(out.shortfall), "AddressReserved");
  EXPECT_EQ(out.message, "explicit address 192.0.2.1 is node n1's InternalIP");
  EXPECT_THAT(out.entries, IsEmpty());
  EXPECT_EQ(a.holderOf(ip("192.0.2.1")), "");
  // Outside every pool, or with none, the reservation is still what is named.
  auto cluster = a.assign(request("ns/b", "", 1, {kV4}, {"10.96.0.10"}));
  EXPECT_EQ(cluster.shortfall, Shortfall::kAddressReserved);
  EXPECT_EQ(cluster.message,
            "explicit address 10.96.0.10 is a cluster CIDR (OperatorConfig spec.clusterCIDRs)");
  EXPECT_EQ(a.holderOf(ip("10.96.0.10")), "");
}

TEST(Allocator, AnExplicitSpecialUseAddressIsRefused) {
  Allocator a;
  a.rebuild({pool("p", 1, {"169.254.0.0/16", "fe80::/64", "192.0.2.0/29"})}, {});
  auto v4 = a.assign(request("ns/a", "p", 1, {kV4}, {"169.254.10.1"}));
  EXPECT_EQ(v4.shortfall, Shortfall::kAddressReserved);
  EXPECT_EQ(v4.message, "explicit address 169.254.10.1 is a link-local address");
  auto v6 = a.assign(request("ns/a", "p", 1, {kV6}, {"fe80::1"}));
  EXPECT_EQ(v6.shortfall, Shortfall::kAddressReserved);
  EXPECT_EQ(v6.message, "explicit address fe80::1 is a link-local address");
  auto noPool = a.assign(request("ns/b", "", 1, {kV4}, {"127.0.0.1"}));
  EXPECT_EQ(noPool.shortfall, Shortfall::kAddressReserved);
  EXPECT_EQ(noPool.message, "explicit address 127.0.0.1 is a loopback address");
  EXPECT_EQ(a.holderOf(ip("169.254.10.1")), "");
  EXPECT_EQ(a.holderOf(ip("127.0.0.1")), "");
}

// A node joins with an address a policy already holds: the policy keeps it (fail closed), the
// pool counts it as outside, and nobody else ever gets it.
TEST(Allocator, ReservingAHeldAddressKeepsItWithItsOwner) {
  Allocator a;
  a.rebuild({pool("p", 1, {"192.0.2.0/29"})}, {});
  assignAndCommit(a, request("ns/a", "p", 2));
  assignAndCommit(a, request("ns/x", "p", 1, {kV4}, {"192.0.2.5"}));
  a.setReserved({reservation("192.0.2.2", "node n1's InternalIP"),
                 reservation("192.0.2.5", "node n2's InternalIP")});
  EXPECT_EQ(a.poolState("p").ipv4, (FamilyCounts{4, 1, 3, 2}));
  EXPECT_EQ(a.holderOf(ip("192.0.2.2")), "ns/a");
  auto kept = a.assign(request("ns/a", "p", 2));
  EXPECT_EQ(kept.shortfall, Shortfall::kNone);
  EXPECT_THAT(texts(kept.entries), ElementsAre("192.0.2.1", "192.0.2.2"));
  // An explicit address already held stays in its entry.
  auto explicitKept = a.assign(request("ns/x", "p", 1, {kV4}, {"192.0.2.5"}));
  EXPECT_EQ(explicitKept.shortfall, Shortfall::kNone);
  EXPECT_THAT(texts(explicitKept.entries), ElementsAre("192.0.2.5"));
  auto b = assignAndCommit(a, request("ns/b", "p", 6));
  EXPECT_EQ(b.shortfall, Shortfall::kPoolExhausted);
  EXPECT_THAT(texts(b.entries), ElementsAre("192.0.2.3", "192.0.2.4", "192.0.2.6"));
  // Released, it is not handed out again while reserved.
  a.commit("ns/a", "p", {});
  EXPECT_EQ(a.holderOf(ip("192.0.2.2")), "");
  EXPECT_EQ(a.poolState("p").ipv4, (FamilyCounts{4, 3, 1, 1}));
  auto c = assignAndCommit(a, request("ns/c", "p", 2));
  EXPECT_THAT(texts(c.entries), ElementsAre("192.0.2.1"));
  // The node leaves: its address is the pool's again.
  a.setReserved({reservation("192.0.2.5", "node n2's InternalIP")});
  EXPECT_THAT(texts(assignAndCommit(a, request("ns/c", "p", 2)).entries),
              ElementsAre("192.0.2.1", "192.0.2.2"));
  // The same list again changes nothing.
  a.setReserved({reservation("192.0.2.5", "node n2's InternalIP")});
  EXPECT_EQ(a.poolState("p").ipv4, (FamilyCounts{5, 5, 0, 1}));
}

// Rebuild fails closed: a ledger address that is now reserved or special-use stays held by its
// owner and is reported, whatever pool (or none) it is in, naming why.
TEST(Allocator, RebuildReportsReservedAndSpecialUseLedgerAddressesAndKeepsThem) {
  Allocator a;
  a.setReserved({reservation("192.0.2.1", "node n1's InternalIP")});
  auto conflicts =
      a.rebuild({pool("p", 1, {"192.0.2.0/29"})},
                {PolicyLedger{"ns/a", 1, "p", {{"192.0.2.1"}, {"169.254.0.9"}, {"192.0.2.2"}}, ""},
                 PolicyLedger{"ns/b", 2, "", {{"127.0.0.1"}, {"198.51.100.1"}}, ""},
                 PolicyLedger{"ns/c", 3, "missing", {{"224.0.0.1"}}, ""}});
  std::vector<std::tuple<std::string, std::string, Reason, std::string>> got;
  for (const auto& c : conflicts) {
    got.emplace_back(c.owner, c.address, c.reason, c.message);
  }
  using T = std::tuple<std::string, std::string, Reason, std::string>;
  EXPECT_THAT(got, UnorderedElementsAre(
                       T{"ns/a", "192.0.2.1", Reason::kExcluded,
                         "192.0.2.1 is node n1's InternalIP (pool p); it stays held by ns/a"},
                       T{"ns/a", "169.254.0.9", Reason::kExcluded,
                         "169.254.0.9 is a link-local address (pool p); it stays held by ns/a"},
                       T{"ns/b", "127.0.0.1", Reason::kExcluded,
                         "127.0.0.1 is a loopback address; it stays held by ns/b"},
                       T{"ns/c", "224.0.0.1", Reason::kExcluded,
                         "224.0.0.1 is a multicast address; it stays held by ns/c"}));
  for (const char* held : {"192.0.2.1", "169.254.0.9", "192.0.2.2"}) {
    EXPECT_EQ(a.holderOf(ip(held)), "ns/a") << held;
  }
  EXPECT_EQ(a.holderOf(ip("127.0.0.1")), "ns/b");
  EXPECT_EQ(a.holderOf(ip("224.0.0.1")), "ns/c");
  EXPECT_EQ(a.poolState("p").ipv4, (FamilyCounts{5, 1, 4, 2}));
  auto out = a.assign(request("ns/a", "p", 3));
  EXPECT_THAT(texts(out.entries), ElementsAre("192.0.2.1", "169.254.0.9", "192.0.2.2"));
  // The reservation survives the rebuild.
  EXPECT_EQ(a.reservedReason(ip("192.0.2.1")), "node n1's InternalIP");
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
      const uint32_t op = next(6);
      if (op == 5) {
        // A node comes or goes: at most one reserved address, sometimes a held one.
        std::vector<Reservation> reserved;
        if (next(2) == 0) {
          reserved.push_back(reservation("203.0.113." + std::to_string(1 + next(30)), "a node"));
        }
        a.setReserved(reserved);
      } else if (op == 0) {
        a.releaseAll(owner);
        latest.erase(owner);
      } else if (op == 4) {
        std::vector<PolicyLedger> written;
        for (const auto& o : a.owners()) {
          PolicyLedger l{o, static_cast<int64_t>(next(3)), a.committedPool(o).value_or(""), {}, ""};
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
        for (const auto& addr : out.allocated) {
          ASSERT_FALSE(a.reservedReason(addr)) << addr << " was reserved (seed " << seed << ")";
        }
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
