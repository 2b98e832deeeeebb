// operator_bench: the operator's cold start, measured against a real control plane that already
// holds the pods (make bench seeds 10,000 with informer_bench --create). It creates the pools,
// the OperatorConfig and the policies (one gateway replica each; a few select the seeded pods),
// starts the egress-operator binary, and prints:
//   list_pods        what the pod informer's first LIST transfers, measured on the bench's own
//                    LIST of the same collection just before: wire bytes and JSON bytes;
//   time_to_synced   from the process start until /readyz answers (every informer synced);
//   time_to_ready    until every policy reports Ready=True (gateways Available, IPs held);
//   time_to_quiet    until the operator has made no write for 10 s: the Events it recorded
//                    on the way are written by one writer in order (as client-go's broadcaster
//                    does), so their tail outlasts the last status write on a busy server;
//   writes_per_policy  the operator's POST/PUT/PATCH/DELETE requests (rest_client_requests_total)
//                    until quiet, divided by the policies, and by verb (at Ready and at quiet);
//                    and the egressgateway controller's reconciles per policy meanwhile;
//   server_writes_until_quiet  every writer's requests in that time by verb and resource, as the
//                    API server counts them (apiserver_request_total): which of the operator's
//                    writes go where, and what the rest of the control plane writes meanwhile;
//   rss              the operator's resident memory (process_resident_memory_bytes) 3 s after
//                    quiet (one round of the Manager's heap release past the burst: the bench
//                    runs it with --heap-release-period=2s); and per cached pod: a restart's
//                    (every policy Ready) over the RSS of another restart without the seeded
//                    pods, over the difference in cached pods;
//   peak_rss         the most the operator was resident from its start until then (VmHWM).
// Then 60 s of steady state after quiet: writes made meanwhile (the target is 0). Then churn:
// --churn label flips, paced at --churn-rate, of --churn-pods pods bound to the fake nodes, each
// moving a pod into or out of the churn policy's selector; the latency from each flip's PATCH to
// the update of the policy's EgressPolicySlice that reflects it (matched by its sources), p50/p99,
// and the operator's CPU seconds (process_cpu_seconds_total) and policy reconciles per 1,000
// flips. Then a restart,
// and, with the operator stopped, the API server's ceiling: the operator's POSTs, PUTs and
// PATCHes until quiet sent again by 16 concurrent workers (ceiling()), and convergence time over
// that time. Then the scale curve (--scale-curve): a fresh operator at each seeded-pod count,
// first up from the seeded pods, then down, and last without any, the baseline (scaleCurve()).
// Then failover on the baseline: two replicas with leader election (15/10/2 s), the leader
// SIGKILLed, then (a fresh pair) SIGTERMed: when the other holds the Lease, and when a policy
// change made at the signal reaches its EgressPolicySlice. Last (--floor-deployments), with the
// operator stopped, the cluster's own floor: as many Deployments like the gateways' created
// straight through the API server, timed until every one is Available (deploymentFloor()); the
// policies cannot be Ready before their Deployments are, so convergence over this floor is what the
// operator adds to what the control plane needs anyway.
// With --namespaces N, policy i and the seeded pods of ReplicaSet r live in namespace
// <namespace>-<i % N> and <namespace>-<r % N> (BenchNamespaces).
//
//   operator_bench --kubeconfig K --operator build/cmd/egress-operator/egress-operator
//                  --namespace bench --namespaces 100 --policies 1000 --pools 20
//                  [--floor-deployments 1000]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "pkg/cli/flag_set.h"
#include "test/bench/bench_util.h"
#include "test/e2e/testenv/child_process.h"
#include "test/e2e/testenv/loopback.h"
#include "test/testutil/run_sync.h"
#include <signal.h>
#include <unistd.h>

