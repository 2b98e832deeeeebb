// End-to-end: informers over Pods and ConfigMaps stay identical to a fresh LIST (same keys, same
// resourceVersions) through 2,000 random creates/updates/deletes, a forced watch expiry (etcd
// compaction + apiserver restart → 410 Gone → relist) and a plain apiserver restart, relisting
// once per 410 and never for a watch that was merely cut (counted by the reflectors).
#include <cstdio>
#include <map>
#include <random>
#include <set>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pkg/apis/core/config_map.h"
#include "pkg/apis/core/pod.h"
#include "pkg/base/clock.h"
#include "pkg/cache/rest_lister_watcher.h"
#include "pkg/cache/shared_informer.h"
#include "pkg/cache/wait_for_cache_sync.h"
#include "pkg/kube/kubeconfig.h"
#include "pkg/kube/rest_client.h"
#include "test/e2e/testenv/environment.h"
#include "test/testutil/run_sync.h"

namespace egress::cache {
namespace {

using testenv::controlPlane;
using testutil::runSync;

const kube::Resource kConfigMaps{"", "v1", "configmaps", true};
const kube::Resource kPods{"", "v1", "pods", true};

using tcp = net::ip::tcp;

// A TCP forwarder in front of the API server. cutAll() drops every connection through it at
// once, as a load balancer's idle timeout or a network blip does, while the API server stays up.
class TcpCutter {
 public:
  TcpCutter(net::io_context& ioc, const std::string& host, unsigned short port)
      : state_(std::make_shared<State>()),
        acceptor_(std::make_shared<tcp::acceptor>(
            ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0))) {
    state_->upstream = tcp::endpoint(net::ip::make_address(host), port);
    net::co_spawn(ioc, acceptLoop(state_, acceptor_), net::detached);
  }
  ~TcpCutter() {
    boost::system::error_code ignored;
    acceptor_->close(ignored);
    cutAll();
  }
  unsigned short port() const { return acceptor_->local_endpoint().port(); }
  void cutAll() {
    for (auto& weak : state_->sockets) {
      if (auto sock = weak.lock()) {
        boost::system::error_code ignored;
        sock->close(ignored);
      }
    }
    state_->sockets.clear();
  }

 private:
  struct State {
    tcp::endpoint upstream;
    std::vector<std::weak_ptr<tcp::socket>> sockets;
  };
  static constexpr auto kUseTuple = net::as_tuple(net::use_awaitable);

  static net::awaitable<void> pipe(std::shared_ptr<tcp::socket> from,
                                   std::shared_ptr<tcp::socket> to) {
    std::vector<char> buf(16 * 1024);
    for (;;) {
      auto [rec, n] = co_await from->async_read_some(net::buffer(buf), kUseTuple);
      if (rec) {
        break;
      }
      auto [wec, m] = co_await net::async_write(*to, net::buffer(buf.data(), n), kUseTuple);
      (void)m;
      if (wec) {
        break;
      }
    }
    boost::system::error_code ignored;
    from->close(ignored);
    to->close(ignored);
  }

  static net::awaitable<void> acceptLoop(std::shared_ptr<State> state,
                                         std::shared_ptr<tcp::acceptor> acceptor) {
    for (;;) {
      auto client = std::make_shared<tcp::socket>(acceptor->get_executor());
      auto [ec] = co_await acceptor->async_accept(*client, kUseTuple);
      if (ec) {
        co_return;
      }
      auto server = std::make_shared<tcp::socket>(acceptor->get_executor());
      auto [cec] = co_await server->async_connect(state->upstream, kUseTuple);
      if (cec) {
        continue;  // the client sees its connection closed
      }
      state->sockets.push_back(client);
      state->sockets.push_back(server);
      auto up = pipe(client, server);
      auto down = pipe(server, client);
      net::co_spawn(acceptor->get_executor(), std::move(up), net::detached);
      net::co_spawn(acceptor->get_executor(), std::move(down), net::detached);
    }
  }

