#include "pkg/ipam/pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace egress::ipam {

// NOLINTNEXTLINE(readability-identifier-naming): GoogleTest's printer hook
void PrintTo(const Error& e, std::ostream* os) {
  *os << reasonName(e.reason) << "{address=" << e.address << " owner=" << e.owner
      << " holder=" << e.holder << " message=" << e.message << "}";
}

namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr int64_t kMax = FamilyCounts::kMax;

Pool mustCreate(const std::vector<std::string>& cidrs, const std::vector<std::string>& exclude) {
  auto pool = Pool::create(cidrs, exclude);
  EXPECT_TRUE(pool.ok()) << (pool.ok() ? "" : pool.error().message);
  return pool.ok() ? std::move(*pool) : Pool();
}

std::vector<std::string> texts(const std::vector<Address>& addresses) {
  std::vector<std::string> out;
  for (const auto& a : addresses) {
    out.push_back(a.toString());
  }
  return out;
}

// The allocated addresses as text, or the error's reason name.
std::vector<std::string> allocate(Pool& pool, const std::string& owner, Family family, size_t n) {
  auto r = pool.allocate(owner, family, n);
  if (!r) {
    return {std::string(reasonName(r.error().reason))};
  }
  return texts(*r);
}

// Why reserve() refused `text`, or "reserved" if it did not.
std::string refusal(Pool& pool, std::string_view owner, std::string_view text) {
  auto r = pool.reserve(owner, text);
  return r ? "reserved" : r.error().message;
}

Address addr(std::string_view text) {
  auto a = parseAddress(text);
  EXPECT_TRUE(a) << text;
  return a.value_or(Address{});
}

FamilyCounts counts(int64_t total, int64_t allocated, int64_t free, int64_t outside = 0) {
  return FamilyCounts{total, allocated, free, outside};
}

// ---- pool contents ----------------------------------------------------------------------------

TEST(Pool, IPv4NetworkAndBroadcastAreNeverHandedOut) {
  Pool pool = mustCreate({"10.0.0.0/30"}, {});
  EXPECT_EQ(pool.counts(Family::kIPv4), counts(2, 0, 2));
  EXPECT_THAT(allocate(pool, "a", Family::kIPv4, 3), ElementsAre("PoolExhausted"));
  EXPECT_THAT(allocate(pool, "a", Family::kIPv4, 2), ElementsAre("10.0.0.1", "10.0.0.2"));
  EXPECT_EQ(pool.counts(Family::kIPv4), counts(2, 2, 0));
  for (const char* reserved : {"10.0.0.0", "10.0.0.3"}) {
    auto r = pool.reserve("b", reserved);
    ASSERT_FALSE(r) << reserved;
    EXPECT_EQ(r.error().reason, Reason::kExcluded) << reserved;
    EXPECT_EQ(r.error().message,
              std::string(reserved) + " is the network or broadcast address of its CIDR");
  }
}

TEST(Pool, SlashThirtyOneAndThirtyTwoUseEveryAddress) {
  Pool p31 = mustCreate({"10.0.0.4/31"}, {});
  EXPECT_EQ(p31.counts(Family::kIPv4), counts(2, 0, 2));
  EXPECT_THAT(allocate(p31, "a", Family::kIPv4, 2), ElementsAre("10.0.0.4", "10.0.0.5"));
  Pool p32 = mustCreate({"10.0.0.9/32"}, {});
  EXPECT_EQ(p32.counts(Family::kIPv4), counts(1, 0, 1));
  EXPECT_THAT(allocate(p32, "a", Family::kIPv4, 1), ElementsAre("10.0.0.9"));
}

// RFC 4291 2.6.1: every router of a subnet answers for its all-zeros address; a node's proxy NDP
// must not (`make demo` once gave a policy 2001:db8:100::). IPv6 has no broadcast address.
TEST(Pool, IPv6SubnetRouterAnycastAddressIsNeverHandedOut) {
  Pool pool = mustCreate({"2001:db8::/126"}, {});
  EXPECT_EQ(pool.counts(Family::kIPv6), counts(3, 0, 3));
  EXPECT_THAT(allocate(pool, "a", Family::kIPv6, 4), ElementsAre("PoolExhausted"));
  EXPECT_THAT(allocate(pool, "a", Family::kIPv6, 3),
              ElementsAre("2001:db8::1", "2001:db8::2", "2001:db8::3"));
  auto r = pool.reserve("b", "2001:db8::");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().reason, Reason::kExcluded);
  EXPECT_EQ(r.error().message, "2001:db8:: is the Subnet-Router anycast address of its CIDR");
  Pool demo = mustCreate({"2001:db8:100::/64"}, {});
  EXPECT_THAT(allocate(demo, "a", Family::kIPv6, 1), ElementsAre("2001:db8:100::1"));
}

