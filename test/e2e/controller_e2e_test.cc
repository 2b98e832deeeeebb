// End-to-end: a small sample controller run by the Manager against the real local control plane.
// It mirrors each ConfigMap's "mirror" label into its "mirrored" annotation. Through it the test
// shows what controller-runtime users rely on: created and updated objects are reconciled, a
// deleted object's key reconciles as not found without error, a failing reconcile is retried
// with growing delays (counted in controller_runtime_reconcile_total{result="error"}), no object
// is reconciled by two workers at once (4 workers, 200 objects), a resync reconciles every
// object and writes nothing, and a shutdown in the middle of reconciles lets them finish, then
// releases the lease.
#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include "pkg/apis/core/config_map.h"
#include "pkg/cache/informer_factory.h"
#include "pkg/controllerruntime/controller.h"
#include "pkg/controllerruntime/event_handlers.h"
#include "pkg/controllerruntime/manager.h"
#include "pkg/kube/kubeconfig.h"
#include "pkg/kube/rest_client.h"
#include "test/e2e/testenv/environment.h"
#include "test/testutil/run_sync.h"

namespace egress::controllerruntime {
namespace {

using testenv::controlPlane;

const kube::Resource kConfigMaps{"", "v1", "configmaps", true};
const kube::Resource kLeases{"coordination.k8s.io", "v1", "leases", true};
constexpr const char* kControllerName = "mirror";
constexpr int kObjects = 200;
// The object whose first kFailures reconciles fail.
constexpr const char* kFailing = "fail-me";
constexpr int kFailures = 4;

// What the reconciles did, as the test reads it.
struct Stats {
  int reconciles = 0;
  int finished = 0;
  int writes = 0;
  int overlaps = 0;  // a key reconciled while another reconcile of it ran
  int maxInFlight = 0;
  std::set<std::string> inFlight;
  std::set<std::string> notFound;
  std::vector<std::chrono::steady_clock::time_point> failures;
  bool slow = false;  // each reconcile also waits 300 ms (the shutdown case)
};

// The namespace of the running test (each run makes its own).
std::string& testNamespace() {
  static std::string ns;
  return ns;
}

class MirrorController : public Controller {
 public:
  MirrorController(Options options, kube::RestClient& client, Stats& stats)
      : Controller(std::move(options)), client_(client), stats_(stats) {}

 protected:
  Result<Ok, std::string> watchResources(cache::SharedInformerFactory& factory) override {
    configMaps_ =
        &factory.informerFor<core::ConfigMap>(kConfigMaps, core::decodeConfigMap, testNamespace());
    return Ok{};
  }
  Result<Ok, std::string> addEventHandlers() override {
    auto handler = enqueueForObject<core::ConfigMap>(enqueuer());
    if (auto reg = configMaps_->addEventHandler(handler); !reg) {
      return reg.error().message();
    }
    return Ok{};
  }

  net::awaitable<ReconcileResult> reconcile(const std::string& key) override {
    Stats& s = stats_;
    ++s.reconciles;
    if (!s.inFlight.insert(key).second) {
      ++s.overlaps;
    }
    s.maxInFlight = std::max(s.maxInFlight, static_cast<int>(s.inFlight.size()));
    auto result = co_await mirror(key);
    s.inFlight.erase(key);
    ++s.finished;
    co_return result;
  }

 private:
  net::awaitable<ReconcileResult> mirror(const std::string& key) {
    Stats& s = stats_;
    // Every reconcile suspends, so that the four workers really interleave.
    net::steady_timer pause(co_await net::this_coro::executor);
    pause.expires_after(s.slow ? std::chrono::milliseconds(300) : std::chrono::milliseconds(2));
    co_await pause.async_wait(net::use_awaitable);

    auto object = configMaps_->indexer().get(key);
    if (!object) {
      s.notFound.insert(key);
      co_return ReconcileResult::done();
    }
    const auto& meta = object->metadata;
    if (meta.name == kFailing && static_cast<int>(s.failures.size()) < kFailures) {
      s.failures.push_back(std::chrono::steady_clock::now());
      co_return ReconcileResult::error("injected failure");
    }
    auto label = meta.labels.find("mirror");
    const std::string want = label == meta.labels.end() ? "" : label->second;
    auto have = meta.annotations.find("mirrored");
    if (have != meta.annotations.end() && have->second == want) {
      co_return ReconcileResult::done();
    }
    std::string patch = R"({"metadata":{"annotations":{"mirrored":")" + want + "\"}}}";
    ++s.writes;
    auto patched = co_await client_.patch(kConfigMaps, meta.namespace_, meta.name,
                                          kube::PatchType::Merge, std::move(patch));
    if (!patched && patched.error().isNotFound()) {
      // Deleted after the cache showed it: the delete's own reconcile follows.
      co_return ReconcileResult::done();
    }
    if (!patched) {
      co_return ReconcileResult::error(patched.error().message());
    }
    co_return ReconcileResult::done();
  }