  std::shared_ptr<State> state_;
  std::shared_ptr<tcp::acceptor> acceptor_;
};

// The reflectors' LIST and 410 counts, summed over informers.
struct ListCounts {
  int lists = 0;
  int listRequests = 0;
  int expired = 0;
  int watches = 0;
};
ListCounts listCounts(std::initializer_list<const Reflector*> reflectors) {
  ListCounts c;
  for (const auto* r : reflectors) {
    c.lists += r->stats().lists;
    c.listRequests += r->stats().listRequests;
    c.expired += r->stats().expired;
    c.watches += r->stats().watches;
  }
  return c;
}

std::string jsonString(const rapidjson::Value& v, const char* a, const char* b) {
  auto it = v.FindMember(a);
  if (it == v.MemberEnd()) {
    return "";
  }
  auto jt = it->value.FindMember(b);
  return jt == it->value.MemberEnd() || !jt->value.IsString() ? "" : jt->value.GetString();
}

class InformerE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    kube::KubeconfigOptions options;
    options.paths = {controlPlane().kubeconfig()};
    auto config = kube::loadKubeconfig(options);
    ASSERT_TRUE(config) << config.error().message();
    config->qps = 2000;
    config->burst = 4000;
    auto client = kube::RestClient::create(ioc_.get_executor(), *config, nullptr);
    ASSERT_TRUE(client) << client.error().message();
    client_ = std::move(*client);
    std::random_device rd;
    ns_ = "informer-e2e-" + std::to_string(rd() % 1000000);
    const std::string error = controlPlane().createNamespace(ns_);
    ASSERT_EQ(error, "");
  }

  template <class T>
  T run(net::awaitable<T> task) {
    return runSync(ioc_, std::move(task));
  }

  // key → resourceVersion of everything a fresh (paginated) LIST returns.
  std::map<std::string, std::string> freshList(const kube::Resource& r) {
    std::map<std::string, std::string> out;
    kube::ListOptions opts;
    opts.limit = 500;
    for (;;) {
      auto page = run(client_->list(r, ns_, opts));
      EXPECT_TRUE(page) << page.error().message();
      if (!page) {
        return out;
      }
      for (const auto& item : (*page)["items"].GetArray()) {
        out[ns_ + "/" + jsonString(item, "metadata", "name")] =
            jsonString(item, "metadata", "resourceVersion");
      }
      opts.continueToken = jsonString(*page, "metadata", "continue");
      if (opts.continueToken.empty()) {
        return out;
      }
    }
  }

  template <class T>
  static std::map<std::string, std::string> cached(const SharedIndexInformer<T>& informer) {
    std::map<std::string, std::string> out;
    informer.indexer().forEach(
        [&](const auto& obj) { out[objectKey(obj->metadata)] = obj->metadata.resourceVersion; });
    return out;
  }

  // Drives the io_context until the informer matches a fresh LIST, or the deadline passes.
  template <class T>
  bool convergesTo(const SharedIndexInformer<T>& informer, const kube::Resource& r,
                   std::map<std::string, std::string>& lastCached,
                   std::map<std::string, std::string>& lastListed) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      lastListed = freshList(r);
      for (int i = 0; i < 50; ++i) {
        ioc_.poll();
      }
      lastCached = cached(informer);
      if (lastCached == lastListed) {
        return true;
      }
      ioc_.run_for(std::chrono::milliseconds(200));
    }
    return false;
  }

  net::io_context ioc_;
  std::unique_ptr<kube::RestClient> client_;
  std::string ns_;
};

