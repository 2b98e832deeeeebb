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
#include <string>

#include <boost/asio/io_context.hpp>

#include "pkg/kube/config_discovery.h"
#include "pkg/kube/rest_client.h"

namespace egress::bench {

inline const kube::Resource kPods{"", "v1", "pods", true};

// Resident set size of this process in bytes (VmRSS).
inline size_t rssBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::stoull(line.substr(6)) * 1024;
    }
  }
  return 0;
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

// A pod for a scheduler that does not exist: it stays Pending, untouched by the scheduler, the
// kubelet and the pod garbage collector (which deletes pods bound to unknown nodes).
inline std::string benchPod(const std::string& name) {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
         R"(","labels":{"app":"bench","tier":"backend","team":"egress"},)"
         R"("annotations":{"note":"a realistic pod carries annotations like this one"}},)"
         R"("spec":{"schedulerName":"bench-no-scheduler","serviceAccountName":"default",)"
         R"("containers":[{"name":"app","image":"example.invalid/bench/app:1.2.3",)"
         R"("args":["--port=8080","--verbose"],"ports":[{"containerPort":8080}],)"
         R"("env":[{"name":"MODE","value":"bench"},{"name":"REGION","value":"local"}],)"
         R"("resources":{"requests":{"cpu":"10m","memory":"16Mi"}}}]}})";
}

// Creates pods bench-<from>..bench-<to-1> in `ns` with `parallel` concurrent requests.
bool createPods(boost::asio::io_context& ioc, kube::RestClient& client, const std::string& ns,
                int count, int parallel);

}  // namespace egress::bench
