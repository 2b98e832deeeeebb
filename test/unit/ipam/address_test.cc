#include "pkg/ipam/address.h"

#include <gtest/gtest.h>

namespace egress::ipam {
namespace {

Uint128 v6(uint64_t hi, uint64_t lo) {
  return (Uint128{hi} << 64) | lo;
}

TEST(Address, ParsesIPv4) {
  auto a = parseAddress("203.0.113.5");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->family, Family::kIPv4);
  EXPECT_EQ(a->value, Uint128{0xCB007105});
  EXPECT_EQ(a->toString(), "203.0.113.5");
  EXPECT_EQ(parseAddress("0.0.0.0")->value, Uint128{0});
  EXPECT_EQ(parseAddress("255.255.255.255")->value, Uint128{0xFFFFFFFF});
}

TEST(Address, ParsesIPv6) {
  auto a = parseAddress("2001:DB8::1");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->family, Family::kIPv6);
  EXPECT_EQ(a->value, v6(0x20010db800000000, 1));
  EXPECT_EQ(a->toString(), "2001:db8::1");
  EXPECT_EQ(parseAddress("::")->value, Uint128{0});
  EXPECT_EQ(parseAddress("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")->value, kUint128Max);
}

TEST(Address, MappedIPv4TextIsIPv6) {
  auto a = parseAddress("::ffff:203.0.113.5");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->family, Family::kIPv6);
  EXPECT_EQ(a->value, v6(0, 0xffffCB007105));
}

TEST(Address, RejectsWhatGoRejects) {
  for (const char* bad : {"", "1.2.3", "1.2.3.4.5", "01.2.3.4", "1.2.3.256", "1.2.3.4 ", " 1.2.3.4",
                          "fe80::1%eth0", "2001:db8:::1", "2001:db8::1::2", "1.2.3.4/32", "abc",
                          "1:2:3:4:5:6:7:8:9", "2001:db8::g"}) {
    EXPECT_FALSE(parseAddress(bad)) << bad;
  }
}

TEST(Address, OrdersIPv4BeforeIPv6ThenByValue) {
  const Address v4hi{Family::kIPv4, 0xFFFFFFFF};
  const Address v6lo{Family::kIPv6, 0};
  const Address v6one{Family::kIPv6, 1};
  EXPECT_LT(v4hi, v6lo);
  EXPECT_LT(v6lo, v6one);
}

TEST(Address, Names) {
  EXPECT_EQ(familyName(Family::kIPv4), "IPv4");
  EXPECT_EQ(familyName(Family::kIPv6), "IPv6");
  EXPECT_EQ(familyBits(Family::kIPv4), 32);
  EXPECT_EQ(familyBits(Family::kIPv6), 128);
}

TEST(Prefix, ClearsHostBits) {
  auto p = parseCIDR("203.0.113.77/26");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->address, (Address{Family::kIPv4, 0xCB007140}));
  EXPECT_EQ(p->bits, 26);
  EXPECT_EQ(p->last(), Uint128{0xCB00717F});
  EXPECT_EQ(p->toString(), "203.0.113.64/26");

  auto q = parseCIDR("2001:db8::ffff/120");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->first(), v6(0x20010db800000000, 0xff00));
  EXPECT_EQ(q->last(), v6(0x20010db800000000, 0xffff));
  EXPECT_EQ(q->toString(), "2001:db8::ff00/120");
}

TEST(Prefix, WholeSpaces) {
  auto all4 = parseCIDR("0.0.0.0/0");
  ASSERT_TRUE(all4);
  EXPECT_EQ(all4->first(), Uint128{0});
  EXPECT_EQ(all4->last(), Uint128{0xFFFFFFFF});
  auto all6 = parseCIDR("::/0");
  ASSERT_TRUE(all6);
  EXPECT_EQ(all6->first(), Uint128{0});
  EXPECT_EQ(all6->last(), kUint128Max);
  auto one6 = parseCIDR("2001:db8::5/128");
  ASSERT_TRUE(one6);
  EXPECT_EQ(one6->first(), one6->last());
  auto host64 = parseCIDR("2001:db8:0:7:1:2:3:4/64");
  ASSERT_TRUE(host64);
  EXPECT_EQ(host64->first(), v6(0x20010db800000007, 0));
  EXPECT_EQ(host64->last(), v6(0x20010db800000007, ~uint64_t{0}));
}

TEST(Prefix, RejectsBadCIDRs) {
  for (const char* bad : {"203.0.113.0", "203.0.113.0/", "203.0.113.0/33", "203.0.113.0/-1",
                          "203.0.113.0/024", "203.0.113.0/2a", "::/129", "/24", "203.0.113.0/24/1",
                          "203.0.113.0/+4", "x/24", "203.0.113.0/ 24"}) {
    EXPECT_FALSE(parseCIDR(bad)) << bad;
  }
  EXPECT_TRUE(parseCIDR("203.0.113.0/0"));
  EXPECT_TRUE(parseCIDR("::/128"));
}

TEST(Prefix, AddressOrCIDR) {
  auto a = parseAddressOrCIDR("203.0.113.5");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->bits, 32);
  EXPECT_EQ(a->first(), a->last());
  auto b = parseAddressOrCIDR("2001:db8::5");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->bits, 128);
  auto c = parseAddressOrCIDR("203.0.113.4/30");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->last() - c->first(), Uint128{3});
  EXPECT_FALSE(parseAddressOrCIDR("nope"));
}

}  // namespace
}  // namespace egress::ipam
