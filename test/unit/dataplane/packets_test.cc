// Real packets through the data plane, without a control plane: a three-node cluster
// (packets/topology.sh: an underlay bridge, three node namespaces with a
// flannel-like VXLAN CNI and its MASQUERADE, pods behind veths, an external echo server that
// answers with the address it saw), each node programmed by the appliers with the desired state
// computeDesiredState gives it for the same ClusterView the agent would cache (topology.h), and
// pods connecting out. It all runs in the test's private network namespace (netns_main.cc).
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pkg/dataplane/announcer.h"
#include "pkg/dataplane/conntrack_cleaner.h"
#include "pkg/dataplane/link_applier.h"
#include "pkg/dataplane/nft_applier.h"
#include "pkg/dataplane/routing_applier.h"
#include "pkg/dataplane/sysctl_applier.h"
#include "test/unit/dataplane/kernel_test_util.h"
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

namespace egress::dataplane {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

using testing::inNetns;
using testing::ip;
using testing::output;
using testing::sh;

const std::string kDir = EGRESS_PACKETS_DIR;

// What an agent does on `node` for view `v`: compute, apply everything, announce what it holds.
int program(const std::string& node, ClusterView v) {
  v.self = node;
  int changes = -1;
  inNetns(node, [&] {
    auto want = testing::desiredOf(v);
    LinkApplier links;
    RoutingApplier routing;
    NftApplier nft;
    auto l = links.apply(want.kernel);
    ASSERT_TRUE(l.ok()) << node << ": " << l.error();
    auto s = SysctlApplier().apply(want.kernel.sysctls);
    ASSERT_TRUE(s.ok()) << node << ": " << s.error();
    auto n = nft.apply(want.kernel.nft);
    ASSERT_TRUE(n.ok()) << node << ": " << n.error();
    auto r = routing.apply(want.kernel.rules, want.kernel.routes);
    ASSERT_TRUE(r.ok()) << node << ": " << r.error();
    Announcer a;
    for (const auto& e : want.held) {
      ASSERT_TRUE(a.announce("eth0", e).ok());
    }
    changes = *l + *r + (n->kind == NftApplier::Change::Kind::kNone ? 0 : 1);
  });
  return changes;
}

// The three-node cluster, dual-stack: p3 is selected in both families, n1 holds 192.168.50.200 and
// fd00:50::200.
ClusterView cluster() {
  return testing::dualStackTopology("n1");
}

void programAll(const ClusterView& v) {
  for (const char* n : {"n1", "n2", "n3"}) {
    program(n, v);
  }
}

std::string connect(const std::string& pod, const std::string& host, const std::string& mode = "") {
  return testing::connectFrom(kDir, pod, host, mode);
}

class PacketsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    sh("sh " + kDir + "/topology.sh");
    sh("ip netns exec ext python3 " + kDir +
       "/echo.py /tmp/egw-echo-peers.log "
       ">/dev/null 2>&1 & echo $! > /run/netns/echo.pid");
    sh("for i in $(seq 50); do ip netns exec ext python3 -c \"import socket; "
       "socket.create_connection(('127.0.0.1', 8080), 1)\" 2>/dev/null && break; sleep 0.1; "
       "done");
    programAll(cluster());
  }
  static void TearDownTestSuite() {
    std::system("kill $(cat /run/netns/echo.pid); rm -f /tmp/egw-echo-peers.log");
  }
};

TEST_F(PacketsTest, ASelectedPodLeavesWithTheEgressIPThroughTheTunnel) {
  // Through the tunnel; n3's CNI MASQUERADE is present and does not win.
  EXPECT_THAT(connect("p3", "192.168.50.100"), StartsWith("192.168.50.200:"));
}

TEST_F(PacketsTest, ASelectedPodOnTheHolderLeavesWithTheEgressIP) {
  EXPECT_THAT(connect("p1", "192.168.50.100"), StartsWith("192.168.50.200:"));
}

