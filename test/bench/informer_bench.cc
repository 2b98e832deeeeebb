// informer_bench: how fast an informer syncs, how much memory each cached pod costs and how many
// heap allocations each watch event costs, for the typed core::Pod as decoded (--transform none:
// every field the typed model has, what an informer without a transform holds) or trimmed by the
// informer's transform hook (--transform strip: only what the operator reads of a pod).
//
//   informer_bench --kubeconfig K --resource pods --namespace bench [--namespaces 100]
//                  --transform strip [--create 10000] [--churn 2000]
// With --namespaces N the pods are spread over bench-0..bench-<N-1> (by ReplicaSet, as
// BenchNamespaces puts them) and the informer lists and watches every namespace.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include <boost/asio/io_context.hpp>

#include "pkg/apis/core/pod.h"
#include "pkg/base/clock.h"
#include "pkg/cache/rest_lister_watcher.h"
#include "pkg/cache/shared_informer.h"
#include "pkg/cache/wait_for_cache_sync.h"
#include "pkg/cli/flag_set.h"
#include "pkg/controller/cache/cache.h"
#include "test/bench/bench_util.h"
#include "test/testutil/run_sync.h"
#include <malloc.h>

namespace egress::bench {
namespace {

template <class C>
void release(C& c) {
  C().swap(c);
}

// The informer transform: keeps what the operator reads of a (gateway) pod -- identity, labels,
// owner, deletion, node, host network, addresses and readiness -- and frees the rest.
void stripPod(core::Pod& pod) {
  release(pod.metadata.annotations);
  release(pod.metadata.finalizers);
  std::erase_if(pod.status.conditions,
                [](const core::PodCondition& c) { return c.type != "Ready"; });
  pod.status.conditions.shrink_to_fit();
}

// Label patches from a thread and connection of their own, so that the main thread's heap
// counters see only what the informer does with the watch events.
void patchFromAnotherThread(const std::string& kubeconfig, const std::vector<std::string>& keys,
                            int churn, bool* ok) {
  boost::asio::io_context ioc;
  auto client = makeClient(ioc, kubeconfig);
  *ok = client != nullptr;
  // Values new to this run (a patch that changes nothing makes no event), all of one length
  // (so that the cached objects' size does not depend on the run).
  char run[16];
  std::snprintf(run, sizeof(run), "%08x", static_cast<unsigned>(std::random_device()()));
  for (int i = 0; *ok && i < churn; ++i) {
    const auto& key = keys[static_cast<size_t>(i) % keys.size()];
    const size_t slash = key.find('/');
    const std::string ns = key.substr(0, slash);
    const std::string name = key.substr(slash + 1);
    char value[32];
    std::snprintf(value, sizeof(value), "%s-%06d", run, i);
    std::string patch = R"({"metadata":{"labels":{"churn":")" + std::string(value) + "\"}}}";
    auto r = testutil::runSync(
        ioc, client->patch(kPods, ns, name, kube::PatchType::Merge, std::move(patch)));
    if (!r) {
      std::fprintf(stderr, "patch %s: %s\n", name.c_str(), r.error().message().c_str());
      *ok = false;
    }
  }
}

int measure(boost::asio::io_context& ioc, kube::RestClient& client, const std::string& kubeconfig,
            const std::string& ns, const char* mode, void (*transform)(core::Pod&), bool gzip,
            int churn) {
  using Informer = cache::SharedIndexInformer<core::Pod>;
  RealClock clock(ioc.get_executor());
  Informer::Options options;
  options.name = "bench";
  options.reflector.useWatchList = false;
  options.transform = transform;
  auto owned =
      std::make_unique<Informer>(std::make_unique<cache::RestListerWatcher>(client, kPods, ns),
                                 core::decodePod, clock, options, ioc.get_executor());
  Informer& informer = *owned;
  size_t events = 0;
  cache::EventHandler<core::Pod> counter;
  counter.onAdd = [&events](const auto&, bool) { ++events; };
  counter.onUpdate = [&events](const auto&, const auto&) { ++events; };
  counter.onDelete = [&events](const auto&, bool) { ++events; };
  auto registration = informer.addEventHandler(counter);
  if (!registration) {
    std::fprintf(stderr, "%s\n", registration.error().message().c_str());
    return 1;
  }

  const size_t rssBefore = rssBytes();
  const HeapStats heapBefore = threadHeapStats();
  // Resets VmHWM to the current RSS (Linux 4.0+), so that the peak read after the sync is the
  // sync's, not the seeding's.
  std::ofstream("/proc/self/clear_refs") << "5";
  const auto start = std::chrono::steady_clock::now();
  informer.start(ioc.get_executor());
  std::vector<const cache::InformerBase*> all{&informer};
  if (!testutil::runSync(
          ioc, cache::waitForCacheSync(clock, all, clock.now() + std::chrono::minutes(10)))) {
    std::fprintf(stderr, "informer did not sync\n");
    return 1;
  }
  const double syncSeconds = secondsSince(start);
  // The handler hears of the initial list after the cache has it; count churn from there.
  while (!(*registration)->hasSynced()) {
    ioc.run_one();
  }
  const size_t rssAfter = rssBytes();
  const size_t peakRss = procStatusBytes("self", "VmHWM");
  const HeapStats heapAfter = threadHeapStats();
  const size_t objects = informer.indexer().size();
  const double perObject = objects ? 1.0 / static_cast<double>(objects) : 0.0;
  malloc_trim(0);
  const size_t rssTrimmed = rssBytes();
  std::printf("transform=%s rss_after_trim=%.1fMiB rss_trimmed_bytes_per_object=%.0f\n", mode,
              rssTrimmed / 1048576.0, static_cast<double>(rssTrimmed - rssBefore) * perObject);
  std::printf(
      "transform=%s gzip=%s objects=%zu time_to_synced=%.3fs rss_before=%.1fMiB rss_after=%.1fMiB "
      "peak_rss=%.1fMiB rss_bytes_per_object=%.0f heap_bytes_per_object=%.0f\n",
      mode, gzip ? "on" : "off", objects, syncSeconds, rssBefore / 1048576.0, rssAfter / 1048576.0,
      peakRss / 1048576.0, static_cast<double>(rssAfter - rssBefore) * perObject,
      static_cast<double>(heapAfter.liveBytes - heapBefore.liveBytes) * perObject);

  if (churn > 0 && objects > 0) {
    std::vector<std::string> keys = informer.indexer().listKeys();
    // Always the same pods, so that runs against one cluster cache objects of the same size.
    std::sort(keys.begin(), keys.end());
    const size_t baseline = events;
    const HeapStats churnBefore = threadHeapStats();
    const auto churnStart = std::chrono::steady_clock::now();
    bool patched = false;
    std::thread patcher(patchFromAnotherThread, kubeconfig, std::cref(keys), churn, &patched);
    while (events - baseline < static_cast<size_t>(churn) && secondsSince(churnStart) < 120) {
      ioc.run_for(std::chrono::milliseconds(10));
    }
    const double churnSeconds = secondsSince(churnStart);
    const HeapStats churnAfter = threadHeapStats();
    patcher.join();
    if (!patched) {
      return 1;
    }
    const size_t got = events - baseline;
    const double perEvent = got ? 1.0 / static_cast<double>(got) : 0.0;
    std::printf(
        "transform=%s churn_patches=%d events=%zu events_per_second=%.0f "
        "allocations_per_event=%.1f allocated_bytes_per_event=%.0f heap_counted=%s\n",
        mode, churn, got, static_cast<double>(got) / churnSeconds,
        static_cast<double>(churnAfter.allocations - churnBefore.allocations) * perEvent,
        static_cast<double>(churnAfter.allocatedBytes - churnBefore.allocatedBytes) * perEvent,
        heapCountingEnabled() ? "yes" : "no");
  }
  informer.stop();
  for (int i = 0; i < 500 && !informer.stopped(); ++i) {
    ioc.run_for(std::chrono::milliseconds(10));
  }
  // What the informer holds, measured by letting it go: the cache, its indexes and whatever
  // else is freed with it, without the connections and buffers the client keeps.
  const size_t cached = informer.indexer().size();
  const HeapStats beforeRelease = threadHeapStats();
  owned.reset();
  ioc.poll();
  const HeapStats afterRelease = threadHeapStats();
  std::printf("transform=%s cached_objects=%zu informer_heap_bytes_per_object=%.0f\n", mode, cached,
              cached ? static_cast<double>(beforeRelease.liveBytes - afterRelease.liveBytes) /
                           static_cast<double>(cached)
                     : 0.0);
  return 0;
}

}  // namespace
}  // namespace egress::bench

