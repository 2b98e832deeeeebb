// egw-demo: the packet part of `make demo` (hack/demo.sh runs it after the bookkeeping part).
// It shows the product doing its job on the wire: on the embedded control plane, three nodes and
// their pods in network namespaces (DataplaneCluster, as dataplane_e2e_test builds them), one
// real egw-agent per node and the real egress-operator, an external echo server that answers
// each connection with the source address it saw. It prints what that server saw of a selected
// pod (the egress IP) and of a pod the policy does not select (its node's address), which node
// holds each egress IP, then kills the holder node (its agent SIGKILLed, its link cut) and shows
// the address move to another node while a connection held open across the move keeps working.
//
// Everything runs in a private network and mount namespace (the program re-executes itself under
// `unshare -m -n`): the host's network is never touched, and every namespace, link and process
// vanishes when it exits, however it ends. Needs root. Exits 0 when every address was the one
// expected and the move happened, else 1 with what went wrong.
// Usage: egw-demo
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "test/e2e/dataplane_cluster.h"
#include "test/e2e/operator_helpers.h"
#include "test/e2e/testenv/control_plane.h"
#include "test/e2e/testenv/environment.h"
#include "test/e2e/testenv/owned_control_plane.h"
#include <sys/mount.h>
#include <unistd.h>