TEST_F(PacketsTest, NonSelectedPodsLeaveWithTheirNodesAddress) {
  EXPECT_THAT(connect("p2", "192.168.50.100"), StartsWith("192.168.50.12:"));
  EXPECT_THAT(connect("p3b", "192.168.50.100"), StartsWith("192.168.50.13:"));
}

TEST_F(PacketsTest, AnExcludedDestinationSeesTheNodesAddress) {
  EXPECT_THAT(connect("p3", "192.168.50.101"), StartsWith("192.168.50.13:"));
}

TEST_F(PacketsTest, ReplyingThroughTheTunnelSurvivesStrictRpFilter) {
  // all.rp_filter=1 on every node (topology.sh); the reply came back to p3 through egw0.
  ASSERT_EQ(output("ip netns exec n3 sysctl -n net.ipv4.conf.all.rp_filter"), "1\n");
  EXPECT_THAT(connect("p3", "192.168.50.100"), StartsWith("192.168.50.200:"));
  EXPECT_EQ(output("ip netns exec n3 nstat -az TcpExtIPReversePathFilter | awk "
                   "'/TcpExtIPReversePathFilter/ {print $2}'"),
            "0\n");
}

TEST_F(PacketsTest, WithNoHolderTheConnectionFailsAndTheServerNeverSeesANodeOrPod) {
  auto v = cluster();
  v.policies[0].slots[0].node.clear();
  programAll(v);
  sh(": > /tmp/egw-echo-peers.log");
  EXPECT_THAT(connect("p3", "192.168.50.100"), StartsWith("error:"));
  EXPECT_THAT(connect("p1", "192.168.50.100"), StartsWith("error:"));
  const auto seen = output("cat /tmp/egw-echo-peers.log");
  EXPECT_THAT(seen, Not(HasSubstr("192.168.50.1"))) << seen;
  EXPECT_THAT(seen, Not(HasSubstr("10.244."))) << seen;
  // Not selected: unaffected.
  EXPECT_THAT(connect("p3b", "192.168.50.100"), StartsWith("192.168.50.13:"));
  programAll(cluster());
  EXPECT_THAT(connect("p3", "192.168.50.100"), StartsWith("192.168.50.200:"));
}

// The holder's counter of its egress IP (the agent's egw_agent_egress_bytes_total) counts what
// left with it: the 280,000 bytes bulk sends, plus its IP and TCP headers (at least 40 bytes a
// packet; at most one packet per 1,000 bytes, with room); nothing on the other nodes.
TEST_F(PacketsTest, TheHoldersCounterCountsTheBytesThatLeftWithTheEgressIP) {
  const std::string name = egressCounter(*ipam::parseAddress("192.168.50.200"));
  ASSERT_EQ(name, "egress_192_168_50_200");
  auto count = [&](const std::string& node) {
    NftCount c;
    inNetns(node, [&] {
      auto all = NftApplier().counters("egw");
      ASSERT_TRUE(all.ok()) << all.error();
      if (auto it = all->find(name); it != all->end()) {
        c = it->second;
      }
    });
    return c;
  };
  const NftCount before = count("n1");
  ASSERT_THAT(connect("p3", "192.168.50.100", "bulk"), HasSubstr("\nbulk ok"));
  const NftCount after = count("n1");
  const uint64_t bytes = after.bytes - before.bytes;
  const uint64_t packets = after.packets - before.packets;
  std::printf("[ counted  ] %llu bytes in %llu packets for 280000 bytes sent\n",
              static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(packets));
  EXPECT_GE(bytes, 280000U + 40U * packets);
  EXPECT_LE(bytes, 280000U + 100U * 280U);
  EXPECT_GT(packets, 0U);
  for (const char* other : {"n2", "n3"}) {
    EXPECT_EQ(count(other).bytes, 0U) << other << " holds nothing";
  }
}

