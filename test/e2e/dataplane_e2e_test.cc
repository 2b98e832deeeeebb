// The data-plane topology end to end: real packets through egw-agent processes, fed by the
// egress-operator process reconciling a real IPAMPool, OperatorConfig (spec.dataplane.agent) and
// EgressGatewayPolicy, against the real control plane. Everything runs in a private network and
// mount namespace (the binary re-executes itself under `unshare -m -n` before main(), so the
// control plane of environment.cc starts inside it too): a three-node cluster
// (test/unit/dataplane/packets/topology.sh: an underlay bridge, node namespaces egress-node-1..3
// with a flannel-like VXLAN CNI and its MASQUERADE, the external echo server that answers with
// the address it saw), this namespace itself on the underlay as 192.168.50.1 where the API server
// listens, and one egw-agent per node namespace (`ip netns exec`), not a dry run. The fixture
// builds it with DataplaneCluster (dataplane_cluster.h), which `make demo` (egw-demo) shares.
//
// The Nodes are the test kubelet's (it names them egress-node-<i>; the test gives them their
// underlay InternalIPs, which the kubelet never rewrites), and the topology follows the pod IPs
// the kubelet assigns: each source pod is created first and its veth pod is made with the
// address it shows, so nothing races the kubelet. The gateway's nodeSelector pins it to node 1
// (the label moves to node 2 for the failover).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "pkg/dataplane/nft_applier.h"
#include "test/e2e/dataplane_cluster.h"
#include "test/e2e/operator_helpers.h"
#include "test/e2e/testenv/child_process.h"
#include "test/e2e/testenv/environment.h"
#include "test/e2e/testenv/prometheus.h"
#include "test/unit/dataplane/kernel_test_util.h"
#include <arpa/inet.h>

namespace egress::e2e {
namespace {

using namespace std::chrono_literals;
using dataplane::testing::output;
using dataplane::testing::sh;
using testenv::controlPlane;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr const char* kApiAddress = DataplaneCluster::kApiAddress;
constexpr const char* kNs = DataplaneCluster::kNamespace;
constexpr const char* kLeaseNs = DataplaneCluster::kLeaseNamespace;
constexpr const char* kGatewayLabel = DataplaneCluster::kGatewayLabel;
constexpr const char* kEchoLog = DataplaneCluster::kEchoLog;
const std::string kPackets = EGRESS_PACKETS_DIR;

// Before main(): environment.cc's main starts the control plane, which must run in the private
// namespace with the test. The listing (ctest, --gtest_list_tests) needs none of it.
const bool kInPrivateNamespace = DataplaneCluster::reexecTestBinaryInPrivateNamespace();

std::string node(int i) {
  return DataplaneCluster::node(i);
}

std::string podIPv6(int nodeIndex, const std::string& ipv4) {
  return DataplaneCluster::podIPv6(nodeIndex, ipv4);
}

std::string connect(const std::string& pod, const std::string& host, const std::string& mode = "") {
  return dataplane::testing::connectFrom(kPackets, pod, host, mode);
}

std::string kubectlOut(const std::vector<std::string>& args) {
  auto r = controlPlane().kubectl(args);
  return r.ok() ? r.output : "";
}

class DataplaneE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(kInPrivateNamespace);
    cluster_ = new DataplaneCluster();
    ASSERT_EQ(cluster_->createNodesAndPods(), "");
    // An administrator's accept_ra=0 (no router advertisements on this device) must survive
    // the init container, which turns every 1 into 2 (forwarding would make 1 ignore them).
    sh("ip netns exec " + node(3) + " sysctl -qw net.ipv6.conf.flannel/1.accept_ra=0");
    ASSERT_EQ(cluster_->startAgents(), "");
    // The chart's container: only these, which are all the agents get here.
    ASSERT_EQ(cluster_->chartCaps(), "-all,+net_admin,+net_raw");
    ASSERT_EQ(cluster_->startOperator(), "");
    egressIP_ = cluster_->egressIP();
    egressIP6_ = cluster_->egressIP6();
  }

  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  // `argv` run in network namespace `ns`, killed with this process however it ends (so the
  // namespaces vanish with it), its output in `name`-<n>.log.
  static std::unique_ptr<testenv::ChildProcess> inNamespace(const std::string& ns,
                                                            std::vector<std::string> argv,
                                                            const std::string& name) {
    auto p = cluster_->inNamespace(ns, std::move(argv), name);
    EXPECT_TRUE(p->error().empty()) << p->error();
    return p;
  }
  // An agent as the chart runs it (DataplaneCluster::startAgent).
  static void startAgent(int i) { EXPECT_EQ(cluster_->startAgent(i), ""); }
  static testenv::ChildProcess& agent(int i) { return cluster_->agent(i); }
  static testenv::ChildProcess& operatorProcess() { return cluster_->egressOperator().process(); }
  // Where the cluster keeps its files; removed with it.
  static const std::string& dir() { return cluster_->dir(); }
  // The gateway pod holding the egress IP, and its node; "" for none.
  static std::pair<std::string, std::string> holder() { return DataplaneCluster::holder(); }
  // An IPv6 address as /proc/net/nf_conntrack prints it: every group in four digits.
  static std::string procAddress(const std::string& ip6) {
    in6_addr a{};
    EXPECT_EQ(inet_pton(AF_INET6, ip6.c_str(), &a), 1) << ip6;
    std::string out;
    for (int i = 0; i < 16; i += 2) {
      char g[6];
      std::snprintf(g, sizeof g, "%02x%02x", a.s6_addr[i], a.s6_addr[i + 1]);
      out += (i == 0 ? "" : ":") + std::string(g);
    }
    return out;
  }
  static std::string nodeAddress(int i) { return DataplaneCluster::nodeAddress(i) + ":"; }
  // An agent's /metrics, read inside its node's namespace.
  static std::string agentMetrics(int i) {
    return output("ip netns exec " + node(i) + " curl -s http://127.0.0.1:9402/metrics");
  }
  // What the agents program on node i, in a form two reads compare equal when nothing changed:
  // the nftables table as the kernel lists it (libnftables JSON: a replaced table gets new
  // handles) with its named counters' values blanked (they count the traffic, not the rules), the
  // policy rules, every route table, the proxy ARP/NDP entries and the tunnel's FDB.
  static std::string kernelState(int i) {
    std::string out = "## nft list table inet egw\n";
    dataplane::testing::inNetns(node(i), [&] {
      auto table = dataplane::NftApplier().list("egw");
      static const std::regex kCounts(R"("packets":\s*\d+,\s*"bytes":\s*\d+)");
      out += table ? std::regex_replace(*table, kCounts, R"("packets": N, "bytes": N)")
                   : "error: " + table.error();
    });
    EXPECT_THAT(out, HasSubstr("\"handle\"")) << out;
    const std::string in = "ip netns exec " + node(i) + " ";
    for (const char* cmd :
         {"ip rule", "ip -6 rule", "ip route show table all", "ip -6 route show table all",
          "ip neigh show proxy", "ip -6 neigh show proxy", "bridge fdb show dev egw0"}) {
      out += std::string("\n## ") + cmd + "\n" + output(in + cmd + " 2>&1");
    }
    return out;
  }

  static inline DataplaneCluster* cluster_ = nullptr;
  static inline std::string egressIP_;
  static inline std::string egressIP6_;
};

// The chart's security context is enough: after its init container, agents with only NET_ADMIN
// and NET_RAW and a read-only /proc/sys set every parameter they need (the tunnel's rp_filter
// through rtnetlink) and report no sync error. Router advertisements are still taken with
// forwarding on (accept_ra 2 where it was 1), and an administrator's 0 is kept.
TEST_F(DataplaneE2E, AgentsWithTheChartsCapabilitiesSetEverythingTheyNeed) {
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(output("ip netns exec " + node(i) + " sysctl -n net.ipv4.conf.egw0.rp_filter"), "2\n")
        << node(i);
    EXPECT_EQ(output("ip netns exec " + node(i) + " sysctl -n net.ipv6.conf.eth0.accept_ra"), "2\n")
        << node(i) << ": router advertisements ignored with forwarding on";
    EXPECT_THAT(agent(i).log(), Not(HasSubstr("sysctl"))) << agent(i).log();
    EXPECT_EQ(metricSum(agentMetrics(i), "egw_agent_sync_errors_total"), 0) << agentMetrics(i);
    // The process is egw-agent itself (every wrapper exec'd it) with NET_ADMIN and NET_RAW only.
    const std::string proc = "/proc/" + std::to_string(agent(i).pid());
    EXPECT_EQ(output("readlink " + proc + "/exe"), std::string(EGRESS_AGENT_BINARY) + "\n");
    EXPECT_EQ(output("grep -E '^Cap(Prm|Eff|Bnd)' " + proc + "/status"),
              "CapPrm:\t0000000000003000\nCapEff:\t0000000000003000\nCapBnd:\t0000000000003000\n");
  }
  EXPECT_EQ(output("ip netns exec " + node(3) + " sysctl -n net.ipv6.conf.flannel/1.accept_ra"),
            "0\n");
}