namespace egress::bench {
namespace {

using namespace std::chrono_literals;

const kube::Resource kPools{"networking.egressgateway.dev", "v1alpha1", "ipampools", false};
const kube::Resource kConfigs{"networking.egressgateway.dev", "v1alpha1", "operatorconfigs", false};
const kube::Resource kPolicies{"networking.egressgateway.dev", "v1alpha1", "egressgatewaypolicies",
                               true};
const kube::Resource kPodsResource{"", "v1", "pods", true};
const kube::Resource kConfigMaps{"", "v1", "configmaps", true};
const kube::Resource kSlices{"networking.egressgateway.dev", "v1alpha1", "egresspolicyslices",
                             false};
const kube::Resource kNodes{"", "v1", "nodes", false};
const kube::Resource kEvents{"", "v1", "events", true};
const kube::Resource kDeployments{"apps", "v1", "deployments", true};

// The churn policy (ChurnOptions::policy) selects the churn pods whose app label is kChurnIn.
constexpr const char* kChurnIn = "bench-churn-in";
// Policies 0..n-1 select the seeded pods of their namespace: one per namespace, or the first 10
// in a single namespace. Policy n is the churn policy.
int selectingPolicies(const BenchNamespaces& ns) {
  return ns.namespaces > 1 ? ns.namespaces : 10;
}
constexpr const char* kChurnOut = "bench-churn-out";
// The churn pods' ReplicaSets are numbered after any the seeded pods use.
constexpr int kChurnReplicaSets = 1'000'000;

// The value of every sample of `name` whose line contains `filter`, summed.
double metric(const std::string& text, const std::string& name, const std::string& filter = "") {
  double sum = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, name.size(), name) == 0 &&
        (line.size() > name.size() && (line[name.size()] == '{' || line[name.size()] == ' ')) &&
        line.find(filter) != std::string::npos) {
      sum += std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return sum;
}

// The egressgateway controller's reconciles, whatever their result.
double policyReconciles(const std::string& m) {
  return metric(m, "controller_runtime_reconcile_total", "controller=\"egressgateway\"");
}

double writes(const std::string& m, const std::string& verb) {
  return metric(m, "rest_client_requests_total", "method=\"" + verb + "\"");
}

double allWrites(const std::string& m) {
  return writes(m, "POST") + writes(m, "PUT") + writes(m, "PATCH") + writes(m, "DELETE");
}

// A label's value in one sample line of the Prometheus text format ("" if absent).
std::string labelValue(const std::string& line, const std::string& name) {
  const std::string key = name + "=\"";
  size_t at = line.find(key);
  while (at != std::string::npos && at > 0 && line[at - 1] != '{' && line[at - 1] != ',') {
    at = line.find(key, at + 1);  // "resource=" inside "subresource="
  }
  if (at == std::string::npos) {
    return "";
  }
  const size_t from = at + key.size();
  return line.substr(from, line.find('"', from) - from);
}

// Every writer's requests as the API server counts them (apiserver_request_total), keyed
// "VERB resource[/subresource]", and their 409s again under the key plus " 409": the operator's
// writes by resource, and the rest of the control plane's, which the operator's own
// rest_client_requests_total cannot tell apart.
std::map<std::string, double> serverWrites(boost::asio::io_context& ioc, kube::RestClient& client) {
  std::map<std::string, double> out;
  auto r = testutil::runSync(ioc, client.raw("GET", "/metrics"));
  if (!r || r->status != 200) {
    std::fprintf(stderr, "the API server's /metrics: %s\n",
                 r ? std::to_string(r->status).c_str() : r.error().message().c_str());
    return out;
  }
  static const std::set<std::string> kWriteVerbs = {"POST",  "PUT",    "PATCH",
                                                    "APPLY", "DELETE", "DELETECOLLECTION"};
  std::istringstream in(r->body);
  std::string line;
  const std::string name = "apiserver_request_total{";
  while (std::getline(in, line)) {
    if (line.compare(0, name.size(), name) != 0) {
      continue;
    }
    const std::string verb = labelValue(line, "verb");
    if (kWriteVerbs.count(verb) == 0) {
      continue;
    }
    const std::string sub = labelValue(line, "subresource");
    const std::string key =
        verb + " " + labelValue(line, "resource") + (sub.empty() ? "" : "/" + sub);
    const double v = std::stod(line.substr(line.rfind(' ') + 1));
    out[key] += v;
    if (labelValue(line, "code") == "409") {
      out[key + " 409"] += v;
    }
  }
  return out;
}

// after - before, the keys that grew, printed as one line and one JSON figure.
void printServerWrites(const char* figure, const std::map<std::string, double>& before,
                       const std::map<std::string, double>& after, int policies) {
  std::string line;
  std::string json;
  for (const auto& [key, v] : after) {
    const auto it = before.find(key);
    const double d = v - (it == before.end() ? 0 : it->second);
    if (d <= 0) {
      continue;
    }
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s%s %.0f", line.empty() ? "" : ", ", key.c_str(), d);
    line += buf;
    std::snprintf(buf, sizeof buf, "%s\"%s\":%.0f", json.empty() ? "" : ",", key.c_str(), d);
    json += buf;
  }
  std::printf("%s: policies=%d every writer's: %s\n", figure, policies, line.c_str());
  std::printf("{\"figure\":\"%s\",\"policies\":%d,\"requests\":{%s}}\n", figure, policies,
              json.c_str());
}

// Every item of a paged LIST (of those matching `labelSelector`, if given).
template <class F>
bool forEachItem(boost::asio::io_context& ioc, kube::RestClient& client, const kube::Resource& r,
                 const std::string& ns, F&& f, const std::string& labelSelector = "") {
  std::string token;
  do {
    kube::ListOptions opts;
    opts.limit = 500;
    opts.labelSelector = labelSelector;
    opts.continueToken = token;
    auto page = testutil::runSync(ioc, client.list(r, ns, opts));
    if (!page) {
      std::fprintf(stderr, "list: %s\n", page.error().message().c_str());
      return false;
    }
    for (const auto& item : (*page)["items"].GetArray()) {
      f(item);
    }
    token.clear();
    if (page->HasMember("metadata") && (*page)["metadata"].HasMember("continue")) {
      token = (*page)["metadata"]["continue"].GetString();
    }
  } while (!token.empty());
  return true;
}

bool isReady(const rapidjson::Value& policy) {
  if (!policy.HasMember("status") || !policy["status"].HasMember("conditions")) {
    return false;
  }
  for (const auto& c : policy["status"]["conditions"].GetArray()) {
    if (std::string(c["type"].GetString()) == "Ready") {
      return std::string(c["status"].GetString()) == "True";
    }
  }
  return false;
}

// The operator's log: /tmp/operator_bench.<pid><suffix>.log, so that benches run at the same time
// from other worktrees on this machine do not write into each other's logs.
std::string logPath(const std::string& suffix) {
  return "/tmp/operator_bench." + std::to_string(getpid()) + suffix + ".log";
}

struct ColdStart {
  std::unique_ptr<testenv::ChildProcess> op;
  int metricsPort = 0;
  double synced = -1;   // seconds from the process start until /readyz answers
  double ready = -1;    // ... until every policy is Ready
  double quiet = -1;    // ... until no write for kQuiet
  std::string atReady;  // /metrics when every policy is Ready
  std::string metrics;  // /metrics once quiet
  double rss = 0;
  // The most it was resident at any time until then (VmHWM): the convergence burst's peak.
  double peakRss = 0;
  int cachedPods = 0;  // the pods in the cluster, all of which the operator caches
};

// Starts the operator and waits until it is ready and every policy is Ready, then lets the
// batched pool and summary recounts land.
std::optional<ColdStart> coldStart(boost::asio::io_context& ioc, kube::RestClient& client,
                                   const std::string& binary, const std::string& kubeconfig,
                                   int policies, int workers) {
  ColdStart run;
  run.metricsPort = testenv::freeLoopbackPort();
  const int probePort = testenv::freeLoopbackPort();
  const auto start = std::chrono::steady_clock::now();
  run.op = std::make_unique<testenv::ChildProcess>(
      std::vector<std::string>{
          binary, "--kubeconfig=" + kubeconfig,
          "--metrics-bind-address=127.0.0.1:" + std::to_string(run.metricsPort),
          "--health-probe-bind-address=127.0.0.1:" + std::to_string(probePort),
          "--workers=" + std::to_string(workers), "--kube-api-qps=-1", "--heap-release-period=2s"},
      logPath(""));
  if (!run.op->error().empty()) {
    std::fprintf(stderr, "%s\n", run.op->error().c_str());
    return std::nullopt;
  }
  while (secondsSince(start) < 600) {
    if (!testenv::httpGet(probePort, "/readyz").empty()) {
      run.synced = secondsSince(start);
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  if (run.synced < 0) {
    std::fprintf(stderr, "the operator never became ready:\n%s\n", run.op->log().c_str());
    return std::nullopt;
  }
  int readyCount = 0;
  while (secondsSince(start) < 1200) {
    readyCount = 0;
    if (!forEachItem(ioc, client, kPolicies, "",
                     [&](const rapidjson::Value& p) { readyCount += isReady(p) ? 1 : 0; })) {
      return std::nullopt;
    }
    if (readyCount >= policies) {
      run.ready = secondsSince(start);
      break;
    }
    std::this_thread::sleep_for(1s);
  }
  if (run.ready < 0) {
    std::fprintf(stderr, "only %d of %d policies became Ready\n", readyCount, policies);
    return std::nullopt;
  }
  run.atReady = testenv::httpGet(run.metricsPort, "/metrics");
  constexpr auto kQuiet = 10s;
  double last = allWrites(run.atReady);
  auto lastChange = std::chrono::steady_clock::now();
  while (secondsSince(start) < 1800) {
    std::this_thread::sleep_for(1s);
    run.metrics = testenv::httpGet(run.metricsPort, "/metrics");
    const double now = allWrites(run.metrics);
    if (now != last) {
      last = now;
      lastChange = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - lastChange >= kQuiet) {
      run.quiet = secondsSince(start) - std::chrono::duration<double>(kQuiet).count();
      break;
    }
  }
  if (run.quiet < 0) {
    std::fprintf(stderr, "the operator never stopped writing (%.0f writes)\n", last);
    return std::nullopt;
  }
  // The Manager hands free heap back every --heap-release-period (pkg/base/heap_scavenger.h; 30 s
  // by default, 2 s here): read the RSS after one such round past the burst, what the process
  // keeps rather than the burst's leftovers.
  std::this_thread::sleep_for(3s);
  run.rss = metric(testenv::httpGet(run.metricsPort, "/metrics"), "process_resident_memory_bytes");
  run.peakRss = static_cast<double>(procStatusBytes(std::to_string(run.op->pid()), "VmHWM"));
  forEachItem(ioc, client, kPodsResource, "", [&](const rapidjson::Value&) { ++run.cachedPods; });
  return run;
}

// What the first LIST of the operator's pod informer transfers (resourceVersion=0, served whole
// from the watch cache), measured on the bench's own LIST of the same collection: bytes on the
// wire (gzip, TLS) from the socket counters, and the JSON once decompressed.
struct ListBytes {
  uint64_t wire = 0;
  uint64_t json = 0;
  bool gzip = false;
  int items = 0;
  size_t podJson = 0;           // one seeded pod as listed
  size_t podJsonUnmanaged = 0;  // ... without metadata.managedFields
};

size_t jsonSize(const rapidjson::Value& v) {
  rapidjson::StringBuffer out;
  rapidjson::Writer<rapidjson::StringBuffer> writer(out);
  v.Accept(writer);
  return out.GetSize();
}

std::optional<ListBytes> listPodsBytes(boost::asio::io_context& ioc, kube::RestClient& client) {
  const uint64_t before = tcpBytesReceived();
  auto r = testutil::runSync(ioc, client.raw("GET", "/api/v1/pods?resourceVersion=0&limit=500"));
  const uint64_t after = tcpBytesReceived();
  if (!r || r->status != 200) {
    std::fprintf(stderr, "list pods: %s\n",
                 r ? std::to_string(r->status).c_str() : r.error().message().c_str());
    return std::nullopt;
  }
  ListBytes b;
  b.wire = after - before;
  b.json = r->body.size();
  b.gzip = r->decompressed;
  rapidjson::Document doc;
  doc.Parse(r->body.data(), r->body.size());
  if (doc.HasParseError() || !doc.HasMember("items")) {
    std::fprintf(stderr, "list pods: not a list\n");
    return std::nullopt;
  }
  if (doc["metadata"].HasMember("continue") &&
      !std::string(doc["metadata"]["continue"].GetString()).empty()) {
    std::fprintf(stderr, "list pods: paged (no watch cache?): only the first page counted\n");
  }
  for (auto& item : doc["items"].GetArray()) {
    ++b.items;
    if (b.podJson == 0 && std::string(item["metadata"]["name"].GetString()) == "bench-0") {
      b.podJson = jsonSize(item);
      item["metadata"].RemoveMember("managedFields");
      b.podJsonUnmanaged = jsonSize(item);
    }
  }
  return b;
}

// The churn's bookkeeping, shared by the pacer (main thread) and the slice watcher.
struct ChurnState {
  std::mutex mu;
  // A change in flight: the pod's "ip@node" source line -> when its patch was sent, and whether
  // the policy's slice must now list it.
  std::map<std::string, std::pair<std::chrono::steady_clock::time_point, bool>> pending;
  std::vector<double> latencies;  // seconds, change sent -> the slice showing it
  std::atomic<bool> stop{false};
  std::atomic<bool> failed{false};
};

// Watches EgressPolicySlice `name` (the churn policy's first, which holds all its up to 100
// sources) from resourceVersion `rv` on a connection and thread of its own, and settles every
// pending change that an update's sources reflect.
void watchSources(const std::string& kubeconfig, const std::string& name, std::string rv,
                  ChurnState* st) {
  boost::asio::io_context ioc;
  auto client = makeClient(ioc, kubeconfig);
  if (!client) {
    st->failed = true;
    return;
  }
  while (!st->stop) {
    kube::ListOptions opts;
    opts.fieldSelector = "metadata.name=" + name;
    opts.resourceVersion = rv;
    opts.timeoutSeconds = 5;  // so that stop is seen
    auto w = testutil::runSync(ioc, client->watch(kSlices, "", opts));
    if (!w) {
      std::fprintf(stderr, "watch %s: %s\n", name.c_str(), w.error().message().c_str());
      st->failed = true;
      return;
    }
    for (;;) {
      auto ev = testutil::runSync(ioc, (*w)->next());
      if (!ev) {
        std::fprintf(stderr, "watch %s: %s\n", name.c_str(), ev.error().message().c_str());
        st->failed = true;
        return;
      }
      if (!*ev) {
        break;  // timeoutSeconds: again from rv
      }
      const auto now = std::chrono::steady_clock::now();
      const auto type = (*ev)->type;
      if (type == kube::WatchEventType::Error) {
        std::fprintf(stderr, "watch %s: %s\n", name.c_str(), (*ev)->toError().message().c_str());
        st->failed = true;
        return;
      }
      const auto& obj = (*ev)->object();
      rv = obj["metadata"]["resourceVersion"].GetString();
      if (type != kube::WatchEventType::Added && type != kube::WatchEventType::Modified) {
        continue;
      }
      std::set<std::string> sources;
      if (obj.HasMember("spec") && obj["spec"].HasMember("sources")) {
        for (const auto& src : obj["spec"]["sources"].GetArray()) {
          for (const auto& ip : src["ips"].GetArray()) {
            sources.insert(std::string(ip.GetString()) + "@" + src["node"].GetString());
          }
        }
      }
      std::lock_guard lock(st->mu);
      for (auto it = st->pending.begin(); it != st->pending.end();) {
        if ((sources.count(it->first) != 0) == it->second.second) {
          st->latencies.push_back(std::chrono::duration<double>(now - it->second.first).count());
          it = st->pending.erase(it);
        } else {
          ++it;
        }
      }
    }
  }
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) {
    return -1;
  }
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank > 0 ? rank - 1 : 0)];
}