TEST_F(PacketsTest, FullSizeWritesWithDontFragmentCompleteThroughTheTunnel) {
  // 1400-byte writes (DF) through a 1450-byte tunnel (the MSS clamp, or PMTU discovery).
  EXPECT_THAT(connect("p3", "192.168.50.100", "bulk"), HasSubstr("\nbulk ok"));
}

TEST_F(PacketsTest, BehindAPathMtuBlackholeTheMssClampStillFitsFullSizeWrites) {
  // The same where PMTU discovery cannot help (a firewall eating ICMP "too big", common upstream):
  // only the clamp of the SYN's MSS to the tunnel's MTU makes the segments fit. The route
  // caches are flushed first so no MTU learnt by an earlier test hides a missing clamp.
  const std::string drop4 = "OUTPUT -p icmp --icmp-type fragmentation-needed -j DROP";
  const std::string drop6 = "OUTPUT -p icmpv6 --icmpv6-type packet-too-big -j DROP";
  for (const char* n : {"n1", "n2", "n3"}) {
    sh(std::string("ip netns exec ") + n + " iptables -A " + drop4 + " && ip netns exec " + n +
       " ip6tables -A " + drop6);
  }
  for (const char* ns : {"p3", "ext"}) {
    sh(std::string("ip -n ") + ns + " route flush cache && ip -n " + ns + " -6 route flush cache");
  }
  EXPECT_THAT(connect("p3", "192.168.50.100", "bulk"), HasSubstr("\nbulk ok"));
  EXPECT_THAT(connect("p3", "fd00:50::100", "bulk"), HasSubstr("\nbulk ok"));
  for (const char* n : {"n1", "n2", "n3"}) {
    sh(std::string("ip netns exec ") + n + " iptables -D " + drop4 + " && ip netns exec " + n +
       " ip6tables -D " + drop6);
  }
}

// The moment between the nft table and the routing rules: the agent applies them one after the
// other, and when a node starts holding, its sources' chains set its mark before the rule that
// routes that mark exists (and when it stops, the rule may go first). Without the rule the main
// table would route the packet out of the uplink, and the CNI's MASQUERADE would send it with
// the node's address. The guard drops it: here n3 gets the table of a view where n2 holds the
// address, without the rules of that view.
TEST_F(PacketsTest, APacketMarkedForAHolderWithoutItsRoutingRuleIsDroppedNotSentAsTheNode) {
  auto moved = cluster();
  moved.policies[0].slots[0].node = "n2";
  moved.self = "n3";
  const auto want = testing::desiredOf(moved);
  RoutingApplier routing;
  inNetns("n3", [&] {
    auto n = NftApplier().apply(want.kernel.nft);
    ASSERT_TRUE(n.ok()) << n.error();
    // The rules of the view n3 had: the refusal's only (n1's mark routes through n1's table, and
    // n2's mark, which the table now sets, through none).
    auto rules = routing.readRules();
    ASSERT_TRUE(rules.ok());
    for (const auto& r : *rules) {
      EXPECT_NE(r.mark, want.kernel.nft.egressIPs.at(0).mark) << r.toString();
    }
  });
  sh(": > /tmp/egw-echo-peers.log");
  EXPECT_THAT(connect("p3", "192.168.50.100"), StartsWith("error:"));
  EXPECT_THAT(connect("p3", "fd00:50::100"), StartsWith("error:"));
  const auto seen = output("cat /tmp/egw-echo-peers.log");
  EXPECT_THAT(seen, Not(HasSubstr("192.168.50.13"))) << seen;
  EXPECT_THAT(seen, Not(HasSubstr("fd00:50::13"))) << seen;
  EXPECT_THAT(seen, Not(HasSubstr("10.244."))) << seen;
  // Its rules come: through n2.
  programAll(moved);
  EXPECT_THAT(connect("p3", "192.168.50.100"), StartsWith("192.168.50.200:"));
  programAll(cluster());
  EXPECT_THAT(connect("p3", "192.168.50.100"), StartsWith("192.168.50.200:"));
}

