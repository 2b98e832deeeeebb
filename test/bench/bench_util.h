// File: bench_util.h
//
// Small helpers shared by the benchmark binaries: flag parsing into a RestClient, RSS from
// /proc, per-thread heap counters, a monotonic stopwatch, and pod creation at high concurrency
// for seeding a cluster.
#pragma once

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "pkg/kube/config_discovery.h"
#include "pkg/kube/rest_client.h"
#include "test/bench/tcp_bytes.h"

namespace egress::bench {

inline const kube::Resource kPods{"", "v1", "pods", true};
inline const kube::Resource kNamespaces{"", "v1", "namespaces", false};

// A "Vm...:" line of /proc/<pid>/status in bytes ("self" for this process); 0 if absent.
inline size_t procStatusBytes(const std::string& pid, std::string_view field) {
  std::ifstream in("/proc/" + pid + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > field.size() && line.compare(0, field.size(), field) == 0 &&
        line[field.size()] == ':') {
      return std::stoull(line.substr(field.size() + 1)) * 1024;
    }
  }
  return 0;
}

// Resident set size of this process in bytes (VmRSS).
inline size_t rssBytes() {
  return procStatusBytes("self", "VmRSS");
}

// What the calling thread allocated, counted by the malloc/calloc/realloc/free this library
// defines in place of glibc's (so RapidJSON's pools count as well as operator new). Per thread,
// so a benchmark can issue requests from a second thread without counting them. Off under
// AddressSanitizer, which owns malloc itself: everything stays 0 then.
struct HeapStats {
  uint64_t allocations = 0;     // calls that returned memory
  uint64_t allocatedBytes = 0;  // their usable sizes, summed
  int64_t liveBytes = 0;        // allocated minus freed (by this thread)
};
HeapStats threadHeapStats();
bool heapCountingEnabled();

inline double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A client with no client-side rate limiter (benchmarks measure the server and the client) that
// asks for gzip-compressed responses unless `gzip` is false (RestConfig::disableCompression).
inline std::unique_ptr<kube::RestClient> makeClient(boost::asio::io_context& ioc,
                                                    const std::string& kubeconfig,
                                                    bool gzip = true) {
  kube::KubeconfigOptions options;
  if (!kubeconfig.empty()) {
    options.paths = {kubeconfig};
  }
  auto config = kubeconfig.empty() ? kube::loadRestConfig("", "") : kube::loadKubeconfig(options);
  if (!config) {
    std::fprintf(stderr, "%s\n", config.error().message().c_str());
    return nullptr;
  }
  config->qps = -1;
  config->disableCompression = !gzip;
  auto client = kube::RestClient::create(ioc.get_executor(), *config, nullptr);
  if (!client) {
    std::fprintf(stderr, "%s\n", client.error().message().c_str());
    return nullptr;
  }
  return std::move(*client);
}

// A realistic pod, about 6 KB of JSON as the server returns it (without metadata.managedFields,
// which the server adds on top): seven labels, four annotations, a controller owner reference,
// an init container and two containers with ports, env (literal and downward API), probes,
// resources, volume mounts and security contexts, three volumes, tolerations and anti-affinity.
// `ownerUid` names an existing object (the garbage collector deletes pods whose owner is gone):
// a ConfigMap, since a ReplicaSet's controller would adopt or release the pods. Without
// `nodeName` it is for a scheduler that does not exist: it stays Pending, untouched by the
// scheduler, the kubelet and the pod garbage collector (which deletes pods bound to unknown
// nodes); with one, the test kubelet runs it and gives it an address.
// `replicaSet` numbers the workload the pod belongs to: pods of one ReplicaSet share their
// labels (pod-template-hash and app.kubernetes.io/name differ between sets), as on a cluster,
// so that a cache which shares identical label sets is measured on realistic sharing, not on
// 10,000 copies of one set.
std::string benchPod(const std::string& name, const std::string& ownerUid, const std::string& app,
                     const std::string& nodeName, int replicaSet);

// Seeded pods per ReplicaSet: a small workload's replica count (10,000 pods are 2,000 sets).
inline constexpr int kPodsPerReplicaSet = 5;

// A merge patch of pods/status giving an unscheduled benchPod() the conditions and container
// statuses a real Pending pod shows (about 1.4 KB of JSON).
std::string benchPodStatus();

// The owner of the seeded pods (ConfigMap bench-owner in `ns`), created if missing: its uid.
std::optional<std::string> ensurePodOwner(boost::asio::io_context& ioc, kube::RestClient& client,
                                          const std::string& ns);

// Where the benches put their objects: namespace `base` alone, or, with `namespaces` > 1,
// base-0 .. base-<namespaces-1>, object `index` in base-<index % namespaces> (a cluster's
// workloads are spread over namespaces, and so is the controller-manager's per-namespace work).
struct BenchNamespaces {
  std::string base = "bench";
  int namespaces = 1;

  std::string of(int index) const;
  // A seeded pod's, by its ReplicaSet: the pods of one set share a namespace.
  std::string ofPod(int pod) const { return of(pod / kPodsPerReplicaSet); }
  std::vector<std::string> all() const;
};

// Creates every namespace of `ns` that is missing and waits (up to 180 s in all) until each has
// its default ServiceAccount with a token, which the pods' ServiceAccount admission needs.
bool ensureNamespaces(boost::asio::io_context& ioc, kube::RestClient& client,
                      const BenchNamespaces& ns);

// Creates pods bench-<first>..bench-<end-1>, each in ns.ofPod(i) (benchPod() with app=bench,
// then its status), with `parallel` concurrent requests.
bool createPods(boost::asio::io_context& ioc, kube::RestClient& client, const BenchNamespaces& ns,
                int first, int end, int parallel);

// Deletes pods bench-<first>..bench-<end-1> (missing ones are fine) with `parallel` concurrent
// DELETEs: the server's DELETE of a collection removes them one at a time (its
// --delete-collection-workers is 1), about 25 pods per second measured here.
bool deletePods(boost::asio::io_context& ioc, kube::RestClient& client, const BenchNamespaces& ns,
                int first, int end, int parallel);

}  // namespace egress::bench