TEST_F(DataplaneE2E, SelectedPodsLeaveWithTheEgressIPNonSelectedWithTheirNodesAddress) {
  ASSERT_EQ(holder().second, node(1));
  // Through the tunnel (p3 on node 3), past node 3's CNI MASQUERADE; and on the holder (p1).
  EXPECT_THAT(connect("p3", "192.168.50.100"), StartsWith(egressIP_ + ":"));
  EXPECT_THAT(connect("p1", "192.168.50.100"), StartsWith(egressIP_ + ":"));
  // Not selected, or an excluded destination: the CNI's masquerade, the node's address.
  EXPECT_THAT(connect("p2", "192.168.50.100"), StartsWith(nodeAddress(2)));
  EXPECT_THAT(connect("p3b", "192.168.50.100"), StartsWith(nodeAddress(3)));
  EXPECT_THAT(connect("p3", "192.168.50.101"), StartsWith(nodeAddress(3)));
  // IPv6 the same.
  EXPECT_THAT(connect("p3", "fd00:50::100"), StartsWith(egressIP6_ + ":"));
  EXPECT_THAT(connect("p1", "fd00:50::100"), StartsWith(egressIP6_ + ":"));
  EXPECT_THAT(connect("p2", "fd00:50::100"), StartsWith("fd00:50::12:"));
  EXPECT_THAT(connect("p3", "fd00:50::101"), StartsWith("fd00:50::13:")) << "excluded";
  EXPECT_THAT(connect("p3b", "fd00:50::100"), StartsWith("fd00:50::13:"));
}

// The trust boundary. A tenant with the built-in `edit` role in a namespace of its own writes
// everything that role allows and that the agents once believed: a ConfigMap egw-x claiming the
// victim's egress IP, the router's address (this namespace's 192.168.50.1 on the underlay) and
// 192.168.50.77 for other namespaces' pods; pods labelled and annotated as gateways, placed on
// node 2 by spec.nodeName, without the readiness gate; a copy of the victim's gateway
// Deployment. It may not write the data-plane view itself (cluster-scoped). No node announces,
// SNATs to or refuses anything because of it: every node's kernel state is what it was, the
// victim's traffic and the non-selected pods' leave as before, and the external host's ARP
// cache still has the router's MAC for the router's address.
TEST_F(DataplaneE2E, ATenantWithEditRightsCannotMakeAnyNodeAnnounceSnatOrRefuse) {
  ASSERT_EQ(holder().second, node(1));
  const std::string evil = "evil";
  ASSERT_EQ(controlPlane().createNamespace(evil), "");
  const std::string as = "--as=system:serviceaccount:evil:tenant";
  ASSERT_TRUE(controlPlane().kubectl({"create", "serviceaccount", "-n", evil, "tenant"}).ok());
  ASSERT_TRUE(controlPlane()
                  .kubectl({"create", "rolebinding", "-n", evil, "tenant-edit",
                            "--clusterrole=edit", "--serviceaccount=evil:tenant"})
                  .ok());
  ASSERT_EQ(kubectlOut({"auth", "can-i", "create", "configmaps", "-n", evil, as}), "yes\n");
  ASSERT_EQ(kubectlOut({"auth", "can-i", "create", "pods", "-n", evil, as}), "yes\n");
  // Nor the holder record (a policy's status), in its namespace or the victim's: `can-i` says
  // "no" and exits 1, which kubectl() reports as a failure.
  for (const std::string& ns : {evil, std::string(kNs)}) {
    auto status = controlPlane().kubectl({"auth", "can-i", "update",
                                          "egressgatewaypolicies.networking.egressgateway.dev",
                                          "--subresource=status", "-n", ns, as});
    EXPECT_EQ(status.output, "no\n") << ns;
  }
  // Nor what the operator reads of the agents (their Leases: what each answers for, the slices'
  // version it has observed; a lie frees an address early) or what the agents obey (the
  // cluster-scoped EgressPolicySlices).
  for (const char* verb : {"create", "update", "patch"}) {
    EXPECT_EQ(
        controlPlane()
            .kubectl({"auth", "can-i", verb, "leases.coordination.k8s.io", "-n", kLeaseNs, as})
            .output,
        "no\n")
        << verb;
    // Cluster-scoped: kubectl may warn that the context's namespace does not apply, then answers.
    EXPECT_THAT(
        controlPlane()
            .kubectl({"auth", "can-i", verb, "egresspolicyslices.networking.egressgateway.dev", as})
            .output,
        ::testing::AnyOf("no\n", ::testing::EndsWith("\nno\n")))
        << verb;
  }

  // The external host talks to the router, so it has the router's MAC in its ARP cache (a
  // gratuitous ARP would overwrite an existing entry).
  connect("ext", kApiAddress, "- 1");
  const auto routerMac = [] {
    return output(std::string("ip -n ext neigh show ") + kApiAddress +
                  " | grep -o 'lladdr [0-9a-f:]*'");
  };
  const std::string mac = routerMac();
  ASSERT_THAT(mac, HasSubstr(dataplane::testing::linkField("egw-ul", "link/ether"))) << mac;

  std::map<int, std::string> before;
  for (int i = 1; i <= 3; ++i) {
    before[i] = kernelState(i);
  }
  const std::string p2 =
      kubectlOut({"get", "pod", "-n", kNs, "p2", "-o", "jsonpath={.status.podIP}"});
  const std::string p3b =
      kubectlOut({"get", "pod", "-n", kNs, "p3b", "-o", "jsonpath={.status.podIP}"});
  ASSERT_FALSE(p2.empty());
  ASSERT_FALSE(p3b.empty());
  auto forgedPod = [&](const std::string& name, const std::string& ip) {
    return "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
           "\n  namespace: evil\n  labels: {egressgateway.dev/policy: x}\n  annotations: "
           "{egressgateway.dev/egress-ips: \"" +
           ip + "\"}\nspec:\n  nodeName: " + node(2) +
           "\n  containers: [{name: c, image: example.invalid/evil:1}]\n";
  };
  const std::string forged =
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: egw-x\n  namespace: evil\n"
      "  labels: {egressgateway.dev/policy: x}\ndata:\n"
      "  egress-ips: \"" +
      egressIP_ + "\\n" + kApiAddress +
      "\\n192.168.50.77\\n\"\n"
      "  destination-cidrs: \"192.168.50.96/28\\n\"\n"
      "  sources: \"" +
      p2 + "@" + node(2) + "\\n" + p3b + "@" + node(3) + "\\n\"\n" +
      forgedPod("egw-x-router", kApiAddress) + forgedPod("egw-x-77", "192.168.50.77") +
      forgedPod("egw-x-victim", egressIP_);
  const std::string file = dir() + "/evil.yaml";
  std::ofstream(file) << forged;
  auto applied = controlPlane().kubectl({"apply", "-f", file, as});
  ASSERT_TRUE(applied.ok()) << applied.output;
  // A copy of the victim's gateway Deployment, as the tenant could write it.
  auto deployment = controlPlane().kubectl({"get", "deployment", "-n", kNs, "egw-web", "-o",
                                            "jsonpath={.spec.template.spec.containers[0].image}"});
  ASSERT_TRUE(deployment.ok()) << deployment.output;
  const std::string copy =
      "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: egw-web\n  namespace: evil\n"
      "  labels: {app.kubernetes.io/managed-by: egress-gateway-operator, "
      "egressgateway.dev/policy: web}\nspec:\n  replicas: 1\n  selector:\n    matchLabels: "
      "{egressgateway.dev/policy: web}\n  template:\n    metadata:\n      labels: "
      "{egressgateway.dev/policy: web, app.kubernetes.io/managed-by: egress-gateway-operator}\n"
      "      annotations: {egressgateway.dev/egress-ips: \"" +
      egressIP_ + "\"}\n    spec:\n      nodeName: " + node(2) +
      "\n      containers: [{name: gateway, image: " + deployment.output + "}]\n";
  std::ofstream(file) << copy;
  applied = controlPlane().kubectl({"apply", "-f", file, as});
  ASSERT_TRUE(applied.ok()) << applied.output;
  // The view itself is beyond the role.
  const std::string slice =
      "apiVersion: networking.egressgateway.dev/v1alpha1\nkind: EgressPolicySlice\nmetadata:\n"
      "  name: evil.x.0\nspec:\n  policy: {namespace: evil, name: x, uid: forged}\n"
      "  gateway:\n    egressIPs: [{ips: [192.168.50.77], node: " +
      node(2) + "}]\n    destinationCIDRs: [192.168.50.96/28]\n";
  std::ofstream(file) << slice;
  applied = controlPlane().kubectl({"apply", "-f", file, as});
  EXPECT_FALSE(applied.ok());
  EXPECT_THAT(applied.output, HasSubstr("forbidden")) << applied.output;
  ASSERT_TRUE(eventually(
      [&] {
        return kubectlOut({"get", "pods", "-n", evil, "-o",
                           R"(jsonpath={range .items[?(@.status.phase=="Running")]}x{end})"})
                   .size() == 4;
      },
      60s))
      << kubectlOut({"get", "pods", "-n", evil, "-o", "wide"});

  // Several syncs of every agent later (events are debounced by 0.1 s, every sync re-runs
  // each second).
  std::this_thread::sleep_for(5s);
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(kernelState(i), before[i]) << node(i);
    EXPECT_EQ(metricSum(agentMetrics(i), "egw_agent_held_egress_ips"), i == 1 ? 2 : 0) << i;
  }
  sh(std::string(": > ") + kEchoLog);
  EXPECT_THAT(connect("p3", "192.168.50.100"), StartsWith(egressIP_ + ":"));
  EXPECT_THAT(connect("p1", "192.168.50.100"), StartsWith(egressIP_ + ":"));
  EXPECT_THAT(connect("p2", "192.168.50.100"), StartsWith(nodeAddress(2))) << "not refused";
  EXPECT_THAT(connect("p3b", "192.168.50.100"), StartsWith(nodeAddress(3))) << "not refused";
  const auto seen = output(std::string("cat ") + kEchoLog);
  EXPECT_THAT(seen, Not(HasSubstr("192.168.50.77"))) << seen;
  EXPECT_EQ(routerMac(), mac) << "a node answered for the router's address";
  EXPECT_EQ(kernelState(2), before[2]);
  controlPlane().kubectl({"delete", "namespace", evil, "--wait=false"});
}