TEST_F(PacketsTest, ANodeThatNoLongerHoldsTheIPDropsTunnelTrafficRatherThanSendItAsItself) {
  // A source node's stale view (n3 still routes to n1) meets a node that no longer holds the IP:
  // what came through the tunnel must not leave n1 un-SNATed, where its CNI's MASQUERADE would
  // send it out with n1's address. Two ways: the IP moved to n2 in n1's view (n1 would route it
  // on into the tunnel: the forward chain drops tunnel to tunnel), and the policy gone from n1's
  // view altogether (nothing classifies it: the guard drops it).
  auto moved = cluster();
  moved.policies[0].slots[0].node = "n2";
  auto gone = cluster();
  gone.policies.clear();
  for (const auto& [why, view] : {std::pair{"moved", moved}, std::pair{"gone", gone}}) {
    program("n1", view);
    sh(": > /tmp/egw-echo-peers.log");
    EXPECT_THAT(connect("p3", "192.168.50.100"), StartsWith("error:")) << why;
    EXPECT_THAT(connect("p3", "fd00:50::100"), StartsWith("error:")) << why;
    const auto seen = output("cat /tmp/egw-echo-peers.log");
    EXPECT_THAT(seen, Not(HasSubstr("192.168.50.1"))) << why << ": " << seen;
    EXPECT_THAT(seen, Not(HasSubstr("10.244."))) << why << ": " << seen;
    EXPECT_THAT(seen, Not(HasSubstr("fd00:50::1"))) << why << ": " << seen;
    EXPECT_THAT(seen, Not(HasSubstr("fd00:244:"))) << why << ": " << seen;
    // Not even a SYN went out as n1: no connection of p3's was masqueraded to n1's address.
    const auto masqueraded = output(
        "ip netns exec n1 grep -E 'src=(10.244.3.2|fd00:0244:0003:0000:0000:0000:0000:0002) .*"
        "dst=(192.168.50.11|fd00:0050:0000:0000:0000:0000:0000:0011) ' /proc/net/nf_conntrack");
    EXPECT_EQ(masqueraded, "") << why;
  }
  program("n1", cluster());
  EXPECT_THAT(connect("p3", "192.168.50.100"), StartsWith("192.168.50.200:"));
}

TEST_F(PacketsTest, TheIPMovesToAnotherNodeAndNewConnectionsSeeItThere) {
  // Without the agents: n1 is cut off, the operator names n2 in the IP's slot, every node is
  // re-programmed and n2 announces (GARP), so ext's neighbour entry moves at once. And a
  // connection open across the move keeps its address and port (ports preserved, conntrack
  // picks it up mid-stream on n2).
  ASSERT_THAT(connect("p3", "192.168.50.100"), StartsWith("192.168.50.200:"));
  sh("ip netns exec p3 python3 " + kDir + "/client.py 192.168.50.100 hold:6 > " +
     "/run/netns/held.out 2>&1 & echo $! > /run/netns/held.pid");
  sh("for i in $(seq 50); do [ -s /run/netns/held.out ] && break; sleep 0.1; done");
  sh("ip -n ul link set v-n1 down");
  auto v = cluster();
  v.policies[0].slots[0].node = "n2";
  const auto moved = std::chrono::steady_clock::now();
  programAll(v);
  EXPECT_THAT(connect("p3", "192.168.50.100"), StartsWith("192.168.50.200:"));
  const auto took = std::chrono::steady_clock::now() - moved;
  std::printf("failover: re-programmed and first new connection in %.2f s\n",
              std::chrono::duration<double>(took).count());
  EXPECT_THAT(connect("p3", "fd00:50::100"), StartsWith("fd00:50::200:"));
  const auto n2Mac = testing::linkField("eth0", "link/ether", "n2");
  EXPECT_THAT(output("ip -n ext neigh show 192.168.50.200"), HasSubstr(n2Mac));
  EXPECT_THAT(output("ip -n ext -6 neigh show fd00:50::200"), HasSubstr(n2Mac));
  sh("while kill -0 $(cat /run/netns/held.pid) 2>/dev/null; do sleep 0.2; done");
  const auto held = output("cat /run/netns/held.out");
  EXPECT_THAT(held, StartsWith("192.168.50.200:"));
  EXPECT_THAT(held, HasSubstr("\nheld ok")) << held;
  sh("ip -n ul link set v-n1 up");
  programAll(cluster());
  EXPECT_THAT(connect("p3", "192.168.50.100"), StartsWith("192.168.50.200:"));
}

