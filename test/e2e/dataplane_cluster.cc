#include "test/e2e/dataplane_cluster.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <yaml-cpp/yaml.h>

#include "test/e2e/testenv/environment.h"
#include <fcntl.h>
#include <nftables/libnftables.h>
#include <sched.h>
#include <unistd.h>

// LeakSanitizer (make test-asan) in the programs that link this file: libnftables prints
// iptables-nft's rules (networkState() lists the CNI's MASQUERADE) through libxtables, and both
// leak what they allocate for each xt target they translate (17 leaks of 192 + 312 bytes in
// helm_e2e_test's 9 calls). The leak is theirs, so it is suppressed here. The agent and the nft
// appliers' own tests are other programs, which still check for leaks.
// NOLINTNEXTLINE(bugprone-reserved-identifier,readability-identifier-naming): the sanitizer's name
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libxtables.so\nleak:libnftables.so\n";
}

namespace egress::e2e {
namespace {

using namespace std::chrono_literals;
using testenv::controlPlane;

// A shell command; "" or what it printed when it failed.
std::string run(const std::string& cmd) {
  auto r = testenv::runCommand({"/bin/sh", "-c", cmd});
  return r.ok() ? "" : cmd + ": exit " + std::to_string(r.exitCode) + ": " + r.output;
}

std::string kubectlOut(const std::vector<std::string>& args) {
  auto r = controlPlane().kubectl(args);
  return r.ok() ? r.output : "";
}

// The last `n` lines of a log, for an error message.
std::string tail(const std::string& log, size_t n = 30) {
  size_t at = log.size();
  for (size_t lines = 0; at > 0 && lines <= n;) {
    at = log.rfind('\n', at - 1);
    if (at == std::string::npos) {
      return log;
    }
    ++lines;
  }
  return log.substr(at + 1);
}

}  // namespace

const std::vector<std::string>& DataplaneCluster::poolCIDRs() {
  static const std::vector<std::string> kCIDRs{"192.168.50.200/29", "fd00:50::200/125"};
  return kCIDRs;
}

bool DataplaneCluster::reexecInPrivateNamespace() {
  if (std::getenv("EGW_IN_NETNS") != nullptr) {
    return std::system("ip link set lo up") == 0;
  }
  std::ifstream in("/proc/self/cmdline");
  std::vector<std::string> args;
  for (std::string a; std::getline(in, a, '\0');) {
    args.push_back(a);
  }
  setenv("EGW_IN_NETNS", "1", 1);
  setenv("EGRESS_TESTENV_NODES", "3", 1);
  setenv("EGRESS_TESTENV_ADVERTISE_ADDRESS", kApiAddress, 1);
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    std::_Exit(2);
  }
  self[n] = '\0';
  std::vector<std::string> cmd{"unshare", "-m", "-n", "--", self};
  cmd.insert(cmd.end(), args.begin() + (args.empty() ? 0 : 1), args.end());
  std::vector<char*> argv;
  argv.reserve(cmd.size() + 1);
  for (auto& a : cmd) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  execvp("unshare", argv.data());
  std::perror("exec unshare");  // unshare is util-linux (hack/install-deps.sh)
  std::_Exit(2);
}

testenv::ControlPlaneOptions DataplaneCluster::controlPlaneOptions() {
  testenv::ControlPlaneOptions options;
  options.nodes = 3;
  options.advertiseAddress = kApiAddress;
  return options;
}

bool DataplaneCluster::reexecTestBinaryInPrivateNamespace() {
  std::ifstream in("/proc/self/cmdline");
  for (std::string a; std::getline(in, a, '\0');) {
    if (a.starts_with("--gtest_list_tests")) {
      return false;
    }
  }
  return reexecInPrivateNamespace();
}

std::string DataplaneCluster::node(int i) {
  return "egress-node-" + std::to_string(i);
}

std::string DataplaneCluster::nodeAddress(int i) {
  return "192.168.50.1" + std::to_string(i);
}

std::string DataplaneCluster::nodeAddress6(int i) {
  return "fd00:50::1" + std::to_string(i);
}