struct ChurnResult {
  int changes = 0;
  double seconds = 0;  // from the first change sent until the last one was seen
  double p50 = 0;
  double p99 = 0;
  double max = 0;
  double patchP50 = 0;  // the label PATCH's own round trip
  double cpuSeconds = 0;
  double writes = 0;      // the operator's writes meanwhile
  double reconciles = 0;  // the egressgateway controller's reconciles meanwhile
  int unmatched = 0;      // changes no slice update reflected within 60 s of the last one
  int deferred = 0;       // ticks at which every churn pod still had a change in flight
};

// The churn pods, bound to the fake nodes (the test kubelet gives them addresses), each named
// in the churn policy's slice while its app label is kChurnIn. Their source lines, by name.
std::optional<std::map<std::string, std::string>> createChurnPods(boost::asio::io_context& ioc,
                                                                  kube::RestClient& client,
                                                                  const std::string& ns, int pods) {
  std::vector<std::string> nodes;
  if (!forEachItem(ioc, client, kNodes, "",
                   [&](const rapidjson::Value& n) {
                     nodes.emplace_back(n["metadata"]["name"].GetString());
                   }) ||
      nodes.empty()) {
    std::fprintf(stderr, "no nodes for the churn pods\n");
    return std::nullopt;
  }
  auto ownerUid = ensurePodOwner(ioc, client, ns);
  if (!ownerUid) {
    return std::nullopt;
  }
  for (int i = 0; i < pods; ++i) {
    std::string body = benchPod("churn-" + std::to_string(i), *ownerUid, kChurnOut,
                                nodes[static_cast<size_t>(i) % nodes.size()],
                                kChurnReplicaSets + i / kPodsPerReplicaSet);
    auto r = testutil::runSync(ioc, client.create(kPodsResource, ns, std::move(body)));
    if (!r && !r.error().isAlreadyExists()) {
      std::fprintf(stderr, "create churn pod: %s\n", r.error().message().c_str());
      return std::nullopt;
    }
  }
  const auto start = std::chrono::steady_clock::now();
  std::map<std::string, std::string> sources;
  while (secondsSince(start) < 300) {
    sources.clear();
    if (!forEachItem(ioc, client, kPodsResource, ns, [&](const rapidjson::Value& p) {
          const std::string name = p["metadata"]["name"].GetString();
          if (name.rfind("churn-", 0) == 0 && p.HasMember("status") &&
              p["status"].HasMember("podIP")) {
            sources[name] = std::string(p["status"]["podIP"].GetString()) + "@" +
                            p["spec"]["nodeName"].GetString();
          }
        })) {
      return std::nullopt;
    }
    if (static_cast<int>(sources.size()) == pods) {
      return sources;
    }
    std::this_thread::sleep_for(1s);
  }
  std::fprintf(stderr, "only %zu of %d churn pods got an address\n", sources.size(), pods);
  return std::nullopt;
}

bool deleteChurnPods(boost::asio::io_context& ioc, kube::RestClient& client, const std::string& ns,
                     int pods) {
  for (int i = 0; i < pods; ++i) {
    kube::DeleteOptions opts;
    opts.gracePeriodSeconds = 0;  // no kubelet to wait for: they run no containers
    auto r = testutil::runSync(
        ioc, client.remove(kPodsResource, ns, "churn-" + std::to_string(i), opts));
    if (!r && !r.error().isNotFound()) {
      std::fprintf(stderr, "delete churn pod: %s\n", r.error().message().c_str());
      return false;
    }
  }
  return true;
}

