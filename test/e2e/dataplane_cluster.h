// File: dataplane_cluster.h
//
// A three-node cluster with a real data plane, for the programs that show egress IPs on the wire:
// dataplane_e2e_test (its fixture) and egw-demo (`make demo`'s packets). It is built inside this
// process's private network and mount namespace (reexecInPrivateNamespace(): the program
// re-executes itself under `unshare -m -n` before it does anything else, so every namespace,
// link and mount below vanishes with it, and the host's network is never touched):
//   - test/unit/dataplane/packets/topology.sh: an underlay bridge (192.168.50.0/24,
//     fd00:50::/64), node namespaces egress-node-1..3 at .11-.13 with a flannel-like VXLAN CNI
//     and its MASQUERADE, and namespace `ext` at .100 (and .101) where an echo server answers
//     each connection with the source address it saw;
//   - this namespace itself on the underlay as 192.168.50.1 (kApiAddress), where the control
//     plane's API server also listens (controlPlaneOptions()), so agents in the node namespaces
//     reach it;
//   - the Nodes of the control plane's test kubelet given their underlay InternalIPs, and source
//     pods p1 (node 1, app=web), p2 (node 2, other), p3 (node 3, web), p3b (node 3, other):
//     each created first and its veth pod (packets/pod.sh) made with the address the kubelet
//     gave it, so nothing races the kubelet;
//   - one egw-agent process per node namespace (`ip netns exec`, not a dry run) with only the
//     Helm chart's capabilities and its init container run first;
//   - a dual-stack IPAMPool on the underlay, an OperatorConfig with spec.dataplane.agent, the
//     policy `web` (app=web to 192.168.50.96/28 and fd00:50::100/120, one gateway replica pinned
//     by kGatewayLabel to node 1) and the real egress-operator process.
// The control plane is the program's (testenv::controlPlane(): environment.cc's in a test
// binary, the program's own elsewhere). Nothing here asserts: each step returns "" or what went
// wrong (with the logs that say why), so a program that is not a test can use it; child
// processes get SIGKILL when this process dies, however it ends.
//
//   if (!DataplaneCluster::reexecInPrivateNamespace()) { ... }   // first thing in main()
//   DataplaneCluster cluster;
//   if (auto error = cluster.start(); !error.empty()) { ... }
//   cluster.connect("p3", DataplaneCluster::kEchoServer);       // "192.168.50.20x:port"
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "test/e2e/operator_helpers.h"
#include "test/e2e/testenv/child_process.h"
#include "test/e2e/testenv/control_plane.h"
#include "test/testutil/temp_dir.h"

namespace egress::e2e {

// A source pod of the cluster: its name (also its network namespace), node and app label.
struct DataplanePod {
  const char* name;
  int node;
  const char* app;
};

class DataplaneCluster {
 public:
  // The API server's address on the underlay (this namespace's).
  static constexpr const char* kApiAddress = "192.168.50.1";
  // The external echo server, and the second address it answers on (policy `web` excludes it).
  static constexpr const char* kEchoServer = "192.168.50.100";
  static constexpr const char* kEchoServer6 = "fd00:50::100";
  static constexpr const char* kNamespace = "egw-dp";
  static constexpr const char* kLeaseNamespace = "egw-dp-agents";
  static constexpr const char* kPolicy = "web";
  static constexpr const char* kPool = "egw-dp";
  // The gateway's nodeSelector: node 1 has the label at first; a failover moves it.
  static constexpr const char* kGatewayLabel = "egw-e2e/gateway";
  // Every source address the echo server saw, one a line (on the private /run/netns tmpfs).
  static constexpr const char* kEchoLog = "/run/netns/echo-peers.log";
  static constexpr DataplanePod kPods[] = {
      {"p1", 1, "web"}, {"p2", 2, "other"}, {"p3", 3, "web"}, {"p3b", 3, "other"}};
  // The pool's blocks: on the underlay, so the external server's replies reach the holder.
  static const std::vector<std::string>& poolCIDRs();

  // Re-executes this program, with its arguments, under `unshare -m -n` unless it already runs
  // there (EGW_IN_NETNS), setting EGRESS_TESTENV_NODES and EGRESS_TESTENV_ADVERTISE_ADDRESS for
  // environment.cc's control plane. Inside: brings loopback up and returns whether that worked.
  // Outside it does not return (on exec failure it exits 2). Safe before main().
  static bool reexecInPrivateNamespace();
  // reexecInPrivateNamespace() for a test binary, meant for a namespace-scope initializer (the
  // control plane that environment.cc's main starts must run in the private namespace too):
  // false without it when the binary only lists its tests (--gtest_list_tests), which needs none.
  static bool reexecTestBinaryInPrivateNamespace();
  // The control plane the cluster needs: three nodes, the API server also on kApiAddress.
  static testenv::ControlPlaneOptions controlPlaneOptions();

