#include "pkg/dataplane/desired_state.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "test/unit/dataplane/topology.h"

namespace egress::dataplane {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

using testing::cidr;
using testing::ip;
using testing::setLive;
using testing::topology;

DataplaneConfig config() {
  DataplaneConfig c;
  c.uplink = "eth0";
  return c;
}

DesiredState compute(const ClusterView& v, const DataplaneConfig& c = config()) {
  auto r = computeDesiredState(v, c);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error());
  return r.ok() ? *r : DesiredState{};
}

template <typename T>
std::vector<std::string> lines(const std::vector<T>& items) {
  std::vector<std::string> out;
  for (const auto& i : items) {
    out.push_back(i.toString());
  }
  return out;
}

// Each source's egress IP in `s`'s first policy and family (refused: no entry).
std::map<ipam::Address, ipam::Address> picksOf(const DesiredState& s) {
  std::map<ipam::Address, ipam::Address> out;
  for (const auto& pick : s.kernel.nft.policies[0].picks[0]) {
    if (pick.egressIP) {
      out[pick.source] = *pick.egressIP;
    }
  }
  return out;
}

// The mark the chain of egress IP `e` sets in `s` (0: none, no live holder).
uint32_t markOf(const DesiredState& s, const char* e) {
  for (const auto& eip : s.kernel.nft.egressIPs) {
    if (eip.ip == ip(e)) {
      return eip.mark;
    }
  }
  return 0;
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

// The routing table of mark `mark` with the default mask and table base.
std::string tableOf(uint32_t mark) {
  return std::to_string(7000 + mark);
}

// The rule that routes mark `mark` (default mask) of `family` ("ipv4", "ipv6").
std::string ruleOf(const char* family, uint32_t mark) {
  return std::string(family) + " pref 100 fwmark " + hex(mark) + "/0xff lookup " + tableOf(mark);
}

// The routes of the tables of holder nodes (every table but the reply and refuse tables).
std::vector<std::string> nodeTableRoutes(const DesiredState& s) {
  std::vector<std::string> out;
  for (const auto& r : s.kernel.routes) {
    if (r.table != kMainTable && r.table != 7000 && r.table != 7254) {
      out.push_back(r.toString());
    }
  }
  return out;
}

// Sources 10.244.3.2 .. 10.244.3.59, all on n3.
std::vector<SourceView> manySources() {
  std::vector<SourceView> out;
  for (int i = 2; i < 60; ++i) {
    out.push_back({ip(("10.244.3." + std::to_string(i)).c_str()), "n3"});
  }
  return out;
}

TEST(DesiredState, SourceNodeRoutesThroughTheTunnelToTheHolder) {
  auto s = compute(topology("n3"));
  // n1's mark: any value of the mask but the local, refuse and reply marks (253-255).
  const uint32_t m = markOf(s, "192.168.50.200");
  EXPECT_GE(m, 1U);
  EXPECT_LE(m, 0xfcU);
  EXPECT_THAT(lines(s.kernel.rules), Contains(ruleOf("ipv4", m)));
  EXPECT_THAT(
      lines(s.kernel.routes),
      Contains("0.0.0.0/0 via 192.168.50.11 dev egw0 onlink table " + tableOf(m) + " metric 0"));
  EXPECT_THAT(lines(s.kernel.routes),
              Contains("unreachable 0.0.0.0/0 table " + tableOf(m) + " metric 4294967295"));
  // Only the families n1 holds egress IPs of.
  EXPECT_THAT(lines(s.kernel.rules), Not(Contains(ruleOf("ipv6", m))));
  EXPECT_TRUE(s.held.empty());
  EXPECT_THAT(s.kernel.nft.toString(), HasSubstr("nft eip 192.168.50.200 mark " + hex(m) + "\n"));
  EXPECT_THAT(s.kernel.nft.toString(),
              HasSubstr("nft default/web pick 10.244.3.2 192.168.50.200\n"));
  EXPECT_THAT(s.kernel.nft.toString(), Not(HasSubstr("held")));
  EXPECT_THAT(s.kernel.nft.toString(), Not(HasSubstr("snat"))) << "nothing is SNATed here";
  for (const auto& n : s.kernel.neighbours) {
    EXPECT_FALSE(n.proxy) << n.toString();
  }
  // No reply table where nothing is held.
  EXPECT_THAT(lines(s.kernel.rules), Not(Contains("ipv4 pref 100 fwmark 0xff/0xff lookup 7000")));
}

TEST(DesiredState, HolderSnatsHoldsByProxyArpAndRoutesRepliesBack) {
  auto s = compute(topology("n1"));
  EXPECT_EQ(s.held, std::vector<ipam::Address>{ip("192.168.50.200")});
  // Held here: the local mark, and the main table routes out of the uplink: the only rules are
  // the refusal's and the replies'.
  EXPECT_THAT(lines(s.kernel.rules),
              ::testing::UnorderedElementsAre("ipv4 pref 100 fwmark 0xfe/0xff lookup 7254",
                                              "ipv6 pref 100 fwmark 0xfe/0xff lookup 7254",
                                              "ipv4 pref 100 fwmark 0xff/0xff lookup 7000",
                                              "ipv6 pref 100 fwmark 0xff/0xff lookup 7000"));
  EXPECT_THAT(lines(s.kernel.routes),
              Contains("192.168.50.200/32 dev egw-eip0 table 254 metric 0"));
  EXPECT_THAT(lines(s.kernel.neighbours), Contains("proxy 192.168.50.200 dev eth0"));
  EXPECT_THAT(s.kernel.nft.toString(), HasSubstr("nft eip 192.168.50.200 mark 0xfd held\n"));
  // Both sources, the local one and n3's through the tunnel, are SNATed to it here.
  EXPECT_THAT(s.kernel.nft.toString(),
              HasSubstr("nft default/web snat 10.244.1.2 192.168.50.200\n"
                        "nft default/web snat 10.244.3.2 192.168.50.200\n"));
  // Replies of tunnelled connections go back to p3's node; p1 is local and needs no route.
  EXPECT_THAT(lines(s.kernel.rules), Contains("ipv4 pref 100 fwmark 0xff/0xff lookup 7000"));
  EXPECT_THAT(lines(s.kernel.routes),
              Contains("10.244.3.2/32 via 192.168.50.13 dev egw0 onlink table 7000 metric 0"));
  for (const auto& r : s.kernel.routes) {
    EXPECT_THAT(r.toString(), Not(HasSubstr("10.244.1.2"))) << "local pod in the reply table";
  }
}

TEST(DesiredState, SymmetricReplyOff) {
  auto c = config();
  c.symmetricReply = false;
  auto s = compute(topology("n1"), c);
  for (const auto& r : s.kernel.routes) {
    EXPECT_NE(r.table, 7000U) << r.toString();
  }
  EXPECT_THAT(lines(s.kernel.rules), Not(Contains("ipv4 pref 100 fwmark 0xff/0xff lookup 7000")));
  EXPECT_FALSE(s.kernel.nft.symmetricReply);
}

TEST(DesiredState, FailsClosedWhenTheHoldersLeaseIsStale) {
  auto v = topology("n3");
  setLive(v, "n1", false);
  auto s = compute(v);
  EXPECT_THAT(nodeTableRoutes(s), ::testing::IsEmpty()) << "no route to the dead holder";
  EXPECT_EQ(markOf(s, "192.168.50.200"), 0U);
  // The pod is still classified (its packets take the refuse table), never left alone.
  EXPECT_THAT(s.kernel.nft.toString(), HasSubstr("nft default/web pick 10.244.3.2 refuse\n"));
}

TEST(DesiredState, FailsClosedWithoutAHolder) {
  auto v = topology("n3");
  v.policies[0].slots[0].node.clear();
  auto s = compute(v);
  EXPECT_THAT(nodeTableRoutes(s), ::testing::IsEmpty());
  EXPECT_THAT(s.kernel.nft.toString(), HasSubstr("nft default/web pick 10.244.3.2 refuse\n"));
  auto holder = v;
  holder.self = "n1";
  EXPECT_TRUE(compute(holder).held.empty());
}

TEST(DesiredState, AnAgentThatCannotRenewWithdrawsWhatItHolds) {
  auto v = topology("n1");
  setLive(v, "n1", false);
  auto s = compute(v);
  EXPECT_TRUE(s.held.empty());
  for (const auto& n : s.kernel.neighbours) {
    EXPECT_FALSE(n.proxy) << n.toString();
  }
  EXPECT_THAT(s.kernel.nft.toString(), Not(HasSubstr("held")));
  // Its own pods fail closed too (its view of the holder is itself, which it no longer is).
  EXPECT_THAT(s.kernel.nft.toString(), HasSubstr("nft default/web pick 10.244.1.2 refuse\n"));
  EXPECT_THAT(s.kernel.nft.toString(), Not(HasSubstr("snat")));
}

TEST(DesiredState, MissingLeaseCountsAsStale) {
  auto v = topology("n3");
  v.leases.erase(v.leases.begin());  // n1's
  auto s = compute(v);
  EXPECT_THAT(nodeTableRoutes(s), ::testing::IsEmpty());
  auto self = topology("n1");
  self.leases.erase(self.leases.begin());
  EXPECT_TRUE(compute(self).held.empty());
}

// The holder is the node the operator named in the slot, never another one (not even a live
// node that ran the gateway pod before), and that node holds it only while its agent is fresh.
TEST(DesiredState, ASlotIsHeldOnlyByTheNodeItNamesAndOnlyWhileThatAgentIsFresh) {
  auto v = topology("n1");
  v.policies[0].slots[0].node = "n2";
  auto onN1 = compute(v);
  EXPECT_TRUE(onN1.held.empty());
  EXPECT_THAT(onN1.kernel.nft.toString(), Not(HasSubstr("held")));
  EXPECT_THAT(lines(onN1.kernel.neighbours), Not(Contains("proxy 192.168.50.200 dev eth0")));
  EXPECT_THAT(lines(onN1.kernel.routes),
              Contains("0.0.0.0/0 via 192.168.50.12 dev egw0 onlink table " +
                       tableOf(markOf(onN1, "192.168.50.200")) + " metric 0"));
  auto onN2 = v;
  onN2.self = "n2";
  EXPECT_EQ(compute(onN2).held, std::vector<ipam::Address>{ip("192.168.50.200")});
  setLive(onN2, "n2", false);
  auto fenced = compute(onN2);
  EXPECT_TRUE(fenced.held.empty());
  EXPECT_THAT(lines(fenced.kernel.neighbours), Not(Contains("proxy 192.168.50.200 dev eth0")));
  EXPECT_THAT(fenced.kernel.nft.toString(), Not(HasSubstr("held")));
}

TEST(DesiredState, DestinationsAndExclusionsPerFamily) {
  auto v = topology("n3");
  v.policies[0].destinations.push_back(cidr("2001:db8::/32"));
  v.policies[0].excluded.push_back(cidr("fd00:244::/48"));
  auto t = compute(v).kernel.nft.toString();
  EXPECT_THAT(t, HasSubstr("nft default/web dst 192.168.50.96/28\n"));
  EXPECT_THAT(t, HasSubstr("nft default/web exc 10.244.0.0/16\n"));
  EXPECT_THAT(t, HasSubstr("nft default/web exc 192.168.50.101/32\n"));
  EXPECT_THAT(t, HasSubstr("nft default/web dst 2001:db8::/32\n"));
  EXPECT_THAT(t, HasSubstr("nft default/web exc fd00:244::/48\n"));
}

TEST(DesiredState, NestedPrefixesCollapseIntoTheOutermost) {
  auto v = topology("n3");
  v.policies[0].destinations = {cidr("192.168.50.96/28"), cidr("0.0.0.0/0"), cidr("10.0.0.0/8")};
  v.policies[0].excluded = {cidr("10.244.3.0/24"), cidr("10.244.0.0/16"), cidr("10.245.0.0/16")};
  auto t = compute(v).kernel.nft.toString();
  EXPECT_THAT(t, HasSubstr("nft default/web dst 0.0.0.0/0\n"));
  EXPECT_THAT(t, Not(HasSubstr("dst 10.0.0.0/8")));
  EXPECT_THAT(t, Not(HasSubstr("dst 192.168.50.96/28")));
  EXPECT_THAT(t,
              HasSubstr("nft default/web exc 10.244.0.0/16\nnft default/web exc 10.245.0.0/16\n"));
  EXPECT_THAT(t, Not(HasSubstr("exc 10.244.3.0/24")));
}

TEST(DesiredState, IPv6EgressThroughTheTunnelByLinkLocalNextHop) {
  auto v = topology("n3");
  auto& p = v.policies[0];
  p.slots = {{{ip("fd00:50::200")}, "n1", "egw-web-a", "uid-egw-web-a"}};
  p.destinations = {cidr("fd00:50::100/120")};
  p.excluded = {cidr("fd00:244::/32")};
  p.sources = {{ip("fd00:244:3::2"), "n3"}};
  auto s = compute(v);
  const auto n1Mac = tunnelMac(ip("192.168.50.11"));
  const auto nh = linkLocal(n1Mac).toString();
  const uint32_t m = markOf(s, "fd00:50::200");
  EXPECT_THAT(lines(s.kernel.rules), Contains(ruleOf("ipv6", m)));
  EXPECT_THAT(lines(s.kernel.rules), Not(Contains(ruleOf("ipv4", m))));
  EXPECT_THAT(lines(s.kernel.routes),
              Contains("::/0 via " + nh + " dev egw0 onlink table " + tableOf(m) + " metric 1024"));
  EXPECT_THAT(lines(s.kernel.routes),
              Contains("unreachable ::/0 table " + tableOf(m) + " metric 4294967295"));
  EXPECT_THAT(lines(s.kernel.neighbours), Contains(nh + " dev egw0 lladdr " + macText(n1Mac)));
  auto holder = v;
  holder.self = "n1";
  auto h = compute(holder);
  EXPECT_THAT(lines(h.kernel.neighbours), Contains("proxy fd00:50::200 dev eth0"));
  EXPECT_THAT(lines(h.kernel.routes),
              Contains("fd00:50::200/128 dev egw-eip0 table 254 metric 1024"));
  EXPECT_THAT(
      lines(h.kernel.routes),
      Contains("fd00:244:3::2/128 via " + linkLocal(tunnelMac(ip("192.168.50.13"))).toString() +
               " dev egw0 onlink table 7000 metric 1024"));
  EXPECT_THAT(lines(h.kernel.rules), Contains("ipv6 pref 100 fwmark 0xff/0xff lookup 7000"));
}

TEST(DesiredState, DualStackHolderHoldsOneOfEach) {
  auto v = testing::dualStackTopology("n1");
  auto s = compute(v);
  EXPECT_EQ(s.held, (std::vector<ipam::Address>{ip("192.168.50.200"), ip("fd00:50::200")}));
  auto t = s.kernel.nft.toString();
  // Each family picks among its own egress IPs.
  EXPECT_THAT(t, HasSubstr("nft default/web pick 10.244.3.2 192.168.50.200\n"));
  EXPECT_THAT(t, HasSubstr("nft default/web pick fd00:244:3::2 fd00:50::200\n"));
  EXPECT_THAT(t, HasSubstr("nft default/web snat 10.244.3.2 192.168.50.200\n"));
  EXPECT_THAT(t, HasSubstr("nft default/web snat fd00:244:3::2 fd00:50::200\n"));
}

TEST(DesiredState, PodKeepsItsEgressIPWhenAnotherLeavesTheLedger) {
  auto v = topology("n3");
  auto& p = v.policies[0];
  p.slots = {{{ip("192.168.50.200")}, "n1", "", ""},
             {{ip("192.168.50.201")}, "n2", "", ""},
             {{ip("192.168.50.202")}, "n2", "", ""}};
  p.sources = manySources();
  auto before = picksOf(compute(v));
  ASSERT_EQ(before.size(), p.sources.size());
  // The IP leaving the ledger moves only its own pods.
  p.slots.erase(p.slots.begin() + 1);
  auto after = picksOf(compute(v));
  int moved = 0;
  for (const auto& [src, e] : before) {
    if (e == ip("192.168.50.201")) {
      ++moved;
      EXPECT_NE(after.at(src), e);
    } else {
      EXPECT_EQ(after.at(src), e) << src;
    }
  }
  EXPECT_GT(moved, 0);
}

// Replicas 2, one holder certified dead: its address moves to the other gateway node, so every
// source keeps its egress IP (none is refused, none moves to the other address), and it stays
// there when the first node comes back (the new holder claims it).
TEST(DesiredState, OneOfTwoHoldersDeadItsAddressMovesToTheOtherGatewayNodeAndStays) {
  auto v = topology("n3");
  auto& p = v.policies[0];
  p.slots = {{{ip("192.168.50.200")}, "n1", "", ""}, {{ip("192.168.50.201")}, "n2", "", ""}};
  p.sources = manySources();
  const auto before = picksOf(compute(v));
  const auto marksBefore = markOf(compute(v), "192.168.50.201");
  setLive(v, "n2", false);
  auto s = compute(v);
  EXPECT_EQ(picksOf(s), before);
  EXPECT_THAT(s.kernel.nft.toString(), Not(HasSubstr("refuse\n")));
  // Sources send both addresses' traffic to n1 now: one mark, n1's.
  EXPECT_EQ(markOf(s, "192.168.50.201"), markOf(s, "192.168.50.200"));
  EXPECT_NE(markOf(s, "192.168.50.201"), marksBefore);
  // n1 holds both and SNATs every source to its own pick.
  auto holder = v;
  holder.self = "n1";
  auto h = compute(holder);
  EXPECT_EQ(h.held, (std::vector<ipam::Address>{ip("192.168.50.200"), ip("192.168.50.201")}));
  EXPECT_EQ(picksOf(h), before);
  // n2 back: n1 claims 192.168.50.201, so it stays on n1, at n1, n2 and n3 alike.
  setLive(v, "n2", true);
  for (auto& l : v.leases) {
    if (l.node == "n1") {
      l.claims = h.held;
    }
  }
  EXPECT_EQ(markOf(compute(v), "192.168.50.201"), markOf(compute(v), "192.168.50.200"));
  auto onN2 = v;
  onN2.self = "n2";
  EXPECT_TRUE(compute(onN2).held.empty());
  auto onN1 = v;
  onN1.self = "n1";  // its own entry's claims: what it holds now
  EXPECT_EQ(compute(onN1).held, h.held);
  // No holder named at all for the second slot: the other gateway node takes it.
  auto unnamed = topology("n1");
  unnamed.policies[0] = p;
  unnamed.policies[0].slots[1].node.clear();
  EXPECT_EQ(compute(unnamed).held, h.held);
  // Both gateway nodes dead: every source is refused.
  setLive(v, "n1", false);
  setLive(v, "n2", false);
  EXPECT_THAT(compute(v).kernel.nft.toString(), Not(HasSubstr("snat")));
  for (const auto& [src, e] : picksOf(compute(v))) {
    ADD_FAILURE() << src << " still picks " << e;
  }
}

TEST(DesiredState, PolicyWithoutEgressIPsRefusesItsPods) {
  auto v = topology("n3");
  v.policies[0].slots.clear();
  auto s = compute(v);
  const uint32_t refuse = s.kernel.nft.refuseMark;
  EXPECT_EQ(refuse, 0xfeU);
  EXPECT_THAT(s.kernel.nft.toString(), HasSubstr("nft default/web pick 10.244.3.2 refuse\n"));
  EXPECT_THAT(lines(s.kernel.rules), Contains("ipv4 pref 100 fwmark 0xfe/0xff lookup 7254"));
  EXPECT_THAT(lines(s.kernel.routes),
              Contains("unreachable 0.0.0.0/0 table 7254 metric 4294967295"));
}

// Any namespace may ask for an address: a first-come (or first-in-key-order) rule would let a
// forged policy win one. Two claims: nobody holds it, every pod of either is refused.
TEST(DesiredState, EgressIPInTwoPoliciesIsHeldByNeither) {
  auto v = topology("n1");
  auto other = v.policies[0];
  other.key = "a/forged";  // sorts before default/web
  other.uid = "uid-forged";
  other.sources = {{ip("10.244.3.9"), "n3"}};
  v.policies.push_back(other);
  auto s = compute(v);
  // One problem for each of the two: both policies are told.
  ASSERT_EQ(s.problems.size(), 2U);
  EXPECT_THAT(s.problems[0].message, HasSubstr("192.168.50.200"));
  EXPECT_THAT(s.problems[0].message, HasSubstr("a/forged"));
  EXPECT_THAT(s.problems[0].message, HasSubstr("default/web"));
  EXPECT_EQ(s.problems[0].kind, ProblemKind::kContestedAddress);
  std::set<std::string> told;
  for (const auto& p : s.problems) {
    told.insert(p.uid + " " + p.key);
  }
  EXPECT_THAT(told, ElementsAre("uid-forged a/forged", v.policies[0].uid + " default/web"));
  EXPECT_TRUE(s.held.empty());
  EXPECT_THAT(lines(s.kernel.neighbours), Not(Contains("proxy 192.168.50.200 dev eth0")));
  const auto t = s.kernel.nft.toString();
  EXPECT_THAT(t, Not(HasSubstr("nft eip 192.168.50.200")));
  EXPECT_THAT(t, HasSubstr("nft a/forged pick 10.244.3.9 refuse\n"));
  EXPECT_THAT(t, HasSubstr("nft default/web pick 10.244.3.2 refuse\n"));
  // The same key under another uid (a policy deleted and re-created) is another policy too.
  other.key = "default/web";
  v.policies[1] = other;
  s = compute(v);
  EXPECT_TRUE(s.held.empty());
  EXPECT_EQ(s.problems.size(), 2U);
}

TEST(DesiredState, EgressIPInTwoSlotsIsHeldByNeitherNode) {
  auto v = topology("n1");
  v.policies[0].slots.push_back({{ip("192.168.50.200")}, "n2", "egw-web-b", "uid-egw-web-b"});
  auto s = compute(v);
  EXPECT_TRUE(s.held.empty());
  ASSERT_EQ(s.problems.size(), 1U);
  EXPECT_THAT(s.problems[0].message, HasSubstr("2 slots of default/web"));
  EXPECT_EQ(s.problems[0].kind, ProblemKind::kDuplicateSlot);
  EXPECT_EQ(s.problems[0].key, "default/web");
  auto onN2 = v;
  onN2.self = "n2";
  EXPECT_TRUE(compute(onN2).held.empty());
}

TEST(DesiredState, MarksFollowTheConfiguredMask) {
  auto c = config();
  c.markMask = 0xff00;
  auto s = compute(topology("n3"), c);
  const uint32_t m = markOf(s, "192.168.50.200");
  EXPECT_EQ(m & ~0xff00U, 0U);
  EXPECT_GE(m, 0x100U);
  EXPECT_LE(m, 0xfc00U);
  EXPECT_THAT(lines(s.kernel.rules), Contains("ipv4 pref 100 fwmark " + hex(m) + "/0xff00 lookup " +
                                              std::to_string(7000 + (m >> 8))));
  EXPECT_EQ(s.kernel.nft.replyMark, 0xff00U);
  EXPECT_EQ(s.kernel.nft.refuseMark, 0xfe00U);
  EXPECT_EQ(s.kernel.nft.localMark, 0xfd00U);
}

// Marks are per holder node, not per egress IP: 600 egress IPs on two holder nodes take two
// marks, and each is routed (the limit of the mark design before was 253 egress IPs).
TEST(DesiredState, SixHundredEgressIPsOnTwoNodesAreAllProgrammed) {
  auto v = topology("n3");
  v.poolCIDRs = {cidr("198.18.0.0/15")};
  v.policies.clear();
  for (int i = 0; i < 600; ++i) {
    PolicyView p;
    p.key = "ns/p" + std::to_string(i);
    p.uid = "uid-" + std::to_string(i);
    const std::string e = "198.18." + std::to_string(i / 250) + "." + std::to_string(1 + i % 250);
    p.slots = {{{ip(e.c_str())}, i % 2 == 0 ? "n1" : "n2", "", ""}};
    p.destinations = {cidr("192.168.50.96/28")};
    p.sources = {
        {ip(("10.244." + std::to_string(3 + i / 250) + "." + std::to_string(1 + i % 250)).c_str()),
         "n3"}};
    v.policies.push_back(p);
  }
  auto s = compute(v);
  EXPECT_THAT(s.problems, ::testing::IsEmpty());
  ASSERT_EQ(s.kernel.nft.egressIPs.size(), 600U);
  std::set<uint32_t> marks;
  for (const auto& e : s.kernel.nft.egressIPs) {
    EXPECT_NE(e.mark, 0U) << e.ip.toString();
    marks.insert(e.mark);
  }
  EXPECT_EQ(marks.size(), 2U);
  EXPECT_EQ(s.kernel.rules.size(), 2U + 2U) << "refuse (2 families) and one per holder node";
  for (const auto& p : s.kernel.nft.policies) {
    ASSERT_EQ(p.picks[0].size(), 1U);
    EXPECT_TRUE(p.picks[0][0].egressIP) << p.key;
  }
}

// More holder nodes than the mask has values for: the egress IPs of the nodes left without a
// mark are reported (per policy) and their sources refused; the others are programmed.
TEST(DesiredState, MoreHolderNodesThanMarksAreReported) {
  auto c = config();
  c.markMask = 0x7;  // 1..4 for holder nodes, 5 local, 6 refuse, 7 reply
  auto v = topology("n3");
  v.poolCIDRs.push_back(cidr("198.18.0.0/24"));
  for (int i = 4; i <= 9; ++i) {
    NodeView n;
    n.name = "n" + std::to_string(i);
    n.ipv4 = ip(("192.168.50." + std::to_string(10 + i)).c_str());
    n.addresses = {*n.ipv4};
    v.nodes.push_back(n);
    v.leases.push_back({n.name, true, true, {}});
    PolicyView p;
    p.key = "ns/p" + std::to_string(i);
    p.uid = "uid-p" + std::to_string(i);
    p.slots = {{{ip(("198.18.0." + std::to_string(i)).c_str())}, n.name, "", ""}};
    p.destinations = {cidr("192.168.50.96/28")};
    p.sources = {{ip(("10.244.3." + std::to_string(100 + i)).c_str()), "n3"}};
    v.policies.push_back(p);
  }
  // Holders: n1 and n4..n9, 7 nodes for 4 values.
  auto s = compute(v, c);
  ASSERT_EQ(s.problems.size(), 3U);
  int refused = 0;
  for (const auto& p : s.problems) {
    EXPECT_EQ(p.kind, ProblemKind::kNoMark);
    EXPECT_THAT(p.message, HasSubstr("more nodes hold egress IPs than the mark mask has values"));
  }
  std::set<uint32_t> marks;
  for (const auto& e : s.kernel.nft.egressIPs) {
    if (e.mark != 0) {
      marks.insert(e.mark);
    }
  }
  EXPECT_EQ(marks.size(), 4U);
  for (const auto& p : s.kernel.nft.policies) {
    for (const auto& pick : p.picks[0]) {
      refused += pick.egressIP ? 0 : 1;
    }
  }
  EXPECT_EQ(refused, 3);
}

TEST(DesiredState, TunnelPeersAndDevice) {
  auto s = compute(topology("n3"));
  const auto n1 = tunnelMac(ip("192.168.50.11"));
  const auto n2 = tunnelMac(ip("192.168.50.12"));
  EXPECT_EQ(n1[0], 0x02);
  EXPECT_NE(n1, n2);
  EXPECT_THAT(lines(s.kernel.fdb), Contains("egw0 " + macText(n1) + " dst 192.168.50.11"));
  EXPECT_THAT(lines(s.kernel.fdb), Contains("egw0 " + macText(n2) + " dst 192.168.50.12"));
  EXPECT_EQ(s.kernel.fdb.size(), 2U);  // not itself
  EXPECT_THAT(lines(s.kernel.neighbours), Contains("192.168.50.11 dev egw0 lladdr " + macText(n1)));
  EXPECT_THAT(lines(s.kernel.links),
              Contains("egw0 vxlan mac " + macText(tunnelMac(ip("192.168.50.13"))) +
                       " mtu 1450 vni 4242 port 4799 local 192.168.50.13 dev eth0"));
  EXPECT_THAT(lines(s.kernel.addresses), Contains("169.254.99.1/32 dev egw0"));
}

TEST(DesiredState, IPv6UnderlayUsesV6EndpointsAndABiggerOverhead) {
  auto v = topology("n3");
  for (auto& n : v.nodes) {
    n.ipv4.reset();
  }
  auto s = compute(v);
  EXPECT_THAT(lines(s.kernel.fdb),
              Contains("egw0 " + macText(tunnelMac(ip("fd00:50::11"))) + " dst fd00:50::11"));
  auto vx = std::find_if(s.kernel.links.begin(), s.kernel.links.end(),
                         [](const Link& l) { return l.kind == Link::Kind::kVxlan; });
  ASSERT_NE(vx, s.kernel.links.end());
  EXPECT_EQ(vx->mtu, 1430U);
}

TEST(DesiredState, LinkLocalIsEui64OfTheMac) {
  EXPECT_EQ(linkLocal(Mac{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}).toString(),
            "fe80::11:22ff:fe33:4455");
}

TEST(DesiredState, InputOrderDoesNotMatter) {
  auto a = topology("n1");
  a.policies.push_back(a.policies[0]);
  a.policies[1].key = "b/second";
  a.policies[1].uid = "uid-second";
  a.policies[1].slots = {{{ip("192.168.50.210")}, "n2", "", ""}};
  auto b = a;
  std::reverse(b.nodes.begin(), b.nodes.end());
  std::reverse(b.policies.begin(), b.policies.end());
  std::reverse(b.leases.begin(), b.leases.end());
  std::reverse(b.policies[0].sources.begin(), b.policies[0].sources.end());
  auto sa = compute(a), sb = compute(b);
  EXPECT_EQ(sa.kernel.toString(), sb.kernel.toString());
  EXPECT_EQ(renderNftJson(sa.kernel.nft).json, renderNftJson(sb.kernel.nft).json);
}

TEST(DesiredState, UnknownSelfIsAnError) {
  auto v = topology("n9");
  EXPECT_FALSE(computeDesiredState(v, config()).ok());
  v = topology("n1");
  v.nodes[0].ipv4.reset();
  v.nodes[0].ipv6.reset();
  EXPECT_FALSE(computeDesiredState(v, config()).ok());
}

TEST(NftJson, HolderSnatsToTheEgressIPAndTheDigestFollowsTheContent) {
  auto holder = renderNftJson(compute(topology("n1")).kernel.nft);
  auto source = renderNftJson(compute(topology("n3")).kernel.nft);
  rapidjson::Document d;
  d.Parse(holder.json.c_str());
  ASSERT_FALSE(d.HasParseError());
  ASSERT_TRUE(d.HasMember("nftables"));
  // The holder SNATs its policy's sources by the map from source to egress IP.
  EXPECT_THAT(holder.json,
              HasSubstr(R"("snat":{"family":"ip","addr":{"map":{"key":{"payload":{"protocol":"ip",)"
                        R"("field":"saddr"}},"data":"@p0_snat4"}}})"));
  EXPECT_THAT(holder.json, HasSubstr(R"(["10.244.3.2","192.168.50.200"])"));
  EXPECT_THAT(source.json, Not(HasSubstr("snat4")));
  // The guard drops what carries a mark this table sets for routing (n1's, the refusal's) and is
  // not leaving through the tunnel; no other value of the mask, which is not ours to drop.
  const uint32_t n1 = compute(topology("n3")).kernel.nft.egressIPs.at(0).mark;
  ASSERT_LT(n1, 254U);
  EXPECT_THAT(source.json, HasSubstr(R"({"match":{"op":"==","left":{"&":[{"meta":{"key":"mark"}},)"
                                     R"(255]},"right":{"set":[)" +
                                     std::to_string(n1) +
                                     R"(,254]}}},{"match":{"op":"!=","left":)"
                                     R"({"meta":{"key":"oifname"}},"right":)"
                                     R"("egw0"}},{"drop":null}]})"));
  // And on the holder, a packet classified to the address it holds leaves with that address.
  EXPECT_THAT(holder.json,
              HasSubstr(R"({"match":{"op":"==","left":{"&":[{"meta":{"key":"mark"}},255]},)"
                        R"("right":253}},{"match":{"op":"!=","left":{"meta":{"key":"oifname"}},)"
                        R"("right":"egw0"}},{"match":{"op":"!=","left":{"payload":{"protocol":)"
                        R"("ip","field":"saddr"}},"right":{"set":["192.168.50.200"]}}},)"
                        R"({"drop":null}]})"));
  // Identity SNAT into the tunnel on every node: the CNI's MASQUERADE cannot claim it.
  EXPECT_THAT(
      source.json,
      HasSubstr(R"("snat":{"family":"ip","addr":{"payload":{"protocol":"ip","field":"saddr"}}})"));
  EXPECT_THAT(holder.json, HasSubstr("\"comment\":\"" + nftTag(holder.digest) + "\""));
  EXPECT_NE(holder.digest, source.digest);
  EXPECT_EQ(holder.digest, renderNftJson(compute(topology("n1")).kernel.nft).digest);
  EXPECT_EQ(holder.digest.size(), 16U);
}

}  // namespace
}  // namespace egress::dataplane