// The tunnel accepts only nodes, and from each node only its own source pods. A raw VXLAN frame
// (the cluster's VNI and port) carrying a UDP datagram from p3 (selected, on node 3) to the
// external server, sent to the holder (node 1):
//   - by p2, a pod that is not selected: dropped where it is forwarded, on node 2 (from-a-pod);
//   - by the external host: dropped by node 1, its outer source is no node's (not-a-node);
//   - by node 2 itself (a hostNetwork process there) with node 2's tunnel MAC: dropped by node
//     1, p3 is no pod of node 2 (forged-source).
// None reaches the external server; each drop is counted where it happens. The same frame sent
// by node 3, where p3 runs, leaves with the egress IP: the frames are valid, the filter is what
// stops them.
TEST_F(DataplaneE2E, TheTunnelTakesOnlyANodesOwnSourcePods) {
  ASSERT_EQ(holder().second, node(1));
  const std::string p3 =
      kubectlOut({"get", "pod", "-n", kNs, "p3", "-o", "jsonpath={.status.podIP}"});
  ASSERT_FALSE(p3.empty());
  auto mac = [](const char* underlay) {
    return dataplane::macText(dataplane::tunnelMac(*ipam::parseAddress(underlay)));
  };
  const std::string holderMac = mac("192.168.50.11");
  auto send = [&](const std::string& from, const std::string& srcMac, const std::string& tag) {
    return output("ip netns exec " + from + " python3 " + kPackets +
                  "/vxlan_send.py 192.168.50.11 4799 4242 " + srcMac + " " + holderMac + " " + p3 +
                  " 192.168.50.100 8080 " + tag);
  };
  auto drops = [&](int i, const std::string& reason) {
    return metricSum(agentMetrics(i), "egw_agent_tunnel_dropped_packets_total",
                     {{"reason", reason}});
  };
  auto seenAtExt = [&](const std::string& tag) {
    return output(std::string("cat ") + kEchoLog).find(" " + tag + "\n") != std::string::npos;
  };
  const double fromPod = drops(2, "from-a-pod");
  const double notNode = drops(1, "not-a-node");
  const double forged = drops(1, "forged-source");
  sh(std::string(": > ") + kEchoLog);

  EXPECT_EQ(send("p2", mac("192.168.50.13"), "from-p2"), "sent\n");
  EXPECT_EQ(send("ext", mac("192.168.50.13"), "from-ext"), "sent\n");
  EXPECT_EQ(send(node(2), mac("192.168.50.12"), "from-node-2"), "sent\n");
  EXPECT_TRUE(eventually([&] { return drops(2, "from-a-pod") > fromPod; }, 10s)) << agentMetrics(2);
  EXPECT_TRUE(eventually([&] { return drops(1, "not-a-node") > notNode; }, 10s)) << agentMetrics(1);
  EXPECT_TRUE(eventually([&] { return drops(1, "forged-source") > forged; }, 10s))
      << agentMetrics(1);

  // The control: node 3's own frame for its own pod is carried.
  EXPECT_EQ(send(node(3), mac("192.168.50.13"), "from-node-3"), "sent\n");
  EXPECT_TRUE(eventually([&] { return seenAtExt("from-node-3"); }, 10s))
      << output(std::string("cat ") + kEchoLog);
  const auto seen = output(std::string("cat ") + kEchoLog);
  EXPECT_THAT(seen, HasSubstr("udp " + egressIP_ + ":40000 from-node-3")) << seen;
  for (const char* tag : {"from-p2", "from-ext", "from-node-2"}) {
    EXPECT_FALSE(seenAtExt(tag)) << tag << " reached the external server:\n" << seen;
  }
}

TEST_F(DataplaneE2E, StrictRpFilterOnEveryNodeDoesNotBreakReplies) {
  // topology.sh sets all.rp_filter=1 (strict) in every node namespace, as hardened hosts do;
  // the replies to p3 come back through the tunnel, the agent's symmetric return path.
  for (int i = 1; i <= 3; ++i) {
    ASSERT_EQ(output("ip netns exec " + node(i) + " sysctl -n net.ipv4.conf.all.rp_filter"), "1\n")
        << node(i);
  }
  const std::string reversePathDrops =
      "ip netns exec " + node(3) +
      " nstat -az TcpExtIPReversePathFilter | awk '/TcpExtIPReversePathFilter/ {print $2}'";
  const std::string before = output(reversePathDrops);
  for (int i = 0; i < 3; ++i) {
    EXPECT_THAT(connect("p3", "192.168.50.100"), StartsWith(egressIP_ + ":"));
    EXPECT_THAT(connect("p1", "192.168.50.100"), StartsWith(egressIP_ + ":"));
  }
  EXPECT_EQ(output(reversePathDrops), before) << "node 3 dropped packets by reverse path";
}

TEST_F(DataplaneE2E, FullSizeWritesWithDontFragmentComplete) {
  // 200 writes of 1400 bytes (Linux TCP sets DF) each echoed back: through the tunnel (MTU
  // 1450 less the outer headers: the agent's MSS clamp or PMTU discovery must make them fit) and
  // on the holder, both families.
  EXPECT_THAT(connect("p3", "192.168.50.100", "bulk"), HasSubstr("\nbulk ok"));
  EXPECT_THAT(connect("p1", "192.168.50.100", "bulk"), HasSubstr("\nbulk ok"));
  EXPECT_THAT(connect("p3", "fd00:50::100", "bulk"), HasSubstr("\nbulk ok"));
  EXPECT_THAT(connect("p1", "fd00:50::100", "bulk"), HasSubstr("\nbulk ok"));
}

