// End-to-end: a small sample controller run by the Manager against the real local control plane.
// It mirrors each ConfigMap's "mirror" label into its "mirrored" annotation. Through it the test
// shows what controller-runtime users rely on: created and updated objects are reconciled, a
// deleted object's key reconciles as not found without error, a failing reconcile is retried
// with growing delays (counted in controller_runtime_reconcile_total{result="error"}), no object
// is reconciled by two workers at once (4 workers, 200 objects), a resync reconciles every
// object and writes nothing, and a shutdown in the middle of reconciles lets them finish, then
// releases the lease. Then the same with real signals, the sample controller running in
// processes of its own (controller_process.cc, a leader and a standby): a SIGTERM lets the
// reconciles that run finish their writes, starts no new one, releases the lease and exits 0, and
// the standby takes over at once and reconciles the rest; a second SIGTERM during the drain exits
// 1 without waiting and leaves the lease held (it must not be released under running work).
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
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
#include "pkg/kube/child_process.h"
#include "pkg/kube/kubeconfig.h"
#include "pkg/kube/rest_client.h"
#include "test/e2e/testenv/child_process.h"
#include "test/e2e/testenv/environment.h"
#include "test/testutil/run_sync.h"
#include "test/testutil/temp_dir.h"
#include <sys/wait.h>

namespace egress::controllerruntime {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;
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

  // The Lease's holderIdentity ("" once released); nullopt if it cannot be read.
  std::optional<std::string> leaseHolder(const std::string& name) {
    auto lease = run(client_->get(kLeases, testNamespace(), name));
    if (!lease || !lease->HasMember("spec")) {
      return std::nullopt;
    }
    const auto& spec = (*lease)["spec"];
    if (!spec.HasMember("holderIdentity") || !spec["holderIdentity"].IsString()) {
      return "";
    }
    return spec["holderIdentity"].GetString();
  }

  // A ConfigMap's annotation `name`; "" if it has none, nullopt if the ConfigMap cannot be read.
  std::optional<std::string> annotation(const std::string& configMap, const std::string& name) {
    auto got = run(client_->get(kConfigMaps, testNamespace(), configMap));
    if (!got) {
      return std::nullopt;
    }
    const auto& meta = (*got)["metadata"];
    if (!meta.HasMember("annotations") || !meta["annotations"].HasMember(name.c_str())) {
      return "";
    }
    return meta["annotations"][name.c_str()].GetString();
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

  EXPECT_EQ(leaseHolder("mirror-e2e"), "") << "the lease is still held after the shutdown";
}

// One line of a controller_process's events file.
struct ProcessEvent {
  std::string name;  // signal, started, start, finish, stop, exit
  std::string key;   // "-" for none; the exit code for exit
  SteadyClock::time_point at;
};

// The sample controller with a Manager of its own (controller_process.cc), as a child process
// campaigning for `lease` in the test's namespace: leaseDuration 15 s, renewDeadline 10 s,
// retryPeriod 1 s, two workers.
class ControllerProcess {
 public:
  ControllerProcess(const std::string& dir, const std::string& identity, const std::string& lease,
                    std::chrono::milliseconds reconcileDelay)
      : identity_(identity),
        eventsFile_(dir + "/" + identity + ".events"),
        process_(
            {
                EGRESS_CONTROLLER_PROCESS,
                "--kubeconfig=" + controlPlane().kubeconfig(),
                "--namespace=" + testNamespace(),
                "--identity=" + identity,
                "--events-file=" + eventsFile_,
                "--reconcile-delay=" + std::to_string(reconcileDelay.count()) + "ms",
                "--workers=2",
                "--leader-elect",
                "--leader-election-id=" + lease,
                "--leader-election-namespace=" + testNamespace(),
                "--leader-elect-lease-duration=15s",
                "--leader-elect-renew-deadline=10s",
                "--leader-elect-retry-period=1s",
                "--graceful-shutdown-timeout=2m",
                "--metrics-bind-address=0",
                "--health-probe-bind-address=0",
            },
            dir + "/" + identity + ".log") {
    if (!process_.error().empty()) {
      ADD_FAILURE() << process_.error();
    }
  }
  ~ControllerProcess() {
    if (::testing::Test::HasFailure()) {
      std::printf("---- log of %s ----\n%s", identity_.c_str(), process_.log().c_str());
    }
  }
  ControllerProcess(const ControllerProcess&) = delete;
  ControllerProcess& operator=(const ControllerProcess&) = delete;

  const std::string& identity() const { return identity_; }
  testenv::ChildProcess& process() { return process_; }