std::string DataplaneCluster::podIPv6(int nodeIndex, const std::string& ipv4) {
  return "fd00:244:" + std::to_string(nodeIndex) + "::" + ipv4.substr(ipv4.rfind('.') + 1);
}

const std::string& DataplaneCluster::packetsDir() {
  static const std::string kDir = EGRESS_PACKETS_DIR;
  return kDir;
}

std::string DataplaneCluster::connect(const std::string& pod, const std::string& host,
                                      const std::string& mode) {
  std::vector<std::string> argv{"ip", "netns", "exec", pod, "python3", packetsDir() + "/client.py",
                                host};
  std::istringstream words(mode);  // "- 30080": MODE and PORT
  for (std::string w; words >> w;) {
    argv.push_back(w);
  }
  auto r = testenv::runCommand(argv);
  std::string out = r.output;
  while (!out.empty() && out.back() == '\n') {
    out.pop_back();
  }
  return out;
}

DataplaneCluster::DataplaneCluster() = default;
DataplaneCluster::~DataplaneCluster() = default;

std::string DataplaneCluster::createNodesAndPods() {
  if (tmp_.path().empty()) {
    return "no temporary directory";
  }
  const std::string& packets = packetsDir();
  for (const std::string& cmd :
       {"EGW_NODE_PREFIX=egress-node- EGW_PODS=0 sh " + packets + "/topology.sh",
        std::string("ip link add egw-ul type veth peer name v-host netns ul && ip -n ul link set "
                    "v-host master br0 up && ip addr add ") +
            kApiAddress + "/24 dev egw-ul && ip link set egw-ul up"}) {
    if (auto error = run(cmd); !error.empty()) {
      return error;
    }
  }
  echo_ = inNamespace("ext", {"python3", packets + "/echo.py", kEchoLog}, "echo");
  if (!echo_->error().empty()) {
    return "the echo server: " + echo_->error();
  }
  // The test kubelet never rewrites a Node's addresses: these stay what the agents read.
  for (int i = 1; i <= 3; ++i) {
    const std::string n = node(i);
    const std::string patch = R"({"status":{"addresses":[{"type":"InternalIP","address":")" +
                              nodeAddress(i) + R"("},{"type":"InternalIP","address":")" +
                              nodeAddress6(i) + R"("},{"type":"Hostname","address":")" + n +
                              R"("}]}})";
    auto r = controlPlane().kubectl(
        {"patch", "node", n, "--subresource=status", "--type=merge", "-p", patch});
    if (!r.ok()) {
      return "node " + n + "'s addresses: " + r.output;
    }
  }
  if (auto r =
          controlPlane().kubectl({"label", "node", node(1), std::string(kGatewayLabel) + "=true"});
      !r.ok()) {
    return "the gateway label: " + r.output;
  }
  if (auto error = installCrds(); !error.empty()) {
    return error;
  }
  for (const char* ns : {kNamespace, kLeaseNamespace}) {
    if (auto error = controlPlane().createNamespace(ns); !error.empty()) {
      return error;
    }
  }

  std::string pods;
  for (const auto& p : kPods) {
    pods += std::string("---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: ") + p.name +
            "\n  namespace: " + kNamespace + "\n  labels: {app: " + p.app +
            "}\nspec:\n  nodeName: " + node(p.node) +
            "\n  containers: [{name: c, image: example.invalid/app:1}]\n";
  }
  if (auto applied = applyYaml(tmp_.path() + "/pods.yaml", pods); !applied) {
    return applied.message();
  }
  for (const auto& p : kPods) {
    std::string ip;
    if (!eventually(
            [&] {
              ip = kubectlOut(
                  {"get", "pod", "-n", kNamespace, p.name, "-o", "jsonpath={.status.podIP}"});
              return !ip.empty();
            },
            60s)) {
      return std::string("pod ") + p.name + " got no IP from the test kubelet";
    }
    const std::string ip6 = podIPv6(p.node, ip);
    auto r = controlPlane().kubectl(
        {"patch", "pod", "-n", kNamespace, p.name, "--subresource=status", "--type=merge", "-p",
         R"({"status":{"podIPs":[{"ip":")" + ip + R"("},{"ip":")" + ip6 + R"("}]}})"});
    if (!r.ok()) {
      return std::string("pod ") + p.name + "'s IPs: " + r.output;
    }
    if (auto error =
            run("sh " + packets + "/pod.sh " + p.name + " " + node(p.node) + " " + ip + " " + ip6);
        !error.empty()) {
      return error;
    }
  }
  return "";
}