// "Is egress really used?": the holder's agent counts, under the policy and its egress IP, the
// 280,000 bytes a bulk connection sends (plus at least 40 bytes of headers a packet, at most
// about one packet per 1,000 bytes).
TEST_F(DataplaneE2E, TheHoldersAgentCountsThePolicysBytes) {
  const std::string holderNode = holder().second;
  ASSERT_FALSE(holderNode.empty());
  const int h = holderNode.back() - '0';
  const std::map<std::string, std::string> labels = {
      {"policy_namespace", kNs}, {"policy", "web"}, {"egress_ip", egressIP_}};
  auto counted = [&](const char* metric) { return metricSum(agentMetrics(h), metric, labels); };
  // The agent reads the kernel's counters at the start of each sync (about every second): once a
  // sync has ended after another that ended after now, the metric has every byte sent before
  // now. Before the bulk, so that the tests before this one (bulk traffic too) are all counted
  // in the baseline; after it, so that the whole bulk is counted.
  auto settle = [&] {
    const char* lastSync = "egw_agent_last_successful_sync_timestamp_seconds";
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    double first = 0;
    ASSERT_TRUE(
        eventually([&] { return (first = metricSum(agentMetrics(h), lastSync)) > now; }, 15s));
    ASSERT_TRUE(eventually([&] { return metricSum(agentMetrics(h), lastSync) > first; }, 15s));
  };
  settle();
  const double bytes0 = counted("egw_agent_egress_bytes_total");
  const double packets0 = counted("egw_agent_egress_packets_total");
  ASSERT_THAT(connect("p3", "192.168.50.100", "bulk"), HasSubstr("\nbulk ok"));
  settle();
  const double bytes = counted("egw_agent_egress_bytes_total") - bytes0;
  const double packets = counted("egw_agent_egress_packets_total") - packets0;
  std::printf("[ counted  ] agent on %s: %.0f bytes in %.0f packets for 280000 bytes sent\n",
              holderNode.c_str(), bytes, packets);
  EXPECT_GE(bytes, 280000 + 40 * packets);
  EXPECT_LE(bytes, 280000 + 100 * 280);
  for (int i = 1; i <= 3; ++i) {
    if (i != h) {
      EXPECT_EQ(metricSum(agentMetrics(i), "egw_agent_egress_bytes_total", labels), 0) << i;
    }
  }
}

TEST_F(DataplaneE2E, ASelectedPodReachedThroughDnatAnswersFromTheAddressDialled) {
  // A NodePort-like DNAT on node 3 into p3 (selected): the connection is the client's, so its
  // replies are conntrack replies, which egw neither classifies nor SNATs to the egress IP. The
  // server in p3 answers with the peer it saw: the external client's own address.
  const std::string p3 =
      kubectlOut({"get", "pod", "-n", kNs, "p3", "-o", "jsonpath={.status.podIP}"});
  ASSERT_FALSE(p3.empty());
  const std::string rule =
      "PREROUTING -d 192.168.50.13 -p tcp --dport 30080 -j DNAT "
      "--to-destination " +
      p3 + ":8080";
  sh("ip netns exec " + node(3) + " iptables -t nat -A " + rule);
  auto server = inNamespace("p3", {"python3", kPackets + "/echo.py", "/dev/null"}, "p3-echo");
  std::string seen;
  eventually(
      [&] {
        seen = connect("ext", "192.168.50.13", "- 30080");
        return !seen.starts_with("error:");
      },
      10s);
  EXPECT_THAT(seen, StartsWith("192.168.50.100:")) << "p3 saw the external client";
  // IPv6 the same: a DNAT of node 3's fd00:50::13 into p3's IPv6.
  const std::string p3v6 = podIPv6(3, p3);
  const std::string rule6 =
      "PREROUTING -d fd00:50::13 -p tcp --dport 30080 -j DNAT --to-destination [" + p3v6 + "]:8080";
  sh("ip netns exec " + node(3) + " ip6tables -t nat -A " + rule6);
  const std::string seen6 = connect("ext", "fd00:50::13", "- 30080");
  EXPECT_THAT(seen6, StartsWith("fd00:50::100:")) << "p3 saw the external client";
  // And p3's own connections still leave with the egress IP.
  EXPECT_THAT(connect("p3", "192.168.50.100"), StartsWith(egressIP_ + ":"));
  EXPECT_THAT(connect("p3", "fd00:50::100"), StartsWith(egressIP6_ + ":"));
  server.reset();
  sh("ip netns exec " + node(3) + " iptables -t nat -D " + rule);
  sh("ip netns exec " + node(3) + " ip6tables -t nat -D " + rule6);
}

TEST_F(DataplaneE2E, AnAgentRestartUnderLoadLosesNoLineAndChangesNoRule) {
  ASSERT_EQ(holder().second, node(1));
  std::map<int, std::string> before;
  for (int i = 1; i <= 3; ++i) {
    before[i] = kernelState(i);
  }
  // A connection through the tunnel in each family, one echoed line every 0.2 s for 20 s, each
  // awaited up to 5 s, while the source node's agent (3) and then the holder's (1) restart.
  auto held = inNamespace("p3", {"python3", kPackets + "/client.py", "192.168.50.100", "hold:20:5"},
                          "held");
  auto held6 =
      inNamespace("p3", {"python3", kPackets + "/client.py", "fd00:50::100", "hold:20:5"}, "held6");
  ASSERT_TRUE(eventually([&] { return !held->log().empty() && !held6->log().empty(); }, 10s));
  for (const int i : {3, 1}) {
    agent(i).signal(SIGTERM);
    EXPECT_TRUE(agent(i).reap(20s)) << agent(i).log();
    startAgent(i);
    // Synced once, and that sync found nothing to change.
    EXPECT_TRUE(eventually(
        [&] {
          return metricSum(agentMetrics(i), "egw_agent_last_successful_sync_timestamp_seconds") > 0;
        },
        30s))
        << agent(i).log();
    EXPECT_EQ(metricSum(agentMetrics(i), "egw_agent_kernel_changes_total"), 0) << agent(i).log();
  }
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(kernelState(i), before[i]) << node(i);
  }
  EXPECT_TRUE(held->reap(60s)) << "still holding";
  EXPECT_THAT(held->log(), StartsWith(egressIP_ + ":"));
  EXPECT_THAT(held->log(), HasSubstr("\nheld ok")) << held->log();
  EXPECT_TRUE(held6->reap(60s)) << "still holding";
  EXPECT_THAT(held6->log(), StartsWith(egressIP6_ + ":"));
  EXPECT_THAT(held6->log(), HasSubstr("\nheld ok")) << held6->log();
}

TEST_F(DataplaneE2E, WithNoLiveHolderConnectionsFailAndTheServerNeverSeesANodeOrPod) {
  // The holder's agent dies and its node drops off the underlay; with one replica there is no
  // other gateway pod to move the IP to, so once its agent Lease (6 s) is stale node 3's agent
  // refuses p3's packets instead of letting them out with its own address.
  agent(1).signal(SIGKILL);
  agent(1).reap(10s);
  sh("ip -n ul link set v-egress-node-1 down");
  std::this_thread::sleep_for(6s + 3s);
  sh(std::string(": > ") + kEchoLog);
  for (int i = 0; i < 3; ++i) {
    EXPECT_THAT(connect("p3", "192.168.50.100"), StartsWith("error:"));
  }
  for (int i = 0; i < 2; ++i) {
    EXPECT_THAT(connect("p3", "fd00:50::100"), StartsWith("error:"));
  }
  const auto seen = output(std::string("cat ") + kEchoLog);
  EXPECT_THAT(seen, Not(HasSubstr("192.168.50.1"))) << seen;
  EXPECT_THAT(seen, Not(HasSubstr("10.244."))) << seen;
  EXPECT_THAT(seen, Not(HasSubstr("fd00:50::1"))) << seen;
  EXPECT_THAT(seen, Not(HasSubstr("fd00:244:"))) << seen;
  EXPECT_THAT(connect("p3b", "192.168.50.100"), StartsWith(nodeAddress(3))) << "not selected";
  EXPECT_EQ(holder().second, node(1)) << "nowhere to move it";

  sh("ip -n ul link set v-egress-node-1 up");
  startAgent(1);
  EXPECT_TRUE(
      eventually([&] { return connect("p3", "192.168.50.100").starts_with(egressIP_ + ":"); }, 60s))
      << agent(1).log();
}