namespace egress::e2e {
namespace {

using namespace std::chrono_literals;
using Cluster = DataplaneCluster;

constexpr const char* kHold = "hold:20:30";  // 20 s, one echo every 0.2 s, each awaited 30 s
const auto kStarted = std::chrono::steady_clock::now();

double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// A line of the demo's output, printf-formatted, flushed at once (hack/demo.sh's pipe would
// hold it back otherwise).
template <typename... Args>
void say(const char* format, Args... args) {
  if constexpr (sizeof...(args) == 0) {
    std::fputs(format, stdout);
  } else {
    std::printf(format, args...);
  }
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

void section(const std::string& title) {
  say("\n== %s  [%.0f s]", title.c_str(), secondsSince(kStarted));
}

// The address out of the first line the echo server answered ("192.168.50.201:40000",
// "fd00:50::12:40000"); an error as it is.
std::string addressOf(const std::string& seen) {
  const std::string line = seen.substr(0, seen.find('\n'));
  const auto colon = line.rfind(':');
  return line.starts_with("error:") || colon == std::string::npos ? line : line.substr(0, colon);
}

// The last lines of a log, for a failure message.
std::string tail(const std::string& log, size_t lines = 40) {
  size_t at = log.size();
  while (lines-- > 0 && at != std::string::npos && at > 0) {
    at = log.rfind('\n', at - 1);
  }
  return at == std::string::npos || at == 0 ? log : log.substr(at + 1);
}

// The OperatorConfig of deploy/examples/, with the two settings the demo needs changed.
std::string operatorConfig(std::string& error) {
  const std::string example = testenv::sourceDir() + "/deploy/examples/operatorconfig.yaml";
  try {
    YAML::Node config = YAML::LoadFile(example);
    config["spec"]["dataplane"]["agent"] = true;
    config["spec"]["defaultPool"] = Cluster::kPool;
    return YAML::Dump(config) + "\n";
  } catch (const YAML::Exception& e) {
    error = example + ": " + e.what();
    return "";
  }
}

class Demo {
 public:
  int run() {
    say("egw-demo: egress IPs on the wire: the real egress-operator and one egw-agent per node,");
    say("in network namespaces of a private network namespace (nothing on the host's network).");
    section("The control plane: etcd, kube-apiserver, controller-manager, scheduler, test kubelet");
    const auto t = std::chrono::steady_clock::now();
    std::string error = testenv::startOwnedControlPlane(Cluster::controlPlaneOptions());
    if (!error.empty()) {
      return fail("the control plane: " + error);
    }
    say("   up in %.1f s: 3 nodes; the API server on loopback and on the underlay as %s",
        secondsSince(t), Cluster::kApiAddress);
    cluster_ = std::make_unique<Cluster>();

    section("The nodes and pods (test/unit/dataplane/packets/topology.sh)");
    if (error = cluster_->createNodesAndPods(); !error.empty()) {
      return fail(error);
    }
    say("   the underlay 192.168.50.0/24 and fd00:50::/64, a bridge; on it the external echo "
        "server");
    say("   %s and %s (namespace ext), which answers each connection with the",
        Cluster::kEchoServer, Cluster::kEchoServer6);
    say("   source address it saw, and the nodes, whose flannel-like VXLAN CNI masquerades their");
    say("   pods to the node's address:");
    for (int i = 1; i <= 3; ++i) {
      say("   node %s: %s, %s", Cluster::node(i).c_str(), Cluster::nodeAddress(i).c_str(),
          Cluster::nodeAddress6(i).c_str());
    }
    for (const auto& p : Cluster::kPods) {
      say("   pod %s (app=%s) on %s: %s", p.name, p.app, Cluster::node(p.node).c_str(),
          podIP(p.name).c_str());
    }

    section("egw-agent on every node, as the Helm chart runs it");
    if (error = cluster_->startAgents(); !error.empty()) {
      return fail(error);
    }
    say("   its init container first, then the agent with only the capabilities %s",
        cluster_->chartCaps().c_str());
    say("   and a read-only /proc/sys; each renews a Lease in namespace %s",
        Cluster::kLeaseNamespace);

    section("The operator (" + std::string(EGRESS_OPERATOR_BINARY) + ") and what it reconciles");
    const std::string config = operatorConfig(error);
    if (!error.empty()) {
      return fail(error);
    }
    say("   OperatorConfig default: deploy/examples/operatorconfig.yaml with");
    say("     spec.dataplane.agent: true (egw-agent runs on the nodes), spec.defaultPool: %s",
        Cluster::kPool);
    say("   IPAMPool %s: %s and %s, not the examples' documentation ranges", Cluster::kPool,
        Cluster::poolCIDRs()[0].c_str(), Cluster::poolCIDRs()[1].c_str());
    say("     (203.0.113.0/26, ...): an egress IP must be an address of the network the external");
    say("     server answers on, here the underlay, where the node holding it answers ARP/NDP");
    say("   EgressGatewayPolicy %s/%s: pods app=web, to 192.168.50.96/28 and fd00:50::100/120",
        Cluster::kNamespace, Cluster::kPolicy);
    say("     (192.168.50.101 and fd00:50::101 excluded), DualStack, 1 gateway replica on the "
        "nodes");
    say("     labelled %s=true (%s)", Cluster::kGatewayLabel, Cluster::node(1).c_str());
    const auto operatorStarted = std::chrono::steady_clock::now();
    if (error = cluster_->startOperator(config); !error.empty()) {
      return fail(error);
    }
    egressIP_ = cluster_->egressIP();
    egressIP6_ = cluster_->egressIP6();
    say("   policy %s's status lists egress IPs %s %s", Cluster::kPolicy, egressIP_.c_str(),
        egressIP6_.c_str());
    say("     (p3's traffic left with them %.1f s after the operator started)",
        secondsSince(operatorStarted));

    section("What the external echo server saw, one new TCP connection each");
    saw("selected", "p3", Cluster::kEchoServer, egressIP_, "the egress IP");
    saw("selected", "p1", Cluster::kEchoServer, egressIP_, "the egress IP");
    saw("other", "p2", Cluster::kEchoServer, Cluster::nodeAddress(2), "its node's address");
    saw("other", "p3b", Cluster::kEchoServer, Cluster::nodeAddress(3), "its node's address");
    saw("selected", "p3", "192.168.50.101", Cluster::nodeAddress(3),
        "its node's address: an excluded destination");
    saw("selected", "p3", Cluster::kEchoServer6, egressIP6_, "the egress IP");
    saw("other", "p2", Cluster::kEchoServer6, Cluster::nodeAddress6(2), "its node's address");

    section("Which node holds each egress IP");
    const auto [gatewayPod, holderNode] = Cluster::holder();
    if (holderNode != Cluster::node(1)) {
      return fail("the egress IPs are held by '" + holderNode + "', not " + Cluster::node(1));
    }
    for (const auto& ip : {egressIP_, egressIP6_}) {
      say("   egress IP %s is held by %s (gateway pod %s/%s)", ip.c_str(), holderNode.c_str(),
          Cluster::kNamespace, gatewayPod.c_str());
    }
    if (const int code = failover(gatewayPod); code != 0) {
      return code;
    }
    if (wrong_ > 0) {
      return fail(std::to_string(wrong_) + " connection(s) left with an unexpected address");
    }
    say("\negw-demo done in %.0f s; every namespace, link and process above goes with it",
        secondsSince(kStarted));
    return 0;
  }

  ~Demo() {
    cluster_.reset();
    testenv::stopOwnedControlPlane();
  }

 private:
  // Node 1 dies as far as the cluster can tell: the gateway's nodeSelector moves to node 2 first
  // (where the Deployment may start the replacement), node 1's agent is SIGKILLed and its
  // underlay link cut, and its gateway pod is evicted as the node lifecycle controller (off in
  // this control plane) would, never confirmed by a dead node's kubelet (a finalizer holds it).
  int failover(const std::string& oldPod) {
    section("Failover: " + Cluster::node(1) + " dies");
    auto held = cluster_->inNamespace(
        "p3", {"python3", Cluster::packetsDir() + "/client.py", Cluster::kEchoServer, kHold},
        "held");
    if (!held->error().empty() || !eventually([&] { return !held->log().empty(); }, 10s)) {
      return fail("the held connection did not start: " + held->error() + held->log());
    }
    say("   p3 holds a connection open to the echo server (seen as %s), one echoed line every",
        addressOf(held->log()).c_str());
    say("   0.2 s for 20 s");
    std::this_thread::sleep_for(1s);
    const std::string label = Cluster::kGatewayLabel;
    for (const auto& args :
         std::vector<std::vector<std::string>>{{"label", "node", Cluster::node(2), label + "=true"},
                                               {"label", "node", Cluster::node(1), label + "-"}}) {
      if (auto r = testenv::controlPlane().kubectl(args); !r.ok()) {
        return fail("kubectl " + args[0] + ": " + r.output);
      }
    }
    say("   gateway label %s moved from %s to %s", label.c_str(), Cluster::node(1).c_str(),
        Cluster::node(2).c_str());
    const auto killed = std::chrono::steady_clock::now();
    cluster_->agent(1).signal(SIGKILL);
    auto r =
        testenv::runCommand({"ip", "-n", "ul", "link", "set", "v-" + Cluster::node(1), "down"});
    if (!r.ok()) {
      return fail("cutting " + Cluster::node(1) + "'s link: " + r.output);
    }
    say("   egw-agent on %s SIGKILLed and the node's underlay link cut", Cluster::node(1).c_str());
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"patch", "pod", "-n", Cluster::kNamespace, oldPod, "--type=merge", "-p",
              R"({"metadata":{"finalizers":["egw.demo/dead-node"]}})"},
             {"delete", "pod", "-n", Cluster::kNamespace, oldPod, "--wait=false"}}) {
      if (auto k = testenv::controlPlane().kubectl(args); !k.ok()) {
        return fail("kubectl " + args[0] + ": " + k.output);
      }
    }
    say("   its gateway pod %s evicted (as the node lifecycle controller would)", oldPod.c_str());
    std::string seen;
    const bool moved = eventually(
        [&] {
          seen = Cluster::connect("p3", Cluster::kEchoServer);
          return seen.starts_with(egressIP_ + ":");
        },
        60s);
    const double took = secondsSince(killed);
    const auto [newPod, newNode] = Cluster::holder();
    if (!moved || newNode.empty() || newNode == Cluster::node(1)) {
      return fail("the egress IP did not move within 60 s (p3's connection: " + seen +
                  ", holder: '" + newNode + "'); the operator's log ends:\n" +
                  tail(cluster_->egressOperator().process().log()));
    }
    if (!held->reap(60s)) {
      return fail("the held connection is still open 60 s later: " + held->log());
    }
    const std::string heldLog = held->log();
    const auto ok = heldLog.find("\nheld ok ");
    if (ok == std::string::npos) {
      return fail("the held connection broke across the move: " + heldLog);
    }
    const int lines = std::atoi(heldLog.c_str() + ok + std::string("\nheld ok ").size());
    say("   egress IP %s moved to %s after %.1f s; the held connection is still alive (%d lines "
        "echoed across the move)",
        egressIP_.c_str(), newNode.c_str(), took, lines);
    say("   egress IP %s is held by %s (gateway pod %s/%s)", egressIP6_.c_str(), newNode.c_str(),
        Cluster::kNamespace, newPod.c_str());
    saw("selected", "p3", Cluster::kEchoServer, egressIP_, "the egress IP, now through " + newNode);
    // The dead node's pod record goes, as a node's deletion would let it.
    testenv::controlPlane().kubectl({"patch", "pod", "-n", Cluster::kNamespace, oldPod,
                                     "--type=merge", "-p", R"({"metadata":{"finalizers":null}})"});
    return 0;
  }