TEST_F(PacketsTest, IPv6PassesTheSameChecks) {
  // Through the tunnel (next hop the holder's egw0 link-local), not selected, excluded, full-size
  // writes, no holder; the move is in TheIPMovesToAnotherNode...
  EXPECT_THAT(connect("p3", "fd00:50::100"), StartsWith("fd00:50::200:"));
  // Not selected: the CNI's IPv6 MASQUERADE, the node's address (the pods are fd00:244:N::/64,
  // inside the CNI's fd00:244::/32; a /48 there once matched no pod and hid this case).
  EXPECT_THAT(connect("p2", "fd00:50::100"), StartsWith("fd00:50::12:"));
  EXPECT_THAT(connect("p3b", "fd00:50::100"), StartsWith("fd00:50::13:"));
  EXPECT_THAT(connect("p3", "fd00:50::101"), StartsWith("fd00:50::13:"));  // excluded
  EXPECT_THAT(connect("p3", "fd00:50::100", "bulk"), HasSubstr("\nbulk ok"));
  auto v = cluster();
  v.policies[0].slots[0].node.clear();
  programAll(v);
  sh(": > /tmp/egw-echo-peers.log");
  EXPECT_THAT(connect("p3", "fd00:50::100"), StartsWith("error:"));
  const auto seen = output("cat /tmp/egw-echo-peers.log");
  EXPECT_THAT(seen, Not(HasSubstr("fd00:50::1"))) << seen;
  EXPECT_THAT(seen, Not(HasSubstr("fd00:244:"))) << seen;
  programAll(cluster());
  EXPECT_THAT(connect("p3", "fd00:50::100"), StartsWith("fd00:50::200:"));
}

TEST_F(PacketsTest, ASelectedPodReachedThroughDnatAnswersFromTheNodeNotTheEgressIP) {
  // ext connects to a NodePort-like DNAT on n3 into p3 (selected); the reply is a reply
  // (ct direction reply returns before classify), so it goes back un-marked and un-SNATed to
  // .200, and the connection works. The server in p3 answers with the peer it saw: ext itself.
  sh("ip netns exec n3 iptables -t nat -A PREROUTING -d 192.168.50.13 -p tcp --dport 30080 "
     "-j DNAT --to-destination 10.244.3.2:8080");
  sh("ip netns exec p3 python3 " + kDir +
     "/echo.py /dev/null >/dev/null 2>&1 & echo $! > "
     "/run/netns/p3echo.pid");
  const auto seen = [] {
    std::string out;
    for (int i = 0; i < 50 && !out.starts_with("192.168.50."); ++i) {
      out = connect("ext", "192.168.50.13", "- 30080");
    }
    return out;
  }();
  EXPECT_THAT(seen, StartsWith("192.168.50.100:")) << "p3 saw ext's own address";
  // IPv6 the same, into p3's fd00:244:3::2.
  sh("ip netns exec n3 ip6tables -t nat -A PREROUTING -d fd00:50::13 -p tcp --dport 30080 "
     "-j DNAT --to-destination [fd00:244:3::2]:8080");
  EXPECT_THAT(connect("ext", "fd00:50::13", "- 30080"), StartsWith("fd00:50::100:"))
      << "p3 saw ext's own address";
  sh("ip netns exec n3 ip6tables -t nat -D PREROUTING -d fd00:50::13 -p tcp --dport 30080 "
     "-j DNAT --to-destination [fd00:244:3::2]:8080");
  std::system("kill $(cat /run/netns/p3echo.pid)");
  sh("ip netns exec n3 iptables -t nat -D PREROUTING -d 192.168.50.13 -p tcp --dport 30080 "
     "-j DNAT --to-destination 10.244.3.2:8080");
}