  kube::RestClient& client_;
  Stats& stats_;
  cache::SharedIndexInformer<core::ConfigMap>* configMaps_ = nullptr;
};

// A counter of the registry's, 0 if absent.
double counterValue(prometheus::Registry& registry, const std::string& family,
                    const std::map<std::string, std::string>& labels) {
  for (const auto& f : registry.Collect()) {
    if (f.name != family) {
      continue;
    }
    for (const auto& metric : f.metric) {
      bool match = true;
      for (const auto& wanted : labels) {
        match = match && std::any_of(metric.label.begin(), metric.label.end(), [&](const auto& l) {
                  return l.name == wanted.first && l.value == wanted.second;
                });
      }
      if (match) {
        return metric.counter.value;
      }
    }
  }
  return 0;
}

std::string configMap(const std::string& name, const std::string& mirror) {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
         R"(","labels":{"mirror":")" + mirror + R"("}},"data":{"k":"v"}})";
}

class ControllerE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device rd;
    testNamespace() = "controller-e2e-" + std::to_string(rd() % 1000000);
    ASSERT_EQ(controlPlane().createNamespace(testNamespace()), "");
    kube::KubeconfigOptions kubeconfig;
    kubeconfig.paths = {controlPlane().kubeconfig()};
    auto config = kube::loadKubeconfig(kubeconfig);
    ASSERT_TRUE(config) << config.error().message();
    config->qps = -1;
    auto client = kube::RestClient::create(ioc_.get_executor(), *config, nullptr);
    ASSERT_TRUE(client) << client.error().message();
    client_ = std::move(*client);
  }

  // Runs the io_context until `done` holds or `limit` passes; returns done().
  bool runUntil(const std::function<bool()>& done, std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      ioc_.restart();
      ioc_.run_for(std::chrono::milliseconds(20));
    }
    return done();
  }

  template <class T>
  T run(net::awaitable<T> task) {
    return testutil::runSync(ioc_, std::move(task));
  }

  net::io_context ioc_;
  std::unique_ptr<kube::RestClient> client_;
};

