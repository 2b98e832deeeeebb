#include "pkg/dataplane/desired_state.h"

#include <algorithm>
#include <map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "test/unit/dataplane/topology.h"

namespace egress::dataplane {
namespace {

using ::testing::Contains;
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

// Each source's egress IP in `s`'s first policy and family (the refuse mark: no entry).
std::map<ipam::Address, ipam::Address> picksOf(const DesiredState& s) {
  std::map<ipam::Address, ipam::Address> out;
  std::map<uint32_t, ipam::Address> byMark;
  for (const auto& e : s.kernel.nft.egressIPs) {
    byMark[e.mark] = e.ip;
  }
  for (const auto& pick : s.kernel.nft.policies[0].picks[0]) {
    if (auto it = byMark.find(pick.mark); it != byMark.end()) {
      out[pick.source] = it->second;
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
  EXPECT_THAT(lines(s.kernel.rules), Contains("ipv4 pref 100 fwmark 0x1/0xff lookup 7001"));
  EXPECT_THAT(lines(s.kernel.routes),
              Contains("0.0.0.0/0 via 192.168.50.11 dev egw0 onlink table 7001 metric 0"));
  EXPECT_THAT(lines(s.kernel.routes),
              Contains("unreachable 0.0.0.0/0 table 7001 metric 4294967295"));
  EXPECT_TRUE(s.held.empty());
  EXPECT_THAT(s.kernel.nft.toString(), HasSubstr("nft eip 192.168.50.200 mark 0x1\n"));
  EXPECT_THAT(s.kernel.nft.toString(), HasSubstr("nft default/web pick 10.244.3.2 mark 0x1\n"));
  EXPECT_THAT(s.kernel.nft.toString(), Not(HasSubstr("held")));
  for (const auto& n : s.kernel.neighbours) {
    EXPECT_FALSE(n.proxy) << n.toString();
  }
  // No reply table where nothing is held.
  EXPECT_THAT(lines(s.kernel.rules), Not(Contains("ipv4 pref 100 fwmark 0xff/0xff lookup 7000")));
}

TEST(DesiredState, HolderSnatsHoldsByProxyArpAndRoutesRepliesBack) {
  auto s = compute(topology("n1"));
  EXPECT_EQ(s.held, std::vector<ipam::Address>{ip("192.168.50.200")});
  // Held here: the main table routes out of the uplink, no fwmark rule for it.
  EXPECT_THAT(lines(s.kernel.rules), Not(Contains("ipv4 pref 100 fwmark 0x1/0xff lookup 7001")));
  EXPECT_THAT(lines(s.kernel.routes),
              Contains("192.168.50.200/32 dev egw-eip0 table 254 metric 0"));
  EXPECT_THAT(lines(s.kernel.neighbours), Contains("proxy 192.168.50.200 dev eth0"));
  EXPECT_THAT(s.kernel.nft.toString(), HasSubstr("nft eip 192.168.50.200 mark 0x1 held\n"));
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
  EXPECT_THAT(lines(s.kernel.rules), Contains("ipv4 pref 100 fwmark 0x1/0xff lookup 7001"));
  for (const auto& r : s.kernel.routes) {
    if (r.table == 7001) {
      EXPECT_EQ(r.type, Route::Type::kUnreachable) << r.toString();
    }
  }
  // The pod is still classified (its packets take the refuse table), never left alone.
  EXPECT_THAT(s.kernel.nft.toString(), HasSubstr("nft default/web pick 10.244.3.2 mark 0xfe\n"));
}

TEST(DesiredState, FailsClosedWithoutAHolder) {
  auto v = topology("n3");
  v.policies[0].slots[0].node.clear();
  auto s = compute(v);
  int routes7001 = 0;
  for (const auto& r : s.kernel.routes) {
    if (r.table == 7001) {
      ++routes7001;
      EXPECT_EQ(r.type, Route::Type::kUnreachable);
    }
  }
  EXPECT_EQ(routes7001, 1);
  EXPECT_THAT(s.kernel.nft.toString(), HasSubstr("nft default/web pick 10.244.3.2 mark 0xfe\n"));
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
  EXPECT_THAT(lines(s.kernel.rules), Contains("ipv4 pref 100 fwmark 0x1/0xff lookup 7001"));
}

TEST(DesiredState, MissingLeaseCountsAsStale) {
  auto v = topology("n3");
  v.leases.erase(v.leases.begin());  // n1's
  auto s = compute(v);
  EXPECT_THAT(lines(s.kernel.routes), Not(Contains("0.0.0.0/0 via 192.168.50.11 dev egw0 onlink "
                                                   "table 7001 metric 0")));
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
              Contains("0.0.0.0/0 via 192.168.50.12 dev egw0 onlink table 7001 metric 0"));
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
  EXPECT_THAT(lines(s.kernel.rules), Contains("ipv6 pref 100 fwmark 0x1/0xff lookup 7001"));
  EXPECT_THAT(lines(s.kernel.routes),
              Contains("::/0 via " + nh + " dev egw0 onlink table 7001 metric 1024"));
  EXPECT_THAT(lines(s.kernel.routes), Contains("unreachable ::/0 table 7001 metric 4294967295"));
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
  EXPECT_THAT(t, HasSubstr("nft default/web pick 10.244.3.2 mark 0x1\n"));
  EXPECT_THAT(t, HasSubstr("nft default/web pick fd00:244:3::2 mark 0x2\n"));
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

// Replicas 2, one holder dead: every source leaves with the live address (before, the pods
// hashed onto the dead holder's address were refused, about half of them), and only those move.
TEST(DesiredState, OneOfTwoHoldersDeadEverySourcePicksTheLiveIP) {
  auto v = topology("n3");
  auto& p = v.policies[0];
  p.slots = {{{ip("192.168.50.200")}, "n1", "", ""}, {{ip("192.168.50.201")}, "n2", "", ""}};
  p.sources = manySources();
  auto before = picksOf(compute(v));
  setLive(v, "n2", false);
  auto s = compute(v);
  auto after = picksOf(s);
  ASSERT_EQ(after.size(), p.sources.size()) << "some sources were refused";
  int moved = 0;
  for (const auto& [src, e] : after) {
    EXPECT_EQ(e, ip("192.168.50.200")) << src;
    moved += before.at(src) != e ? 1 : 0;
  }
  EXPECT_GT(moved, 0);
  EXPECT_THAT(s.kernel.nft.toString(), Not(HasSubstr("mark 0xfe\n")));
  // The holder SNATs every one of them (it computes the same picks).
  auto holder = v;
  holder.self = "n1";
  auto h = compute(holder);
  EXPECT_EQ(h.held, std::vector<ipam::Address>{ip("192.168.50.200")});
  EXPECT_EQ(picksOf(h), after);
  // No holder named at all for the second slot: the same.
  auto unnamed = topology("n3");
  unnamed.policies[0] = p;
  unnamed.policies[0].slots[1].node.clear();
  EXPECT_EQ(picksOf(compute(unnamed)), after);
}

TEST(DesiredState, PolicyWithoutEgressIPsRefusesItsPods) {
  auto v = topology("n3");
  v.policies[0].slots.clear();
  auto s = compute(v);
  const uint32_t refuse = s.kernel.nft.refuseMark;
  EXPECT_EQ(refuse, 0xfeU);
  EXPECT_THAT(s.kernel.nft.toString(), HasSubstr("nft default/web pick 10.244.3.2 mark 0xfe\n"));
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
  ASSERT_EQ(s.problems.size(), 1U);
  EXPECT_THAT(s.problems[0], HasSubstr("192.168.50.200"));
  EXPECT_THAT(s.problems[0], HasSubstr("a/forged"));
  EXPECT_THAT(s.problems[0], HasSubstr("default/web"));
  EXPECT_TRUE(s.held.empty());
  EXPECT_THAT(lines(s.kernel.neighbours), Not(Contains("proxy 192.168.50.200 dev eth0")));
  const auto t = s.kernel.nft.toString();
  EXPECT_THAT(t, Not(HasSubstr("nft eip 192.168.50.200")));
  EXPECT_THAT(t, HasSubstr("nft a/forged pick 10.244.3.9 mark 0xfe\n"));
  EXPECT_THAT(t, HasSubstr("nft default/web pick 10.244.3.2 mark 0xfe\n"));
  // The same key under another uid (a policy deleted and re-created) is another policy too.
  other.key = "default/web";
  v.policies[1] = other;
  s = compute(v);
  EXPECT_TRUE(s.held.empty());
  EXPECT_EQ(s.problems.size(), 1U);
}

TEST(DesiredState, EgressIPInTwoSlotsIsHeldByNeitherNode) {
  auto v = topology("n1");
  v.policies[0].slots.push_back({{ip("192.168.50.200")}, "n2", "egw-web-b", "uid-egw-web-b"});
  auto s = compute(v);
  EXPECT_TRUE(s.held.empty());
  ASSERT_EQ(s.problems.size(), 1U);
  EXPECT_THAT(s.problems[0], HasSubstr("2 slots of default/web"));
  auto onN2 = v;
  onN2.self = "n2";
  EXPECT_TRUE(compute(onN2).held.empty());
}

TEST(DesiredState, MarksFollowTheConfiguredMask) {
  auto c = config();
  c.markMask = 0xff00;
  auto s = compute(topology("n3"), c);
  EXPECT_THAT(lines(s.kernel.rules), Contains("ipv4 pref 100 fwmark 0x100/0xff00 lookup 7001"));
  EXPECT_EQ(s.kernel.nft.replyMark, 0xff00U);
  EXPECT_EQ(s.kernel.nft.refuseMark, 0xfe00U);
}

TEST(DesiredState, MoreEgressIPsThanMarksAreReported) {
  auto c = config();
  c.markMask = 0x7;  // indices 1..5 for egress IPs, 6 refuse, 7 reply
  auto v = topology("n3");
  for (int i = 201; i < 210; ++i) {
    v.policies[0].slots.push_back(
        {{ip(("192.168.50." + std::to_string(i)).c_str())}, "n2", "", ""});
  }
  auto s = compute(v, c);
  EXPECT_EQ(s.kernel.nft.egressIPs.size(), 5U);
  EXPECT_EQ(s.problems.size(), 5U);
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
  EXPECT_THAT(holder.json, HasSubstr(R"("snat":{"family":"ip","addr":"192.168.50.200"})"));
  EXPECT_THAT(source.json, Not(HasSubstr(R"("addr":"192.168.50.200")")));
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
    EXPECT_THAT(s.kernel.nft.toString(), HasSubstr("nft default/web pick 10.244.3.2 mark 0xfe\n"))
        << c.ip << ": its sources are refused";
    EXPECT_THAT(s.kernel.neighbours, ::testing::Each(::testing::Field(&Neighbour::proxy, false)))
        << c.ip;
    bool named = false;
    for (const auto& p : s.problems) {
      named = named || (p.find(std::string("egress IP ") + c.ip +
                               " of default/web refused: it is") != std::string::npos &&
                        p.find(c.why) != std::string::npos);
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