TEST_F(DataplaneE2E, TheIPMovesOffAKilledHoldersNodeAndALongLivedConnectionKeepsIt) {
  ASSERT_TRUE(eventually(
      [&] { return connect("p3", "192.168.50.100").starts_with(egressIP_ + ":"); }, 60s));
  const auto [oldPod, oldNode] = holder();
  ASSERT_EQ(oldNode, node(1));
  // A connection open across the move in each family, one echoed line every 0.2 s, each awaited
  // up to 30 s.
  auto held = inNamespace(
      "p3", {"python3", kPackets + "/client.py", "192.168.50.100", "hold:30:30"}, "held");
  auto held6 = inNamespace("p3", {"python3", kPackets + "/client.py", "fd00:50::100", "hold:30:30"},
                           "held6");
  ASSERT_TRUE(eventually([&] { return !held->log().empty() && !held6->log().empty(); }, 10s));
  ASSERT_TRUE(controlPlane()
                  .kubectl({"label", "node", node(2), std::string(kGatewayLabel) + "=true"})
                  .ok());
  ASSERT_TRUE(
      controlPlane().kubectl({"label", "node", node(1), std::string(kGatewayLabel) + "-"}).ok());

  const auto killed = std::chrono::steady_clock::now();
  agent(1).signal(SIGKILL);
  sh("ip -n ul link set v-egress-node-1 down");
  // What the node lifecycle controller (off in this control plane) and the 10 s unreachable
  // toleration would do: evict the pod, which a dead node's kubelet never confirms (a finalizer
  // holds it), so the Deployment starts a replacement on node 2.
  ASSERT_TRUE(controlPlane()
                  .kubectl({"patch", "pod", "-n", kNs, oldPod, "--type=merge", "-p",
                            R"({"metadata":{"finalizers":["egw.e2e/hold"]}})"})
                  .ok());
  ASSERT_TRUE(controlPlane().kubectl({"delete", "pod", "-n", kNs, oldPod, "--wait=false"}).ok());
  std::string seen;
  const bool moved = eventually(
      [&] {
        seen = connect("p3", "192.168.50.100");
        return seen.starts_with(egressIP_ + ":");
      },
      60s);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  std::printf(
      "[ failover ] SIGKILL of the holder's agent to the first new connection with %s: "
      "%.1f s (lease 6 s; target 8 s)\n",
      egressIP_.c_str(), took);
  EXPECT_TRUE(moved) << seen << "\n" << operatorProcess().log();
  EXPECT_LT(took, 45.0);
  EXPECT_EQ(holder().second, node(2));
  EXPECT_TRUE(
      eventually([&] { return connect("p3", "fd00:50::100").starts_with(egressIP6_ + ":"); }, 30s));
  EXPECT_THAT(connect("p1", "192.168.50.100"), StartsWith("error:")) << "p1's node is cut off";

  EXPECT_TRUE(held->reap(60s)) << "still holding";
  EXPECT_THAT(held->log(), StartsWith(egressIP_ + ":"));
  EXPECT_THAT(held->log(), HasSubstr("\nheld ok")) << held->log();
  EXPECT_TRUE(held6->reap(60s)) << "still holding";
  EXPECT_THAT(held6->log(), StartsWith(egressIP6_ + ":"));
  EXPECT_THAT(held6->log(), HasSubstr("\nheld ok")) << held6->log();
  controlPlane().kubectl({"patch", "pod", "-n", kNs, oldPod, "--type=merge", "-p",
                          R"({"metadata":{"finalizers":null}})"});
}

// The release of an address, through the agent process: the gateway moves off a node whose
// agent stays alive (node 2, after the failover above, to node 3), and that agent deletes the
// conntrack entries it SNATed to the egress IPs once its SNAT rules are gone, and counts them.
TEST_F(DataplaneE2E, ALiveHolderThatLosesTheIPForgetsTheConnectionsItSNATed) {
  ASSERT_TRUE(eventually(
      [&] { return connect("p3", "192.168.50.100").starts_with(egressIP_ + ":"); }, 60s));
  ASSERT_THAT(connect("p3", "fd00:50::100"), StartsWith(egressIP6_ + ":"));
  const auto [oldPod, oldNode] = holder();
  ASSERT_EQ(oldNode, node(2));
  // The connections just made wait in TIME_WAIT on node 2, SNATed to the egress IPs.
  const auto entriesTo = [](const std::string& ip) {
    return std::stoi(output("ip netns exec " + node(2) + " cat /proc/net/nf_conntrack | grep -c " +
                            "'dst=" + ip + " ' || true"));
  };
  const std::string v6 = procAddress(egressIP6_);
  ASSERT_GE(entriesTo(egressIP_), 1);
  ASSERT_GE(entriesTo(v6), 1);
  const double before = metricSum(agentMetrics(2), "egw_agent_conntrack_entries_deleted_total");

  ASSERT_TRUE(controlPlane()
                  .kubectl({"label", "node", node(3), std::string(kGatewayLabel) + "=true"})
                  .ok());
  ASSERT_TRUE(
      controlPlane().kubectl({"label", "node", node(2), std::string(kGatewayLabel) + "-"}).ok());
  ASSERT_TRUE(controlPlane().kubectl({"delete", "pod", "-n", kNs, oldPod, "--wait=false"}).ok());
  EXPECT_TRUE(eventually([&] { return holder().second == node(3); }, 60s));
  std::string seen;
  EXPECT_TRUE(eventually(
      [&] {
        seen = connect("p3", "192.168.50.100");
        return seen.starts_with(egressIP_ + ":");
      },
      60s))
      << seen;
  double after = before;
  EXPECT_TRUE(eventually(
      [&] {
        after = metricSum(agentMetrics(2), "egw_agent_conntrack_entries_deleted_total");
        return after >= before + 2;
      },
      30s))
      << after << "\n"
      << agent(2).log();
  EXPECT_EQ(entriesTo(egressIP_), 0);
  EXPECT_EQ(entriesTo(v6), 0);
  EXPECT_THAT(agent(2).log(), HasSubstr("conntrack entries deleted"));
}

// The holder cut off from the API (its TCP to the API server dropped on its node; the agents'
// heartbeats and the IP's traffic unaffected) keeps holding: its peers still hear it, so a
// majority grants it its lease and nobody certifies it dead, however stale its Lease is. For
// twice the Lease duration, its pod leaves with the egress IPs, its proxy ARP/NDP entries stay,
// and it is not fenced; once the API answers again nothing has moved.
TEST_F(DataplaneE2E, AHolderCutOffFromTheApiOnlyKeepsHoldingAndNothingMoves) {
  ASSERT_EQ(holder().second, node(3));
  ASSERT_TRUE(eventually(
      [&] { return connect("p3", "192.168.50.100").starts_with(egressIP_ + ":"); }, 60s));
  const auto proxies = [] {
    return output("ip netns exec " + node(3) + " ip neigh show proxy; ip netns exec " + node(3) +
                  " ip -6 neigh show proxy");
  };
  ASSERT_THAT(proxies(), HasSubstr(egressIP_ + " "));
  ASSERT_THAT(proxies(), HasSubstr(egressIP6_ + " "));
  const std::string cut = "OUTPUT -d " + std::string(kApiAddress) + " -p tcp -j DROP";
  sh("ip netns exec " + node(3) + " iptables -I " + cut);
  const auto start = std::chrono::steady_clock::now();
  int rounds = 0;
  while (std::chrono::steady_clock::now() - start < 12s) {
    EXPECT_THAT(connect("p3", "192.168.50.100"), StartsWith(egressIP_ + ":")) << rounds;
    EXPECT_THAT(connect("p3", "fd00:50::100"), StartsWith(egressIP6_ + ":")) << rounds;
    ++rounds;
    std::this_thread::sleep_for(500ms);
  }
  EXPECT_GE(rounds, 10);
  EXPECT_THAT(proxies(), HasSubstr(egressIP_ + " "));
  EXPECT_THAT(proxies(), HasSubstr(egressIP6_ + " "));
  EXPECT_EQ(metricSum(agentMetrics(3), "egw_agent_fenced"), 0);
  // Its Lease is stale by now, as the API server has it.
  const auto renewed = kubectlOut(
      {"get", "lease", "-n", kLeaseNs, "egw-agent-" + node(3), "-o", "jsonpath={.spec.renewTime}"});
  const double renewedAt = std::stod(output("date -d '" + renewed + "' +%s.%N"));
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_GT(now - renewedAt, 6.0) << "the Lease was renewed: the API was not cut off";

  sh("ip netns exec " + node(3) + " iptables -D " + cut);
  EXPECT_TRUE(eventually([&] { return holder().second == node(3); }, 30s));
  EXPECT_THAT(connect("p3", "192.168.50.100"), StartsWith(egressIP_ + ":"));
  EXPECT_THAT(proxies(), HasSubstr(egressIP_ + " "));
}