// RFC 6164: a /127 is a point-to-point link with no anycast address; a /128 is one address.
TEST(Pool, IPv6SlashOneTwentySevenAndOneTwentyEightUseEveryAddress) {
  Pool p127 = mustCreate({"2001:db8::4/127"}, {});
  EXPECT_EQ(p127.counts(Family::kIPv6), counts(2, 0, 2));
  EXPECT_THAT(allocate(p127, "a", Family::kIPv6, 2), ElementsAre("2001:db8::4", "2001:db8::5"));
  Pool p128 = mustCreate({"2001:db8::/128"}, {});
  EXPECT_THAT(allocate(p128, "a", Family::kIPv6, 1), ElementsAre("2001:db8::"));
  // The anycast address of a /126 is a host of an overlapping larger CIDR.
  Pool overlapping = mustCreate({"2001:db8::4/126", "2001:db8::/125"}, {});
  EXPECT_EQ(overlapping.counts(Family::kIPv6), counts(7, 0, 7));
  EXPECT_TRUE(overlapping.reserve("a", "2001:db8::4"));
}

// Whatever CIDR a user writes, no special-use address is ever an egress IP (address.h).
TEST(Pool, SpecialUseAddressesAreNeverHandedOut) {
  Pool linkLocal = mustCreate({"169.254.0.0/30", "fe80::/64"}, {});
  EXPECT_TRUE(linkLocal.hasFamily(Family::kIPv4));
  EXPECT_EQ(linkLocal.counts(Family::kIPv4), counts(0, 0, 0));
  EXPECT_EQ(linkLocal.counts(Family::kIPv6), counts(0, 0, 0));
  EXPECT_THAT(allocate(linkLocal, "a", Family::kIPv4, 1), ElementsAre("PoolExhausted"));
  auto r = linkLocal.reserve("a", "169.254.0.1");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().reason, Reason::kExcluded);
  EXPECT_EQ(r.error().message, "169.254.0.1 is a link-local address");
  EXPECT_EQ(refusal(linkLocal, "a", "fe80::1"), "fe80::1 is a link-local address");

  // A CIDR across a block's edge keeps what lies outside it.
  Pool edge = mustCreate({"126.255.255.252/30", "127.0.0.0/30"}, {});
  EXPECT_EQ(edge.counts(Family::kIPv4), counts(2, 0, 2));
  EXPECT_THAT(allocate(edge, "a", Family::kIPv4, 2),
              ElementsAre("126.255.255.253", "126.255.255.254"));
  EXPECT_EQ(refusal(edge, "b", "127.0.0.1"), "127.0.0.1 is a loopback address");

  Pool v6 = mustCreate({"::/126", "::ffff:10.0.0.0/120", "ff02::/120"}, {});
  EXPECT_EQ(v6.counts(Family::kIPv6), counts(2, 0, 2));
  EXPECT_THAT(allocate(v6, "a", Family::kIPv6, 2), ElementsAre("::2", "::3"));
  EXPECT_EQ(refusal(v6, "b", "::1"), "::1 is a loopback address");
  EXPECT_EQ(refusal(v6, "b", "::ffff:10.0.0.5"), "::ffff:10.0.0.5 is an IPv4-mapped address");
  EXPECT_EQ(refusal(v6, "b", "ff02::1"), "ff02::1 is a multicast address");

  Pool all4 = mustCreate({"0.0.0.0/0"}, {});
  EXPECT_EQ(refusal(all4, "b", "0.1.2.3"), "0.1.2.3 is a \"this network\" address");
  EXPECT_EQ(refusal(all4, "b", "224.0.0.1"), "224.0.0.1 is a multicast address");
  EXPECT_EQ(refusal(all4, "b", "255.255.255.255"), "255.255.255.255 is a reserved address");
  // An exclusion the user wrote is named as such.
  Pool excluded = mustCreate({"127.0.0.0/24"}, {"127.0.0.5"});
  EXPECT_EQ(refusal(excluded, "b", "127.0.0.5"), "127.0.0.5 is excluded from the pool");
}