  // One connection from `pod` to `host`; says what the echo server saw and whether that is
  // `expected`.
  void saw(const char* kind, const std::string& pod, const std::string& host,
           const std::string& expected, const std::string& meaning) {
    const DataplanePod& p = sourcePod(pod);
    const std::string address = addressOf(Cluster::connect(pod, host));
    std::string to;
    if (host != Cluster::kEchoServer) {
      to = " to " + host;
    }
    say("   %s pod %s (app=%s, on %s)%s -> echo server saw %s  (%s)", kind, pod.c_str(), p.app,
        Cluster::node(p.node).c_str(), to.c_str(), address.c_str(),
        address == expected ? meaning.c_str() : ("UNEXPECTED: expected " + expected).c_str());
    wrong_ += address == expected ? 0 : 1;
  }

  static std::string podIP(const std::string& pod) {
    auto r = testenv::controlPlane().kubectl(
        {"get", "pod", "-n", Cluster::kNamespace, pod, "-o", "jsonpath={.status.podIP}"});
    return r.ok() ? r.output + ", " + Cluster::podIPv6(sourcePod(pod).node, r.output) : "?";
  }
  // One of Cluster::kPods, by name (the demo names only those).
  static const DataplanePod& sourcePod(const std::string& name) {
    for (const auto& p : Cluster::kPods) {
      if (name == p.name) {
        return p;
      }
    }
    std::abort();
  }

