// agent_bench: `make bench`'s data-plane phase. One egw-agent, a real process in a node's network
// namespace, against the real control plane, at cluster scale: 500 Nodes, 5,000 policies of
// which 2,000 have an egress IP (1,000 IPv4, 1,000 IPv6) held by 20 nodes, and 10,000 to
// 100,000 selected source pods spread over the nodes and policies.
//
// The cluster is DataplaneCluster's (as `make demo` and dataplane_e2e_test build it, in this
// program's own `unshare -m -n`): three node namespaces with real agents, the external echo
// server, the operator with its policy `web` on node 1. The bench then stops the operator (it
// writes the policies' EgressPolicySlices itself, as the operator would: the operator's own cost
// of turning pods into slices is operator_bench's churn figure) and the agents of nodes 2 and 3
// (so that the measured agent, node 1's, has the two cores as it would have its node), and adds:
//   - 497 Nodes without a kubelet (their InternalIPs are addresses nothing answers on): 19 of
//     them hold egress IPs, their agents' Leases renewed by the bench every 2 s;
//   - IPAMPool egw-bench (192.168.56.0/22, fd00:56::/118) for the egress IPs; policy 0's is a
//     free address of the cluster's own pool, on the underlay, so packets can show it;
//   - per policy one slice bench.p<i>.0; source k belongs to policy k % 5000 and node
//     (k + 37 * (k / 5000)) % 500, its address of the policy's family.
// Per point (number of sources), every slice written, then:
//   - first programming: node 1's agent stopped, its table deleted, started again: the time
//     from its start to its first successful sync (egw_agent_last_successful_sync_timestamp_
//     seconds), a sample of the sources checked in the kernel, its RSS and peak (VmHWM) then;
//   - churn: --rate source pods a second for --seconds, each a JSON patch adding a pod to a
//     random policy with an egress IP; per pod, the time from its PATCH to the commit of the
//     transaction that adds its address to the agent's table (NftMonitor, on the kernel's own
//     notifications); p50/p99, the agent's CPU (utime + stime) per 1,000 pods, RSS and peak;
//   - one pod added alone: the elements and bytes of its transaction.
// At the largest point, during the churn, a real pod (namespace bp1 on node 1) added to policy 0
// must leave with policy 0's egress IP; then agent 3 is started again, a held connection from a
// real pod on node 3 (bp3) runs through the tunnel to node 1 while both agents restart, and
// the restarts must change nothing in either kernel (egw_agent_kernel_changes_total 0, the
// ruleset, rules, routes and neighbours equal) and lose no line of the connection.
// Exits 1, saying what, when a figure cannot be taken or a check fails.
//
// Output per point: a line of text, then one JSON object ("figure":"agent_scale").
//
//   agent_bench [--sources 10000,50000,100000] [--rate 50] [--seconds 20] [--trace FILE]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "pkg/cli/flag_set.h"
#include "pkg/dataplane/nft_applier.h"
#include "test/bench/bench_util.h"
#include "test/bench/nft_monitor.h"
#include "test/e2e/dataplane_cluster.h"
#include "test/e2e/operator_helpers.h"
#include "test/e2e/testenv/control_plane.h"
#include "test/e2e/testenv/environment.h"
#include "test/e2e/testenv/owned_control_plane.h"
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