TEST_F(InformerE2E, CacheMatchesAFreshListAfterChurnCompactionAndRestarts) {
  RealClock clock(ioc_.get_executor());
  SharedIndexInformer<core::ConfigMap>::Options cmOptions;
  cmOptions.name = "configmaps";
  SharedIndexInformer<core::ConfigMap> configMaps(
      std::make_unique<RestListerWatcher>(*client_, kConfigMaps, ns_), core::decodeConfigMap, clock,
      cmOptions, ioc_.get_executor());
  SharedIndexInformer<core::Pod>::Options podOptions;
  podOptions.name = "pods";
  SharedIndexInformer<core::Pod> pods(std::make_unique<RestListerWatcher>(*client_, kPods, ns_),
                                      core::decodePod, clock, podOptions, ioc_.get_executor());
  int adds = 0;
  int updates = 0;
  int deletes = 0;
  EventHandler<core::ConfigMap> counter;
  counter.onAdd = [&adds](const auto&, bool) { ++adds; };
  counter.onUpdate = [&updates](const auto&, const auto&) { ++updates; };
  counter.onDelete = [&deletes](const auto&, bool) { ++deletes; };
  auto registration = configMaps.addEventHandler(counter);
  ASSERT_TRUE(registration) << registration.error().message();

  configMaps.start(ioc_.get_executor());
  pods.start(ioc_.get_executor());
  std::vector<const InformerBase*> all{&configMaps, &pods};
  ASSERT_TRUE(run(waitForCacheSync(clock, all, clock.now() + std::chrono::seconds(30))));
  ASSERT_TRUE((*registration)->hasSynced());

  const unsigned seed = std::random_device()();
  std::printf("informer churn seed: %u\n", seed);
  std::mt19937 rng(seed);
  std::vector<std::string> liveCms;
  std::vector<std::string> livePods;
  int next = 0;
  auto churn = [&](int ops) {
    for (int i = 0; i < ops; ++i) {
      const bool pod = rng() % 2 == 0;
      auto& live = pod ? livePods : liveCms;
      const auto& res = pod ? kPods : kConfigMaps;
      const int dice = static_cast<int>(rng() % 10);
      if (live.size() < 20 || dice < 4) {
        const std::string name = (pod ? "p-" : "cm-") + std::to_string(next++);
        // Pods name a scheduler that does not exist: they stay Pending, so no scheduler,
        // kubelet or pod-GC write interleaves (pods bound to unknown nodes get collected).
        const std::string body =
            pod ? R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
                      R"("},"spec":{"schedulerName":"informer-e2e-none","containers":[{"name":"c",)"
                      R"("image":"example.invalid/c:1"}]}})"
                : R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
                      R"("},"data":{"v":"0"}})";
        auto r = run(client_->create(res, ns_, body));
        ASSERT_TRUE(r) << r.error().message();
        live.push_back(name);
      } else if (dice < 8) {
        const std::string& name = live[rng() % live.size()];
        const std::string patch = R"({"metadata":{"labels":{"v":")" + std::to_string(i) + "\"}}}";
        auto r = run(client_->patch(res, ns_, name, kube::PatchType::Merge, patch));
        ASSERT_TRUE(r) << r.error().message();
      } else {
        const size_t idx = rng() % live.size();
        kube::DeleteOptions del;
        del.gracePeriodSeconds = 0;
        auto r = run(client_->remove(res, ns_, live[idx], del));
        ASSERT_TRUE(r) << r.error().message();
        live.erase(live.begin() + static_cast<long>(idx));
      }
      ioc_.poll();  // informers consume as we go
    }
  };

  churn(700);
  auto reflectorCounts = [&] { return listCounts({configMaps.reflector(), pods.reflector()}); };
  std::map<std::string, std::string> cachedCms, listedCms, cachedPods, listedPods;
  auto converge = [&] {
    EXPECT_TRUE(convergesTo(configMaps, kConfigMaps, cachedCms, listedCms))
        << cachedCms.size() << " cached vs " << listedCms.size() << " listed config maps";
    EXPECT_TRUE(convergesTo(pods, kPods, cachedPods, listedPods))
        << cachedPods.size() << " cached vs " << listedPods.size() << " listed pods";
  };
  const ListCounts before = reflectorCounts();

  // Forced expiry: move the cluster's revision past what the informers last saw (a write in a
  // namespace they do not watch), compact etcd there, and restart the apiserver so every watch
  // must resume from a compacted resourceVersion: 410 Gone, then a relist.
  ASSERT_TRUE(run(client_->create(
      kConfigMaps, "default",
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"bump-"}})")));
  auto compact = controlPlane().ctl({"compact"});
  ASSERT_TRUE(compact.ok()) << compact.output;
  auto restart = controlPlane().ctl({"restart", "apiserver"});
  ASSERT_TRUE(restart.ok()) << restart.output;
  churn(700);
  converge();
  const ListCounts afterCompaction = reflectorCounts();

  auto restart2 = controlPlane().ctl({"restart", "apiserver"});
  ASSERT_TRUE(restart2.ok()) << restart2.output;
  churn(600);
  converge();
  const ListCounts after = reflectorCounts();
  EXPECT_EQ(cachedCms.size(), liveCms.size() + 1) << "ours plus kube-root-ca.crt";
  EXPECT_EQ(cachedPods.size(), livePods.size());

  // Every restart cuts both watches. A cut alone re-watches from the last resourceVersion; only
  // a 410 (the compaction, or a restarted watch cache that starts past our resourceVersion)
  // relists, once, with at most the documented second LIST from "" if that one expires too.
  std::printf(
      "LISTs per apiserver restart (2 informers): compaction+restart lists=%d requests=%d "
      "expired=%d; plain restart lists=%d requests=%d expired=%d\n",
      afterCompaction.lists - before.lists, afterCompaction.listRequests - before.listRequests,
      afterCompaction.expired - before.expired, after.lists - afterCompaction.lists,
      after.listRequests - afterCompaction.listRequests, after.expired - afterCompaction.expired);
  EXPECT_GE(afterCompaction.expired - before.expired, 2) << "both watches expired";
  EXPECT_EQ(after.lists - before.lists, after.expired - before.expired)
      << "one relist per 410, none per cut";
  EXPECT_LE(after.listRequests - before.listRequests, 2 * (after.expired - before.expired));
  // The handler saw a consistent story: everything added and not deleted is cached.
  EXPECT_EQ(static_cast<size_t>(adds - deletes), cachedCms.size());
  EXPECT_GT(updates, 0);

  configMaps.stop();
  pods.stop();
  for (int i = 0; i < 1000 && !(configMaps.stopped() && pods.stopped()); ++i) {
    ioc_.run_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(configMaps.stopped() && pods.stopped());
}