std::string DataplaneCluster::prepareAgents() {
  // The agents reach the API server from the underlay: the admin kubeconfig, another address.
  std::ifstream in(controlPlane().kubeconfig());
  std::stringstream text;
  text << in.rdbuf();
  std::string kc = text.str();
  const std::string loopback = "https://127.0.0.1:";
  const auto at = kc.find(loopback);
  if (at == std::string::npos) {
    return "the admin kubeconfig names no " + loopback + " server";
  }
  kc.replace(at, loopback.size(), std::string("https://") + kApiAddress + ":");
  agentKubeconfig_ = tmp_.path() + "/agent.kubeconfig";
  std::ofstream(agentKubeconfig_) << kc;
  return renderChartAgent();
}

std::string DataplaneCluster::tokenKubeconfig(const std::string& token, const std::string& name) {
  try {
    YAML::Node kc = YAML::LoadFile(agentKubeconfig_);
    for (auto user : kc["users"]) {
      user["user"] = YAML::Node(YAML::NodeType::Map);
      user["user"]["token"] = token;
    }
    std::string path = tmp_.path() + "/" + name + ".kubeconfig";
    std::ofstream(path) << YAML::Dump(kc) << "\n";
    return path;
  } catch (const YAML::Exception& e) {
    return "";
  }
}

std::string DataplaneCluster::startAgents() {
  if (auto error = prepareAgents(); !error.empty()) {
    return error;
  }
  for (int i = 1; i <= 3; ++i) {
    auto init = chartInit_;
    init.insert(init.begin(), {"ip", "netns", "exec", node(i)});
    auto r = testenv::runCommand(init);
    if (r.exitCode != 0) {
      return "the chart's init container on " + node(i) + ": " + r.output;
    }
    if (auto error = startAgent(i); !error.empty()) {
      return error;
    }
  }
  return "";
}

std::string DataplaneCluster::startOperator(const OperatorStart& how) {
  std::string config;
  if (how.applyOperatorConfig) {
    config = (how.operatorConfigYaml.empty()
                  ? e2e::operatorConfigYaml("") + "  dataplane:\n    agent: true\n"
                  : how.operatorConfigYaml) +
             "---\n";
  }
  objectsYaml_ = poolYaml(kPool, poolCIDRs()) + "---\n" + config +
                 "apiVersion: networking.egressgateway.dev/v1alpha1\n"
                 "kind: EgressGatewayPolicy\nmetadata:\n  name: " +
                 kPolicy + "\n  namespace: " + kNamespace +
                 "\nspec:\n  podSelector:\n    matchLabels: {app: web}\n"
                 "  destinationCIDRs: [192.168.50.96/28, fd00:50::100/120]\n"
                 "  excludedCIDRs: [192.168.50.101/32, fd00:50::101/128]\n"
                 "  egressIP: {pool: " +
                 kPool +
                 ", ipFamily: DualStack}\n"
                 "  gateway:\n    replicas: 1\n    nodeSelector: {" +
                 kGatewayLabel + ": \"true\"}\n";
  if (auto applied = applyYaml(tmp_.path() + "/objects.yaml", objectsYaml_); !applied) {
    return applied.message();
  }
  operator_ = std::make_unique<Operator>(
      tmp_.path(), "operator",
      std::vector<std::string>{"--agent-lease-namespace=" + how.agentLeaseNamespace},
      OperatorLaunch{.wrapper = {"/usr/bin/setpriv", "--pdeathsig", "KILL", "--"}});
  if (!operator_->process().error().empty()) {
    return "the operator: " + operator_->process().error();
  }
  if (!eventually(
          [&] {
            const auto ps = policies(kNamespace);
            const auto web = ps.find(kPolicy);
            for (const auto& ip :
                 web == ps.end() ? std::vector<std::string>{} : web->second.egressIPs) {
              (ip.find(':') == std::string::npos ? egressIP_ : egressIP6_) = ip;
            }
            return !egressIP_.empty() && !egressIP6_.empty();
          },
          120s)) {
    return std::string("policy ") + kPolicy +
           " has no egress IPs of both families; operator log:\n" +
           tail(operator_->process().log());
  }
  if (!eventually([&] { return connect("p3", kEchoServer).starts_with(egressIP_ + ":"); }, 120s)) {
    std::string logs;
    for (const int i : {3, 1}) {
      if (agents_.contains(i)) {
        logs += "\nagent " + std::to_string(i) + ":\n" + tail(agents_.at(i)->log());
      }
    }
    return "p3's connections do not leave with " + egressIP_ + ": " + connect("p3", kEchoServer) +
           logs;
  }
  return "";
}