namespace egress::bench {
namespace {

using namespace std::chrono_literals;
using Cluster = e2e::DataplaneCluster;
using Clock = std::chrono::steady_clock;

constexpr int kNodes = 500;
constexpr int kPolicies = 5000;
constexpr int kEgressIPs = 2000;
constexpr int kHolders = 20;
constexpr const char* kSliceNs = "bench";
constexpr const char* kPool = "egw-bench";

const kube::Resource kNodeResource{"", "v1", "nodes", false};
const kube::Resource kSlices{"networking.egressgateway.dev", "v1alpha1", "egresspolicyslices",
                             false};
const kube::Resource kLeases{"coordination.k8s.io", "v1", "leases", true};

// Node i of 500: the cluster's three, then the 19 other holders, then the rest.
std::string nodeName(int i) {
  if (i < 3) {
    return Cluster::node(i + 1);
  }
  return (i < 3 + kHolders - 1 ? "bench-h" : "bench-n") + std::to_string(i);
}

std::string holderOf(int policy) {
  const int h = policy % kHolders;
  return h == 0 ? Cluster::node(1) : nodeName(2 + h);
}

bool isV6(int policy) {
  return policy >= kEgressIPs / 2 && policy < kEgressIPs;
}

std::string sourceIP(int k, bool v6) {
  char buf[64];
  if (v6) {
    // As inet_ntop (and nft) print it: no zero group before the last.
    if (k >> 16 == 0) {
      std::snprintf(buf, sizeof buf, "fd00:64::%x", k & 0xffff);
    } else {
      std::snprintf(buf, sizeof buf, "fd00:64::%x:%x", k >> 16, k & 0xffff);
    }
  } else {
    std::snprintf(buf, sizeof buf, "10.%d.%d.%d", 64 + (k >> 16), (k >> 8) & 0xff, k & 0xff);
  }
  return buf;
}

std::string sourceJson(const std::string& pod, const std::string& node, const std::string& ip) {
  return R"({"pod":")" + pod + R"(","node":")" + node + R"(","ips":[")" + ip + R"("]})";
}

// Named as a Deployment names its pods (<deployment>-<pod-template-hash>-<suffix>): longer than
// std::string keeps inline, as real names are.
std::string podName(const char* kind, int k) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s-web-7d9c8b6f5d-%06d", kind, k);
  return buf;
}

std::string sourceOf(int k) {
  const int policy = k % kPolicies;
  return sourceJson(podName("s", k), nodeName((k + 37 * (k / kPolicies)) % kNodes),
                    sourceIP(k, isV6(policy)));
}

std::string sliceName(int policy) {
  return std::string(kSliceNs) + ".p" + std::to_string(policy) + ".0";
}

std::string microTime() {
  const auto now = std::chrono::system_clock::now();
  const auto t = std::chrono::system_clock::to_time_t(now);
  const long us = static_cast<long>(std::chrono::duration_cast<std::chrono::microseconds>(
                                        now.time_since_epoch() % std::chrono::seconds(1))
                                        .count());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, us);
  return buf;
}

double wallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// A shell command's output (stdout and stderr).
std::string capture(const std::string& cmd) {
  return testenv::runCommand({"/bin/sh", "-c", cmd}).output;
}

// Node i's agent's /metrics, read inside its namespace.
std::string agentMetrics(int i) {
  return capture("ip netns exec " + Cluster::node(i) + " curl -s http://127.0.0.1:9402/metrics");
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) {
    return 0;
  }
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// A process's CPU seconds (user + system) from /proc/<pid>/stat.
double cpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = all.rfind(')');
  if (close == std::string::npos) {
    return 0;
  }
  std::istringstream fields(all.substr(close + 2));
  std::vector<std::string> f;
  for (std::string s; fields >> s;) {
    f.push_back(s);
  }
  if (f.size() < 13) {
    return 0;
  }
  // After the command: state is field 3, utime 14 and stime 15.
  return static_cast<double>(std::stoull(f[11]) + std::stoull(f[12])) /
         static_cast<double>(sysconf(_SC_CLK_TCK));
}

template <class T>
boost::asio::awaitable<void> into(boost::asio::awaitable<T> a, std::optional<T>* out) {
  out->emplace(co_await std::move(a));
}

// One request at a time on `ioc`, run to its end.
template <class T>
T runOne(boost::asio::io_context& ioc, boost::asio::awaitable<T> a) {
  std::optional<T> out;
  boost::asio::co_spawn(ioc, into(std::move(a), &out), boost::asio::detached);
  ioc.restart();
  while (!out) {
    ioc.run_one();
  }
  return std::move(*out);
}

boost::asio::awaitable<void> writeRange(kube::RestClient* client,
                                        const std::vector<std::string>* bodies, int from, int to,
                                        bool create, int* failures, int* done) {
  for (int p = from; p < to; ++p) {
    std::string error;
    if (create) {
      auto r = co_await client->create(kSlices, "", (*bodies)[p]);
      error = r ? "" : r.error().message();
    } else {
      auto r =
          co_await client->patch(kSlices, "", sliceName(p), kube::PatchType::Merge, (*bodies)[p]);
      error = r ? "" : r.error().message();
    }
    if (!error.empty()) {
      ++*failures;
      std::fprintf(stderr, "slice %s: %s\n", sliceName(p).c_str(), error.c_str());
    }
  }
  ++*done;
}

// What the agent programs on node i besides its nft table (the policy rules, routes, proxy
// neighbours and the tunnel's FDB), in a form two reads compare equal when nothing changed. The
// table is watched instead (NftMonitor): listing it through libnftables takes minutes at this
// size.
std::string kernelState(int i) {
  std::string out;
  const std::string in = "ip netns exec " + Cluster::node(i) + " ";
  for (const char* cmd :
       {"ip rule", "ip -6 rule", "ip route show table all", "ip -6 route show table all",
        "ip neigh show proxy", "ip -6 neigh show proxy", "bridge fdb show dev egw0"}) {
    out += std::string("\n## ") + cmd + "\n" + capture(in + cmd + " 2>&1");
  }
  return out;
}