TEST_F(PacketsTest, ReleasingAnEgressIPDeletesTheConnectionsItsHolderSNATed) {
  // The release of an address: n1 SNATs p3's connections to .200 and fd00:50::200; the
  // cleaner deletes exactly the entries whose reply goes to the IP, open connections included,
  // and none of another address's.
  sh("ip netns exec p3 python3 " + kDir + "/client.py 192.168.50.100 hold:2 > " +
     "/run/netns/ct.out 2>&1 & echo $! > /run/netns/ct.pid");
  sh("for i in $(seq 50); do [ -s /run/netns/ct.out ] && break; sleep 0.1; done");
  EXPECT_THAT(connect("p3", "fd00:50::100"), StartsWith("fd00:50::200:"));
  const auto entriesTo = [](const char* ip) {
    return output(std::string("ip netns exec n1 cat /proc/net/nf_conntrack | grep -c 'dst=") + ip +
                  " ' || true");
  };
  ASSERT_NE(entriesTo("192.168.50.200"), "0\n");
  // /proc prints IPv6 uncompressed.
  const char* kV6 = "fd00:0050:0000:0000:0000:0000:0000:0200";
  ASSERT_NE(entriesTo(kV6), "0\n");
  // The other connections' entries that cannot time out meanwhile (more than 5 s left), as
  // their original tuples: an entry that expires on its own is no deletion by the cleaner.
  const auto lastingTo = [](const char* ip, int minSeconds) {
    return output(std::string("ip netns exec n1 cat /proc/net/nf_conntrack | grep 'dst=") + ip +
                  " ' | awk '$5 > " + std::to_string(minSeconds) +
                  "' | grep -o 'src=[^ ]* dst=[^ ]* sport=[^ ]* dport=[^ ]*' | sort -u || true");
  };
  const std::string otherBefore = lastingTo("192.168.50.11", 5);
  ASSERT_NE(otherBefore, "") << "no other connection to check the cleaner leaves alone";
  inNetns("n1", [&] {
    ConntrackCleaner cleaner;
    auto v4 = cleaner.forget({ip("192.168.50.200")});
    ASSERT_TRUE(v4.ok()) << v4.error();
    EXPECT_GE(*v4, 1U);
    auto v6 = cleaner.forget({ip("fd00:50::200")});
    ASSERT_TRUE(v6.ok()) << v6.error();
    EXPECT_GE(*v6, 1U);
    auto none = cleaner.forget({ip("192.168.50.201"), ip("fd00:50::201")});
    ASSERT_TRUE(none.ok()) << none.error();
    EXPECT_EQ(*none, 0U);
  });
  // No IPv6 connection is open, so none is left; the held IPv4 one's next packet may make a
  // fresh entry (loose pickup), so only its count of deletions is checked above.
  EXPECT_EQ(entriesTo(kV6), "0\n");
  // Every one of them is still there (first tuples are unique, so "still there" is "listed").
  const std::string otherAfter = lastingTo("192.168.50.11", 0);
  std::string missing;
  std::istringstream lines(otherBefore);
  for (std::string line; std::getline(lines, line);) {
    if (otherAfter.find(line + "\n") == std::string::npos) {
      missing += line + "\n";
    }
  }
  EXPECT_EQ(missing, "") << "deleted by the cleaner, though not to a released address";
  sh("while kill -0 $(cat /run/netns/ct.pid) 2>/dev/null; do sleep 0.2; done");
}