// Fencing lives in the kernel: the holder's agent SIGKILLed and kept down, its node's link up
// (its kernel still has the proxy entries and SNAT rules the agent made). Sampled from the
// external host every 100 ms (ARP who-has and a neighbour solicitation for the egress IPs): at no
// sample do two nodes answer, and the new holder answers within the Lease duration and 2 s (the
// policy has one gateway pod: the operator names the new one once the old agent's Lease is stale,
// and node 2 takes the address once a majority of the agents certifies node 3 dead).
TEST_F(DataplaneE2E, AKilledHoldersKernelStopsAnsweringBeforeTheAddressMoves) {
  // Node 1, cut off and its agent killed by the failover tests before: back, so that two of the
  // three agents are alive once node 3's is killed (one alone is no majority and holds nothing).
  sh("ip -n ul link set v-egress-node-1 up");
  if (agentMetrics(1).find("egw_agent_fenced") == std::string::npos) {
    startAgent(1);
  }
  ASSERT_TRUE(eventually(
      [&] {
        const auto m = agentMetrics(1);
        return metricSum(m, "egw_agent_last_successful_sync_timestamp_seconds") > 0 &&
               metricSum(m, "egw_agent_fenced") == 0 &&
               metricSum(m, "egw_agent_peers", {{"state", "heard"}}) == 2;
      },
      60s))
      << agent(1).log();
  ASSERT_TRUE(eventually([&] { return holder().second == node(3); }, 60s));
  ASSERT_TRUE(eventually(
      [&] { return connect("p3", "192.168.50.100").starts_with(egressIP_ + ":"); }, 60s));
  const auto [oldPod, oldNode] = holder();
  const std::string mac3 = dataplane::testing::linkField("eth0", "link/ether", node(3));
  const std::string mac2 = dataplane::testing::linkField("eth0", "link/ether", node(2));
  const std::string samples = dir() + "/neigh-samples.log";
  auto probe = inNamespace("ext",
                           {"/bin/sh", "-c",
                            "exec python3 " + kPackets + "/neigh_probe.py eth0 " + egressIP_ + " " +
                                egressIP6_ + " 0.1 22 > " + samples},
                           "neigh-probe");
  const auto started = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(1s);
  ASSERT_TRUE(controlPlane()
                  .kubectl({"label", "node", node(2), std::string(kGatewayLabel) + "=true"})
                  .ok());
  ASSERT_TRUE(
      controlPlane().kubectl({"label", "node", node(3), std::string(kGatewayLabel) + "-"}).ok());
  const double killedAt =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  agent(3).signal(SIGKILL);
  agent(3).reap(10s);
  // Its pod, as a dead node's: being deleted, never gone (a finalizer holds it).
  ASSERT_TRUE(controlPlane()
                  .kubectl({"patch", "pod", "-n", kNs, oldPod, "--type=merge", "-p",
                            R"({"metadata":{"finalizers":["egw.e2e/hold"]}})"})
                  .ok());
  ASSERT_TRUE(controlPlane().kubectl({"delete", "pod", "-n", kNs, oldPod, "--wait=false"}).ok());
  EXPECT_TRUE(probe->reap(60s));
  // "T v4 MACS v6 MACS" per sample.
  std::istringstream lines(output("cat " + samples));
  int count = 0;
  double lastOld = -1;
  double firstNew = -1;
  for (std::string line; std::getline(lines, line);) {
    double t = 0;
    char v4[256] = {0};
    char v6[256] = {0};
    if (std::sscanf(line.c_str(), "%lf v4 %255s v6 %255s", &t, v4, v6) != 3) {
      continue;
    }
    ++count;
    for (const std::string& answered : {std::string(v4), std::string(v6)}) {
      EXPECT_EQ(answered.find(','), std::string::npos)
          << "two nodes answer at " << t << " s (killed at " << killedAt << " s): " << line;
      if (answered == mac3) {
        lastOld = t;
      }
      if (answered == mac2 && firstNew < 0) {
        firstNew = t;
      }
    }
  }
  std::printf(
      "[ fencing  ] holder's agent SIGKILLed at %.1f s, link up: node 3 answered last at %.1f s, "
      "node 2 first at %.1f s (%d samples of 100 ms; Lease 6 s)\n",
      killedAt, lastOld, firstNew, count);
  EXPECT_GE(count, 150);
  EXPECT_GE(lastOld, 0) << "node 3 never answered: the sampling saw nothing";
  ASSERT_GE(firstNew, 0) << "node 2 never answered\n"
                         << kubectlOut({"get", "egresspolicyslices", "-o", "yaml"}) << "\n"
                         << kubectlOut({"get", "pods", "-n", kNs, "-o", "wide"}) << "\n"
                         << agentMetrics(2) << "\n"
                         << agent(2).log() << "\n"
                         << agentMetrics(1) << "\n"
                         << agent(1).log() << "\n"
                         << output("ip netns exec " + node(1) + " ss -uanp") << "\n"
                         << output("ip netns exec " + node(2) + " ss -uanp") << "\n"
                         << operatorProcess().log();
  EXPECT_LT(lastOld, firstNew);
  EXPECT_LE(firstNew - killedAt, 6.0 + 2.0) << "not within the Lease duration and 2 s";
  // p3's node has no agent: its kernel, fenced, refuses p3's traffic (never its own address);
  // with an agent again, that node routes p3 to the new holder.
  sh(std::string(": > ") + kEchoLog);
  EXPECT_THAT(connect("p3", "192.168.50.100"), StartsWith("error:"));
  EXPECT_THAT(output(std::string("cat ") + kEchoLog), Not(HasSubstr("192.168.50.13")));
  startAgent(3);
  EXPECT_TRUE(
      eventually([&] { return connect("p3", "192.168.50.100").starts_with(egressIP_ + ":"); }, 60s))
      << agent(3).log();
  controlPlane().kubectl({"patch", "pod", "-n", kNs, oldPod, "--type=merge", "-p",
                          R"({"metadata":{"finalizers":null}})"});
}