TEST(Pool, RestoredSpecialUseAddressesStayHeldOutside) {
  Pool pool = mustCreate({"224.0.0.0/24", "10.0.0.0/30"}, {});
  auto conflicts = pool.restore(Ledger{{"ns/a", {"224.0.0.5", "10.0.0.1"}}});
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(conflicts[0].reason, Reason::kExcluded);
  EXPECT_EQ(conflicts[0].message, "224.0.0.5 is a multicast address");
  EXPECT_EQ(pool.holderOf(addr("224.0.0.5")), "ns/a");
  EXPECT_EQ(pool.counts(Family::kIPv4), counts(2, 1, 1, 1));
  ASSERT_TRUE(pool.release("ns/a", "224.0.0.5"));
  EXPECT_EQ(pool.counts(Family::kIPv4), counts(2, 1, 1, 0));
}

TEST(Pool, TotalsOfCommonSizes) {
  EXPECT_EQ(mustCreate({"10.0.0.0/24"}, {}).counts(Family::kIPv4), counts(254, 0, 254));
  EXPECT_EQ(mustCreate({"10.0.0.0/16"}, {}).counts(Family::kIPv4), counts(65534, 0, 65534));
  // 2^32 minus the special-use blocks 0/8, 127/8 (2^24 each), 169.254/16, 224/4 and 240/4
  // (2^28 each), which hold the network and broadcast address.
  constexpr int64_t kAll4 =
      (int64_t{1} << 32) - 2 * (int64_t{1} << 24) - (int64_t{1} << 16) - 2 * (int64_t{1} << 28);
  EXPECT_EQ(kAll4, 3724476416);
  EXPECT_EQ(mustCreate({"0.0.0.0/0"}, {}).counts(Family::kIPv4), counts(kAll4, 0, kAll4));
  EXPECT_EQ(mustCreate({"2001:db8::/120"}, {}).counts(Family::kIPv6), counts(255, 0, 255));
  // 2^62 - 1 fits, 2^63 - 1 is the ceiling, more saturates.
  EXPECT_EQ(mustCreate({"2001:db8::/66"}, {}).counts(Family::kIPv6),
            counts((int64_t{1} << 62) - 1, 0, (int64_t{1} << 62) - 1));
  EXPECT_EQ(mustCreate({"2001:db8::/65"}, {}).counts(Family::kIPv6), counts(kMax, 0, kMax));
  EXPECT_EQ(mustCreate({"2001:db8::/64"}, {}).counts(Family::kIPv6), counts(kMax, 0, kMax));
  EXPECT_EQ(mustCreate({"::/0"}, {}).counts(Family::kIPv6), counts(kMax, 0, kMax));
}

TEST(Pool, CountsAreExactJustBelowSaturation) {
  // 2^63 - 2 usable: /65 minus two addresses, then one allocated.
  Pool pool = mustCreate({"2001:db8::/65"}, {"2001:db8::", "2001:db8::1"});
  EXPECT_EQ(pool.counts(Family::kIPv6), counts(kMax - 1, 0, kMax - 1));
  EXPECT_THAT(allocate(pool, "a", Family::kIPv6, 1), ElementsAre("2001:db8::2"));
  EXPECT_EQ(pool.counts(Family::kIPv6), counts(kMax - 1, 1, kMax - 2));
}

TEST(Pool, OverlappingCIDRsAreUnited) {
  Pool same = mustCreate({"10.0.0.0/24", "10.0.0.0/24", "10.0.0.0/25"}, {});
  EXPECT_EQ(same.counts(Family::kIPv4), counts(254, 0, 254));
  // 10.0.0.127 is the /25's broadcast but a host of the /24.
  EXPECT_TRUE(same.reserve("a", "10.0.0.127"));
  // Two adjacent /25s are two subnets: four reserved addresses.
  Pool halves = mustCreate({"10.0.0.0/25", "10.0.0.128/25"}, {});
  EXPECT_EQ(halves.counts(Family::kIPv4), counts(252, 0, 252));
  EXPECT_EQ(halves.reserve("a", "10.0.0.128").error().reason, Reason::kExcluded);
}