  int fail(const std::string& what) {
    std::fflush(stdout);
    std::fprintf(stderr, "\negw-demo FAILED after %.0f s: %s\n", secondsSince(kStarted),
                 what.c_str());
    return 1;
  }

  std::unique_ptr<Cluster> cluster_;
  std::string egressIP_;
  std::string egressIP6_;
  int wrong_ = 0;
};

}  // namespace
}  // namespace egress::e2e

int main() {
  if (geteuid() != 0) {
    std::fprintf(stderr,
                 "egw-demo needs root: it makes network namespaces (unshare -m -n, ip netns) and "
                 "runs egw-agent with NET_ADMIN in them\n");
    return 1;
  }
  if (!egress::e2e::DataplaneCluster::reexecInPrivateNamespace()) {
    std::fprintf(stderr, "egw-demo: no loopback in the private network namespace\n");
    return 1;
  }
  // Every file the demo writes (the control plane's run directory, the cluster's logs and
  // rendered YAML) goes to a tmpfs of its private mount namespace, so none is left behind even
  // when a signal ends the demo before its destructors run (then only the empty mount point
  // stays). Not a tmpfs over /tmp itself: the repository or the build may live there.
  std::string dir = (std::filesystem::temp_directory_path() / "egw-demo.XXXXXX").string();
  const bool own = mkdtemp(dir.data()) != nullptr;
  if (!own || mount("tmpfs", dir.c_str(), "tmpfs", 0, "mode=1777") != 0) {
    std::perror(("egw-demo: a tmpfs on " + dir + " (files stay after a signal)").c_str());
  } else {
    setenv("TMPDIR", dir.c_str(), 1);
  }
  int rc = 0;
  {
    egress::e2e::Demo demo;
    rc = demo.run();
  }
  if (own) {
    umount2(dir.c_str(), MNT_DETACH);
    rmdir(dir.c_str());
  }
  return rc;
}