// Watches cut while the API server stays up (a load balancer's idle cut, a
// network blip) resume from the last resourceVersion without a single LIST.
TEST_F(InformerE2E, CutWatchesResumeWithoutListing) {
  auto url = kube::parseServerUrl(controlPlane().server());
  ASSERT_TRUE(url) << url.error().message();
  TcpCutter cutter(ioc_, url->host, static_cast<unsigned short>(std::stoi(url->port)));
  kube::KubeconfigOptions options;
  options.paths = {controlPlane().kubeconfig()};
  auto config = kube::loadKubeconfig(options);
  ASSERT_TRUE(config) << config.error().message();
  config->server = "https://127.0.0.1:" + std::to_string(cutter.port());
  auto proxied = kube::RestClient::create(ioc_.get_executor(), *config, nullptr);
  ASSERT_TRUE(proxied) << proxied.error().message();

  RealClock clock(ioc_.get_executor());
  SharedIndexInformer<core::ConfigMap>::Options cmOptions;
  cmOptions.name = "configmaps";
  SharedIndexInformer<core::ConfigMap> configMaps(
      std::make_unique<RestListerWatcher>(**proxied, kConfigMaps, ns_), core::decodeConfigMap,
      clock, cmOptions, ioc_.get_executor());
  SharedIndexInformer<core::Pod>::Options podOptions;
  podOptions.name = "pods";
  SharedIndexInformer<core::Pod> pods(std::make_unique<RestListerWatcher>(**proxied, kPods, ns_),
                                      core::decodePod, clock, podOptions, ioc_.get_executor());
  configMaps.start(ioc_.get_executor());
  pods.start(ioc_.get_executor());
  std::vector<const InformerBase*> all{&configMaps, &pods};
  ASSERT_TRUE(run(waitForCacheSync(clock, all, clock.now() + std::chrono::seconds(30))));

  // One new object of each kind, seen by both informers: each watch has had an event before it
  // is cut (a watch that ends within 1s without events is "very short" and relists by design).
  auto createAndSee = [&](int i) {
    const std::string name = "cut-" + std::to_string(i);
    ASSERT_TRUE(run(client_->create(
        kConfigMaps, ns_,
        R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name + "\"}}")));
    ASSERT_TRUE(run(client_->create(
        kPods, ns_,
        R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
            R"("},"spec":{"schedulerName":"informer-e2e-none","containers":[{"name":"c",)"
            R"("image":"example.invalid/c:1"}]}})")));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline &&
           !(configMaps.indexer().contains(ns_ + "/" + name) &&
             pods.indexer().contains(ns_ + "/" + name))) {
      ioc_.run_for(std::chrono::milliseconds(20));
    }
    ASSERT_TRUE(configMaps.indexer().contains(ns_ + "/" + name)) << name;
    ASSERT_TRUE(pods.indexer().contains(ns_ + "/" + name)) << name;
  };
  const ListCounts before = listCounts({configMaps.reflector(), pods.reflector()});
  constexpr int kCuts = 3;
  for (int i = 0; i < kCuts; ++i) {
    createAndSee(i);
    cutter.cutAll();
  }
  createAndSee(kCuts);  // the last cut watches resumed too
  const ListCounts after = listCounts({configMaps.reflector(), pods.reflector()});
  std::printf("%d watch cuts of 2 informers: lists=%d list_requests=%d watches=%d\n", kCuts,
              after.lists - before.lists, after.listRequests - before.listRequests,
              after.watches - before.watches);
  EXPECT_EQ(after.listRequests - before.listRequests, 0) << "a cut never relists";
  EXPECT_GE(after.watches - before.watches, 2 * kCuts);

  std::map<std::string, std::string> cached, listed;
  EXPECT_TRUE(convergesTo(configMaps, kConfigMaps, cached, listed));
  EXPECT_TRUE(convergesTo(pods, kPods, cached, listed));
  configMaps.stop();
  pods.stop();
  for (int i = 0; i < 1000 && !(configMaps.stopped() && pods.stopped()); ++i) {
    ioc_.run_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(configMaps.stopped() && pods.stopped());
}

}  // namespace
}  // namespace egress::cache