  std::vector<ProcessEvent> events() const {
    std::vector<ProcessEvent> out;
    std::ifstream in(eventsFile_);
    ProcessEvent e;
    long long ns = 0;
    while (in >> e.name >> e.key >> ns) {
      e.at = SteadyClock::time_point(std::chrono::nanoseconds(ns));
      out.push_back(e);
    }
    return out;
  }
  std::optional<ProcessEvent> first(const std::string& name) const {
    for (auto& e : events()) {
      if (e.name == name) {
        return e;
      }
    }
    return std::nullopt;
  }
  // The keys whose reconcile started and has not finished.
  std::set<std::string> inFlight() const {
    std::multiset<std::string> running;
    for (const auto& e : events()) {
      if (e.name == "start") {
        running.insert(e.key);
      } else if (e.name == "finish" && running.count(e.key) > 0) {
        running.erase(running.find(e.key));
      }
    }
    return {running.begin(), running.end()};
  }

 private:
  std::string identity_;
  std::string eventsFile_;
  testenv::ChildProcess process_;
};

// Polls `done` every 10 ms until it holds or `limit` passes; returns done().
bool pollUntil(const std::function<bool()>& done, SteadyClock::duration limit) {
  const auto deadline = SteadyClock::now() + limit;
  while (!done() && SteadyClock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  return done();
}

double seconds(SteadyClock::duration d) {
  return std::chrono::duration<double>(d).count();
}

bool exitedWith(const std::optional<int>& status, int code) {
  return status && WIFEXITED(*status) && WEXITSTATUS(*status) == code;
}

constexpr const char* kReconciledBy = "e2e.egress.io/reconciled-by";
constexpr auto kProcessLeaseDuration = 15s;

// SIGTERM (a real signal, kill(2)) to a leader whose reconciles are in flight: they all finish
// and write, none starts after the signal, the lease is released and the leader exits 0; the
// standby, already campaigning, takes the released lease at its next attempt (well within
// leaseDuration, which it would otherwise have to wait out) and reconciles the rest.
TEST_F(ControllerE2E, SigtermDrainsTheLeaderAndTheStandbyTakesOver) {
  constexpr int kCount = 16;  // 2 workers x 2 s each: most are still queued at the signal
  const std::string lease = "annotate-e2e";
  for (int i = 0; i < kCount; ++i) {
    ASSERT_TRUE(run(
        client_->create(kConfigMaps, testNamespace(), configMap("obj-" + std::to_string(i), "x"))));
  }
  testutil::TempDir tmp("controller-process-e2e");
  ControllerProcess leader(tmp.path(), "ctl-a", lease, 2s);
  ASSERT_TRUE(pollUntil([&] { return leader.first("started").has_value(); }, 120s))
      << "ctl-a never led";
  ControllerProcess standby(tmp.path(), "ctl-b", lease, 2s);
  ASSERT_TRUE(pollUntil(
      [&] { return standby.process().log().find("attempting to acquire") != std::string::npos; },
      120s))
      << "ctl-b never campaigned";
  ASSERT_TRUE(pollUntil([&] { return leader.inFlight().size() >= 2; }, 60s))
      << "ctl-a has no reconciles in flight";

  const auto termAt = SteadyClock::now();
  leader.process().signal(SIGTERM);
  const auto status = leader.process().reap(120s);
  ASSERT_TRUE(status) << "ctl-a did not exit after SIGTERM";
  const auto holder = leaseHolder(lease);
  EXPECT_TRUE(exitedWith(status, 0)) << kube::describeWaitStatus(*status);
  EXPECT_TRUE(holder == "" || holder == standby.identity())
      << "the lease is still held by " << holder.value_or("(unreadable)");

  // The leader's own account. The signal is handled in one turn of its event loop: its
  // "signal" line and the controller's "stop" (the Manager stops the controllers at once) come
  // together, in either order. From the first of them on, no reconcile starts; every one that
  // started before finishes (and wrote: checked on the objects below); then exit 0.
  const auto events = leader.events();
  const auto signalAt = std::find_if(events.begin(), events.end(), [](const ProcessEvent& e) {
    return e.name == "signal" || e.name == "stop";
  });
  ASSERT_NE(signalAt, events.end()) << "ctl-a recorded no signal";
  std::multiset<std::string> running;
  std::set<std::string> startedByLeader;
  for (auto it = events.begin(); it != signalAt; ++it) {
    if (it->name == "start") {
      running.insert(it->key);
      startedByLeader.insert(it->key);
    } else if (it->name == "finish") {
      ASSERT_EQ(running.count(it->key), 1u) << it->key << " finished twice";
      running.erase(running.find(it->key));
    }
  }
  const size_t inFlightAtSignal = running.size();
  EXPECT_GE(inFlightAtSignal, 1u) << "no reconcile ran when the signal came";
  bool signalled = false;
  bool stopped = false;
  for (auto it = signalAt; it != events.end(); ++it) {
    EXPECT_NE(it->name, "start") << it->key << " started after the signal";
    if (it->name == "finish") {
      ASSERT_EQ(running.count(it->key), 1u) << it->key << " finished but never started";
      running.erase(running.find(it->key));
    }
    signalled = signalled || it->name == "signal";
    stopped = stopped || it->name == "stop";
  }
  EXPECT_TRUE(running.empty()) << running.size() << " reconciles never finished";
  EXPECT_TRUE(signalled && stopped) << "signal " << signalled << ", stop " << stopped;
  EXPECT_GE(signalAt->at, termAt);
  ASSERT_EQ(events.back().name, "exit");
  EXPECT_EQ(events.back().key, "0");
  SteadyClock::time_point lastFinish{};
  for (const auto& e : events) {
    if (e.name == "finish") {
      lastFinish = std::max(lastFinish, e.at);
    }
  }

  // The standby leads, only after the leader's last write, and long before the lease would
  // have expired.
  ASSERT_TRUE(
      pollUntil([&] { return standby.first("started").has_value(); }, kProcessLeaseDuration + 60s))
      << "ctl-b never took over";
  const auto takeoverAt = standby.first("started")->at;
  const auto exitAt = events.back().at;
  std::printf(
      "[controller-e2e] SIGTERM ctl-a with %zu reconciles in flight: drained and exited after "
      "%.3f s; ctl-b leads %.3f s after that exit (%.3f s after the SIGTERM; leaseDuration %.0f "
      "s)\n",
      inFlightAtSignal, seconds(exitAt - termAt), seconds(takeoverAt - exitAt),
      seconds(takeoverAt - termAt), seconds(kProcessLeaseDuration));
  EXPECT_GT(takeoverAt, lastFinish) << "ctl-b led while ctl-a still reconciled";
  EXPECT_LT(takeoverAt - exitAt, kProcessLeaseDuration);

  // Every object ends up annotated: those the leader began by the leader, the rest by the
  // standby.
  std::map<std::string, std::string> by;
  ASSERT_TRUE(pollUntil(
      [&] {
        for (int i = 0; i < kCount; ++i) {
          const std::string name = "obj-" + std::to_string(i);
          by[name] = annotation(name, kReconciledBy).value_or("");
          if (by[name].empty()) {
            return false;
          }
        }
        return true;
      },
      120s))
      << "not every object was reconciled";
  int byStandby = 0;
  for (const auto& [name, who] : by) {
    const bool leaderBegan = startedByLeader.count(testNamespace() + "/" + name) > 0;
    EXPECT_EQ(who, leaderBegan ? leader.identity() : standby.identity()) << name;
    byStandby += who == standby.identity() ? 1 : 0;
  }
  EXPECT_GE(byStandby, 1);
  std::printf("[controller-e2e] %zu objects annotated by ctl-a, %d by ctl-b\n",
              by.size() - byStandby, byStandby);

  standby.process().signal(SIGTERM);
  const auto standbyStatus = standby.process().reap(120s);
  EXPECT_TRUE(exitedWith(standbyStatus, 0));
  EXPECT_EQ(leaseHolder(lease), "");
}

// A second SIGTERM while the Manager drains: exit 1 at once, without waiting for the running
// reconciles (they would take a minute), and without releasing the lease under them (it
// expires instead).
TEST_F(ControllerE2E, ASecondSigtermDuringTheDrainExitsOneAtOnce) {
  const std::string lease = "annotate-twice-e2e";
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(run(
        client_->create(kConfigMaps, testNamespace(), configMap("obj-" + std::to_string(i), "x"))));
  }
  testutil::TempDir tmp("controller-process-e2e");
  ControllerProcess p(tmp.path(), "ctl-c", lease, 60s);
  ASSERT_TRUE(pollUntil([&] { return p.inFlight().size() >= 2; }, 120s))
      << "no reconciles in flight";
  p.process().signal(SIGTERM);
  ASSERT_TRUE(pollUntil([&] { return p.first("stop").has_value(); }, 60s))
      << "the first SIGTERM did not stop the controller";
  const auto secondAt = SteadyClock::now();
  p.process().signal(SIGTERM);
  const auto status = p.process().reap(60s);
  ASSERT_TRUE(status) << "no exit after the second SIGTERM";
  const auto exitedAfter = SteadyClock::now() - secondAt;
  EXPECT_TRUE(exitedWith(status, 1)) << kube::describeWaitStatus(*status);
  std::printf("[controller-e2e] second SIGTERM: exit after %.3f s, 2 reconciles abandoned\n",
              seconds(exitedAfter));
  const auto events = p.events();
  EXPECT_EQ(std::count_if(events.begin(), events.end(),
                          [](const ProcessEvent& e) { return e.name == "signal"; }),
            2);
  EXPECT_EQ(std::count_if(events.begin(), events.end(),
                          [](const ProcessEvent& e) { return e.name == "finish"; }),
            0)
      << "the process waited for its reconciles";
  EXPECT_EQ(leaseHolder(lease), p.identity()) << "the lease was released under running work";
}

}  // namespace
}  // namespace egress::controllerruntime