// The first line where two states differ, for a failure message.
std::string firstDifference(const std::string& a, const std::string& b) {
  std::istringstream x(a);
  std::istringstream y(b);
  std::string l;
  std::string r;
  for (int n = 1;; ++n) {
    const bool more = static_cast<bool>(std::getline(x, l));
    const bool moreToo = static_cast<bool>(std::getline(y, r));
    if (!more && !moreToo) {
      return "none";
    }
    if (l != r || more != moreToo) {
      return "line " + std::to_string(n) + ": \"" + l.substr(0, 300) + "\" then \"" +
             r.substr(0, 300) + "\"";
    }
  }
}

class AgentBench {
 public:
  AgentBench(Cluster& cluster, int rate, int seconds, std::string trace)
      : cluster_(cluster), rate_(rate), seconds_(seconds), trace_(std::move(trace)) {}

  int run(const std::vector<int>& points) {
    client_ = makeClient(ioc_, testenv::controlPlane().kubeconfig());
    if (!client_) {
      return fail("no client");
    }
    if (auto error = setUp(); !error.empty()) {
      return fail(error);
    }
    for (size_t i = 0; i < points.size(); ++i) {
      if (auto error = point(points[i], i + 1 == points.size()); !error.empty()) {
        return fail(error);
      }
    }
    return 0;
  }

  ~AgentBench() {
    renewing_ = false;
    if (renewer_.joinable()) {
      renewer_.join();
    }
  }

 private:
  static int fail(const std::string& why) {
    std::fprintf(stderr, "agent_bench: %s\n", why.c_str());
    return 1;
  }