namespace egress::dataplane {
namespace {

TEST(DesiredState, EveryNodeAsksForForwardingLooseTunnelRpFilterAndTheUplinksProxyParameters) {
  for (const char* node : {"n1", "n3"}) {
    auto s = lines(compute(topology(node)).kernel.sysctls);
    EXPECT_THAT(s, Contains("net/ipv4/ip_forward = 1"));
    EXPECT_THAT(s, Contains("net/ipv6/conf/all/forwarding = 1"));
    EXPECT_THAT(s, Contains("net/ipv4/conf/egw0/rp_filter = 2"));
    EXPECT_THAT(s, Contains("net/ipv4/neigh/eth0/proxy_delay = 0"));
    EXPECT_THAT(s, Contains("net/ipv6/conf/eth0/proxy_ndp = 1"));
    EXPECT_THAT(s, Contains("net/ipv6/neigh/eth0/proxy_delay = 0"));
    // proxy_arp would answer for every address the node routes, not only the held ones.
    for (const auto& line : s) {
      EXPECT_THAT(line, Not(HasSubstr("proxy_arp"))) << node;
    }
  }
}

// The operator checked every egress IP against the pools and the cluster; the agent does not
// take its word for it. Each of these, named in the view, gets no mark: not held, not routed,
// its sources refused, and the reason among the problems.
TEST(DesiredState, AnEgressIPTheClusterOwnsOrNoPoolHoldsIsRefused) {
  struct Case {
    const char* ip;
    const char* why;
  };
  for (const auto& c : std::vector<Case>{{"127.0.0.1", "a loopback address"},
                                         {"169.254.1.1", "a link-local address"},
                                         {"224.0.0.5", "a multicast address"},
                                         {"0.0.0.0", "\"this network\""},
                                         {"192.168.50.12", "node n2's address"},
                                         {"10.244.1.9", "in node n1's pod CIDR 10.244.1.0/24"},
                                         {"10.96.0.7", "in the cluster CIDR 10.96.0.0/12"},
                                         {"192.168.50.250", "the API server's address"},
                                         {"198.51.100.1", "in no IPAMPool"}}) {
    auto v = topology("n1");
    v.nodes[0].podCIDRs = {cidr("10.244.1.0/24")};
    v.clusterCIDRs = {cidr("10.96.0.0/12")};
    v.apiServer = {ip("192.168.50.250")};
    v.poolCIDRs.push_back(cidr("0.0.0.0/0"));  // all but the last case lie in a pool
    if (std::string(c.ip) == "198.51.100.1") {
      v.poolCIDRs.pop_back();
    }
    v.policies[0].slots[0].ips = {ip(c.ip)};
    auto s = compute(v);
    EXPECT_TRUE(s.held.empty()) << c.ip;
    EXPECT_THAT(s.kernel.nft.toString(), Not(HasSubstr("nft eip " + std::string(c.ip)))) << c.ip;
    EXPECT_THAT(s.kernel.nft.toString(), HasSubstr("nft default/web pick 10.244.3.2 refuse\n"))
        << c.ip << ": its sources are refused";
    EXPECT_THAT(s.kernel.neighbours, ::testing::Each(::testing::Field(&Neighbour::proxy, false)))
        << c.ip;
    bool named = false;
    for (const auto& p : s.problems) {
      named = named || (p.kind == ProblemKind::kRefusedAddress && p.key == "default/web" &&
                        p.message.find(std::string("egress IP ") + c.ip +
                                       " of default/web refused: it is") != std::string::npos &&
                        p.message.find(c.why) != std::string::npos);
    }
    EXPECT_TRUE(named) << c.ip << " should be refused as " << c.why;
  }
}

// In-cluster traffic never leaves by a gateway, whatever a policy's destinations say: every
// node's addresses (the API server, NodePorts and hostNetwork pods are behind them), the pod
// CIDRs, the cluster CIDRs and the API server's address are one set the classifier stops at.
TEST(DesiredState, TheClustersOwnDestinationsAreExcludedForEveryPolicy) {
  auto v = topology("n3");
  v.nodes[1].podCIDRs = {cidr("10.244.2.0/24"), cidr("fd00:244:2::/64")};
  v.clusterCIDRs = {cidr("10.96.0.0/12")};
  v.apiServer = {ip("10.96.0.1"), ip("172.16.0.1")};
  v.policies[0].destinations = {cidr("0.0.0.0/0")};
  const auto text = compute(v).kernel.nft.toString();
  for (const char* in :
       {"192.168.50.11/32", "192.168.50.12/32", "192.168.50.13/32", "fd00:50::11/128",
        "10.244.2.0/24", "fd00:244:2::/64", "10.96.0.0/12", "172.16.0.1/32"}) {
    EXPECT_THAT(text, HasSubstr(std::string("nft incluster ") + in + "\n")) << in;
  }
  // 10.96.0.1 lies in 10.96.0.0/12: the set holds the outermost prefixes only.
  EXPECT_THAT(text, Not(HasSubstr("nft incluster 10.96.0.1/32")));
}

// The tunnel filter's inputs: every node may send to the tunnel port; a peer's tunnel may
// deliver only that peer's own source pods, known by its tunnel MAC; this node's own pods never
// come through the tunnel.
TEST(DesiredState, TheTunnelTakesEveryNodeAndEachPeersOwnSources) {
  auto v = topology("n1");
  auto c = config();
  c.port = 4801;
  const auto t = compute(v, c).kernel.nft;
  EXPECT_EQ(t.tunnelPort, 4801);
  const auto text = t.toString();
  for (const char* n : {"192.168.50.11", "192.168.50.12", "192.168.50.13", "fd00:50::13"}) {
    EXPECT_THAT(text, HasSubstr(std::string("nft node ") + n + "\n")) << n;
  }
  const std::string n3 = macText(tunnelMac(ip("192.168.50.13")));
  EXPECT_THAT(text, HasSubstr("nft tunsrc " + n3 + " 10.244.3.2\n"));
  EXPECT_THAT(text, Not(HasSubstr(" 10.244.1.2\n"))) << "p1 is this node's own";
  // Another node's source is listed with that node's MAC, never with a third one's.
  EXPECT_THAT(text, Not(HasSubstr(macText(tunnelMac(ip("192.168.50.12"))) + " 10.244.3.2")));
}

}  // namespace
}  // namespace egress::dataplane