TEST_F(PacketsTest, ARestartedAgentChangesNothingAndAnOpenConnectionLosesNoLine) {
  // Without the process: fresh appliers (what a restarted agent makes) re-apply the same
  // state on every node while p3 echoes a line every 0.2 s through the tunnel.
  sh("ip netns exec p3 python3 " + kDir + "/client.py 192.168.50.100 hold:3 > " +
     "/run/netns/held.out 2>&1 & echo $! > /run/netns/held.pid");
  sh("for i in $(seq 50); do [ -s /run/netns/held.out ] && break; sleep 0.1; done");
  for (const char* n : {"n1", "n2", "n3"}) {
    EXPECT_EQ(program(n, cluster()), 0) << n;
  }
  sh("while kill -0 $(cat /run/netns/held.pid) 2>/dev/null; do sleep 0.2; done");
  const auto held = output("cat /run/netns/held.out");
  EXPECT_THAT(held, StartsWith("192.168.50.200:"));
  EXPECT_THAT(held, HasSubstr("\nheld ok")) << held;
}

// Fencing in the kernel: no agent process here, only the kernel state one left. While the
// holder's fence is fresh, the kernel answers ARP and NDP for the egress IPs (its proxy entries)
// and SNATs to them; once the fence's timeout passes, with nobody refreshing it, it answers
// neither and SNATs nothing (the proxy entries and SNAT rules are still there). Last in the
// suite: it leaves n1 fenced until it removes the fence.
// More egress IPs than the mark mask has values (the limit of marks per egress IP): 600
// policies with an egress IP each, held by n1 and n2 in turn. Every node programs all of them
// (one mark per holder node), and pods of the first, a middle and the last policy leave with
// their own policy's address: through the tunnel to n1, to n2, and from a pod on the holder.
TEST_F(PacketsTest, SixHundredEgressIPsAreAllProgrammedAndEachPolicyLeavesWithItsOwn) {
  auto v = cluster();
  v.poolCIDRs.push_back(*ipam::parseCIDR("198.18.0.0/16"));
  v.policies.clear();
  auto egressIP = [](int i) {
    return "198.18." + std::to_string(i / 250) + "." + std::to_string(1 + i % 250);
  };
  for (int i = 0; i < 600; ++i) {
    PolicyView p;
    p.key = "ns/p" + std::to_string(1000 + i);
    p.uid = "uid-" + std::to_string(i);
    p.slots = {{{ip(egressIP(i).c_str())}, i % 2 == 0 ? "n1" : "n2", "", ""}};
    p.destinations = {*ipam::parseCIDR("192.168.50.100/32")};
    // A source that exists in the topology for three of them; an address no pod has for the
    // rest (their map elements are programmed all the same).
    SourceView src{
        ip(("10.245." + std::to_string(i / 250) + "." + std::to_string(1 + i % 250)).c_str()),
        "n3"};
    if (i == 0) {
      src = {ip("10.244.3.2"), "n3"};  // p3 -> n1
    } else if (i == 299) {
      src = {ip("10.244.3.3"), "n3"};  // p3b -> n2
    } else if (i == 599) {
      src = {ip("10.244.2.2"), "n2"};  // p2, on its holder n2
    }
    p.sources = {src};
    v.policies.push_back(p);
  }
  v.self = "n3";
  auto want = testing::desiredOf(v);
  EXPECT_THAT(want.problems, ::testing::IsEmpty());
  ASSERT_EQ(want.kernel.nft.egressIPs.size(), 600U);
  // The external server reaches the egress IPs on its segment (the holders answer ARP for them).
  sh("ip -n ext route add 198.18.0.0/22 dev eth0");
  programAll(v);
  for (const char* n : {"n1", "n2", "n3"}) {
    inNetns(n, [&] {
      auto listing = NftApplier().list("egw");
      ASSERT_TRUE(listing.ok()) << listing.error();
      size_t chains = 0;
      for (size_t at = listing->find("\"name\": \"eip_"); at != std::string::npos;
           at = listing->find("\"name\": \"eip_", at + 1)) {
        ++chains;
      }
      EXPECT_EQ(chains, 600U) << n << ": a chain for every egress IP";
    });
  }
  EXPECT_THAT(connect("p3", "192.168.50.100"), StartsWith(egressIP(0) + ":"));
  EXPECT_THAT(connect("p3b", "192.168.50.100"), StartsWith(egressIP(299) + ":"));
  EXPECT_THAT(connect("p2", "192.168.50.100"), StartsWith(egressIP(599) + ":"));
  // p1 is selected by none of them: its node's address.
  EXPECT_THAT(connect("p1", "192.168.50.100"), StartsWith("192.168.50.11:"));
  sh("ip -n ext route del 198.18.0.0/22 dev eth0");
  programAll(cluster());
  EXPECT_THAT(connect("p3", "192.168.50.100"), StartsWith("192.168.50.200:"));
}