#include "pkg/cache/informer_factory.h"

namespace egress::cache {
namespace {

// The factory shares one informer per (type, resource, namespace, selector) and starts them
// together; listers read the shared cache.
TEST_F(InformerE2E, FactorySharesInformersAndListersReadThem) {
  for (int i = 0; i < 3; ++i) {
    const std::string body = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"f-)" +
                             std::to_string(i) + R"(","labels":{"tier":")" +
                             (i == 0 ? "front" : "back") + "\"}}}";
    ASSERT_TRUE(run(client_->create(kConfigMaps, ns_, body)));
  }
  RealClock clock(ioc_.get_executor());
  SharedInformerFactory factory(*client_, clock, ioc_.get_executor());
  auto& a = factory.informerFor<core::ConfigMap>(kConfigMaps, core::decodeConfigMap, ns_);
  auto& b = factory.informerFor<core::ConfigMap>(kConfigMaps, core::decodeConfigMap, ns_);
  auto& back =
      factory.informerFor<core::ConfigMap>(kConfigMaps, core::decodeConfigMap, ns_, "tier=back");
  EXPECT_EQ(&a, &b);
  EXPECT_NE(static_cast<void*>(&a), static_cast<void*>(&back));
  EXPECT_EQ(factory.size(), 2u);
  factory.start();
  ASSERT_TRUE(
      run(waitForCacheSync(clock, factory.informers(), clock.now() + std::chrono::seconds(30))));
  Lister<core::ConfigMap> lister(a.indexer());
  EXPECT_EQ(lister.listInNamespace(ns_).size(), 4u) << "three plus kube-root-ca.crt";
  EXPECT_EQ(back.indexer().size(), 2u) << "the label selector is applied by the server";
  ASSERT_NE(lister.get(ns_, "f-0"), nullptr);
  EXPECT_EQ(lister.get(ns_, "f-0")->metadata.labels.at("tier"), "front");
  factory.stop();
  for (int i = 0; i < 1000 && !factory.stopped(); ++i) {
    ioc_.run_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(factory.stopped());
}

}  // namespace
}  // namespace egress::cache
