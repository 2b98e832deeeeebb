// informer_bench: how fast an informer syncs and how much memory each cached object costs,
// with the full object kept (what a client-go informer holds) or only the typed fields the
// operator reads (--transform strip), then the event rate while objects churn.
//
//   informer_bench --kubeconfig K --resource pods --namespace bench --transform strip
//                  [--create 10000] [--churn 2000]
#include <cstdio>
#include <string>

#include <boost/asio/io_context.hpp>

#include "pkg/apis/core/pod.h"
#include "pkg/base/clock.h"
#include "pkg/cache/shared_informer.h"
#include "pkg/cli/flag_set.h"
#include "test/bench/bench_util.h"
#include "test/testutil/run_sync.h"

namespace egress::bench {
namespace {

// The whole object as the API sent it: what a client-go informer caches without a transform.
struct FullObject {
  meta::ObjectMeta metadata;
  rapidjson::Document doc;
};
meta::Decoded<FullObject> decodeFull(const rapidjson::Value& v) {
  FullObject o;
  auto meta = v.FindMember("metadata");
  if (meta == v.MemberEnd()) {
    return meta::DecodeError{"metadata", "missing"};
  }
  auto m = meta::decodeObjectMeta(meta->value);
  if (!m) {
    return m.error();
  }
  o.metadata = std::move(*m);
  o.doc.CopyFrom(v, o.doc.GetAllocator());
  return o;
}

template <class T>
int measure(boost::asio::io_context& ioc, kube::RestClient& client, const std::string& ns,
            typename cache::SharedIndexInformer<T>::Decoder decoder, const char* mode, int churn) {
  RealClock clock(ioc.get_executor());
  typename cache::SharedIndexInformer<T>::Options options;
  options.name = "bench";
  options.reflector.useWatchList = false;
  cache::SharedIndexInformer<T> informer(
      std::make_unique<cache::RestListerWatcher>(client, kPods, ns), std::move(decoder), clock,
      options, ioc.get_executor());
  size_t events = 0;
  cache::EventHandler<T> counter;
  counter.onAdd = [&events](const auto&, bool) { ++events; };
  counter.onUpdate = [&events](const auto&, const auto&) { ++events; };
  counter.onDelete = [&events](const auto&, bool) { ++events; };
  auto& registration = informer.addEventHandler(counter);

  const size_t rssBefore = rssBytes();
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
  while (!registration.hasSynced()) {
    ioc.run_one();
  }
  const size_t rssAfter = rssBytes();
  const size_t objects = informer.indexer().size();
  std::printf(
      "transform=%s objects=%zu time_to_synced=%.3fs rss_before=%.1fMiB "
      "rss_after=%.1fMiB bytes_per_object=%.0f\n",
      mode, objects, syncSeconds, rssBefore / 1048576.0, rssAfter / 1048576.0,
      objects ? static_cast<double>(rssAfter - rssBefore) / objects : 0.0);

  if (churn > 0 && objects > 0) {
    // Label patches through a second client connection; the informer counts what arrives.
    const size_t baseline = events;
    const auto churnStart = std::chrono::steady_clock::now();
    auto keys = informer.indexer().listKeys();
    for (int i = 0; i < churn; ++i) {
      const auto& key = keys[static_cast<size_t>(i) % keys.size()];
      const std::string name = key.substr(key.find('/') + 1);
      std::string patch = R"({"metadata":{"labels":{"churn":")" + std::to_string(i) + "\"}}}";
      auto r = testutil::runSync(
          ioc, client.patch(kPods, ns, name, kube::PatchType::Merge, std::move(patch)));
      if (!r) {
        std::fprintf(stderr, "patch %s: %s\n", name.c_str(), r.error().message().c_str());
        return 1;
      }
    }
    while (events - baseline < static_cast<size_t>(churn) && secondsSince(churnStart) < 120) {
      ioc.run_for(std::chrono::milliseconds(10));
    }
    const double churnSeconds = secondsSince(churnStart);
    std::printf("transform=%s churn_patches=%d events=%zu events_per_second=%.0f\n", mode, churn,
                events - baseline, (events - baseline) / churnSeconds);
  }
  informer.stop();
  for (int i = 0; i < 500 && !informer.stopped(); ++i) {
    ioc.run_for(std::chrono::milliseconds(10));
  }
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
  std::string transform = "strip";
  int64_t create = 0;
  int64_t churn = 0;
  bool help = false;
  flags.addString("kubeconfig", kubeconfig, "Path to a kubeconfig.");
  flags.addString("resource", resource, "Resource to inform on (pods).");
  flags.addString("namespace", ns, "Namespace to list and watch.");
  flags.addString("transform", transform, "none (keep whole objects) or strip (typed fields).");
  flags.addInt("create", create, "Create this many pods first (bench-0..N-1).");
  flags.addInt("churn", churn, "Label patches to apply after sync while counting events.");
  flags.addBool("help", help, "Print this help.");
  if (auto err = flags.parse(argc, argv); !err.empty() || help) {
    std::fprintf(help ? stdout : stderr, "%s\n%s", err.c_str(), flags.usage().c_str());
    return help ? 0 : 2;
  }
  if (resource != "pods" || (transform != "none" && transform != "strip")) {
    std::fprintf(stderr, "informer_bench: supports --resource pods, --transform none|strip\n");
    return 2;
  }
  boost::asio::io_context ioc;
  auto client = bench::makeClient(ioc, kubeconfig);
  if (!client) {
    return 1;
  }
  if (create > 0) {
    const auto start = std::chrono::steady_clock::now();
    const std::string body =
        R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" + ns + "\"}}";
    (void)testutil::runSync(
        ioc, client->create(kube::Resource{"", "v1", "namespaces", false}, "", body));
    // Pods can be created once the namespace's default ServiceAccount has its token.
    const kube::Resource serviceAccounts{"", "v1", "serviceaccounts", true};
    for (int i = 0; i < 600; ++i) {
      auto sa = testutil::runSync(ioc, client->get(serviceAccounts, ns, "default"));
      if (sa && sa->HasMember("secrets") && (*sa)["secrets"].IsArray() &&
          !(*sa)["secrets"].Empty()) {
        break;
      }
      ioc.run_for(std::chrono::milliseconds(100));
    }
    if (!bench::createPods(ioc, *client, ns, static_cast<int>(create), 16)) {
      return 1;
    }
    std::printf("created=%lld seconds=%.1f\n", static_cast<long long>(create),
                bench::secondsSince(start));
  }
  if (transform == "none") {
    return bench::measure<bench::FullObject>(ioc, *client, ns, bench::decodeFull, "none",
                                             static_cast<int>(churn));
  }
  return bench::measure<core::Pod>(ioc, *client, ns, core::decodePod, "strip",
                                   static_cast<int>(churn));
}