TEST_F(ControllerE2E, SampleControllerThroughTheManager) {
  const std::string& ns = testNamespace();
  for (int i = 0; i < kObjects; ++i) {
    auto created =
        run(client_->create(kConfigMaps, ns, configMap("cm-" + std::to_string(i), "v1")));
    ASSERT_TRUE(created) << created.error().message();
  }

  ManagerOptions options;
  options.kubeconfig = controlPlane().kubeconfig();
  options.metricsBindAddress = "0";
  options.healthProbeBindAddress = "0";
  options.leaderElect = true;
  options.leaderElectionId = "mirror-e2e";
  options.leaderElectionNamespace = ns;
  options.syncPeriod = std::chrono::seconds(3);
  ManagerDeps deps;
  deps.handleSignals = false;
  deps.identity = "mirror-e2e-0";
  auto manager = Manager::create(ioc_.get_executor(), options, std::move(deps));
  ASSERT_TRUE(manager) << manager.error();
  Manager& m = **manager;
  Stats stats;
  m.add(std::make_unique<MirrorController>(
      Controller::Options{kControllerName, 4, m.clock(), ioc_.get_executor(), &m.registry()},
      m.client(), stats));
  std::optional<int> exitCode;
  net::co_spawn(ioc_, m.run(), [&](const std::exception_ptr& e, int code) {
    if (e) {
      std::rethrow_exception(e);
    }
    exitCode = code;
  });

  // Created objects are reconciled and mirrored.
  ASSERT_TRUE(runUntil([&] { return stats.writes >= kObjects; }, std::chrono::seconds(120)))
      << "writes=" << stats.writes << " reconciles=" << stats.reconciles;
  EXPECT_TRUE(m.isLeader());

  // Updated objects are reconciled again.
  for (int i = 0; i < 10; ++i) {
    auto patched =
        run(client_->patch(kConfigMaps, ns, "cm-" + std::to_string(i), kube::PatchType::Merge,
                           R"({"metadata":{"labels":{"mirror":"v2"}}})"));
    ASSERT_TRUE(patched) << patched.error().message();
  }
  ASSERT_TRUE(runUntil([&] { return stats.writes >= kObjects + 10; }, std::chrono::seconds(60)));

  // A deleted object's key reconciles as not found, without an error.
  const double errorsBefore = counterValue(m.registry(), "controller_runtime_reconcile_total",
                                           {{"controller", kControllerName}, {"result", "error"}});
  ASSERT_TRUE(run(client_->remove(kConfigMaps, ns, "cm-0")));
  ASSERT_TRUE(
      runUntil([&] { return stats.notFound.count(ns + "/cm-0") > 0; }, std::chrono::seconds(60)));
  EXPECT_EQ(counterValue(m.registry(), "controller_runtime_reconcile_total",
                         {{"controller", kControllerName}, {"result", "error"}}),
            errorsBefore);

  // A failing reconcile is retried with growing delays (5, 10, 20, 40 ms at least: the per-key
  // exponential backoff), each failure counted; then it succeeds.
  ASSERT_TRUE(run(client_->create(kConfigMaps, ns, configMap(kFailing, "x"))));
  const int writesBefore = stats.writes;
  ASSERT_TRUE(runUntil([&] { return stats.writes > writesBefore; }, std::chrono::seconds(60)));
  ASSERT_EQ(stats.failures.size(), static_cast<size_t>(kFailures));
  for (size_t i = 1; i < stats.failures.size(); ++i) {
    const auto gap = stats.failures[i] - stats.failures[i - 1];
    EXPECT_GE(gap, std::chrono::milliseconds(5 << (i - 1))) << "retry " << i;
  }
  EXPECT_EQ(counterValue(m.registry(), "controller_runtime_reconcile_total",
                         {{"controller", kControllerName}, {"result", "error"}}),
            errorsBefore + kFailures);
  EXPECT_EQ(counterValue(m.registry(), "controller_runtime_reconcile_errors_total",
                         {{"controller", kControllerName}}),
            kFailures);

  // Resyncs (every 3 s) reconcile every object again and write nothing.
  const int reconcilesBefore = stats.reconciles;
  const int writesSettled = stats.writes;
  ASSERT_TRUE(runUntil([&] { return stats.reconciles >= reconcilesBefore + 2 * kObjects; },
                       std::chrono::seconds(60)));
  EXPECT_EQ(stats.writes, writesSettled);

  // No object was ever reconciled by two workers at once, although four ran concurrently.
  EXPECT_EQ(stats.overlaps, 0);
  EXPECT_GE(stats.maxInFlight, 2);

  // A shutdown while reconciles run: they finish, then the lease is released, exit 0.
  stats.slow = true;
  for (int i = 1; i < 21; ++i) {
    ASSERT_TRUE(
        run(client_->patch(kConfigMaps, ns, "cm-" + std::to_string(i), kube::PatchType::Merge,
                           R"({"metadata":{"labels":{"mirror":"v3"}}})")));
  }
  ASSERT_TRUE(runUntil([&] { return !stats.inFlight.empty(); }, std::chrono::seconds(30)));
  m.requestShutdown();
  ASSERT_TRUE(runUntil([&] { return exitCode.has_value(); }, std::chrono::seconds(60)));
  EXPECT_EQ(*exitCode, kExitOk);
  EXPECT_TRUE(stats.inFlight.empty());
  EXPECT_EQ(stats.finished, stats.reconciles) << "a reconcile was abandoned";
  EXPECT_EQ(stats.overlaps, 0);

  auto lease = run(client_->get(kLeases, ns, "mirror-e2e"));
  ASSERT_TRUE(lease) << lease.error().message();
  const auto& spec = (*lease)["spec"];
  const bool released = !spec.HasMember("holderIdentity") || !spec["holderIdentity"].IsString() ||
                        std::string(spec["holderIdentity"].GetString()).empty();
  EXPECT_TRUE(released) << "the lease is still held after the shutdown";
}

}  // namespace
}  // namespace egress::controllerruntime
