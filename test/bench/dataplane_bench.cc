// dataplane_bench: the agent's data-plane core at cluster scale, without an API server: computing
// a node's desired state from a ClusterView and programming its nftables table into the kernel
// (in a private network namespace this process makes for itself; root only).
//
//   dataplane_bench [--sources 10000,50000,100000] [--changes 200]
//
// The cluster: 500 nodes; 5,000 policies, of which 2,000 have an egress IP each (1,000 IPv4, then
// 1,000 IPv6) and 3,000 none (their pods are refused: the mark of the refusal); the egress IPs
// held by nodes n0..n19 in turn; the source pods spread over the policies and the 500 nodes, each
// of its policy's family. The node measured is n0, a holder: its table has every pick map and
// the SNAT map of what it holds. Per point (number of sources):
//   - compute: computeDesiredState of the whole view (the agent does it on each sync);
//   - first programming: the table rendered and applied whole, and the size of that transaction;
//   - RSS and its peak (VmRSS, VmHWM of /proc/self/status) after it;
//   - `changes` changes, each one source pod more in a random policy with an egress IP: the
//     view recomputed and applied (an element transaction); its latency (compute + apply, p50 and
//     p99, and the p50 of each part), its elements, and the process CPU (user + system, the
//     kernel's work on the transaction included) per change;
//   - a sync at rest (p50 of 5): the table's counters read, the same table applied and the fence
//     (fence.h) refreshed, which the agent does every second;
//   - a restart: a new applier over the same state changes nothing (the digest matches).
// Routing rules, routes and links are not measured: they grow with holder nodes and peers, not
// with sources, and need the node's devices. The informers' part of the agent (decoding the
// slices, building the ClusterView) is not in these figures either.
//
// Output per point: one line of text, then one JSON object per figure.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "pkg/cli/flag_set.h"
#include "pkg/dataplane/desired_state.h"
#include "pkg/dataplane/nft_applier.h"
#include <sched.h>
#include <sys/resource.h>

namespace {

using egress::dataplane::ClusterView;
using egress::dataplane::DataplaneConfig;
using egress::dataplane::NftApplier;
using egress::ipam::Address;
using Clock = std::chrono::steady_clock;

constexpr int kNodes = 500;
constexpr int kPolicies = 5000;
constexpr int kEgressIPs = 2000;
constexpr int kHolders = 20;

Address parse(const std::string& text) {
  return *egress::ipam::parseAddress(text);
}

// Source pod k of family v6 or v4: distinct addresses, in no node's or cluster range used here.
Address source(int k, bool v6) {
  char buf[64];
  if (v6) {
    std::snprintf(buf, sizeof buf, "fd00:244::%x:%x", k >> 16, k & 0xffff);
  } else {
    std::snprintf(buf, sizeof buf, "10.%d.%d.%d", 64 + (k >> 16), (k >> 8) & 0xff, k & 0xff);
  }
  return parse(buf);
}

bool isV6Policy(int policy) {
  return policy >= kEgressIPs / 2 && policy < kEgressIPs;
}

ClusterView cluster(int sources) {
  ClusterView v;
  v.self = "n0";
  for (int i = 0; i < kNodes; ++i) {
    egress::dataplane::NodeView n;
    n.name = "n" + std::to_string(i);
    n.ipv4 = parse("172.16." + std::to_string(i / 250) + "." + std::to_string(1 + i % 250));
    n.addresses = {*n.ipv4};
    v.nodes.push_back(n);
    v.leases.push_back({n.name, true, true, {}});
  }
  v.poolCIDRs = {*egress::ipam::parseCIDR("198.18.0.0/15"),
                 *egress::ipam::parseCIDR("fd00:e::/64")};
  for (int i = 0; i < kPolicies; ++i) {
    egress::dataplane::PolicyView p;
    p.key = "ns-" + std::to_string(i % 100) + "/policy-" + std::to_string(i);
    p.uid = "uid-" + std::to_string(i);
    if (i < kEgressIPs) {
      char e[64];
      if (isV6Policy(i)) {
        std::snprintf(e, sizeof e, "fd00:e::%x", i + 1);
      } else {
        std::snprintf(e, sizeof e, "198.18.%d.%d", i / 250, 1 + i % 250);
      }
      p.slots = {{{parse(e)}, "n" + std::to_string(i % kHolders), "", ""}};
    }
    p.destinations = {*egress::ipam::parseCIDR(isV6Policy(i) ? "2001:db8::/32" : "203.0.113.0/24")};
    v.policies.push_back(p);
  }
  for (int k = 0; k < sources; ++k) {
    auto& p = v.policies[k % kPolicies];
    const int policy = k % kPolicies;
    p.sources.push_back({source(k, isV6Policy(policy)), "n" + std::to_string(k % kNodes)});
  }
  return v;
}

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

double cpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// A field of /proc/self/status in bytes ("VmRSS", "VmHWM").
double statusBytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      std::istringstream fields(line.substr(field.size() + 1));
      double kb = 0;
      fields >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  if (v.empty()) {
    return 0;
  }
  const auto at = static_cast<size_t>(std::lround(p * static_cast<double>(v.size() - 1)));
  return v[std::min(v.size() - 1, at)];
}