// `changes` label flips of the churn pods at `rate` per second, each moving one pod into or out
// of the churn policy's selector; the latency of each is from its PATCH being sent until the
// policy's first EgressPolicySlice (<ns>.bench-<policy>.0) lists the pod's address, or no longer
// does.
std::optional<ChurnResult> churn(boost::asio::io_context& ioc, kube::RestClient& client,
                                 const std::string& kubeconfig, const std::string& ns, int policy,
                                 int metricsPort, int changes, double rate, int pods) {
  auto sources = createChurnPods(ioc, client, ns, pods);
  if (!sources) {
    return std::nullopt;
  }
  const std::string slice = ns + ".bench-" + std::to_string(policy) + ".0";
  auto cm = testutil::runSync(ioc, client.get(kSlices, "", slice));
  if (!cm) {
    std::fprintf(stderr, "get %s: %s\n", slice.c_str(), cm.error().message().c_str());
    return std::nullopt;
  }
  // Let the operator settle the churn pods' arrival before the CPU and writes are counted.
  std::this_thread::sleep_for(5s);
  ChurnState st;
  std::thread watcher(watchSources, kubeconfig, slice,
                      std::string((*cm)["metadata"]["resourceVersion"].GetString()), &st);
  const std::string before = testenv::httpGet(metricsPort, "/metrics");
  std::vector<std::pair<std::string, std::string>> order(sources->begin(), sources->end());
  std::map<std::string, bool> in;
  std::vector<double> patchTimes;
  ChurnResult res;
  const auto start = std::chrono::steady_clock::now();
  size_t next = 0;
  for (int tick = 0; res.changes < changes && !st.failed; ++tick) {
    std::this_thread::sleep_until(start + std::chrono::duration_cast<std::chrono::nanoseconds>(
                                              std::chrono::duration<double>(tick / rate)));
    // The next pod round robin without a change in flight (two would make the match ambiguous).
    std::optional<size_t> pick;
    {
      std::lock_guard lock(st.mu);
      for (size_t k = 0; k < order.size() && !pick; ++k) {
        const size_t at = (next + k) % order.size();
        if (st.pending.count(order[at].second) == 0) {
          pick = at;
        }
      }
      if (!pick) {
        ++res.deferred;
        continue;
      }
      next = *pick + 1;
      const auto& [name, source] = order[*pick];
      in[name] = !in[name];
      st.pending[source] = {std::chrono::steady_clock::now(), in[name]};
    }
    const auto& name = order[*pick].first;
    std::string patch = std::string(R"({"metadata":{"labels":{"app":")") +
                        (in[name] ? kChurnIn : kChurnOut) + "\"}}}";
    const auto sent = std::chrono::steady_clock::now();
    auto r = testutil::runSync(
        ioc, client.patch(kPodsResource, ns, name, kube::PatchType::Merge, std::move(patch)));
    if (!r) {
      std::fprintf(stderr, "patch %s: %s\n", name.c_str(), r.error().message().c_str());
      st.failed = true;
      break;
    }
    patchTimes.push_back(secondsSince(sent));
    ++res.changes;
  }
  const auto sentAll = std::chrono::steady_clock::now();
  while (!st.failed && std::chrono::steady_clock::now() - sentAll < 60s) {
    {
      std::lock_guard lock(st.mu);
      if (st.pending.empty()) {
        break;
      }
    }
    std::this_thread::sleep_for(10ms);
  }
  res.seconds = secondsSince(start);
  const std::string after = testenv::httpGet(metricsPort, "/metrics");
  st.stop = true;
  watcher.join();
  if (st.failed) {
    return std::nullopt;
  }
  res.unmatched = static_cast<int>(st.pending.size());
  res.p50 = percentile(st.latencies, 0.50);
  res.p99 = percentile(st.latencies, 0.99);
  res.max = percentile(st.latencies, 1.0);
  res.patchP50 = percentile(patchTimes, 0.50);
  res.cpuSeconds =
      metric(after, "process_cpu_seconds_total") - metric(before, "process_cpu_seconds_total");
  res.writes = allWrites(after) - allWrites(before);
  res.reconciles = policyReconciles(after) - policyReconciles(before);
  if (!deleteChurnPods(ioc, client, ns, pods)) {
    return std::nullopt;
  }
  return res;
}

// The API server's own ceiling: as many Event POSTs, PUTs and PATCHes (server-side applies) as
// the operator made until quiet, sent by the bench with 16 concurrent workers on scratch objects
// in a namespace of their own (Events like the recorder's; ConfigMaps of about a policy status's
// size for the updates and applies, which the operator does not reconcile).
struct CeilingWork {
  kube::RestClient* client = nullptr;
  std::string ns;
  int posts = 0;
  int puts = 0;
  int patches = 0;
  int objects = 0;  // scratch ConfigMaps the PUTs and PATCHes go round
  int next = 0;     // the io_context is single-threaded: the workers share this plainly
  int failures = 0;
  int done = 0;
};

std::string scratchConfigMap(const std::string& name, int serial) {
  // Every write changes the object: the server skips identical updates.
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
         R"("},"data":{"serial":")" + std::to_string(serial) + R"(","sources":")" +
         std::string(1200, 'x') + "\"}}";
}

std::string scratchEvent(int serial) {
  const std::string name = "ceiling." + std::to_string(serial);
  return R"({"apiVersion":"v1","kind":"Event","metadata":{"name":")" + name +
         R"("},"involvedObject":{"apiVersion":"networking.egressgateway.dev/v1alpha1",)"
         R"("kind":"EgressGatewayPolicy","name":"scratch","namespace":"bench-ceiling"},)"
         R"("reason":"Allocated","message":"allocated 100.64.0.)" +
         std::to_string(serial % 256) +
         R"( from pool bench-0 for gateway replica 0","type":"Normal",)"
         R"("source":{"component":"egress-operator"},"count":1,)"
         R"("firstTimestamp":"2026-12-02T05:00:00Z","lastTimestamp":"2026-12-02T05:00:00Z"})";
}

boost::asio::awaitable<void> ceilingWorker(CeilingWork* w) {
  const int total = w->posts + w->puts + w->patches;
  for (int i = w->next++; i < total; i = w->next++) {
    bool ok = true;
    if (i < w->posts) {
      std::string body = scratchEvent(i);
      auto r = co_await w->client->create(kEvents, w->ns, std::move(body));
      ok = static_cast<bool>(r);
    } else {
      const std::string name = "scratch-" + std::to_string(i % w->objects);
      std::string body = scratchConfigMap(name, i);
      if (i < w->posts + w->puts) {
        auto r = co_await w->client->update(kConfigMaps, w->ns, name, std::move(body));
        ok = static_cast<bool>(r);
      } else {
        kube::WriteOptions opts;
        opts.fieldManager = "bench-ceiling";
        opts.force = true;
        auto r =
            co_await w->client->apply(kConfigMaps, w->ns, name, std::move(body), std::move(opts));
        ok = static_cast<bool>(r);
      }
    }
    w->failures += ok ? 0 : 1;
  }
  ++w->done;
}

void rethrow(const std::exception_ptr& e) {
  if (e) {
    std::rethrow_exception(e);
  }
}

// Spawns `count` coroutines made by start() and runs the single-threaded io_context until each
// has counted itself in `done`.
template <typename Start>
void runWorkers(boost::asio::io_context& ioc, int count, const int& done, Start start) {
  for (int i = 0; i < count; ++i) {
    boost::asio::co_spawn(ioc, start(), rethrow);
  }
  while (done < count) {
    if (ioc.run_one() == 0) {
      ioc.restart();
    }
  }
}

// Seconds for the whole batch of writes, or nullopt.
std::optional<double> ceiling(boost::asio::io_context& ioc, kube::RestClient& client, int posts,
                              int puts, int patches, int objects) {
  CeilingWork w;
  w.client = &client;
  w.ns = "bench-ceiling";
  w.posts = posts;
  w.puts = puts;
  w.patches = patches;
  w.objects = objects;
  const std::string nsBody =
      R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bench-ceiling"}})";
  (void)testutil::runSync(ioc, client.create(kNamespaces, "", nsBody));
  for (int i = 0; i < objects; ++i) {  // the objects the updates replace, not timed
    const std::string name = "scratch-" + std::to_string(i);
    auto r = testutil::runSync(ioc, client.create(kConfigMaps, w.ns, scratchConfigMap(name, -1)));
    if (!r && !r.error().isAlreadyExists()) {
      std::fprintf(stderr, "create %s: %s\n", name.c_str(), r.error().message().c_str());
      return std::nullopt;
    }
  }
  constexpr int kWorkers = 16;
  const auto start = std::chrono::steady_clock::now();
  runWorkers(ioc, kWorkers, w.done, [&w] { return ceilingWorker(&w); });
  const double seconds = secondsSince(start);
  (void)testutil::runSync(ioc, client.remove(kNamespaces, "", "bench-ceiling"));
  if (w.failures > 0) {
    std::fprintf(stderr, "%d of the ceiling's writes failed\n", w.failures);
    return std::nullopt;
  }
  return seconds;
}

// The cluster's own floor under the operator's convergence: every policy is Ready only once its
// gateway Deployment is Available, and what that takes of the controller-manager (a ReplicaSet,
// a pod and their status writes per Deployment), the scheduler and the kubelet is the same
// whoever creates the Deployment. Measured by creating `count` Deployments like the operator's
// (the pod template of egw-bench-0 as the operator rendered it, one replica) from 16 concurrent
// workers, nothing else running, and waiting until each is Available. Created: when the last
// create returned; available: when the last became Available (both from the first create).
struct DeploymentFloor {
  double created = -1;
  double available = -1;
};