TEST(Pool, Exclusions) {
  Pool pool =
      mustCreate({"10.0.0.0/24", "2001:db8::/120"},
                 {"10.0.0.1", "10.0.0.16/28", "192.0.2.0/24", "2001:db8::/127", "2001:db9::/32"});
  // 254 - 1 - 16; the exclusion outside the CIDRs changes nothing.
  EXPECT_EQ(pool.counts(Family::kIPv4), counts(237, 0, 237));
  EXPECT_EQ(pool.counts(Family::kIPv6), counts(254, 0, 254));
  EXPECT_THAT(allocate(pool, "a", Family::kIPv4, 1), ElementsAre("10.0.0.2"));
  EXPECT_THAT(allocate(pool, "a", Family::kIPv6, 1), ElementsAre("2001:db8::2"));
  auto r = pool.reserve("b", "10.0.0.20");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().reason, Reason::kExcluded);
  EXPECT_EQ(r.error().address, "10.0.0.20");
  EXPECT_EQ(r.error().owner, "b");
  EXPECT_FALSE(r.error().message.empty());
}

TEST(Pool, ExclusionCoveringAWholeCIDR) {
  Pool pool = mustCreate({"10.0.0.8/32"}, {"10.0.0.0/24"});
  EXPECT_TRUE(pool.hasFamily(Family::kIPv4));
  EXPECT_EQ(pool.counts(Family::kIPv4), counts(0, 0, 0));
  EXPECT_THAT(allocate(pool, "a", Family::kIPv4, 1), ElementsAre("PoolExhausted"));
}

TEST(Pool, FamiliesAreSeparate) {
  Pool v4only = mustCreate({"10.0.0.0/24"}, {});
  EXPECT_TRUE(v4only.hasFamily(Family::kIPv4));
  EXPECT_FALSE(v4only.hasFamily(Family::kIPv6));
  EXPECT_EQ(v4only.counts(Family::kIPv6), counts(0, 0, 0));
  auto none = v4only.allocate("a", Family::kIPv6, 1);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().reason, Reason::kPoolExhausted);
  EXPECT_EQ(none.error().message, "the pool has no IPv6 CIDR");
  auto r = v4only.reserve("a", "2001:db8::1");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().reason, Reason::kNotInPool);
  // A mapped IPv4 address is IPv6 text, not the IPv4 address.
  EXPECT_EQ(v4only.reserve("a", "::ffff:10.0.0.5").error().reason, Reason::kNotInPool);
}

TEST(Pool, CreateRejectsWhatIsNotACIDR) {
  auto bare = Pool::create({"10.0.0.1"}, {});
  ASSERT_FALSE(bare);
  EXPECT_EQ(bare.error().reason, Reason::kInvalidAddress);
  EXPECT_EQ(bare.error().address, "10.0.0.1");
  auto badExclude = Pool::create({"10.0.0.0/24"}, {"10.0.0.1", "10.0.0.300"});
  ASSERT_FALSE(badExclude);
  EXPECT_EQ(badExclude.error().reason, Reason::kInvalidAddress);
  EXPECT_EQ(badExclude.error().address, "10.0.0.300");
  // Host bits are cleared, as ParseCIDR does.
  EXPECT_EQ(mustCreate({"10.0.0.77/30"}, {}).counts(Family::kIPv4), counts(2, 0, 2));
}

TEST(Pool, EmptyPool) {
  Pool pool = mustCreate({}, {});
  EXPECT_FALSE(pool.hasFamily(Family::kIPv4));
  EXPECT_FALSE(pool.hasFamily(Family::kIPv6));
  EXPECT_THAT(allocate(pool, "a", Family::kIPv4, 0), IsEmpty());
  EXPECT_THAT(allocate(pool, "a", Family::kIPv4, 1), ElementsAre("PoolExhausted"));
}

// ---- allocate / reserve / release -------------------------------------------------------------

