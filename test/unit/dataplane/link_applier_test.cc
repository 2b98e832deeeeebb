// Runs in its own network namespace (netns_main.cc): programs egw's tunnel, its addresses, the
// peers' neighbour and FDB entries and the proxy ARP/NDP entries into a real kernel, reads them
// back, checks that a second pass and a fresh applier change nothing, that the MTU changes in
// place, that what others own is never touched, and that a holder answers ARP and NDP for its
// egress IPs on the uplink (a neighbour namespace resolves them to the uplink's MAC).
#include "pkg/dataplane/link_applier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pkg/dataplane/routing_applier.h"
#include "pkg/dataplane/sysctl_applier.h"
#include "test/unit/dataplane/kernel_test_util.h"

namespace egress::dataplane {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

using testing::dualStackTopology;
using testing::output;
using testing::sh;
using testing::sorted;

DesiredState desired(const std::string& self) {
  return testing::desiredOf(dualStackTopology(self));
}

class LinkApplierTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    sh("ip link set lo up");
    // No DAD: the uplink's IPv6 addresses are usable at once (the NDP check needs them).
    sh("sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0");
    sh("mkdir -p /run/netns && mount -t tmpfs tmpfs /run/netns && ip netns add ext");
    sh("ip link add eth0 type veth peer name ext0 && ip link set ext0 netns ext");
    sh("ip addr add 192.168.50.11/24 dev eth0 && ip addr add fd00:50::11/64 dev eth0");
    sh("ip link set eth0 up");
    sh("ip -n ext link set lo up && ip -n ext link set ext0 up");
    sh("ip -n ext addr add 192.168.50.100/24 dev ext0 && ip -n ext addr add fd00:50::100/64 "
       "dev ext0");
    // Someone else's neighbour and proxy entries on the uplink: never touched.
    sh("ip neigh add 192.168.50.77 lladdr 02:00:00:00:00:77 dev eth0 nud permanent");
    sh("ip neigh add proxy 192.168.50.78 dev eth0");
  }
  void TearDown() override {
    ASSERT_TRUE(LinkApplier().removeAll().ok());
    ASSERT_TRUE(RoutingApplier().removeAll().ok());
  }

  static void expectOthersIntact() {
    EXPECT_THAT(output("ip neigh show dev eth0"), HasSubstr("192.168.50.77 lladdr"));
    EXPECT_THAT(output("ip neigh show proxy dev eth0"), HasSubstr("192.168.50.78"));
  }
};

TEST_F(LinkApplierTest, ProgramsTheTunnelItsPeersAndTheProxyEntriesAndReadsThemBack) {
  LinkApplier links;
  auto want = desired("n1");
  auto changes = links.apply(want.kernel);
  ASSERT_TRUE(changes.ok()) << changes.error();
  EXPECT_GT(*changes, 0);
  EXPECT_EQ(sorted(*links.readLinks()), sorted(want.kernel.links));
  EXPECT_EQ(sorted(*links.readAddresses()), sorted(want.kernel.addresses));
  EXPECT_EQ(sorted(*links.readNeighbours()), sorted(want.kernel.neighbours));
  EXPECT_EQ(sorted(*links.readFdb()), sorted(want.kernel.fdb));
  // What iproute2 sees.
  const auto vx = output("ip -d link show egw0");
  EXPECT_THAT(vx, HasSubstr("mtu 1450"));
  EXPECT_THAT(vx, HasSubstr("vxlan id 4242 local 192.168.50.11 dev eth0"));
  EXPECT_THAT(vx, HasSubstr("dstport 4799 nolearning"));
  EXPECT_THAT(vx, HasSubstr("link/ether " + macText(tunnelMac(testing::ip("192.168.50.11")))));
  EXPECT_THAT(vx, HasSubstr("state UNKNOWN"));  // up (a VXLAN device has no carrier state)
  EXPECT_THAT(output("ip -d link show egw-eip0"), HasSubstr("ifb"));
  EXPECT_THAT(output("ip addr show dev egw0"), HasSubstr("inet 169.254.99.1/32 scope link"));
  EXPECT_THAT(output("bridge fdb show dev egw0"),
              HasSubstr(macText(tunnelMac(testing::ip("192.168.50.13"))) +
                        " dst 192.168.50.13 self permanent"));
  EXPECT_THAT(output("ip neigh show dev egw0"),
              HasSubstr("192.168.50.12 lladdr " + macText(tunnelMac(testing::ip("192.168.50.12"))) +
                        " PERMANENT"));
  const auto proxies = output("ip neigh show proxy dev eth0");
  EXPECT_THAT(proxies, HasSubstr("192.168.50.200"));
  EXPECT_THAT(output("ip -6 neigh show proxy dev eth0"), HasSubstr("fd00:50::200"));
  expectOthersIntact();
}

TEST_F(LinkApplierTest, ASecondPassAndARestartChangeNothing) {
  auto want = desired("n1");
  {
    LinkApplier links;
    ASSERT_TRUE(links.apply(want.kernel).ok());
    auto again = links.apply(want.kernel);
    ASSERT_TRUE(again.ok()) << again.error();
    EXPECT_EQ(*again, 0);
  }
  LinkApplier restarted;
  auto again = restarted.apply(want.kernel);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(*again, 0);
}

