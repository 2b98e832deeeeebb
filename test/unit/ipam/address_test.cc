#include "pkg/ipam/address.h"

#include <string>
#include <utility>
#include <vector>

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

std::string specialName(std::string_view text) {
  auto a = parseAddress(text);
  EXPECT_TRUE(a) << text;
  auto name = specialUse(a.value_or(Address{}));
  return name ? std::string(*name) : "-";
}

TEST(SpecialUse, NamesTheBlockOfEachEdge) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"0.0.0.0", "this network"},
      {"0.255.255.255", "this network"},
      {"127.0.0.0", "loopback"},
      {"127.255.255.255", "loopback"},
      {"169.254.0.0", "link-local"},
      {"169.254.255.255", "link-local"},
      {"224.0.0.0", "multicast"},
      {"239.255.255.255", "multicast"},
      {"240.0.0.0", "reserved"},
      {"255.255.255.255", "reserved"},
      {"::", "unspecified"},
      {"::1", "loopback"},
      {"fe80::", "link-local"},
      {"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "link-local"},
      {"ff00::", "multicast"},
      {"ff02::1", "multicast"},
      {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "multicast"},
      {"::ffff:0.0.0.0", "IPv4-mapped"},
      {"::ffff:203.0.113.5", "IPv4-mapped"},
      {"::ffff:255.255.255.255", "IPv4-mapped"},
  };
  for (const auto& [text, name] : cases) {
    EXPECT_EQ(specialName(text), name) << text;
  }
}

TEST(SpecialUse, LeavesEverythingElse) {
  for (const char* text :
       {"1.0.0.0", "126.255.255.255", "128.0.0.0", "169.253.255.255", "169.255.0.0",
        "223.255.255.255", "10.0.0.1", "192.0.2.1", "203.0.113.5", "::2", "::fffe:ffff:ffff",
        "::1:0:0:0", "fe7f::1", "fec0::1", "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        "2001:db8::", "2001:db8:100::", "fd00::1", "64:ff9b::c000:201"}) {
    EXPECT_EQ(specialName(text), "-") << text;
  }
}

std::vector<std::string> prefixTexts(Family f) {
  std::vector<std::string> out;
  for (const Prefix& p : specialUsePrefixes(f)) {
    out.push_back(p.toString());
    EXPECT_EQ(p.address.family, f) << p.toString();
    // Each prefix is canonical and all of it is special-use.
    EXPECT_EQ(parseCIDR(p.toString()), p) << p.toString();
    EXPECT_TRUE(specialUse(p.address)) << p.toString();
    EXPECT_TRUE(specialUse(Address{f, p.last()})) << p.toString();
  }
  return out;
}

TEST(SpecialUse, ListsTheBlocksPerFamily) {
  EXPECT_EQ(prefixTexts(Family::kIPv4),
            (std::vector<std::string>{"0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/4",
                                      "240.0.0.0/4"}));
  EXPECT_EQ(prefixTexts(Family::kIPv6),
            (std::vector<std::string>{"::/128", "::1/128", "fe80::/10", "ff00::/8",
                                      "::ffff:0.0.0.0/96"}));
}

TEST(SpecialUse, Phrases) {
  EXPECT_EQ(specialUsePhrase("link-local"), "a link-local address");
  EXPECT_EQ(specialUsePhrase("IPv4-mapped"), "an IPv4-mapped address");
  EXPECT_EQ(specialUsePhrase("unspecified"), "an unspecified address");
  EXPECT_EQ(specialUsePhrase("this network"), "a \"this network\" address");
}

}  // namespace
}  // namespace egress::ipam