TEST(Pool, AllocatesTheLowestFreeAddresses) {
  Pool pool = mustCreate({"10.0.0.0/24"}, {"10.0.0.3"});
  EXPECT_THAT(allocate(pool, "a", Family::kIPv4, 3),
              ElementsAre("10.0.0.1", "10.0.0.2", "10.0.0.4"));
  ASSERT_TRUE(pool.reserve("b", "10.0.0.6"));
  EXPECT_THAT(allocate(pool, "c", Family::kIPv4, 2), ElementsAre("10.0.0.5", "10.0.0.7"));
  ASSERT_TRUE(pool.release("a", "10.0.0.2"));
  EXPECT_THAT(allocate(pool, "d", Family::kIPv4, 2), ElementsAre("10.0.0.2", "10.0.0.8"));
  EXPECT_EQ(pool.holderOf(addr("10.0.0.2")), "d");
  EXPECT_EQ(pool.holderOf(addr("10.0.0.6")), "b");
  EXPECT_EQ(pool.holderOf(addr("10.0.0.9")), "");
  EXPECT_THAT(texts(pool.addressesOf("a")), ElementsAre("10.0.0.1", "10.0.0.4"));
  EXPECT_EQ(pool.counts(Family::kIPv4), counts(253, 7, 246));
}

TEST(Pool, LowestAcrossCIDRsInAddressOrder) {
  Pool pool = mustCreate({"10.0.1.0/31", "10.0.0.8/31"}, {});
  EXPECT_THAT(allocate(pool, "a", Family::kIPv4, 4),
              ElementsAre("10.0.0.8", "10.0.0.9", "10.0.1.0", "10.0.1.1"));
}

TEST(Pool, ExhaustionAllocatesNothing) {
  Pool pool = mustCreate({"10.0.0.0/29"}, {});
  EXPECT_THAT(allocate(pool, "a", Family::kIPv4, 4),
              ElementsAre("10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"));
  auto r = pool.allocate("b", Family::kIPv4, 3);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().reason, Reason::kPoolExhausted);
  EXPECT_EQ(r.error().owner, "b");
  EXPECT_EQ(r.error().address, "");
  EXPECT_EQ(r.error().message, "the pool has 2 free IPv4 addresses, 3 requested");
  EXPECT_EQ(pool.counts(Family::kIPv4), counts(6, 4, 2));
  EXPECT_THAT(pool.addressesOf("b"), IsEmpty());
  EXPECT_THAT(allocate(pool, "b", Family::kIPv4, 2), ElementsAre("10.0.0.5", "10.0.0.6"));
  EXPECT_THAT(allocate(pool, "b", Family::kIPv4, 1), ElementsAre("PoolExhausted"));
}

TEST(Pool, ReserveNamesTheHolder) {
  Pool pool = mustCreate({"10.0.0.0/24"}, {});
  ASSERT_TRUE(pool.reserve("ns/a", "10.0.0.5"));
  auto again = pool.reserve("ns/a", "10.0.0.5");  // idempotent
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, addr("10.0.0.5"));
  auto taken = pool.reserve("ns/b", "10.0.0.5");
  ASSERT_FALSE(taken);
  EXPECT_EQ(taken.error().reason, Reason::kAlreadyAllocated);
  EXPECT_EQ(taken.error().holder, "ns/a");
  EXPECT_EQ(taken.error().owner, "ns/b");
  EXPECT_EQ(taken.error().address, "10.0.0.5");
  EXPECT_NE(taken.error().message.find("ns/a"), std::string::npos) << taken.error().message;
  EXPECT_EQ(pool.counts(Family::kIPv4), counts(254, 1, 253));
}

TEST(Pool, ReserveRefusals) {
  Pool pool = mustCreate({"10.0.0.0/24"}, {});
  EXPECT_EQ(pool.reserve("a", "10.0.1.5").error().reason, Reason::kNotInPool);
  EXPECT_EQ(pool.reserve("a", "banana").error().reason, Reason::kInvalidAddress);
  EXPECT_EQ(pool.reserve("a", "10.0.0.5/32").error().reason, Reason::kInvalidAddress);
  EXPECT_EQ(pool.reserve("a", "").error().reason, Reason::kInvalidAddress);
  EXPECT_EQ(pool.counts(Family::kIPv4), counts(254, 0, 254));
  // A reserved address is skipped by later allocations.
  ASSERT_TRUE(pool.reserve("a", "10.0.0.1"));
  EXPECT_THAT(allocate(pool, "b", Family::kIPv4, 1), ElementsAre("10.0.0.2"));
}