std::unique_ptr<testenv::ChildProcess> DataplaneCluster::inNamespace(const std::string& ns,
                                                                     std::vector<std::string> argv,
                                                                     const std::string& name) {
  argv.insert(argv.begin(),
              {"/usr/bin/setpriv", "--pdeathsig", "KILL", "--", "ip", "netns", "exec", ns});
  return std::make_unique<testenv::ChildProcess>(
      argv, tmp_.path() + "/" + name + "-" + std::to_string(++started_) + ".log");
}

// The chart's agent DaemonSet, rendered by helm: its init container's command (run in each
// node's namespace before the agent starts) and its container's capabilities (the only ones the
// agents here get). The agents are run as the chart's securityContext says only if it drops
// every capability and forbids privilege escalation, as startAgent() does.
std::string DataplaneCluster::renderChartAgent() {
  const std::string h = tmp_.path() + "/helm";
  const std::string rendered = tmp_.path() + "/agent-daemonset.yaml";
  // stdout alone is the YAML (helm warns on stderr).
  auto r = testenv::runCommand(
      {"/bin/sh", "-c", "exec \"$0\" \"$@\" > " + rendered, controlPlane().dir() + "/bin/helm",
       "template", "egw", testenv::sourceDir() + "/deploy/helm/egress-gateway-operator", "--set",
       "agent.enabled=true", "--show-only", "templates/agent-daemonset.yaml"},
      {"HELM_CACHE_HOME=" + h + "/cache", "HELM_CONFIG_HOME=" + h + "/config",
       "HELM_DATA_HOME=" + h + "/data"});
  if (r.exitCode != 0) {
    return "helm template: " + r.output;
  }
  try {
    const YAML::Node ds = YAML::LoadFile(rendered);
    const YAML::Node spec = ds["spec"]["template"]["spec"];
    if (spec["initContainers"].size() != 1) {
      return "the chart's agent has " + std::to_string(spec["initContainers"].size()) +
             " init containers, not 1";
    }
    chartInit_ = spec["initContainers"][0]["command"].as<std::vector<std::string>>();
    const YAML::Node sc = spec["containers"][0]["securityContext"];
    if (sc["capabilities"]["drop"][0].as<std::string>() != "ALL" ||
        sc["allowPrivilegeEscalation"].as<bool>()) {
      return "the chart's agent keeps capabilities or privilege escalation:\n" + YAML::Dump(sc);
    }
    chartCaps_ = "-all";
    for (const auto& c : sc["capabilities"]["add"]) {
      std::string name = c.as<std::string>();
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char ch) { return std::tolower(ch); });
      chartCaps_ += ",+" + name;
    }
  } catch (const YAML::Exception& e) {
    return "the chart's agent DaemonSet (" + rendered + "): " + e.what();
  }
  return "";
}