struct FloorWork {
  kube::RestClient* client = nullptr;
  const BenchNamespaces* ns = nullptr;
  const rapidjson::Value* podTemplate = nullptr;
  int count = 0;
  int next = 0;  // the io_context is single-threaded: the workers share this plainly
  int failures = 0;
  int done = 0;
};

constexpr const char* kFloorLabel = "egw-bench-floor";

std::string floorDeployment(const rapidjson::Value& podTemplate, const std::string& name) {
  rapidjson::Document d(rapidjson::kObjectType);
  auto& a = d.GetAllocator();
  rapidjson::Value labels(rapidjson::kObjectType);
  labels.AddMember(rapidjson::StringRef(kFloorLabel), rapidjson::Value(name.c_str(), a), a);
  rapidjson::Value meta(rapidjson::kObjectType);
  meta.AddMember("name", rapidjson::Value(name.c_str(), a), a);
  meta.AddMember("labels", rapidjson::Value(labels, a), a);
  rapidjson::Value tmpl(podTemplate, a);
  if (!tmpl.HasMember("metadata")) {
    tmpl.AddMember("metadata", rapidjson::Value(rapidjson::kObjectType), a);
  }
  tmpl["metadata"].RemoveMember("labels");
  tmpl["metadata"].AddMember("labels", rapidjson::Value(labels, a), a);
  rapidjson::Value selector(rapidjson::kObjectType);
  selector.AddMember("matchLabels", rapidjson::Value(labels, a), a);
  rapidjson::Value spec(rapidjson::kObjectType);
  spec.AddMember("replicas", 1, a);
  spec.AddMember("selector", selector, a);
  spec.AddMember("template", tmpl, a);
  d.AddMember("apiVersion", "apps/v1", a);
  d.AddMember("kind", "Deployment", a);
  d.AddMember("metadata", meta, a);
  d.AddMember("spec", spec, a);
  rapidjson::StringBuffer out;
  rapidjson::Writer<rapidjson::StringBuffer> writer(out);
  d.Accept(writer);
  return {out.GetString(), out.GetSize()};
}

boost::asio::awaitable<void> floorWorker(FloorWork* w) {
  for (int i = w->next++; i < w->count; i = w->next++) {
    const std::string name = "floor-" + std::to_string(i);
    auto r = co_await w->client->create(kDeployments, w->ns->of(i),
                                        floorDeployment(*w->podTemplate, name));
    if (!r && !r.error().isAlreadyExists()) {
      std::fprintf(stderr, "create deployment %s: %s\n", name.c_str(), r.error().message().c_str());
      ++w->failures;
    }
  }
  ++w->done;
}

std::optional<DeploymentFloor> deploymentFloor(boost::asio::io_context& ioc,
                                               kube::RestClient& client, const BenchNamespaces& ns,
                                               int count) {
  auto gateway = testutil::runSync(ioc, client.get(kDeployments, ns.of(0), "egw-bench-0"));
  if (!gateway) {
    std::fprintf(stderr, "the template, egw-bench-0: %s\n", gateway.error().message().c_str());
    return std::nullopt;
  }
  FloorWork w;
  w.client = &client;
  w.ns = &ns;
  w.podTemplate = &(*gateway)["spec"]["template"];
  w.count = count;
  constexpr int kWorkers = 16;
  DeploymentFloor f;
  const auto start = std::chrono::steady_clock::now();
  runWorkers(ioc, kWorkers, w.done, [&w] { return floorWorker(&w); });
  f.created = secondsSince(start);
  if (w.failures > 0) {
    std::fprintf(stderr, "%d of the floor's Deployments were not created\n", w.failures);
    return std::nullopt;
  }
  int available = 0;
  while (secondsSince(start) < 900) {
    available = 0;
    if (!forEachItem(
            ioc, client, kDeployments, "",
            [&](const rapidjson::Value& d) {
              if (d.HasMember("status") && d["status"].HasMember("availableReplicas") &&
                  d["status"]["availableReplicas"].GetInt() >= 1) {
                ++available;
              }
            },
            kFloorLabel)) {
      return std::nullopt;
    }
    if (available >= count) {
      f.available = secondsSince(start);
      return f;
    }
    std::this_thread::sleep_for(1s);
  }
  std::fprintf(stderr, "only %d of %d floor Deployments became Available\n", available, count);
  return std::nullopt;
}

// An operator replica with leader election on (the 15/10/2 s defaults) and its ports.
struct Replica {
  std::unique_ptr<testenv::ChildProcess> op;
  int metricsPort = 0;
};

Replica startReplica(const std::string& binary, const std::string& kubeconfig,
                     const std::string& ns, int workers, const std::string& log) {
  Replica r;
  r.metricsPort = testenv::freeLoopbackPort();
  const int probePort = testenv::freeLoopbackPort();
  r.op = std::make_unique<testenv::ChildProcess>(
      std::vector<std::string>{binary, "--kubeconfig=" + kubeconfig, "--leader-elect",
                               "--leader-election-namespace=" + ns,
                               "--leader-election-id=egw-bench-failover",
                               "--metrics-bind-address=127.0.0.1:" + std::to_string(r.metricsPort),
                               "--health-probe-bind-address=127.0.0.1:" + std::to_string(probePort),
                               "--workers=" + std::to_string(workers), "--kube-api-qps=-1"},
      log);
  return r;
}

bool leads(const Replica& r) {
  return metric(testenv::httpGet(r.metricsPort, "/metrics"), "leader_election_master_status") == 1;
}

struct Failover {
  double leaseAcquired = -1;  // seconds from the signal until the standby leads
  double firstWrite = -1;     // ... until the view shows the change made at the signal
};

// Two replicas; once one leads and has settled, it gets `sig` and, at the same moment, policy
// bench-<policy>'s destinations change. Measured: when the other replica holds the Lease, and
// when the change reaches the policy's EgressPolicySlice (written by the new leader: the old one is
// gone or, after SIGTERM, stopped its controllers before releasing the Lease).
std::optional<Failover> failover(boost::asio::io_context& ioc, kube::RestClient& client,
                                 const std::string& binary, const std::string& kubeconfig,
                                 const std::string& ns, int workers, int policy, int sig,
                                 int serial) {
  Replica replicas[2] = {startReplica(binary, kubeconfig, ns, workers, logPath(".a")),
                         startReplica(binary, kubeconfig, ns, workers, logPath(".b"))};
  int leader = -1;
  const auto start = std::chrono::steady_clock::now();
  while (leader < 0 && secondsSince(start) < 120) {
    for (int i = 0; i < 2 && leader < 0; ++i) {
      leader = leads(replicas[i]) ? i : -1;
    }
    std::this_thread::sleep_for(100ms);
  }
  if (leader < 0) {
    std::fprintf(stderr, "no replica became the leader\n");
    return std::nullopt;
  }
  // Settled: a fresh leader replays its caches (converged, it writes little); wait until it
  // makes no more writes in 6 s than its Lease renewals (one per 2 s retry period).
  while (secondsSince(start) < 300) {
    const double before = allWrites(testenv::httpGet(replicas[leader].metricsPort, "/metrics"));
    std::this_thread::sleep_for(6s);
    if (allWrites(testenv::httpGet(replicas[leader].metricsPort, "/metrics")) - before <= 3) {
      break;
    }
  }
  const Replica& standby = replicas[1 - leader];
  const std::string cidr = "203.0.113." + std::to_string(serial) + "/32";
  std::string patch = R"({"spec":{"destinationCIDRs":[")" + cidr + "\"]}}";
  const std::string name = "bench-" + std::to_string(policy);
  const auto signalled = std::chrono::steady_clock::now();
  replicas[leader].op->signal(sig);
  auto patched = testutil::runSync(
      ioc, client.patch(kPolicies, ns, name, kube::PatchType::Merge, std::move(patch)));
  if (!patched) {
    std::fprintf(stderr, "patch %s: %s\n", name.c_str(), patched.error().message().c_str());
    return std::nullopt;
  }
  Failover f;
  while (secondsSince(signalled) < 120 && (f.leaseAcquired < 0 || f.firstWrite < 0)) {
    if (f.leaseAcquired < 0 && leads(standby)) {
      f.leaseAcquired = secondsSince(signalled);
    }
    if (f.firstWrite < 0) {
      auto slice = testutil::runSync(ioc, client.get(kSlices, "", ns + "." + name + ".0"));
      if (slice && slice->HasMember("spec") && (*slice)["spec"].HasMember("gateway") &&
          (*slice)["spec"]["gateway"].HasMember("destinationCIDRs")) {
        const auto& dst = (*slice)["spec"]["gateway"]["destinationCIDRs"];
        if (dst.Size() == 1 && std::string(dst[0].GetString()) == cidr) {
          f.firstWrite = secondsSince(signalled);
        }
      }
    }
    std::this_thread::sleep_for(50ms);
  }
  for (auto& r : replicas) {
    r.op->signal(SIGTERM);
    r.op->reap(60s);
  }
  if (f.leaseAcquired < 0 || f.firstWrite < 0) {
    std::fprintf(stderr, "failover: lease %.1fs, first write %.1fs (not within 120 s)\n",
                 f.leaseAcquired, f.firstWrite);
    return std::nullopt;
  }
  return f;
}