TEST(Pool, Release) {
  Pool pool = mustCreate({"10.0.0.0/24"}, {});
  ASSERT_TRUE(pool.allocate("a", Family::kIPv4, 3));
  auto notHolder = pool.release("b", "10.0.0.2");
  ASSERT_FALSE(notHolder);
  EXPECT_EQ(notHolder.error().reason, Reason::kAlreadyAllocated);
  EXPECT_EQ(notHolder.error().holder, "a");
  EXPECT_EQ(pool.holderOf(addr("10.0.0.2")), "a");

  auto released = pool.release("a", "10.0.0.2");
  ASSERT_TRUE(released);
  EXPECT_TRUE(*released);
  auto twice = pool.release("a", "10.0.0.2");
  ASSERT_TRUE(twice);
  EXPECT_FALSE(*twice);
  EXPECT_EQ(pool.release("a", "nope").error().reason, Reason::kInvalidAddress);
  EXPECT_EQ(pool.counts(Family::kIPv4), counts(254, 2, 252));

  EXPECT_THAT(texts(pool.releaseAll("a")), ElementsAre("10.0.0.1", "10.0.0.3"));
  EXPECT_THAT(pool.releaseAll("a"), IsEmpty());
  EXPECT_THAT(pool.addressesOf("a"), IsEmpty());
  EXPECT_THAT(pool.ledger(), IsEmpty());
  EXPECT_EQ(pool.counts(Family::kIPv4), counts(254, 0, 254));
  EXPECT_THAT(allocate(pool, "c", Family::kIPv4, 3),
              ElementsAre("10.0.0.1", "10.0.0.2", "10.0.0.3"));
}

TEST(Pool, ReleaseMergesFreeSpaceBackInAnyOrder) {
  Pool pool = mustCreate({"10.0.0.0/28"}, {});
  ASSERT_TRUE(pool.allocate("a", Family::kIPv4, 14));
  for (const char* a : {"10.0.0.5", "10.0.0.3", "10.0.0.4", "10.0.0.14", "10.0.0.1", "10.0.0.2"}) {
    ASSERT_TRUE(pool.release("a", a)) << a;
  }
  EXPECT_EQ(pool.counts(Family::kIPv4), counts(14, 8, 6));
  EXPECT_THAT(allocate(pool, "b", Family::kIPv4, 6),
              ElementsAre("10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.14"));
}

TEST(Pool, DualStackOwner) {
  Pool pool = mustCreate({"2001:db8::/120", "10.0.0.0/24"}, {});
  ASSERT_TRUE(pool.allocate("p", Family::kIPv6, 1));
  ASSERT_TRUE(pool.allocate("p", Family::kIPv4, 1));
  EXPECT_THAT(texts(pool.addressesOf("p")), ElementsAre("10.0.0.1", "2001:db8::1"));
  EXPECT_EQ(pool.ledger(), (Ledger{{"p", {"10.0.0.1", "2001:db8::1"}}}));
  EXPECT_EQ(pool.counts(Family::kIPv4), counts(254, 1, 253));
  EXPECT_EQ(pool.counts(Family::kIPv6), counts(255, 1, 254));
}

// ---- large pools ------------------------------------------------------------------------------

TEST(Pool, TenThousandAllocationsInASlash64) {
  Pool pool = mustCreate({"2001:db8::/64"}, {"2001:db8::"});
  for (int i = 0; i < 5000; ++i) {
    ASSERT_TRUE(pool.allocate("owner-" + std::to_string(i), Family::kIPv6, 2)) << i;
  }
  EXPECT_EQ(pool.counts(Family::kIPv6), counts(kMax, 10000, kMax));
  EXPECT_EQ(pool.holderOf(addr("2001:db8::1")), "owner-0");
  EXPECT_EQ(pool.holderOf(addr("2001:db8::2710")), "owner-4999");  // 10,000th
  EXPECT_THAT(allocate(pool, "last", Family::kIPv6, 1), ElementsAre("2001:db8::2711"));
  ASSERT_TRUE(pool.release("owner-17", "2001:db8::23"));
  EXPECT_THAT(allocate(pool, "again", Family::kIPv6, 1), ElementsAre("2001:db8::23"));
  // The top of the /64 is reachable too.
  ASSERT_TRUE(pool.reserve("top", "2001:db8::ffff:ffff:ffff:ffff"));
  EXPECT_EQ(pool.counts(Family::kIPv6), counts(kMax, 10002, kMax));
}