  static std::string node(int i);
  // Node i's underlay IPv4 and IPv6 addresses.
  static std::string nodeAddress(int i);
  static std::string nodeAddress6(int i);
  // A pod's IPv6 from its IPv4 (10.244.<node>.<n> -> fd00:244:<node>::<n>): the kubelet assigns
  // IPv4 only, and the cluster reports each pod's IPv6 as a dual-stack CNI would have.
  static std::string podIPv6(int nodeIndex, const std::string& ipv4);
  // What the echo server saw of a connection from namespace `pod` to `host` by packets/client.py
  // with its MODE ("address:port", "error: ..." and, by mode, more lines).
  static std::string connect(const std::string& pod, const std::string& host,
                             const std::string& mode = "");
  static const std::string& packetsDir();

  DataplaneCluster();
  ~DataplaneCluster();
  DataplaneCluster(const DataplaneCluster&) = delete;
  DataplaneCluster& operator=(const DataplaneCluster&) = delete;

  // The three steps of start(), for a caller that does something in between (each "" or what
  // went wrong):
  //   the topology, the echo server, the Nodes' addresses and gateway label, the CRDs, the
  //   namespaces and the source pods with their veth pods;
  std::string createNodesAndPods();
  //   the chart's agent rendered by helm, its init container run on each node, an agent each;
  std::string startAgents();
  //   the pool, the OperatorConfig and the policy applied, the operator started, and waited for
  //   until the policy has both egress IPs and p3's connections leave with the IPv4 one.
  struct OperatorStart {
    // "" for the default one, with dataplane.agent: true.
    std::string operatorConfigYaml;
    // Off: the caller made the OperatorConfig (helm_e2e_test: the chart's).
    bool applyOperatorConfig = true;
    // Where the agents' Leases are (--agent-lease-namespace).
    std::string agentLeaseNamespace = kLeaseNamespace;
  };
  std::string startOperator(const OperatorStart& how);
  std::string startOperator(const std::string& operatorConfigYaml = "") {
    return startOperator(OperatorStart{.operatorConfigYaml = operatorConfigYaml});
  }
  std::string start() {
    std::string error = createNodesAndPods();
    error = error.empty() ? startAgents() : error;
    return error.empty() ? startOperator() : error;
  }

  // The policy's egress IPs (from its status, once startOperator() succeeded).
  const std::string& egressIP() const { return egressIP_; }
  const std::string& egressIP6() const { return egressIP6_; }
  // The objects startOperator() applied.
  const std::string& objectsYaml() const { return objectsYaml_; }

  // `argv` run in network namespace `ns`, killed with this process however it ends (so the
  // namespaces vanish with it), its output in `name`-<n>.log; check its error().
  std::unique_ptr<testenv::ChildProcess> inNamespace(const std::string& ns,
                                                     std::vector<std::string> argv,
                                                     const std::string& name);
  // (Re)starts node i's agent as the chart runs it; "" or why it did not start.
  std::string startAgent(int i);
  // What startAgents() does before it starts any agent: the agents' kubeconfig (the admin's
  // credentials, on the underlay address) and the chart's agent rendered (its init container's
  // command and capabilities, for confinedAgent()).
  std::string prepareAgents();
  // That kubeconfig with a bearer token instead of the admin's certificate (a ServiceAccount's:
  // the API server then authorizes the agent by the chart's RBAC); its path, "" on failure.
  std::string tokenKubeconfig(const std::string& token, const std::string& name);
  // egw-agent in node i's namespace confined as the chart confines it (/proc/sys read-only, only
  // the chart's capabilities, no privilege escalation), `args` after the binary; check error().
  // For profiling: with $EGW_BENCH_AGENT_WRAPPER set, node 1's agent runs as `$wrapper binary
  // args...` (a script that sets heaptrack's LD_PRELOAD, say, and execs the rest).
  std::unique_ptr<testenv::ChildProcess> confinedAgent(int i, std::vector<std::string> args,
                                                       const std::string& name);
  // The chart's init container command (after prepareAgents()).
  const std::vector<std::string>& chartInit() const { return chartInit_; }
  // Everything of node i's network namespace an agent could add to, in a form two reads compare
  // equal when nothing was added or removed: the whole nftables ruleset (counter values
  // blanked), the policy rules, every route table, the proxy ARP/NDP entries (both families)
  // and the links by name.
  static std::string networkState(int i);
  testenv::ChildProcess& agent(int i) { return *agents_.at(i); }
  Operator& egressOperator() { return *operator_; }
  // The chart's agent capabilities as setpriv's --bounding-set takes them ("-all,+net_admin,...").
  const std::string& chartCaps() const { return chartCaps_; }
  // The gateway pod holding the egress IPs, and its node; {"", ""} for none.
  static std::pair<std::string, std::string> holder();
  // Where this cluster keeps its files (logs, rendered YAML); removed with it.
  const std::string& dir() const { return tmp_.path(); }

 private:
  std::string renderChartAgent();

  testutil::TempDir tmp_{"egw_dataplane"};
  std::unique_ptr<Operator> operator_;
  std::map<int, std::unique_ptr<testenv::ChildProcess>> agents_;
  std::unique_ptr<testenv::ChildProcess> echo_;
  std::string agentKubeconfig_;
  std::vector<std::string> chartInit_;
  std::string chartCaps_;
  std::string egressIP_;
  std::string egressIP6_;
  std::string objectsYaml_;
  int started_ = 0;
};

}  // namespace egress::e2e