struct ChurnOptions {
  int changes = 2000;
  double rate = 20;
  int pods = 100;
};

// Where the bench's time goes: each phase's start, in seconds since the process began.
const auto kProcessStart = std::chrono::steady_clock::now();
void phase(const char* name) {
  std::printf("phase: %s at=%.0fs\n", name, secondsSince(kProcessStart));
  std::fflush(stdout);
}

// A point of the scale curve: a fresh operator process (every policy Ready already: this is the
// read side of a cold start, as a user's restart would be) with `seeded` pods seeded.
struct ScalePoint {
  int seeded = 0;
  double seedSeconds = 0;  // creating or deleting the pods that brought the cluster to `seeded`
  ColdStart run;
};

std::optional<ScalePoint> scalePoint(boost::asio::io_context& ioc, kube::RestClient& client,
                                     const std::string& binary, const std::string& kubeconfig,
                                     const BenchNamespaces& ns, int policies, int workers,
                                     int& seeded, int size) {
  phase("scale curve point");
  const auto seedStart = std::chrono::steady_clock::now();
  const bool ok = size > seeded ? createPods(ioc, client, ns, seeded, size, 16)
                                : deletePods(ioc, client, ns, size, seeded, 16);
  if (!ok) {
    return std::nullopt;
  }
  ScalePoint p;
  p.seeded = size;
  p.seedSeconds = secondsSince(seedStart);
  seeded = size;
  auto run = coldStart(ioc, client, binary, kubeconfig, policies, workers);
  if (!run) {
    return std::nullopt;
  }
  run->op->signal(SIGTERM);
  run->op->reap(60s);
  p.run = std::move(*run);
  return p;
}

// The scale curve and the baseline, from the `seeded` pods there are now (whose restart,
// `atSeeded`, is that size's point): first up to each larger size, then down to each smaller one
// and to none, the baseline. Going up and down once costs far fewer pod writes than seeding each
// size afresh. The points, by size, and the baseline; nullopt on an error.
std::optional<std::pair<std::vector<ScalePoint>, ColdStart>> scaleCurve(
    boost::asio::io_context& ioc, kube::RestClient& client, const std::string& binary,
    const std::string& kubeconfig, const BenchNamespaces& ns, int policies, int workers,
    std::vector<int> sizes, int seeded, ColdStart atSeeded) {
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  const int start = seeded;
  std::vector<ScalePoint> points;
  for (const int size : sizes) {
    if (size > start) {
      auto p = scalePoint(ioc, client, binary, kubeconfig, ns, policies, workers, seeded, size);
      if (!p) {
        return std::nullopt;
      }
      points.push_back(std::move(*p));
    }
  }
  for (auto it = sizes.rbegin(); it != sizes.rend(); ++it) {
    if (*it < start) {
      auto p = scalePoint(ioc, client, binary, kubeconfig, ns, policies, workers, seeded, *it);
      if (!p) {
        return std::nullopt;
      }
      points.push_back(std::move(*p));
    }
  }
  if (std::find(sizes.begin(), sizes.end(), start) != sizes.end()) {
    ScalePoint p;
    p.seeded = start;
    p.run = std::move(atSeeded);
    points.push_back(std::move(p));
  }
  phase("deleting the seeded pods, then the baseline");
  auto base = scalePoint(ioc, client, binary, kubeconfig, ns, policies, workers, seeded, 0);
  if (!base) {
    return std::nullopt;
  }
  std::sort(points.begin(), points.end(),
            [](const ScalePoint& a, const ScalePoint& b) { return a.seeded < b.seeded; });
  return std::make_pair(std::move(points), std::move(base->run));
}

void printScaleCurve(const std::vector<ScalePoint>& points, const ColdStart& base, int policies) {
  for (const auto& point : points) {
    const auto& r = point.run;
    const int delta = r.cachedPods - base.cachedPods;
    const double perPod = delta > 0 ? (r.rss - base.rss) / delta : 0.0;
    std::printf(
        "scale_curve: seeded_pods=%d cached_pods=%d seed_seconds=%.1f time_to_synced=%.2fs "
        "time_to_ready=%.2fs time_to_quiet=%.2fs rss=%.1fMiB rss_per_cached_pod=%.0fB\n",
        point.seeded, r.cachedPods, point.seedSeconds, r.synced, r.ready, r.quiet,
        r.rss / 1048576.0, perPod);
    std::printf(
        "{\"figure\":\"scale_curve\",\"seeded_pods\":%d,\"cached_pods\":%d,"
        "\"policies\":%d,\"seed_seconds\":%.1f,\"time_to_synced_s\":%.2f,"
        "\"time_to_ready_s\":%.2f,\"time_to_quiet_s\":%.2f,\"rss_bytes\":%.0f,"
        "\"baseline_rss_bytes\":%.0f,\"rss_bytes_per_cached_pod\":%.0f}\n",
        point.seeded, r.cachedPods, policies, point.seedSeconds, r.synced, r.ready, r.quiet, r.rss,
        base.rss, perPod);
  }
  std::fflush(stdout);
}