  std::string setUp() {
    // The operator would rewrite what the bench writes; the other agents would share the cores.
    cluster_.egressOperator().process().signal(SIGTERM);
    cluster_.egressOperator().process().reap(30s);
    for (int i : {2, 3}) {
      cluster_.agent(i).signal(SIGTERM);
      cluster_.agent(i).reap(30s);
    }
    for (int i = 3; i < kNodes; ++i) {
      const std::string name = nodeName(i);
      char v4[32];
      char v6[48];
      std::snprintf(v4, sizeof v4, "10.250.%d.%d", i / 250, i % 250 + 1);
      std::snprintf(v6, sizeof v6, "fd00:250::%x", i);
      const std::string body = R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + name +
                               R"("},"status":{"addresses":[{"type":"InternalIP","address":")" +
                               v4 + R"("},{"type":"InternalIP","address":")" + v6 + R"("}]}})";
      auto r = runOne(ioc_, client_->create(kNodeResource, "", body));
      if (!r && !r.error().isAlreadyExists()) {
        return "node " + name + ": " + r.error().message();
      }
      // Whatever the create kept of the status, the addresses are the status subresource's.
      auto s = runOne(ioc_, client_->patch(kNodeResource, "", name, kube::PatchType::Merge, body,
                                           kube::WriteOptions(), "status"));
      if (!s) {
        return "node " + name + "'s addresses: " + s.error().message();
      }
    }
    for (int h = 1; h < kHolders; ++h) {
      const std::string node = nodeName(2 + h);
      const std::string body = R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease",)"
                               R"("metadata":{"name":"egw-agent-)" +
                               node + R"("},"spec":{"holderIdentity":")" + node +
                               R"(","leaseDurationSeconds":6,"renewTime":")" + microTime() +
                               R"("}})";
      auto r = runOne(ioc_, client_->create(kLeases, Cluster::kLeaseNamespace, body));
      if (!r) {
        return "lease of " + node + ": " + r.error().message();
      }
    }
    renewer_ = std::thread([this] { renewLeases(); });
    if (auto applied = e2e::applyYaml(cluster_.dir() + "/bench-pool.yaml",
                                      e2e::poolYaml(kPool, {"192.168.56.0/22", "fd00:56::/118"}));
        !applied) {
      return "the bench pool: " + std::string(applied.message());
    }
    // Policy 0's egress IP: a free address of the cluster's pool (192.168.50.200/29), which the
    // echo server's replies reach on the underlay.
    for (int last = 201; last <= 206 && spare_.empty(); ++last) {
      const std::string ip = "192.168.50." + std::to_string(last);
      if (ip != cluster_.egressIP()) {
        spare_ = ip;
      }
    }
    agentPid_ = cluster_.agent(1).pid();
    // The real pod that the largest point's churn adds to policy 0.
    if (std::system(("sh " + Cluster::packetsDir() + "/pod.sh bp1 " + Cluster::node(1) + " " +
                     kPod1 + " " + Cluster::podIPv6(1, kPod1) + " >/dev/null")
                        .c_str()) != 0) {
      return "the pod bp1";
    }
    return "";
  }

  // The other holders' agents, as far as node 1's agent can tell: their Leases renewed every
  // 2 s (6 s duration), from a client of their own.
  void renewLeases() {
    boost::asio::io_context ioc;
    auto client = makeClient(ioc, testenv::controlPlane().kubeconfig());
    while (renewing_ && client) {
      for (int h = 1; h < kHolders && renewing_; ++h) {
        const std::string body = R"({"spec":{"renewTime":")" + microTime() + R"("}})";
        // A failed renewal is the next one's to make up for; a holder that stays stale shows as
        // refused addresses, not as a wrong figure.
        (void)runOne(
            ioc, client->patch(kLeases, Cluster::kLeaseNamespace, "egw-agent-" + nodeName(2 + h),
                               kube::PatchType::Merge, body));
      }
      for (int i = 0; i < 20 && renewing_; ++i) {
        std::this_thread::sleep_for(100ms);
      }
    }
  }

  std::string gatewayJson(int p) const {
    std::string ips;
    if (p < kEgressIPs) {
      char ip[48];
      if (p == 0) {
        std::snprintf(ip, sizeof ip, "%s", spare_.c_str());
      } else if (!isV6(p)) {
        std::snprintf(ip, sizeof ip, "192.168.%d.%d", 56 + (p >> 8), p & 0xff);
      } else {
        std::snprintf(ip, sizeof ip, "fd00:56::%x", p - kEgressIPs / 2 + 1);
      }
      ips = R"({"ips":[")" + std::string(ip) + R"("],"node":")" + holderOf(p) + R"(","pod":"p)" +
            std::to_string(p) + R"(-gw","podUID":"gw-)" + std::to_string(p) + R"("})";
    }
    return R"({"egressIPs":[)" + ips + R"(],"destinationCIDRs":[")" +
           (isV6(p) ? "fd00:50::100/120" : "192.168.50.96/28") + R"("]})";
  }

  // Every slice with the first `sources` pods: created the first time, their sources replaced
  // after (a merge patch replaces the list).
  std::string writeSlices(int sources) {
    std::vector<std::string> lists(kPolicies);
    for (int k = 0; k < sources; ++k) {
      auto& l = lists[k % kPolicies];
      l += (l.empty() ? "" : ",") + sourceOf(k);
    }
    std::vector<std::string> bodies(kPolicies);
    for (int p = 0; p < kPolicies; ++p) {
      const std::string spec = R"({"sources":[)" + lists[p] + "]";
      if (created_) {
        bodies[p] = R"({"spec":)" + spec + "}}";
      } else {
        bodies[p] = R"({"apiVersion":"networking.egressgateway.dev/v1alpha1",)"
                    R"("kind":"EgressPolicySlice","metadata":{"name":")" +
                    sliceName(p) + R"("},"spec":{"policy":{"namespace":")" + kSliceNs +
                    R"(","name":"p)" + std::to_string(p) + R"(","uid":"00000000-bench-4000-8000-)" +
                    std::to_string(100000000000 + p) + R"("},"gateway":)" + gatewayJson(p) + "," +
                    spec.substr(1) + "}}";
      }
    }
    constexpr int kParallel = 8;
    int failures = 0;
    int done = 0;
    const int per = (kPolicies + kParallel - 1) / kParallel;
    for (int i = 0; i < kParallel; ++i) {
      boost::asio::co_spawn(
          ioc_,
          writeRange(client_.get(), &bodies, i * per, std::min(kPolicies, (i + 1) * per), !created_,
                     &failures, &done),
          boost::asio::detached);
    }
    ioc_.restart();
    while (done < kParallel) {
      ioc_.run_one();
    }
    created_ = true;
    return failures == 0 ? "" : std::to_string(failures) + " slice writes failed";
  }

  double metric(const std::string& name) const { return e2e::metricSum(agentMetrics(1), name); }
  double procBytes(const char* field) const {
    return static_cast<double>(procStatusBytes(std::to_string(agentPid_), field));
  }

  // Node 1's agent stopped, its table deleted, `deleted` run, and the agent started again; the
  // seconds from its start to its first successful sync, or a negative number.
  double restartAgentOnAnEmptyTable(const std::function<void()>& deleted) {
    cluster_.agent(1).signal(SIGTERM);
    cluster_.agent(1).reap(60s);
    std::string error;
    std::thread([&] {
      const int target = open(("/run/netns/" + Cluster::node(1)).c_str(), O_RDONLY);
      if (target < 0 || setns(target, CLONE_NEWNET) != 0) {
        error = "cannot enter node 1";
      } else if (auto r = dataplane::NftApplier().remove("egw"); !r) {
        error = r.error();
      }
      if (target >= 0) {
        close(target);
      }
    }).join();
    if (!error.empty()) {
      std::fprintf(stderr, "agent_bench: deleting the table: %s\n", error.c_str());
      return -1;
    }
    deleted();
    const double started = wallSeconds();
    if (!cluster_.startAgent(1).empty()) {
      return -1;
    }
    agentPid_ = cluster_.agent(1).pid();
    double synced = 0;
    e2e::eventually(
        [&] {
          synced = metric("egw_agent_last_successful_sync_timestamp_seconds");
          return synced > 0;
        },
        300s);
    return synced > 0 ? synced - started : -1;
  }

  // One pod added to `policy` by a JSON patch; watched by `monitor`. The time it was sent.
  Clock::time_point addPod(int policy, const std::string& pod, const std::string& node,
                           const std::string& ip, NftMonitor& monitor, std::string* error) {
    monitor.watch(addressKey(ip));
    const std::string patch =
        R"([{"op":"add","path":"/spec/sources/-","value":)" + sourceJson(pod, node, ip) + "}]";
    const auto sent = Clock::now();
    auto r =
        runOne(ioc_, client_->patch(kSlices, "", sliceName(policy), kube::PatchType::Json, patch));
    if (!r) {
      *error = "patch " + sliceName(policy) + ": " + r.error().message();
    }
    return sent;
  }

  std::string point(int sources, bool last) {
    std::printf("== %d source pods\n", sources);
    std::fflush(stdout);
    const auto writeStart = Clock::now();
    if (auto error = writeSlices(sources); !error.empty()) {
      return error;
    }
    const double writeSeconds = std::chrono::duration<double>(Clock::now() - writeStart).count();
    // The kernel's word that a sample of the sources is in the table (listing a table of this
    // size through libnftables takes minutes).
    NftMonitor monitor("egw");
    if (auto error = monitor.start(Cluster::node(1)); !error.empty()) {
      return error;
    }
    std::vector<std::string> sample;
    for (int k = 0; k < sources; k += std::max(1, sources / 50)) {
      sample.push_back(addressKey(sourceIP(k, isV6(k % kPolicies))));
    }
    // Watched once the old agent is stopped and its table gone: what it programmed before does
    // not count.
    const double first = restartAgentOnAnEmptyTable([&] {
      for (const auto& key : sample) {
        monitor.watch(key);
      }
    });
    if (first < 0) {
      return "node 1's agent did not sync after its restart: " + cluster_.agent(1).log();
    }
    const auto missing = [&] {
      return std::count_if(sample.begin(), sample.end(),
                           [&](const std::string& key) { return !monitor.added(key); });
    };
    e2e::eventually([&] { return missing() == 0; }, 10s);
    if (missing() != 0) {
      return std::to_string(missing()) + " of " + std::to_string(sample.size()) +
             " sampled sources are not in node 1's table after its first sync (notifications "
             "lost: " +
             std::to_string(monitor.overflows()) + ")";
    }
    const double rssFirst = procBytes("VmRSS");
    const double peakFirst = procBytes("VmHWM");
    std::mt19937 rng(sources);
    std::uniform_int_distribution<int> policyDist(0, kEgressIPs - 1);
    std::uniform_int_distribution<int> nodeDist(0, kNodes - 1);
    const int changes = rate_ * seconds_;
    std::vector<std::pair<std::string, Clock::time_point>> sent;
    std::string error;
    const auto interval = std::chrono::microseconds(1000000 / rate_);
    const double cpuBefore = cpuSeconds(agentPid_);
    const auto churnStart = Clock::now();
    std::thread packets;
    std::string packetResult;
    for (int c = 0; c < changes && error.empty(); ++c) {
      std::this_thread::sleep_until(churnStart + c * interval);
      const int k = next_++;
      const int policy = policyDist(rng);
      const std::string ip = sourceIP(k, isV6(policy));
      sent.emplace_back(
          ip, addPod(policy, podName("c", k), nodeName(nodeDist(rng)), ip, monitor, &error));
      if (last && c == changes / 2) {
        // A real pod, during the churn: it must leave with policy 0's egress IP.
        const auto at = addPod(0, "bp1", Cluster::node(1), kPod1, monitor, &error);
        packets = std::thread([this, at, &packetResult] {
          std::string seen;
          const bool ok = e2e::eventually(
              [&] {
                seen = Cluster::connect("bp1", Cluster::kEchoServer);
                return seen.starts_with(spare_ + ":");
              },
              30s);
          packetResult =
              ok ? "" : "bp1 did not leave with " + spare_ + " (the echo server saw: " + seen + ")";
          packetSeconds_ = std::chrono::duration<double>(Clock::now() - at).count();
        });
      }
    }
    if (!error.empty()) {
      return error;
    }
    // Every pod in the kernel, or 30 s.
    e2e::eventually(
        [&] {
          return std::all_of(sent.begin(), sent.end(), [&](const auto& s) {
            return monitor.added(addressKey(s.first)).has_value();
          });
        },
        30s);
    const double churnSeconds = std::chrono::duration<double>(Clock::now() - churnStart).count();
    const double cpu = cpuSeconds(agentPid_) - cpuBefore;
    std::vector<double> latencies;
    for (const auto& [ip, at] : sent) {
      if (auto added = monitor.added(addressKey(ip))) {
        latencies.push_back(ms(*added - at));
      }
    }
    if (latencies.size() != sent.size()) {
      return std::to_string(sent.size() - latencies.size()) + " of " + std::to_string(sent.size()) +
             " pods never reached the kernel in 30 s";
    }
    const auto churnTxns = monitor.transactionsSince(churnStart);
    if (!trace_.empty()) {
      // Each pod's PATCH and kernel commit, and each transaction, in ms from the churn's start.
      std::ofstream out(trace_ + "." + std::to_string(sources));
      for (const auto& [ip, at] : sent) {
        out << "pod " << ms(at - churnStart) << " " << ms(*monitor.added(addressKey(ip)) - at)
            << "\n";
      }
      for (const auto& t : churnTxns) {
        out << "txn " << ms(t.at - churnStart) << " " << t.added << " " << t.removed << "\n";
      }
    }
    const double rssChurn = procBytes("VmRSS");
    const double peakChurn = procBytes("VmHWM");
    if (packets.joinable()) {
      packets.join();
      if (!packetResult.empty()) {
        return packetResult;
      }
    }

    // One pod alone, once the churn is over: its transaction.
    std::this_thread::sleep_for(2s);
    const int k = next_++;
    const std::string ip = sourceIP(k, false);
    const auto alone =
        addPod(kEgressIPs / 2 - 1, podName("a", k), nodeName(400), ip, monitor, &error);
    if (!error.empty()) {
      return error;
    }
    e2e::eventually([&] { return monitor.added(addressKey(ip)).has_value(); }, 30s);
    NftMonitor::Transaction one;
    for (const auto& t : monitor.transactionsSince(alone)) {
      if (std::find(t.watched.begin(), t.watched.end(), addressKey(ip)) != t.watched.end()) {
        one = t;
      }
    }
    if (one.added == 0) {
      return "the lone pod's transaction was not seen";
    }
    const double aloneMs = ms(*monitor.added(addressKey(ip)) - alone);
    monitor.stop();

    const double p50 = percentile(latencies, 0.50);
    const double p99 = percentile(latencies, 0.99);
    const double perThousand = cpu * 1000 / static_cast<double>(sent.size());
    std::printf(
        "[ bench ] agent at %d sources (%d nodes, %d policies, %d egress IPs): slices written "
        "in %.1f s; first programming %.2f s, RSS %.1f MiB (peak %.1f MiB); churn %zu pods in "
        "%.1f s: PATCH to kernel p50 %.0f ms, p99 %.0f ms, max %.0f ms, %zu transactions, "
        "agent CPU %.2f s per 1,000 pods; RSS after %.1f MiB (peak %.1f MiB); one pod alone: "
        "%.0f ms, %d elements added, %d removed, %zu bytes; notifications lost: %d\n",
        sources, kNodes, kPolicies, kEgressIPs, writeSeconds, first, rssFirst / (1 << 20),
        peakFirst / (1 << 20), sent.size(), churnSeconds, p50, p99,
        *std::max_element(latencies.begin(), latencies.end()), churnTxns.size(), perThousand,
        rssChurn / (1 << 20), peakChurn / (1 << 20), aloneMs, one.added, one.removed, one.bytes,
        monitor.overflows());
    std::printf(
        "{\"figure\":\"agent_scale\",\"sources\":%d,\"nodes\":%d,\"policies\":%d,"
        "\"egress_ips\":%d,\"first_programming_s\":%.3f,\"rss_first_mib\":%.1f,"
        "\"peak_first_mib\":%.1f,\"churn_pods\":%zu,\"churn_rate\":%d,\"change_p50_ms\":%.1f,"
        "\"change_p99_ms\":%.1f,\"transactions\":%zu,\"cpu_s_per_1000\":%.3f,"
        "\"rss_mib\":%.1f,\"peak_mib\":%.1f,\"alone_ms\":%.1f,\"txn_elements_added\":%d,"
        "\"txn_elements_removed\":%d,\"txn_bytes\":%zu}\n",
        sources, kNodes, kPolicies, kEgressIPs, first, rssFirst / (1 << 20), peakFirst / (1 << 20),
        sent.size(), rate_, p50, p99, churnTxns.size(), perThousand, rssChurn / (1 << 20),
        peakChurn / (1 << 20), aloneMs, one.added, one.removed, one.bytes);
    if (last) {
      std::printf(
          "[ bench ] a real pod added during the churn left with its egress IP %.1f s "
          "after its PATCH\n",
          packetSeconds_);
      if (auto error = restartsChangeNothing(); !error.empty()) {
        return error;
      }
    }
    std::fflush(stdout);
    return "";
  }

  // Agents 3 and 1 restarted over the state while a connection from node 3 through node 1 is
  // held: nothing changes in either kernel and no line is lost.
  std::string restartsChangeNothing() {
    if (auto error = cluster_.startAgent(3); !error.empty()) {
      return error;
    }
    std::string error;
    const auto v6 = Cluster::podIPv6(3, kPod3);
    if (std::system(("sh " + Cluster::packetsDir() + "/pod.sh bp3 " + Cluster::node(3) + " " +
                     kPod3 + " " + v6 + " >/dev/null")
                        .c_str()) != 0) {
      return "the pod bp3";
    }
    NftMonitor unused("egw");
    addPod(0, "bp3", Cluster::node(3), kPod3, unused, &error);
    if (!error.empty()) {
      return error;
    }
    std::string seen;
    if (!e2e::eventually(
            [&] {
              seen = Cluster::connect("bp3", Cluster::kEchoServer);
              return seen.starts_with(spare_ + ":");
            },
            120s)) {
      return "bp3 does not leave with " + spare_ + ": " + seen;
    }
    std::map<int, std::string> before;
    std::map<int, std::unique_ptr<NftMonitor>> tables;
    const auto restarts = Clock::now();
    for (int i : {1, 3}) {
      before[i] = kernelState(i);
      tables[i] = std::make_unique<NftMonitor>("egw");
      if (auto e = tables[i]->start(Cluster::node(i)); !e.empty()) {
        return e;
      }
    }
    auto held = cluster_.inNamespace(
        "bp3", {"python3", Cluster::packetsDir() + "/client.py", Cluster::kEchoServer, "hold:60:5"},
        "held");
    e2e::eventually([&] { return !held->log().empty(); }, 10s);
    for (int i : {3, 1}) {
      cluster_.agent(i).signal(SIGTERM);
      cluster_.agent(i).reap(60s);
      const double started = wallSeconds();
      if (auto e = cluster_.startAgent(i); !e.empty()) {
        return e;
      }
      double synced = 0;
      e2e::eventually(
          [&] {
            synced =
                e2e::metricSum(agentMetrics(i), "egw_agent_last_successful_sync_timestamp_seconds");
            return synced > 0;
          },
          120s);
      // Its first syncs, not only the first: three resyncs more.
      std::this_thread::sleep_for(3500ms);
      const double changes = e2e::metricSum(agentMetrics(i), "egw_agent_kernel_changes_total");
      std::printf(
          "[ bench ] agent %d restarted over the state: first sync %.2f s after its "
          "start, kernel changes %.0f\n",
          i, synced > 0 ? synced - started : -1.0, changes);
      if (synced <= 0 || changes != 0) {
        return "agent " + std::to_string(i) + "'s restart: synced " + std::to_string(synced) +
               ", kernel changes " + std::to_string(changes);
      }
    }
    for (int i : {1, 3}) {
      if (const auto after = kernelState(i); after != before[i]) {
        return "node " + std::to_string(i) + "'s kernel changed across the restarts, at " +
               firstDifference(before[i], after);
      }
      const auto txns = tables[i]->transactionsSince(restarts);
      if (!txns.empty() || tables[i]->overflows() != 0) {
        return "node " + std::to_string(i) +
               "'s table egw changed across the restarts: " + std::to_string(txns.size()) +
               " transactions, the first with " + std::to_string(txns.empty() ? 0 : txns[0].added) +
               " elements added and " + std::to_string(txns.empty() ? 0 : txns[0].objects) +
               " other changes";
      }
    }
    std::printf(
        "[ bench ] across both restarts: no transaction on table egw of nodes 1 and 3, "
        "their rules, routes, proxy neighbours and FDB unchanged\n");
    held->reap(120s);
    const std::string log = held->log();
    std::printf("[ bench ] the connection held across both restarts: %s\n",
                log.substr(log.find('\n') + 1).c_str());
    if (!log.starts_with(spare_ + ":") || log.find("\nheld ok") == std::string::npos) {
      return "the held connection: " + log;
    }
    return "";
  }

  // The real pods' addresses (pod.sh gives them routes on their nodes).
  static constexpr const char* kPod1 = "10.244.1.250";
  static constexpr const char* kPod3 = "10.244.3.250";

  Cluster& cluster_;
  int rate_;
  int seconds_;
  std::string trace_;
  boost::asio::io_context ioc_;
  std::unique_ptr<kube::RestClient> client_;
  std::atomic<bool> renewing_{true};
  std::thread renewer_;
  std::string spare_;
  pid_t agentPid_ = 0;
  bool created_ = false;
  int next_ = 1 << 17;  // churn pods: past any point's sources
  double packetSeconds_ = 0;
};

}  // namespace
}  // namespace egress::bench