TEST_F(PacketsTest, ZzAnExpiredFenceStopsProxyAnswersAndTheSnatWithNoAgentLeft) {
  auto v = cluster();
  v.self = "n1";
  const auto want = testing::desiredOf(v);
  FenceState fence;
  for (const auto& e : want.kernel.nft.egressIPs) {
    fence.known.push_back(e.ip);
  }
  fence.held = want.held;
  ASSERT_EQ(fence.held.size(), 2U);
  // Room for the probe and two connections while it is fresh, on a loaded machine too (2 s
  // was once not enough under ctest -j2).
  fence.remaining = std::chrono::milliseconds(6000);
  const auto fenced = std::chrono::steady_clock::now();
  inNetns("n1", [&] {
    auto done = NftApplier().applyFence(fence);
    ASSERT_TRUE(done.ok()) << done.error();
  });
  const std::string n1 = testing::linkField("eth0", "link/ether", "n1");
  const std::string probe =
      "ip netns exec ext python3 " + kDir + "/neigh_probe.py eth0 192.168.50.200 fd00:50::200";
  EXPECT_EQ(output(probe), "v4 " + n1 + " v6 " + n1 + "\n");
  EXPECT_THAT(connect("p3", "192.168.50.100"), StartsWith("192.168.50.200:"));
  EXPECT_THAT(connect("p3", "fd00:50::100"), StartsWith("fd00:50::200:"));

  ASSERT_LT(std::chrono::steady_clock::now() - fenced, std::chrono::milliseconds(6000))
      << "too slow to see the fence fresh: the checks above are void";
  std::this_thread::sleep_until(fenced + std::chrono::milliseconds(6500));
  EXPECT_EQ(output(probe), "v4 - v6 -\n") << "a fence past its time still answers";
  EXPECT_THAT(connect("p3", "192.168.50.100"), StartsWith("error:"));
  EXPECT_THAT(connect("p1", "192.168.50.100"), StartsWith("error:"));
  EXPECT_THAT(connect("p3", "fd00:50::100"), StartsWith("error:"));
  EXPECT_THAT(output("ip netns exec n1 ip neigh show proxy"), HasSubstr("192.168.50.200"))
      << "the kernel state is still there: only the fence stops it";

  inNetns("n1", [&] {
    auto removed = NftApplier().removeFence();
    ASSERT_TRUE(removed.ok()) << removed.error();
  });
  EXPECT_EQ(output(probe), "v4 " + n1 + " v6 " + n1 + "\n");
  EXPECT_THAT(connect("p3", "192.168.50.100"), StartsWith("192.168.50.200:"));
}

}  // namespace
}  // namespace egress::dataplane