int run(const std::string& kubeconfig, const std::string& binary, const BenchNamespaces& ns,
        int policies, int pools, int workers, const ChurnOptions& churnOptions,
        const std::vector<int>& scaleSizes, int floorDeployments) {
  boost::asio::io_context ioc;
  auto client = makeClient(ioc, kubeconfig, true);
  if (!client || !ensureNamespaces(ioc, *client, ns)) {
    return 1;
  }
  // Setup: pools of a /24 each, the OperatorConfig, the policies.
  for (int p = 0; p < pools; ++p) {
    std::string body = R"({"apiVersion":"networking.egressgateway.dev/v1alpha1","kind":"IPAMPool",)"
                       R"("metadata":{"name":"bench-)" +
                       std::to_string(p) + R"("},"spec":{"cidrs":["100.)" +
                       std::to_string(64 + p / 256) + "." + std::to_string(p % 256) +
                       R"(.0/24"]}})";
    auto r = testutil::runSync(ioc, client->create(kPools, "", body));
    if (!r && !r.error().isAlreadyExists()) {
      std::fprintf(stderr, "create pool: %s\n", r.error().message().c_str());
      return 1;
    }
  }
  {
    std::string body =
        R"({"apiVersion":"networking.egressgateway.dev/v1alpha1","kind":"OperatorConfig",)"
        R"("metadata":{"name":"default"},"spec":{"gatewayImage":"example.invalid/gw:bench",)"
        R"("clusterCIDRs":["10.244.0.0/16","10.96.0.0/12"]}})";
    auto r = testutil::runSync(ioc, client->create(kConfigs, "", body));
    if (!r && !r.error().isAlreadyExists()) {
      std::fprintf(stderr, "create config: %s\n", r.error().message().c_str());
      return 1;
    }
  }
  const auto setupStart = std::chrono::steady_clock::now();
  // The first policy of each namespace selects its seeded pods (in one namespace, the first 10
  // all select every seeded pod: their slices list them all), the next one the churn pods
  // while they are "in"; the rest select none.
  const int churnPolicy = selectingPolicies(ns);
  for (int i = 0; i < policies; ++i) {
    const std::string app = i < churnPolicy    ? "bench"
                            : i == churnPolicy ? kChurnIn
                                               : "none-" + std::to_string(i);
    std::string body =
        R"({"apiVersion":"networking.egressgateway.dev/v1alpha1","kind":"EgressGatewayPolicy",)"
        R"("metadata":{"name":"bench-)" +
        std::to_string(i) + R"("},"spec":{"podSelector":{"matchLabels":{"app":")" + app +
        R"("}},"egressIP":{"pool":"bench-)" + std::to_string(i % pools) +
        R"("},"gateway":{"replicas":1}}})";
    auto r = testutil::runSync(ioc, client->create(kPolicies, ns.of(i), body));
    if (!r && !r.error().isAlreadyExists()) {
      std::fprintf(stderr, "create policy: %s\n", r.error().message().c_str());
      return 1;
    }
  }
  std::printf("created pools=%d policies=%d namespaces=%d in %.1fs\n", pools, policies,
              ns.namespaces, secondsSince(setupStart));

  const auto listed = listPodsBytes(ioc, *client);
  if (!listed) {
    return 1;
  }
  std::printf(
      "list_pods: items=%d wire_bytes=%llu json_bytes=%llu gzip=%s wire_bytes_per_pod=%.0f "
      "pod_json_bytes=%zu pod_json_bytes_without_managed_fields=%zu\n",
      listed->items, static_cast<unsigned long long>(listed->wire),
      static_cast<unsigned long long>(listed->json), listed->gzip ? "yes" : "no",
      listed->items > 0 ? static_cast<double>(listed->wire) / listed->items : 0.0, listed->podJson,
      listed->podJsonUnmanaged);
  std::printf(
      "{\"figure\":\"cold_start_list_bytes\",\"source\":\"bench_list_rv0\",\"items\":%d,"
      "\"wire_bytes\":%llu,\"json_bytes\":%llu,\"gzip\":%s,\"pod_json_bytes\":%zu,"
      "\"pod_json_bytes_without_managed_fields\":%zu}\n",
      listed->items, static_cast<unsigned long long>(listed->wire),
      static_cast<unsigned long long>(listed->json), listed->gzip ? "true" : "false",
      listed->podJson, listed->podJsonUnmanaged);

  phase("cold start");
  const auto serverBefore = serverWrites(ioc, *client);
  auto full = coldStart(ioc, *client, binary, kubeconfig, policies, workers);
  if (!full) {
    return 1;
  }
  printServerWrites("server_writes_until_quiet", serverBefore, serverWrites(ioc, *client),
                    policies);
  const double total = allWrites(full->metrics);
  std::printf(
      "time_to_synced=%.2fs time_to_ready=%.2fs time_to_quiet=%.2fs policies=%d "
      "workers=%d\n",
      full->synced, full->ready, full->quiet, policies, workers);
  for (const auto& [when, m] : {std::pair<const char*, const std::string*>{"ready", &full->atReady},
                                {"quiet", &full->metrics}}) {
    const double w = allWrites(*m);
    std::printf(
        "at_%s: writes=%.0f writes_per_policy=%.2f POST=%.0f PUT=%.0f PATCH=%.0f DELETE=%.0f "
        "conflicts=%.0f events_dropped=%.0f reconciles_per_policy=%.2f\n",
        when, w, w / policies, writes(*m, "POST"), writes(*m, "PUT"), writes(*m, "PATCH"),
        writes(*m, "DELETE"), metric(*m, "rest_client_requests_total", "code=\"409\""),
        metric(*m, "event_recorder_dropped_total"), policyReconciles(*m) / policies);
  }
  std::printf("rss=%.1fMiB peak_rss=%.1fMiB cached_pods=%d rss_per_cached_pod_total=%.0fB\n",
              full->rss / 1048576.0, full->peakRss / 1048576.0, full->cachedPods,
              full->cachedPods > 0 ? full->rss / full->cachedPods : 0.0);

  std::this_thread::sleep_for(60s);
  const std::string after = testenv::httpGet(full->metricsPort, "/metrics");
  const double steadyWrites = allWrites(after) - total;
  std::printf("steady_state_60s_writes=%.0f\n", steadyWrites);
  if (churnOptions.changes > 0) {
    phase("churn");
    auto c = churn(ioc, *client, kubeconfig, ns.of(churnPolicy), churnPolicy, full->metricsPort,
                   churnOptions.changes, churnOptions.rate, churnOptions.pods);
    if (!c) {
      return 1;
    }
    const double perThousand = c->changes > 0 ? c->cpuSeconds * 1000.0 / c->changes : 0.0;
    std::printf(
        "churn: changes=%d pods=%d rate=%.0f/s seconds=%.1f latency_p50=%.3fs "
        "latency_p99=%.3fs latency_max=%.3fs patch_p50=%.3fs unmatched=%d deferred=%d "
        "cpu_seconds=%.2f cpu_seconds_per_1000_events=%.2f writes=%.0f "
        "reconciles_per_1000_events=%.0f\n",
        c->changes, churnOptions.pods, churnOptions.rate, c->seconds, c->p50, c->p99, c->max,
        c->patchP50, c->unmatched, c->deferred, c->cpuSeconds, perThousand, c->writes,
        c->changes > 0 ? c->reconciles * 1000.0 / c->changes : 0.0);
    std::printf(
        "{\"figure\":\"churn\",\"changes\":%d,\"pods\":%d,\"rate_per_s\":%.1f,"
        "\"seconds\":%.1f,\"latency_p50_s\":%.3f,\"latency_p99_s\":%.3f,"
        "\"latency_max_s\":%.3f,\"patch_p50_s\":%.3f,\"unmatched\":%d,"
        "\"cpu_seconds\":%.2f,\"cpu_seconds_per_1000_events\":%.2f,\"writes\":%.0f,"
        "\"reconciles_per_1000_events\":%.0f}\n",
        c->changes, churnOptions.pods, churnOptions.rate, c->seconds, c->p50, c->p99, c->max,
        c->patchP50, c->unmatched, c->cpuSeconds, perThousand, c->writes,
        c->changes > 0 ? c->reconciles * 1000.0 / c->changes : 0.0);
  }
  full->op->signal(SIGTERM);
  full->op->reap(60s);

  // The per-pod figure compares two restarts (every policy Ready already), this one with the
  // seeded pods and the baseline's without: the converged process above also carries what its
  // 10,000-write burst left in the heap, which the baseline (a restart) never had.
  phase("restart");
  auto restart = coldStart(ioc, *client, binary, kubeconfig, policies, workers);
  if (!restart) {
    return 1;
  }
  restart->op->signal(SIGTERM);
  restart->op->reap(60s);
  std::printf(
      "restart: cached_pods=%d time_to_synced=%.2fs time_to_ready=%.2fs time_to_quiet=%.2fs "
      "rss=%.1fMiB writes=%.0f\n",
      restart->cachedPods, restart->synced, restart->ready, restart->quiet,
      restart->rss / 1048576.0, allWrites(restart->metrics));

  phase("ceiling");
  // The API server's ceiling, with the operator stopped: the same writes by verb.
  const int posts = static_cast<int>(writes(full->metrics, "POST"));
  const int puts = static_cast<int>(writes(full->metrics, "PUT"));
  const int patches = static_cast<int>(writes(full->metrics, "PATCH"));
  const auto raw = ceiling(ioc, *client, posts, puts, patches, policies);
  if (!raw) {
    return 1;
  }
  std::printf(
      "ceiling: posts=%d puts=%d patches=%d workers=16 raw_write_seconds=%.2f "
      "writes_per_second=%.0f ready_over_raw=%.1f quiet_over_raw=%.1f\n",
      posts, puts, patches, *raw, (posts + puts + patches) / *raw, full->ready / *raw,
      full->quiet / *raw);
  std::printf(
      "{\"figure\":\"api_server_ceiling\",\"posts\":%d,\"puts\":%d,\"patches\":%d,"
      "\"workers\":16,\"raw_write_seconds\":%.2f,\"time_to_ready_s\":%.2f,"
      "\"time_to_quiet_s\":%.2f,\"ready_over_raw\":%.2f,\"quiet_over_raw\":%.2f}\n",
      posts, puts, patches, *raw, full->ready, full->quiet, full->ready / *raw, full->quiet / *raw);

  // The cost of a cached pod is what it adds: the same cold start again without the seeded pods
  // (only the gateway pods remain) is the baseline, and the difference over the difference in
  // cached pods is the per-pod figure. The whole-process RSS over the pod count also carries the
  // binary, its libraries, the policies and every other cache. The baseline comes last of the
  // scale curve, which goes from the seeded pods up, then down.
  int seeded = 0;
  if (!forEachItem(
          ioc, *client, kPodsResource, "", [&](const rapidjson::Value&) { ++seeded; },
          "app=bench")) {
    return 1;
  }
  const int restartPods = restart->cachedPods;
  const double restartRss = restart->rss;
  auto curve = scaleCurve(ioc, *client, binary, kubeconfig, ns, policies, workers, scaleSizes,
                          seeded, std::move(*restart));
  if (!curve) {
    return 1;
  }
  const ColdStart& base = curve->second;

  phase("failover");
  // Failover on the converged baseline (fewer pods to sync: the figure is the lease's timing).
  // Destinations new to this cluster, so that an earlier run's slice cannot match.
  int serial = static_cast<int>(std::random_device()() % 200);
  for (const auto& [sig, label] : {std::pair<int, const char*>{SIGKILL, "sigkill"},
                                   std::pair<int, const char*>{SIGTERM, "sigterm"}}) {
    auto f = failover(ioc, *client, binary, kubeconfig, ns.of(churnPolicy + 1), workers,
                      churnPolicy + 1, sig, ++serial);
    if (!f) {
      return 1;
    }
    std::printf("failover_%s: lease_acquired=%.2fs first_write=%.2fs\n", label, f->leaseAcquired,
                f->firstWrite);
    std::printf(
        "{\"figure\":\"failover\",\"signal\":\"%s\",\"lease_duration_s\":15,"
        "\"renew_deadline_s\":10,\"retry_period_s\":2,\"lease_acquired_s\":%.2f,"
        "\"first_write_s\":%.2f}\n",
        label, f->leaseAcquired, f->firstWrite);
  }
  const int podDelta = restartPods - base.cachedPods;
  const double perPod = podDelta > 0 ? (restartRss - base.rss) / podDelta : 0.0;
  const double perPodConverged = podDelta > 0 ? (full->rss - base.rss) / podDelta : 0.0;
  std::printf("baseline: cached_pods=%d rss=%.1fMiB time_to_synced=%.2fs\n", base.cachedPods,
              base.rss / 1048576.0, base.synced);
  std::printf(
      "rss_per_cached_pod=%.0fB (two restarts: the RSS difference over %d more cached pods); "
      "%.0fB with the converged process's RSS instead\n",
      perPod, podDelta, perPodConverged);
  std::printf(
      "{\"figure\":\"operator_cold_start\",\"policies\":%d,\"pods\":%d,"
      "\"time_to_synced_s\":%.2f,\"time_to_ready_s\":%.2f,\"time_to_quiet_s\":%.2f,"
      "\"writes_per_policy\":%.2f,"
      "\"steady_state_60s_writes\":%.0f,\"rss_bytes\":%.0f,\"peak_rss_bytes\":%.0f,"
      "\"baseline_pods\":%d,"
      "\"baseline_rss_bytes\":%.0f,\"restart_rss_bytes\":%.0f,"
      "\"rss_bytes_per_cached_pod\":%.0f,\"rss_bytes_per_cached_pod_converged\":%.0f}\n",
      policies, full->cachedPods, full->synced, full->ready, full->quiet, total / policies,
      steadyWrites, full->rss, full->peakRss, base.cachedPods, base.rss, restartRss, perPod,
      perPodConverged);
  printScaleCurve(curve->first, base, policies);

  if (floorDeployments > 0) {
    // Last, as nothing is cleaned up after it: the bench's cluster is torn down next.
    phase("the cluster's floor: Deployments like the gateways', straight to the API server");
    const auto floor = deploymentFloor(ioc, *client, ns, floorDeployments);
    if (!floor) {
      return 1;
    }
    std::printf(
        "deployment_floor: deployments=%d workers=16 created_seconds=%.2f "
        "available_seconds=%.2f ready_over_floor=%.2f floor_over_ceiling=%.2f\n",
        floorDeployments, floor->created, floor->available, full->ready / floor->available,
        floor->available / *raw);
    std::printf(
        "{\"figure\":\"deployment_floor\",\"deployments\":%d,\"workers\":16,"
        "\"created_s\":%.2f,\"available_s\":%.2f,\"time_to_ready_s\":%.2f,"
        "\"raw_write_seconds\":%.2f,\"ready_over_floor\":%.2f,\"floor_over_ceiling\":%.2f}\n",
        floorDeployments, floor->created, floor->available, full->ready, *raw,
        full->ready / floor->available, floor->available / *raw);
  }
  return 0;
}

}  // namespace
}  // namespace egress::bench