int main(int argc, char** argv) {
  std::string points = "10000,50000,100000";
  int64_t rate = 50;
  int64_t seconds = 20;
  std::string trace;
  bool help = false;
  egress::cli::FlagSet flags("agent_bench");
  flags.addString("sources", points, "Comma-separated numbers of source pods, one point each.");
  flags.addInt("rate", rate, "Source pods added per second during the churn.");
  flags.addInt("seconds", seconds, "How long the churn lasts at each point.");
  flags.addString("trace", trace,
                  "Write each churn pod's latency and each transaction to <trace>.<sources>.");
  flags.addBool("help", help, "Print this help.");
  if (auto err = flags.parse(argc, argv); !err.empty() || help || rate < 1 || seconds < 1) {
    std::fprintf(help ? stdout : stderr, "%s\n%s", err.c_str(), flags.usage().c_str());
    return help ? 0 : 2;
  }
  // A line at a time: the figures of a point stay even if a later step fails or is killed.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::vector<int> list;
  std::istringstream in(points);
  for (std::string item; std::getline(in, item, ',');) {
    list.push_back(std::stoi(item));
  }
  if (geteuid() != 0) {
    std::fprintf(stderr,
                 "agent_bench needs root: network namespaces and egw-agent with "
                 "NET_ADMIN in them\n");
    return 1;
  }
  if (!egress::e2e::DataplaneCluster::reexecInPrivateNamespace()) {
    std::fprintf(stderr, "agent_bench: no loopback in the private network namespace\n");
    return 1;
  }
  // Its files on a tmpfs of the private mount namespace, as egw-demo does: nothing stays.
  std::string dir = (std::filesystem::temp_directory_path() / "agent-bench.XXXXXX").string();
  const bool own = mkdtemp(dir.data()) != nullptr;
  if (own && mount("tmpfs", dir.c_str(), "tmpfs", 0, "mode=1777") == 0) {
    setenv("TMPDIR", dir.c_str(), 1);
  }
  int rc = 1;
  if (auto error = egress::testenv::startOwnedControlPlane(
          egress::e2e::DataplaneCluster::controlPlaneOptions());
      !error.empty()) {
    std::fprintf(stderr, "agent_bench: the control plane: %s\n", error.c_str());
  } else {
    egress::e2e::DataplaneCluster cluster;
    if (auto e = cluster.start(); !e.empty()) {
      std::fprintf(stderr, "agent_bench: the cluster: %s\n", e.c_str());
    } else {
      egress::bench::AgentBench bench(cluster, static_cast<int>(rate), static_cast<int>(seconds),
                                      trace);
      rc = bench.run(list);
    }
  }
  egress::testenv::stopOwnedControlPlane();
  if (own) {
    umount2(dir.c_str(), MNT_DETACH);
    rmdir(dir.c_str());
  }
  return rc;
}