// As the chart runs it: /proc/sys read-only (an unprivileged container's), only the chart's
// capabilities (root's permitted set is the bounding set), no privilege escalation.
std::unique_ptr<testenv::ChildProcess> DataplaneCluster::confinedAgent(
    int i, std::vector<std::string> args, const std::string& name) {
  std::vector<std::string> argv = {
      "unshare",
      "-m",
      "--propagation",
      "private",
      "/bin/sh",
      "-ec",
      "mount --bind /proc/sys /proc/sys; mount -o remount,bind,ro /proc/sys; "
      "exec setpriv --no-new-privs --inh-caps=-all --bounding-set=" +
          chartCaps_ + " -- \"$@\"",
      "agent",
      EGRESS_AGENT_BINARY};
  if (const char* wrapper = std::getenv("EGW_BENCH_AGENT_WRAPPER");
      wrapper != nullptr && *wrapper != '\0' && i == 1) {
    argv.back() = wrapper;
    argv.push_back(EGRESS_AGENT_BINARY);
  }
  argv.insert(argv.end(), args.begin(), args.end());
  return inNamespace(node(i), std::move(argv), name);
}

std::string DataplaneCluster::startAgent(int i) {
  agents_[i] = confinedAgent(
      i,
      {"--kubeconfig=" + agentKubeconfig_, "--node-name=" + node(i),
       std::string("--lease-namespace=") + kLeaseNamespace, "--metrics-bind-address=127.0.0.1:9402",
       "--health-probe-bind-address=127.0.0.1:9403"},
      "agent-" + std::to_string(i));
  return agents_[i]->error().empty() ? ""
                                     : "agent " + std::to_string(i) + ": " + agents_[i]->error();
}

std::string DataplaneCluster::networkState(int i) {
  // `nft list ruleset` as libnftables prints it (no nft command is needed), from a thread that
  // enters the node's namespace and leaves it again.
  std::string ruleset;
  std::thread([&] {
    const int target = open(("/run/netns/" + node(i)).c_str(), O_RDONLY | O_CLOEXEC);
    if (target < 0 || setns(target, CLONE_NEWNET) != 0) {
      ruleset = "error: cannot enter " + node(i);
    } else if (nft_ctx* ctx = nft_ctx_new(NFT_CTX_DEFAULT); ctx == nullptr) {
      ruleset = "error: nft_ctx_new";
    } else {
      nft_ctx_buffer_output(ctx);
      nft_ctx_buffer_error(ctx);
      const int rc = nft_run_cmd_from_buffer(ctx, "list ruleset");
      ruleset = rc == 0 ? nft_ctx_get_output_buffer(ctx)
                        : std::string("error: ") + nft_ctx_get_error_buffer(ctx);
      nft_ctx_free(ctx);
    }
    if (target >= 0) {
      close(target);
    }
  }).join();
  // What follows a counter goes too: the CNI's rules are iptables-nft's, whose xt MASQUERADE
  // target libnftables prints through libxtables, which in one process prints it as
  // `masquerade` one time and as nothing ("XT target MASQUERADE not found") the next.
  static const std::regex kCounts(R"(counter packets \d+ bytes \d+.*)");
  std::string out = "## nft list ruleset\n" +
                    std::regex_replace(ruleset, kCounts, "counter packets N bytes N ...");
  const std::string in = "ip netns exec " + node(i) + " ";
  for (const char* cmd :
       {"ip rule", "ip -6 rule", "ip route show table all", "ip -6 route show table all",
        "ip neigh show proxy", "ip -6 neigh show proxy", "ip -o link show | cut -d' ' -f2"}) {
    out +=
        std::string("\n## ") + cmd + "\n" + testenv::runCommand({"/bin/sh", "-c", in + cmd}).output;
  }
  return out;
}

std::pair<std::string, std::string> DataplaneCluster::holder() {
  for (const auto& [name, p] : gatewayPods(kNamespace, kPolicy)) {
    if (!p.holds.empty() && !p.deleting) {
      return {name, p.node};
    }
  }
  return {};
}

}  // namespace egress::e2e