int main(int argc, char** argv) {
  using namespace egress;
  cli::FlagSet flags("operator_bench");
  std::string kubeconfig;
  std::string binary;
  std::string ns = "bench";
  int64_t namespaces = 1;
  int64_t floorDeployments = 0;
  int64_t policies = 1000;
  int64_t pools = 20;
  int64_t workers = 8;
  int64_t churnChanges = 2000;
  int64_t churnPods = 100;
  double churnRate = 20;
  std::string scaleCurve;
  bool help = false;
  flags.addString("kubeconfig", kubeconfig, "Path to a kubeconfig.");
  flags.addString(
      "scale-curve", scaleCurve,
      "Comma-separated seeded-pod counts for the scale curve at the end (empty: none).");
  flags.addString("operator", binary, "The egress-operator binary.");
  flags.addString("namespace", ns,
                  "Namespace of the policies and the seeded pods, or, with --namespaces, the "
                  "prefix of theirs (<namespace>-<i>).");
  flags.addInt("namespaces", namespaces,
               "Namespaces the policies and seeded pods are spread over (as informer_bench "
               "--create spread the pods).");
  flags.addInt("floor-deployments", floorDeployments,
               "At the end, Deployments like the gateways' to create straight through the API "
               "server, timed until every one is Available: the cluster's own floor (0: none).");
  flags.addInt("policies", policies, "Policies to create, one gateway replica each.");
  flags.addInt("pools", pools, "IPAMPools (a /24 each) the policies are spread over.");
  flags.addInt("workers", workers, "The operator's --workers.");
  flags.addInt("churn", churnChanges,
               "Source-pod label flips after the steady state (0: no churn phase).");
  flags.addInt("churn-pods", churnPods, "Pods (bound to the fake nodes) the flips go round.");
  flags.addDouble("churn-rate", churnRate, "Flips per second.");
  flags.addBool("help", help, "Print this help.");
  if (auto err = flags.parse(argc, argv); !err.empty() || help || binary.empty()) {
    std::fprintf(help ? stdout : stderr, "%s\n%s", err.c_str(), flags.usage().c_str());
    return help ? 0 : 2;
  }
  const bench::BenchNamespaces layout{ns, static_cast<int>(namespaces)};
  if (namespaces < 1 || policies < bench::selectingPolicies(layout) + 2) {
    std::fprintf(stderr,
                 "--namespaces must be at least 1, and --policies at least %d (those selecting "
                 "the seeded pods, the churn policy and the failover's)\n",
                 bench::selectingPolicies(layout) + 2);
    return 2;
  }
  std::vector<int> sizes;
  for (size_t at = 0; at < scaleCurve.size();) {
    const size_t comma = std::min(scaleCurve.find(',', at), scaleCurve.size());
    const std::string item = scaleCurve.substr(at, comma - at);
    char* end = nullptr;
    const long size = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || size <= 0) {
      std::fprintf(stderr, "--scale-curve: %s is not a positive pod count\n", item.c_str());
      return 2;
    }
    sizes.push_back(static_cast<int>(size));
    at = comma + 1;
  }
  bench::ChurnOptions churn;
  churn.changes = static_cast<int>(churnChanges);
  churn.pods = static_cast<int>(churnPods);
  churn.rate = churnRate;
  return bench::run(kubeconfig, binary, layout, static_cast<int>(policies), static_cast<int>(pools),
                    static_cast<int>(workers), churn, sizes, static_cast<int>(floorDeployments));
}