// `make bench`'s data plane figures (hack/bench.sh runs it alone: it is disabled in the test
// suite, where it would only cost time): the failover time, median of 5 moves of the egress IP
// between nodes 1 and 2 (the holder's agent SIGKILLed and its link cut, as in the test above),
// and the throughput of one TCP stream from node 3 through the tunnel and the holder's SNAT
// against the same stream routed directly (p3b, not selected: the CNI's own masquerade).
TEST_F(DataplaneE2E, DISABLED_BenchFailoverAndTunnelThroughput) {
  ASSERT_EQ(holder().second, node(1));
  // Time to classification: 120 selected pods created at once, spread over the three nodes;
  // per pod, from when the API server shows its IP (a watch, timestamped on arrival) to when the
  // pick map of its own node's nft table holds that IP (so its next packet leaves with the
  // egress IP): the operator's reconcile and slice write, the agent's informer, debounce and
  // table write. Sampled every 50 ms.
  {
    constexpr int kPodsToClassify = 120;
    std::string pods;
    for (int i = 0; i < kPodsToClassify; ++i) {
      pods += "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: bench-src-" + std::to_string(i) +
              "\n  namespace: " + kNs +
              "\n  labels: {app: web, bench: src}\nspec:\n  nodeName: " + node(1 + i % 3) +
              "\n  containers: [{name: c, image: example.invalid/app:1}]\n";
    }
    const std::string seenFile = dir() + "/bench-ips.log";
    auto watch = std::make_unique<testenv::ChildProcess>(
        std::vector<std::string>{
            "/usr/bin/setpriv", "--pdeathsig", "KILL", "--", "/bin/sh", "-c",
            controlPlane().dir() + "/bin/kubectl --kubeconfig " + controlPlane().kubeconfig() +
                " get pods -n " + kNs + " -l bench=src -w -o " +
                "jsonpath='{.metadata.name} {.status.podIP} {.spec.nodeName}{\"\\n\"}' | " +
                "while read -r name ip node; do echo \"$(date +%s.%N) $name $ip $node\"; done > " +
                seenFile},
        dir() + "/bench-watch.log");
    std::this_thread::sleep_for(1s);
    ASSERT_TRUE(applyYaml(dir() + "/bench-pods.yaml", pods));
    std::map<std::string, double> classified;  // ip -> wall seconds
    auto wall = [] {
      return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
    const auto until = std::chrono::steady_clock::now() + 120s;
    std::map<std::string, std::pair<double, int>> ipSeen;  // ip -> (wall seconds, node index)
    while (std::chrono::steady_clock::now() < until) {
      std::istringstream lines(output("cat " + seenFile));
      for (std::string line; std::getline(lines, line);) {
        double t = 0;
        char name[64] = {0};
        char ip[64] = {0};
        char on[64] = {0};
        if (std::sscanf(line.c_str(), "%lf %63s %63s %63s", &t, name, ip, on) == 4 &&
            !ipSeen.contains(ip)) {
          ipSeen[ip] = {t, std::string(on).back() - '0'};
        }
      }
      for (int n = 1; n <= 3; ++n) {
        std::string table;
        dataplane::testing::inNetns(node(n), [&] {
          auto listed = dataplane::NftApplier().list("egw");
          table = listed ? *listed : "";
        });
        const double now = wall();
        for (const auto& [ip, seen] : ipSeen) {
          if (seen.second == n && !classified.contains(ip) &&
              table.find("[\"" + ip + "\", {\"goto\"") != std::string::npos) {
            classified[ip] = now;
          }
        }
      }
      if (static_cast<int>(classified.size()) == kPodsToClassify) {
        break;
      }
      std::this_thread::sleep_for(50ms);
    }
    watch.reset();
    std::vector<double> took;
    for (const auto& [ip, at] : classified) {
      took.push_back(at - ipSeen.at(ip).first);
    }
    std::sort(took.begin(), took.end());
    ASSERT_EQ(took.size(), static_cast<size_t>(kPodsToClassify))
        << ipSeen.size() << " IPs seen, " << classified.size() << " classified";
    auto pct = [&](double q) {
      return took[std::min(took.size() - 1,
                           static_cast<size_t>(q * static_cast<double>(took.size())))];
    };
    std::printf(
        "[ bench ] a selected pod's IP seen to its own node classifying it: p50 %.2f s, p99 %.2f "
        "s, max %.2f s (%zu pods created at once, sampled every 50 ms)\n",
        pct(0.50), pct(0.99), took.back(), took.size());
    std::printf(
        "{\"figure\":\"dataplane_classification\",\"pods\":%zu,\"p50_s\":%.3f,\"p99_s\":%.3f,"
        "\"max_s\":%.3f,\"sample_ms\":50}\n",
        took.size(), pct(0.50), pct(0.99), took.back());
    controlPlane().kubectl({"delete", "pods", "-n", kNs, "-l", "bench=src", "--wait=false"});
  }
  auto sink = inNamespace("ext", {"python3", kPackets + "/sink.py"}, "sink");
  auto pump = [&](const std::string& pod) {
    const auto out =
        output("ip netns exec " + pod + " python3 " + kPackets + "/pump.py 192.168.50.100 5");
    double bytes = 0;
    double secs = 0;
    if (std::sscanf(out.c_str(), "%lf %lf", &bytes, &secs) != 2 || secs <= 0) {
      ADD_FAILURE() << pod << ": " << out;
      return 0.0;
    }
    return bytes * 8 / secs / 1e6;
  };
  ASSERT_TRUE(eventually(
      [&] {
        return output("ip netns exec p3 python3 " + kPackets + "/pump.py 192.168.50.100 0.1")
                   .find("error") == std::string::npos;
      },
      10s));
  const double tunnel = pump("p3");
  const double direct = pump("p3b");
  std::printf(
      "[ bench ] one TCP stream node 3 -> ext: through the tunnel and the holder's SNAT "
      "%.0f Mbit/s, routed directly %.0f Mbit/s (%.0f %%)\n",
      tunnel, direct, direct > 0 ? tunnel * 100 / direct : 0.0);
  std::printf(
      "{\"figure\":\"dataplane_throughput\",\"tool\":\"python3 pump.py, 5 s, 64 KiB "
      "writes\",\"tunnel_mbit_s\":%.0f,\"direct_mbit_s\":%.0f}\n",
      tunnel, direct);
  sink.reset();

  std::vector<double> took;
  int from = 1;
  for (int round = 0; round < 5; ++round) {
    const int to = from == 1 ? 2 : 1;
    const std::string oldPod = holder().first;
    ASSERT_EQ(holder().second, node(from));
    ASSERT_TRUE(controlPlane()
                    .kubectl({"label", "node", node(to), std::string(kGatewayLabel) + "=true"})
                    .ok());
    ASSERT_TRUE(controlPlane()
                    .kubectl({"label", "node", node(from), std::string(kGatewayLabel) + "-"})
                    .ok());
    const auto killed = std::chrono::steady_clock::now();
    agent(from).signal(SIGKILL);
    agent(from).reap(10s);
    sh("ip -n ul link set v-egress-node-" + std::to_string(from) + " down");
    ASSERT_TRUE(controlPlane()
                    .kubectl({"patch", "pod", "-n", kNs, oldPod, "--type=merge", "-p",
                              R"({"metadata":{"finalizers":["egw.e2e/hold"]}})"})
                    .ok());
    ASSERT_TRUE(controlPlane().kubectl({"delete", "pod", "-n", kNs, oldPod, "--wait=false"}).ok());
    const bool moved = eventually(
        [&] { return connect("p3", "192.168.50.100").starts_with(egressIP_ + ":"); }, 60s);
    took.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count());
    ASSERT_TRUE(moved) << operatorProcess().log();
    std::printf("[ bench ] failover %d: node %d -> node %d: %.1f s\n", round + 1, from, to,
                took.back());
    // The cut-off node comes back, for the next move.
    sh("ip -n ul link set v-egress-node-" + std::to_string(from) + " up");
    startAgent(from);
    controlPlane().kubectl({"patch", "pod", "-n", kNs, oldPod, "--type=merge", "-p",
                            R"({"metadata":{"finalizers":null}})"});
    ASSERT_TRUE(eventually(
        [&] {
          return kubectlOut({"get", "pod", "-n", kNs, oldPod, "--ignore-not-found", "-o", "name"})
              .empty();
        },
        60s));
    ASSERT_TRUE(eventually(
        [&] {
          return metricSum(agentMetrics(from), "egw_agent_last_successful_sync_timestamp_seconds") >
                 0;
        },
        30s));
    ASSERT_EQ(holder().second, node(to));
    from = to;
  }
  auto sorted = took;
  std::sort(sorted.begin(), sorted.end());
  std::printf("[ bench ] failover, median of %zu: %.1f s (min %.1f, max %.1f; lease 6 s)\n",
              sorted.size(), sorted[sorted.size() / 2], sorted.front(), sorted.back());
  std::printf(
      "{\"figure\":\"dataplane_failover\",\"runs\":%zu,\"median_s\":%.2f,\"min_s\":%.2f,"
      "\"max_s\":%.2f,\"agent_lease_s\":6}\n",
      sorted.size(), sorted[sorted.size() / 2], sorted.front(), sorted.back());
}