TEST(Pool, WholeIPv6Space) {
  Pool pool = mustCreate({"::/0"}, {});
  // :: is unspecified (and the anycast address), ::1 loopback.
  EXPECT_THAT(allocate(pool, "a", Family::kIPv6, 2), ElementsAre("::2", "::3"));
  // The top of the space is multicast (ff00::/8); the highest usable address is just below it
  // (fec0::/10, past the link-local fe80::/10, is not special-use).
  EXPECT_EQ(refusal(pool, "b", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff is a multicast address");
  ASSERT_TRUE(pool.reserve("b", "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"));
  ASSERT_TRUE(pool.release("b", "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"));
  EXPECT_EQ(pool.counts(Family::kIPv6), counts(kMax, 2, kMax));
}

// ---- restore ----------------------------------------------------------------------------------

TEST(Pool, RestoreLoadsTheLedgerAndReplacesAllocations) {
  Pool pool = mustCreate({"10.0.0.0/24", "2001:db8::/120"}, {});
  ASSERT_TRUE(pool.allocate("old", Family::kIPv4, 5));
  auto conflicts =
      pool.restore(Ledger{{"ns/a", {"10.0.0.7", "2001:db8::9"}}, {"ns/b", {"10.0.0.2"}}});
  EXPECT_THAT(conflicts, IsEmpty());
  EXPECT_THAT(pool.addressesOf("old"), IsEmpty());
  EXPECT_EQ(pool.ledger(), (Ledger{{"ns/a", {"10.0.0.7", "2001:db8::9"}}, {"ns/b", {"10.0.0.2"}}}));
  EXPECT_EQ(pool.counts(Family::kIPv4), counts(254, 2, 252));
  EXPECT_EQ(pool.counts(Family::kIPv6), counts(255, 1, 254));
  EXPECT_THAT(allocate(pool, "c", Family::kIPv4, 2), ElementsAre("10.0.0.1", "10.0.0.3"));
}

TEST(Pool, RestoreReportsEveryConflict) {
  Pool pool = mustCreate({"10.0.0.0/24"}, {"10.0.0.16/28"});
  const Ledger ledger{
      {"ns/a", {"10.0.0.5", "10.0.9.9", "10.0.0.20", "10.0.0.5"}},
      {"ns/b", {"10.0.0.5", "x.y", "10.0.0.255", "10.0.0.6"}},
      {"ns/c", {"10.0.9.9"}},
  };
  auto conflicts = pool.restore(ledger);
  std::vector<std::tuple<Reason, std::string, std::string, std::string>> got;
  for (const auto& c : conflicts) {
    got.emplace_back(c.reason, c.address, c.owner, c.holder);
    EXPECT_FALSE(c.message.empty());
  }
  using T = std::tuple<Reason, std::string, std::string, std::string>;
  EXPECT_THAT(got, ElementsAre(T{Reason::kNotInPool, "10.0.9.9", "ns/a", ""},
                               T{Reason::kExcluded, "10.0.0.20", "ns/a", ""},
                               T{Reason::kAlreadyAllocated, "10.0.0.5", "ns/b", "ns/a"},
                               T{Reason::kInvalidAddress, "x.y", "ns/b", ""},
                               T{Reason::kExcluded, "10.0.0.255", "ns/b", ""},
                               T{Reason::kNotInPool, "10.0.9.9", "ns/c", ""},
                               T{Reason::kAlreadyAllocated, "10.0.9.9", "ns/c", "ns/a"}));
  // Conflicting addresses stay held by their first claimant; none was dropped or reassigned.
  EXPECT_EQ(pool.ledger(), (Ledger{{"ns/a", {"10.0.0.5", "10.0.0.20", "10.0.9.9"}},
                                   {"ns/b", {"10.0.0.6", "10.0.0.255"}}}));
  EXPECT_EQ(pool.counts(Family::kIPv4), counts(238, 2, 236, 3));
}

TEST(Pool, HeldAddressesSurviveAPoolEdit) {
  Pool before = mustCreate({"10.0.0.0/24"}, {});
  ASSERT_TRUE(before.reserve("ns/a", "10.0.0.200"));
  ASSERT_TRUE(before.reserve("ns/b", "10.0.0.9"));
  // The user narrows the pool and excludes 10.0.0.9.
  Pool narrowed = mustCreate({"10.0.0.0/25"}, {"10.0.0.9"});
  auto conflicts = narrowed.restore(before.ledger());
  ASSERT_EQ(conflicts.size(), 2u);
  EXPECT_EQ(conflicts[0].reason, Reason::kNotInPool);
  EXPECT_EQ(conflicts[0].owner, "ns/a");
  EXPECT_EQ(conflicts[1].reason, Reason::kExcluded);
  EXPECT_EQ(conflicts[1].owner, "ns/b");
  EXPECT_EQ(narrowed.counts(Family::kIPv4), counts(125, 0, 125, 2));
  EXPECT_EQ(narrowed.holderOf(addr("10.0.0.9")), "ns/b");
  EXPECT_EQ(narrowed.reserve("ns/c", "10.0.0.9").error().reason, Reason::kExcluded);
  // Its holder's explicit address keeps failing too (the condition stays), and it stays held.
  EXPECT_EQ(narrowed.reserve("ns/b", "10.0.0.9").error().reason, Reason::kExcluded);
  EXPECT_EQ(narrowed.holderOf(addr("10.0.0.9")), "ns/b");
  // Releasing a held address outside the pool does not make it allocatable.
  ASSERT_TRUE(narrowed.release("ns/a", "10.0.0.200"));
  EXPECT_EQ(narrowed.counts(Family::kIPv4), counts(125, 0, 125, 1));
  // The exclusion is lifted again: ns/b still holds 10.0.0.9, nobody else gets it.
  Pool widened = mustCreate({"10.0.0.0/25"}, {});
  EXPECT_THAT(widened.restore(narrowed.ledger()), IsEmpty());
  EXPECT_EQ(widened.holderOf(addr("10.0.0.9")), "ns/b");
  EXPECT_EQ(widened.counts(Family::kIPv4), counts(126, 1, 125));
  ASSERT_TRUE(widened.allocate("ns/c", Family::kIPv4, 8));
  EXPECT_THAT(allocate(widened, "ns/c", Family::kIPv4, 1), ElementsAre("10.0.0.10"));
}

TEST(Pool, RestoreIntoPoolWithoutTheFamily) {
  Pool pool = mustCreate({"10.0.0.0/24"}, {});
  auto conflicts = pool.restore(Ledger{{"a", {"2001:db8::1"}}});
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(conflicts[0].reason, Reason::kNotInPool);
  EXPECT_EQ(pool.counts(Family::kIPv6), counts(0, 0, 0, 1));
  EXPECT_EQ(pool.holderOf(addr("2001:db8::1")), "a");
}

TEST(Pool, ReasonNames) {
  EXPECT_EQ(reasonName(Reason::kPoolExhausted), "PoolExhausted");
  EXPECT_EQ(reasonName(Reason::kNotInPool), "NotInPool");
  EXPECT_EQ(reasonName(Reason::kExcluded), "Excluded");
  EXPECT_EQ(reasonName(Reason::kAlreadyAllocated), "AlreadyAllocated");
  EXPECT_EQ(reasonName(Reason::kInvalidAddress), "InvalidAddress");
}

TEST(Pool, CopiesAreIndependent) {
  Pool pool = mustCreate({"10.0.0.0/24"}, {});
  ASSERT_TRUE(pool.allocate("a", Family::kIPv4, 1));
  Pool copy = pool;
  ASSERT_TRUE(copy.allocate("b", Family::kIPv4, 1));
  EXPECT_EQ(pool.counts(Family::kIPv4), counts(254, 1, 253));
  EXPECT_EQ(copy.counts(Family::kIPv4), counts(254, 2, 252));
  EXPECT_EQ(pool.holderOf(addr("10.0.0.2")), "");
}

}  // namespace
}  // namespace egress::ipam