int main(int argc, char** argv) {
  using namespace egress;
  cli::FlagSet flags("informer_bench");
  std::string kubeconfig;
  std::string resource = "pods";
  std::string ns = "bench";
  int64_t namespaces = 1;
  std::string transform = "strip";
  int64_t create = 0;
  int64_t churn = 0;
  bool gzip = true;
  bool help = false;
  flags.addString("kubeconfig", kubeconfig, "Path to a kubeconfig.");
  flags.addString("resource", resource, "Resource to inform on (pods).");
  flags.addString("namespace", ns,
                  "Namespace to list and watch, or, with --namespaces, the prefix of those the "
                  "pods are spread over (<namespace>-<i>).");
  flags.addInt("namespaces", namespaces, "Namespaces the pods are spread over.");
  flags.addString("transform", transform,
                  "none (the typed Pod as decoded), strip (the informer's transform hook) or "
                  "operator (the operator's own pod transform, controller::stripPod).");
  flags.addInt("create", create, "Create this many pods first (bench-0..N-1).");
  flags.addInt("churn", churn, "Label patches to apply after sync while counting events.");
  flags.addBool(
      "gzip", gzip,
      "Ask for gzip-compressed LIST responses (the client's default; --gzip=false turns it off).");
  flags.addBool("help", help, "Print this help.");
  if (auto err = flags.parse(argc, argv); !err.empty() || help) {
    std::fprintf(help ? stdout : stderr, "%s\n%s", err.c_str(), flags.usage().c_str());
    return help ? 0 : 2;
  }
  if (resource != "pods" ||
      (transform != "none" && transform != "strip" && transform != "operator")) {
    std::fprintf(stderr,
                 "informer_bench: supports --resource pods, --transform none|strip|operator\n");
    return 2;
  }
  boost::asio::io_context ioc;
  auto client = bench::makeClient(ioc, kubeconfig, gzip);
  if (!client) {
    return 1;
  }
  const bench::BenchNamespaces layout{ns, static_cast<int>(std::max<int64_t>(1, namespaces))};
  if (create > 0) {
    const auto start = std::chrono::steady_clock::now();
    if (!bench::ensureNamespaces(ioc, *client, layout)) {
      return 1;
    }
    if (!bench::createPods(ioc, *client, layout, 0, static_cast<int>(create), 16)) {
      return 1;
    }
    std::printf("created=%lld seconds=%.1f\n", static_cast<long long>(create),
                bench::secondsSince(start));
  }
  void (*hook)(core::Pod&) = nullptr;
  if (transform == "strip") {
    hook = bench::stripPod;
  } else if (transform == "operator") {
    hook = controller::stripPod;
  }
  return bench::measure(ioc, *client, kubeconfig, layout.namespaces > 1 ? "" : ns,
                        transform.c_str(), hook, gzip, static_cast<int>(churn));
}