// The chart's monitoring files on agents that program their nodes' kernels, which MonitoringE2E's
// dry-run agents cannot show: a real Prometheus scrapes the agents at their nodes' underlay
// addresses, as the chart's PodMonitor does (a forwarder in each node's namespace stands for the
// chart's $(HOST_IP) bind: the cluster's agents listen on loopback), each labelled with its
// `node`, with the rules file loaded. Every dashboard query of the per-policy egress counters
// returns the policy's traffic through its holder; the forged-tunnel alert fires at once for
// the node and reason of each forged packet; and a node the tests before killed (its agent
// SIGKILLed, its link down) is a target down, its EgressGatewayAgentDown pending.
TEST_F(DataplaneE2E, PrometheusReadsTheAgentsEgressCountersAndAlertsOnForgedTunnelPackets) {
  const std::string holderNode = holder().second;
  ASSERT_FALSE(holderNode.empty());
  const int h = holderNode.back() - '0';
  // The nodes whose agent answers (run alone, all three; after the failover cases, node 1 is
  // dead).
  std::set<int> alive;
  std::set<std::string> dead;
  for (int i = 1; i <= 3; ++i) {
    if (agentMetrics(i).find("egw_agent_fenced") != std::string::npos) {
      alive.insert(i);
    } else {
      dead.insert(node(i));
    }
  }
  ASSERT_TRUE(alive.contains(h));
  // <address>:<port> -> 127.0.0.1:<port>, each connection on two threads.
  const std::string forward = R"(import socket, sys, threading
def pipe(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
server = socket.create_server((sys.argv[1], int(sys.argv[2])))
while True:
    c, _ = server.accept()
    try:
        u = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
    except OSError:
        c.close()
        continue
    threading.Thread(target=pipe, args=(c, u), daemon=True).start()
    threading.Thread(target=pipe, args=(u, c), daemon=True).start()
)";
  std::vector<std::unique_ptr<testenv::ChildProcess>> forwarders;
  std::vector<testenv::PrometheusTarget> agents;
  for (int i = 1; i <= 3; ++i) {
    const std::string address = DataplaneCluster::nodeAddress(i);
    forwarders.push_back(inNamespace(node(i), {"python3", "-c", forward, address, "9402"},
                                     "metrics-forward-" + std::to_string(i)));
    agents.push_back({address + ":9402", {{"node", node(i)}}});
  }
  const std::string files = testenv::sourceDir() + "/deploy/helm/egress-gateway-operator/files";
  std::string error;
  auto prometheus =
      testenv::Prometheus::start({.targets = {cluster_->egressOperator().metricsTarget()},
                                  .ruleFiles = {files + "/prometheus-rules.yaml"},
                                  .moreJobs = {{"egw-agent", agents}}},
                                 error);
  ASSERT_NE(prometheus, nullptr) << error;
  // Every live node's agent up, every dead one's down (none: no down target at all).
  const std::string up = "up{job=\"egw-agent\"}";
  const std::string scraped =
      "count(" + up + " == 1) == " + std::to_string(alive.size()) +
      (dead.empty() ? " unless count(" + up + " == 0)"
                    : " and count(" + up + " == 0) == " + std::to_string(dead.size()));
  if (prometheus->waitForSeries(scraped, 60s, error).empty()) {
    // Which scrape fails, and where: the agent itself, or the way to it.
    std::string why = error + "\n";
    for (const auto& target :
         prometheus->query(up, error).value_or(std::vector<testenv::PromSample>{})) {
      why += target.label("node") + " up " + target.value + "\n";
    }
    for (int i = 1; i <= 3; ++i) {
      why += "--- " + node(i) + ": the agent on loopback, then through the forwarder\n" +
             agentMetrics(i).substr(0, 200) + "\n" +
             output("curl -sS -m 2 http://" + DataplaneCluster::nodeAddress(i) +
                    ":9402/metrics 2>&1 | head -c 200") +
             "\n" + forwarders[i - 1]->log() + "\n";
    }
    FAIL() << why << prometheus->log();
  }
  // Two scrapes before the traffic, so that rate() has a sample before it.
  std::this_thread::sleep_for(3s);

  // Egress: a bulk connection of p3's (node 3) leaves through the holder.
  ASSERT_THAT(connect("p3", "192.168.50.100", "bulk"), HasSubstr("\nbulk ok"));
  std::ifstream in(files + "/grafana-dashboard.json");
  std::stringstream text;
  text << in.rdbuf();
  rapidjson::Document dashboard;
  dashboard.Parse(text.str().c_str());
  ASSERT_FALSE(dashboard.HasParseError());
  std::vector<std::string> queries;
  for (const auto& panel : dashboard["panels"].GetArray()) {
    if (!panel.HasMember("targets")) {
      continue;
    }
    for (const auto& t : panel["targets"].GetArray()) {
      const std::string expr = t["expr"].GetString();
      if (expr.find("egw_agent_egress_") != std::string::npos) {
        queries.push_back(expr);
      }
    }
  }
  EXPECT_EQ(queries.size(), 2u) << "the bytes and the packets per policy";
  for (std::string expr : queries) {
    // The variables' "All" values; Grafana's $__rate_interval is at least 4 scrape intervals.
    for (const auto& [var, value] : std::vector<std::pair<std::string, std::string>>{
             {"$__rate_interval", "1m"}, {"$agent_job", ".+"}, {"$node", ".*"}}) {
      for (auto at = expr.find(var); at != std::string::npos; at = expr.find(var)) {
        expr.replace(at, var.size(), value);
      }
    }
    ASSERT_EQ(expr.find('$'), std::string::npos) << expr;
    const auto samples = prometheus->waitForSeries(
        expr + " > 0 and on (policy_namespace, policy) " + "group by (policy_namespace, policy) " +
            "(egw_agent_egress_bytes_total{policy_namespace=\"" + kNs + "\",policy=\"web\"})",
        60s, error);
    ASSERT_EQ(samples.size(), 1u) << expr << ": " << error;
    std::printf("[ counted  ] %s: %s/%s %s per second\n", expr.c_str(),
                samples[0].label("policy_namespace").c_str(), samples[0].label("policy").c_str(),
                samples[0].value.c_str());
  }

  // Forged tunnel packets to the holder (as TheTunnelTakesOnlyANodesOwnSourcePods sends them):
  // one from a live node with a selected pod's address that is not its own pod's
  // (forged-source: the holder drops it), and one that a pod of a live node other than the
  // holder's sends to the holder's tunnel port (from-a-pod: its node drops it).
  auto podIP = [](const char* pod) {
    return kubectlOut({"get", "pod", "-n", kNs, pod, "-o", "jsonpath={.status.podIP}"});
  };
  auto mac = [](int i) {
    return dataplane::macText(
        dataplane::tunnelMac(*ipam::parseAddress(DataplaneCluster::nodeAddress(i))));
  };
  auto send = [&](const std::string& from, int fromNode, const std::string& source,
                  const std::string& tag) {
    return output("ip netns exec " + from + " python3 " + kPackets + "/vxlan_send.py " +
                  DataplaneCluster::nodeAddress(h) + " 4799 4242 " + mac(fromNode) + " " + mac(h) +
                  " " + source + " 192.168.50.100 8080 " + tag);
  };
  int forger = 0;
  for (int i : alive) {
    forger = forger == 0 && i != h ? i : forger;
  }
  ASSERT_NE(forger, 0) << "no live node but the holder's";
  // p1 (node 1) and p3 (node 3) are selected: the one that is not the forger's.
  const std::string forged = podIP(forger == 3 ? "p1" : "p3");
  ASSERT_FALSE(forged.empty());
  // p2 (node 2) and p3b (node 3) are not selected: one on a live node that does not hold.
  const int podNode = h != 2 && alive.contains(2) ? 2 : 3;
  ASSERT_NE(podNode, h);
  const char* pod = podNode == 2 ? "p2" : "p3b";
  EXPECT_EQ(send(node(forger), forger, forged, "forged-for-prometheus"), "sent\n");
  EXPECT_EQ(send(pod, podNode, podIP(pod), "from-a-pod-for-prometheus"), "sent\n");
  std::set<std::pair<std::string, std::string>> want = {{node(h), "forged-source"},
                                                        {node(podNode), "from-a-pod"}};
  std::set<std::pair<std::string, std::string>> firing;
  const bool fired = eventually(
      [&] {
        firing.clear();
        for (const auto& r : prometheus->rules(error).value_or(std::vector<testenv::PromRule>{})) {
          if (r.name != "EgressGatewayAgentTunnelForgedPackets") {
            continue;
          }
          EXPECT_EQ(r.health, "ok") << r.lastError;
          for (const auto& a : r.alerts) {
            if (a.state == "firing") {
              firing.insert({a.labels.at("node"), a.labels.at("reason")});
            }
          }
        }
        return firing == want;
      },
      60s);
  std::string got;
  for (const auto& [n, reason] : firing) {
    got += " " + n + "/" + reason;
  }
  EXPECT_TRUE(fired) << "firing:" << got << "\n"
                     << agentMetrics(h) << agentMetrics(podNode) << agentMetrics(forger);

  // A dead node's agent: down, its alert pending (5 minutes are not over); none without one.
  std::set<std::string> downNodes;
  std::string downState;
  const bool down = eventually(
      [&] {
        downNodes.clear();
        for (const auto& r : prometheus->rules(error).value_or(std::vector<testenv::PromRule>{})) {
          if (r.name == "EgressGatewayAgentDown") {
            downState = r.state;
            for (const auto& a : r.alerts) {
              downNodes.insert(a.labels.count("node") != 0 ? a.labels.at("node") : "");
            }
          }
        }
        return downNodes == dead && downState == (dead.empty() ? "inactive" : "pending");
      },
      60s);
  std::string downGot;
  for (const auto& n : downNodes) {
    downGot += " " + n;
  }
  EXPECT_TRUE(down) << "EgressGatewayAgentDown is " << downState << " for" << downGot;
}

}  // namespace
}  // namespace egress::e2e