void figure(int sources, const char* metric, double value) {
  std::printf(R"({"benchmark":"dataplane","sources":%d,"metric":"%s","value":%.6g})"
              "\n",
              sources, metric, value);
}

bool runPoint(int sources, int changes) {
  DataplaneConfig config;
  config.uplink = "eth0";
  auto view = cluster(sources);
  auto start = Clock::now();
  auto want = egress::dataplane::computeDesiredState(view, config);
  const double compute = seconds(Clock::now() - start);
  if (!want) {
    std::fprintf(stderr, "dataplane_bench: %s\n", want.error().c_str());
    return false;
  }
  if (!want->problems.empty()) {
    std::fprintf(stderr, "dataplane_bench: %zu problems, the first: %s\n", want->problems.size(),
                 want->problems.front().toString().c_str());
    return false;
  }
  const size_t transactionBytes = egress::dataplane::renderNftJson(want->kernel.nft).json.size();
  NftApplier nft;
  start = Clock::now();
  auto first = nft.apply(want->kernel.nft);
  const double firstApply = seconds(Clock::now() - start);
  if (!first || first->kind != NftApplier::Change::Kind::kReplaced) {
    std::fprintf(stderr, "dataplane_bench: first apply: %s\n",
                 first ? "not a replacement" : first.error().c_str());
    return false;
  }
  const double rss = statusBytes("VmRSS");
  const double peak = statusBytes("VmHWM");
  // A sync at rest, as the agent runs one every second: the counters read, the same table
  // applied (nothing changes), and the fence refreshed.
  egress::dataplane::FenceState fence;
  for (const auto& e : want->kernel.nft.egressIPs) {
    fence.known.push_back(e.ip);
  }
  fence.held = want->held;
  fence.remaining = std::chrono::seconds(5);
  std::vector<double> rests;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    auto counted = nft.counters("egw");
    auto same = nft.apply(want->kernel.nft);
    auto fenced = nft.applyFence(fence);
    rests.push_back(seconds(Clock::now() - t0));
    if (!counted || !same || same->kind != NftApplier::Change::Kind::kNone || !fenced) {
      std::fprintf(stderr, "dataplane_bench: a sync at rest: %s\n",
                   !counted  ? counted.error().c_str()
                   : !fenced ? fenced.error().c_str()
                             : "the table changed");
      return false;
    }
  }

  std::mt19937 random(42);
  std::vector<double> latencies;
  std::vector<double> computeTimes;
  std::vector<double> applyTimes;
  std::vector<double> elements;
  int next = sources;
  const double cpuBefore = cpuSeconds();
  for (int i = 0; i < changes; ++i) {
    const int policy = static_cast<int>(random() % kEgressIPs);
    view.policies[policy].sources.push_back(
        {source(next++, isV6Policy(policy)), "n" + std::to_string(random() % kNodes)});
    const auto t0 = Clock::now();
    auto changed = egress::dataplane::computeDesiredState(view, config);
    const auto t1 = Clock::now();
    auto applied = nft.apply(changed->kernel.nft);
    const auto t2 = Clock::now();
    latencies.push_back(seconds(t2 - t0));
    computeTimes.push_back(seconds(t1 - t0));
    applyTimes.push_back(seconds(t2 - t1));
    if (!applied || applied->kind != NftApplier::Change::Kind::kElements) {
      std::fprintf(stderr, "dataplane_bench: change %d: %s\n", i,
                   applied ? "not an element transaction" : applied.error().c_str());
      return false;
    }
    elements.push_back(static_cast<double>(applied->elements));
  }
  const double cpuPerChange = (cpuSeconds() - cpuBefore) / std::max(1, changes);
  auto last = egress::dataplane::computeDesiredState(view, config);
  NftApplier restarted;
  start = Clock::now();
  auto again = restarted.apply(last->kernel.nft);
  const double restart = seconds(Clock::now() - start);
  if (!again || again->kind != NftApplier::Change::Kind::kNone) {
    std::fprintf(stderr, "dataplane_bench: a restarted applier changed the table\n");
    return false;
  }
  std::printf(
      "dataplane sources=%d compute_s=%.3f first_apply_s=%.3f transaction_bytes=%zu rss_mib=%.1f "
      "peak_rss_mib=%.1f change_p50_ms=%.2f change_p99_ms=%.2f elements_per_change_max=%.0f "
      "change_compute_p50_ms=%.2f change_apply_p50_ms=%.2f cpu_per_change_ms=%.2f "
      "restart_apply_s=%.3f rest_sync_ms=%.2f\n",
      sources, compute, firstApply, transactionBytes, rss / 1048576, peak / 1048576,
      percentile(latencies, 0.5) * 1000, percentile(latencies, 0.99) * 1000,
      *std::max_element(elements.begin(), elements.end()), percentile(computeTimes, 0.5) * 1000,
      percentile(applyTimes, 0.5) * 1000, cpuPerChange * 1000, restart,
      percentile(rests, 0.5) * 1000);
  figure(sources, "compute_seconds", compute);
  figure(sources, "first_apply_seconds", firstApply);
  figure(sources, "first_transaction_bytes", static_cast<double>(transactionBytes));
  figure(sources, "rss_bytes", rss);
  figure(sources, "peak_rss_bytes", peak);
  figure(sources, "change_latency_p50_seconds", percentile(latencies, 0.5));
  figure(sources, "change_latency_p99_seconds", percentile(latencies, 0.99));
  figure(sources, "change_compute_p50_seconds", percentile(computeTimes, 0.5));
  figure(sources, "change_apply_p50_seconds", percentile(applyTimes, 0.5));
  figure(sources, "elements_per_change_max", *std::max_element(elements.begin(), elements.end()));
  figure(sources, "cpu_per_change_seconds", cpuPerChange);
  figure(sources, "restart_apply_seconds", restart);
  figure(sources, "rest_sync_seconds", percentile(rests, 0.5));
  if (auto removed = NftApplier().removeFence(); !removed) {
    std::fprintf(stderr, "dataplane_bench: %s\n", removed.error().c_str());
    return false;
  }
  if (auto removed = NftApplier().remove("egw"); !removed) {
    std::fprintf(stderr, "dataplane_bench: %s\n", removed.error().c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string points = "10000,50000,100000";
  int64_t changes = 200;
  bool help = false;
  egress::cli::FlagSet flags("dataplane_bench");
  flags.addString("sources", points, "Comma-separated numbers of source pods, one point each.");
  flags.addInt("changes", changes, "Single-pod changes timed at each point.");
  flags.addBool("help", help, "Print this help.");
  if (auto err = flags.parse(argc, argv); !err.empty() || help || changes < 1) {
    std::fprintf(help ? stdout : stderr, "%s\n%s", err.c_str(), flags.usage().c_str());
    return help ? 0 : 2;
  }
  // The kernel's tables of a network namespace of our own: nothing of the host's is touched.
  if (unshare(CLONE_NEWNET) != 0) {
    std::perror("dataplane_bench: unshare(CLONE_NEWNET) (run as root)");
    return 1;
  }
  std::istringstream list(points);
  std::string item;
  while (std::getline(list, item, ',')) {
    if (!runPoint(std::stoi(item), static_cast<int>(changes))) {
      return 1;
    }
  }
  return 0;
}