TEST_F(LinkApplierTest, TheMtuChangesInPlace) {
  LinkApplier links;
  ASSERT_TRUE(links.apply(desired("n1").kernel).ok());
  const auto index = output("ip -o link show dev egw0 | cut -d: -f1");
  sh("ip link set eth0 mtu 9000");  // the tunnel's MTU is bounded by its underlay's
  auto jumbo = testing::desiredOf(dualStackTopology("n1"), [] {
    auto c = testing::uplinkConfig();
    c.uplinkMtu = 9000;
    return c;
  }());
  auto changes = links.apply(jumbo.kernel);
  ASSERT_TRUE(changes.ok()) << changes.error();
  EXPECT_EQ(*changes, 1);
  // Setting the MAC, even to the same one, would flush the peers' neighbour entries.
  EXPECT_EQ(sorted(*links.readNeighbours()), sorted(jumbo.kernel.neighbours));
  EXPECT_EQ(output("ip -o link show dev egw0 | cut -d: -f1"), index) << "egw0 was recreated";
  EXPECT_EQ(testing::linkField("egw0", "mtu"), "8950");
  ASSERT_TRUE(links.apply(desired("n1").kernel).ok());
  sh("ip link set eth0 mtu 1500");
}

TEST_F(LinkApplierTest, ReleasingTheEgressIPsRemovesOnlyTheirProxyEntries) {
  LinkApplier links;
  ASSERT_TRUE(links.apply(desired("n1").kernel).ok());
  auto v = dualStackTopology("n1");
  v.policies[0].slots[0].node.clear();
  auto released = testing::desiredOf(v);
  auto changes = links.apply(released.kernel);
  ASSERT_TRUE(changes.ok()) << changes.error();
  EXPECT_EQ(*changes, 2);  // the IPv4 and the IPv6 proxy entry
  EXPECT_THAT(output("ip neigh show proxy dev eth0"), Not(HasSubstr("192.168.50.200")));
  EXPECT_EQ(sorted(*links.readNeighbours()), sorted(released.kernel.neighbours));
  expectOthersIntact();
}

TEST_F(LinkApplierTest, ADeviceOfTheSameNameThatIsNotEgwsIsRefusedAndKept) {
  sh("ip link add egw0 type veth peer name egw0-peer");
  LinkApplier links;
  auto r = links.apply(desired("n1").kernel);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error(), HasSubstr("egw0 exists and is not egw-agent's"));
  EXPECT_THAT(output("ip -d link show egw0"), HasSubstr("veth"));
  sh("ip link del egw0");
}

TEST_F(LinkApplierTest, RemoveAllLeavesNothingOfOursAndEverythingElse) {
  LinkApplier links;
  ASSERT_TRUE(links.apply(desired("n1").kernel).ok());
  auto removed = links.removeAll();
  ASSERT_TRUE(removed.ok()) << removed.error();
  EXPECT_THAT(*links.readLinks(), IsEmpty());
  EXPECT_THAT(*links.readNeighbours(), IsEmpty());
  EXPECT_NE(std::system("ip link show egw0 >/dev/null 2>&1"), 0);
  expectOthersIntact();
}

// Makes ext resolve `ip` (a datagram to it; nothing listens, only the neighbour entry matters)
// and returns ext's entry once it is resolved or has failed (a guard of 10 s against a hang).
std::string resolve(const std::string& ip) {
  const std::string family = ip.find(':') != std::string::npos ? "AF_INET6" : "AF_INET";
  sh("ip netns exec ext python3 -c \"import socket; s=socket.socket(socket." + family +
     ",socket.SOCK_DGRAM); s.sendto(b'x',('" + ip + "',9))\"");
  return output("for i in $(seq 100); do e=$(ip -n ext neigh show " + ip +
                "); case \"$e\" in *lladdr*|*FAILED*) break;; esac; sleep 0.1; done; echo \"$e\"");
}

// The holder side of an egress IP with real packets: proxy entry + host route + sysctls, and
// a namespace on the uplink resolves the egress IPs to the uplink's MAC, with arp_ignore=1
// (kube-proxy's strictARP) and without proxy_arp.
TEST_F(LinkApplierTest, TheHolderAnswersArpAndNdpForItsEgressIPs) {
  auto want = desired("n1");
  LinkApplier links;
  RoutingApplier routing;
  ASSERT_TRUE(links.apply(want.kernel).ok());
  auto routes = routing.apply(want.kernel.rules, want.kernel.routes);
  ASSERT_TRUE(routes.ok()) << routes.error();
  auto sysctls = SysctlApplier().apply(want.kernel.sysctls);
  ASSERT_TRUE(sysctls.ok()) << sysctls.error();
  sh("sysctl -qw net.ipv4.conf.eth0.arp_ignore=1 net.ipv4.conf.all.arp_ignore=1");
  ASSERT_EQ(output("sysctl -n net.ipv4.conf.eth0.proxy_arp"), "0\n");
  const auto mac = testing::linkField("eth0", "link/ether");
  ASSERT_FALSE(mac.empty());
  const auto lladdr = "lladdr " + mac;
  EXPECT_THAT(resolve("192.168.50.200"), HasSubstr(lladdr));
  EXPECT_THAT(resolve("fd00:50::200"), HasSubstr(lladdr));
  // Without the proxy entries nothing answers: resolution ends FAILED.
  auto v = dualStackTopology("n1");
  v.policies[0].slots[0].node.clear();
  ASSERT_TRUE(links.apply(testing::desiredOf(v).kernel).ok());
  sh("ip -n ext neigh flush dev ext0");
  const auto unanswered = resolve("192.168.50.200");
  EXPECT_THAT(unanswered, Not(HasSubstr(lladdr)));
  EXPECT_THAT(unanswered, HasSubstr("FAILED"));
  expectOthersIntact();
}

}  // namespace
}  // namespace egress::dataplane
