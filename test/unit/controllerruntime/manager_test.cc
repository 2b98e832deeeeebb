// Unit tests of the Manager on a FakeClock: fake Runnables that write what happens to them into
// one journal, fake ListerWatchers behind the informers, and the in-memory lease of the elector's
// tests. Shutdown is triggered by requestShutdown(), which is what the signal handler calls.
#include "pkg/controllerruntime/manager.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "pkg/base/notifier.h"
#include "pkg/kube/rest_client.h"
#include "test/testutil/fake_time.h"
#include "test/testutil/run_sync.h"
#include "test/unit/cache/fake_lister_watcher.h"
#include "test/unit/controllerruntime/raw_client.h"
#include "test/unit/leaderelection/fake_lease_lock.h"

namespace egress::controllerruntime {
namespace {

using cache::testing::FakeListerWatcher;
using cache::testing::FakeWatch;
using cache::testing::TestObject;
using leaderelection::testing::FakeLeaseLock;
using leaderelection::testing::FakeLeaseStore;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kIdentity[] = "me";

// Lines such as "setUp a", "start a synced=1 holder=me", "run a", "stop a", "returned a".
using Journal = std::vector<std::string>;

// What the Manager's runnables see of the world, for the journal.
struct World {
  FakeLeaseStore* store = nullptr;
  cache::SharedInformerFactory* factory = nullptr;

  std::string holder() const {
    if (!store->record()) {
      return "<none>";
    }
    return store->record()->holderIdentity.empty() ? "<released>" : store->record()->holderIdentity;
  }
  bool synced() const {
    for (const auto* informer : factory->informers()) {
      if (!informer->hasSynced()) {
        return false;
      }
    }
    return true;
  }
};

// A controller stand-in. `busy` is a reconcile in flight: run() returns only after stop() and
// once the test called finishWork().
class FakeRunnable : public Runnable {
 public:
  FakeRunnable(std::string name, std::string resource, Journal* journal, World* world,
               const net::any_io_executor& executor)
      : name_(std::move(name)),
        resource_(std::move(resource)),
        journal_(journal),
        world_(world),
        wake_(executor) {}

  const std::string& name() const override { return name_; }

  Result<Ok, std::string> setUp(cache::SharedInformerFactory& factory) override {
    journal_->push_back("setUp " + name_);
    world_->factory = &factory;
    const kube::Resource resource{"example.com", "v1", resource_, true};
    factory.informerFor<TestObject>(resource, cache::testing::decodeTestObject);
    if (!setUpError.empty()) {
      return setUpError;
    }
    return Ok{};
  }

  net::awaitable<Result<Ok, std::string>> start() override {
    journal_->push_back("start " + name_ + " synced=" + (world_->synced() ? "1" : "0") +
                        " holder=" + world_->holder());
    if (!startError.empty()) {
      co_return startError;
    }
    co_return Ok{};
  }

  net::awaitable<void> run() override {
    journal_->push_back("run " + name_);
    if (throwInRun) {
      throw std::runtime_error("worker crashed");
    }
    while (!stopped_ || busy) {
      co_await wake_.wait();
    }
    journal_->push_back("returned " + name_ + " holder=" + world_->holder());
  }

  void stop() override {
    journal_->push_back("stop " + name_);
    stopped_ = true;
    wake_.notify();
  }

  void finishWork() {
    busy = false;
    wake_.notify();
  }

  std::string setUpError;
  std::string startError;
  bool throwInRun = false;
  bool busy = false;

 private:
  std::string name_;
  std::string resource_;
  Journal* journal_;
  World* world_;
  Notifier wake_;
  bool stopped_ = false;
};

HttpRequest readyz(const std::string& subPath) {
  HttpRequest request;
  request.path = "/readyz" + subPath;
  request.subPath = subPath;
  return request;
}

// Collects what the Manager logs.
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    spdlog::set_default_logger(std::make_shared<spdlog::logger>(
        "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)));
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
};

class ManagerTest : public ::testing::Test {
 protected:
  ManagerTest() {
    world_.store = &store_;
    options_.metricsBindAddress = "0";
    options_.healthProbeBindAddress = "0";
  }

  ~ManagerTest() override {
    // Let whatever still runs (the Manager, a runnable left behind on purpose, informers) wind
    // down before the fakes it uses go away.
    if (manager_ && !exit_) {
      manager_->requestShutdown();
    }
    for (auto* runnable : runnables_) {
      runnable->finishWork();
    }
    poll();
    EXPECT_TRUE(exit_ || !manager_);
  }

  void create() {
    ManagerDeps deps;
    deps.clock = &clock_;
    kube::RestConfig config;
    config.server = "http://127.0.0.1:1";  // never contacted: every informer is a fake
    deps.restConfig = config;
    deps.listerWatchers = [this](const kube::Resource& resource, const std::string&,
                                 const std::string&) -> std::unique_ptr<cache::ListerWatcher> {
      auto lw = std::make_unique<FakeListerWatcher>();
      lw->hangLists = hangingResource_ == resource.resource;
      lw->onList = [](const kube::ListOptions&) {
        return kube::Result<rapidjson::Document>(cache::testing::listDoc({}, "10"));
      };
      lw->onWatch = [this](const kube::ListOptions&) -> kube::Result<std::unique_ptr<kube::Watch>> {
        return std::unique_ptr<kube::Watch>(std::make_unique<FakeWatch>(ioc_.get_executor()));
      };
      return lw;
    };
    deps.leaseLock = &lock_;
    deps.identity = kIdentity;
    deps.handleSignals = false;
    deps.random = [] { return 0.0; };
    auto manager = Manager::create(ioc_.get_executor(), options_, std::move(deps));
    ASSERT_TRUE(manager) << manager.error();
    manager_ = std::move(*manager);
  }

  FakeRunnable* addRunnable(const std::string& name, const std::string& resource) {
    auto runnable =
        std::make_unique<FakeRunnable>(name, resource, &journal_, &world_, ioc_.get_executor());
    FakeRunnable* raw = runnable.get();
    runnables_.push_back(raw);
    manager_->add(std::move(runnable));
    return raw;
  }

  void run() {
    testutil::spawnInto(ioc_, manager_->run(), exit_);
    poll();
  }

  void poll() { testutil::pollReady(ioc_); }

  // Moves the fake time forward by `d`, stopping at every timer deadline on the way.
  void advance(Clock::Duration d) { testutil::advanceFakeClockTo(ioc_, clock_, clock_.now() + d); }

  // Two runnables, leader election on, every cache synced, the lease won, both running.
  void runTwoAsLeader() {
    options_.leaderElect = true;
    create();
    a_ = addRunnable("a", "things");
    b_ = addRunnable("b", "widgets");
    run();
    advance(milliseconds(100));
    ASSERT_THAT(journal_, ::testing::Contains("run b"));
    ASSERT_TRUE(manager_->isLeader());
  }

  size_t updates() const { return store_.count("update", kIdentity); }

  net::io_context ioc_;
  FakeClock clock_{ioc_.get_executor()};
  FakeLeaseStore store_{ioc_.get_executor(), clock_};
  FakeLeaseLock lock_{store_, kIdentity};
  World world_;
  Journal journal_;
  ManagerOptions options_;
  std::string hangingResource_;
  std::vector<FakeRunnable*> runnables_;
  FakeRunnable* a_ = nullptr;
  FakeRunnable* b_ = nullptr;
  std::unique_ptr<Manager> manager_;
  std::optional<int> exit_;
};

// Start order: setUp of each runnable before the informers start; start() only once every cache
// has synced and the lease is won (another holder keeps the Manager a standby); run() after every
// start(), in the order added.
TEST_F(ManagerTest, StartsInOrderSetUpSyncLeaseStartRun) {
  options_.leaderElect = true;
  create();
  addRunnable("a", "things");
  addRunnable("b", "widgets");
  store_.setRecord({"other", 15, meta::Time(clock_.wallNow()), meta::Time(clock_.wallNow()), 0});
  run();
  EXPECT_THAT(journal_, ElementsAre("setUp a", "setUp b"));
  advance(milliseconds(100));
  EXPECT_TRUE(world_.synced());
  EXPECT_EQ(manager_->readinessChecks().serve(readyz("")).status, 200u);
  // The caches synced, but another candidate holds the lease: nothing started yet.
  advance(seconds(10));
  EXPECT_THAT(journal_, ElementsAre("setUp a", "setUp b"));
  EXPECT_FALSE(manager_->isLeader());
  advance(seconds(10));  // the other holder's lease expired: ours now
  EXPECT_THAT(journal_, ElementsAre("setUp a", "setUp b", "start a synced=1 holder=me",
                                    "start b synced=1 holder=me", "run a", "run b"));
  EXPECT_TRUE(manager_->isLeader());
  EXPECT_FALSE(exit_);
}

// Without leader election, start() follows the cache sync directly, and a Manager without any
// runnable runs until it is told to stop.
TEST_F(ManagerTest, WithoutLeaderElectionStartsAfterTheSyncAndRunsUntilShutdown) {
  create();
  addRunnable("a", "things");
  run();
  advance(milliseconds(100));
  EXPECT_THAT(journal_, ElementsAre("setUp a", "start a synced=1 holder=<none>", "run a"));
  advance(seconds(3600));
  EXPECT_FALSE(exit_);
  manager_->requestShutdown();
  poll();
  ASSERT_TRUE(exit_);
  EXPECT_EQ(*exit_, kExitOk);
  EXPECT_EQ(store_.calls().size(), 0u);  // no elector, no lease
}

// --cache-sync-timeout: an informer that never lists keeps /readyz failing with its name; at
// the timeout run() fails with a message naming it, and nothing starts.
TEST_F(ManagerTest, CacheSyncTimeoutFailsNamingTheUnsyncedInformer) {
  LogCapture log;
  hangingResource_ = "widgets";
  options_.leaderElect = true;
  create();
  addRunnable("a", "things");
  addRunnable("b", "widgets");
  run();
  advance(seconds(60));
  auto ready = manager_->readinessChecks().serve(readyz("/informers"));
  EXPECT_EQ(ready.status, 500u);
  EXPECT_THAT(ready.body, HasSubstr("widgets"));
  EXPECT_THAT(ready.body, Not(HasSubstr("things")));
  EXPECT_FALSE(exit_);
  advance(seconds(60));
  ASSERT_TRUE(exit_);
  EXPECT_EQ(*exit_, kExitError);
  EXPECT_THAT(log.text(), HasSubstr("timed out after 2m waiting for the caches to sync; "
                                    "informers not synced: widgets\n"));
  EXPECT_THAT(journal_, ElementsAre("setUp a", "setUp b", "stop a", "stop b"));
  EXPECT_EQ(store_.calls().size(), 0u);  // never campaigned
}

// A start() error: logged, nothing runs, the later runnables never start, exit non-zero.
TEST_F(ManagerTest, AStartErrorStopsEverythingWithoutRunning) {
  LogCapture log;
  options_.leaderElect = true;
  create();
  addRunnable("a", "things")->startError = "cannot rebuild the ledger";
  addRunnable("b", "widgets");
  run();
  advance(milliseconds(100));
  ASSERT_TRUE(exit_);
  EXPECT_EQ(*exit_, kExitError);
  EXPECT_THAT(log.text(), HasSubstr("a: start failed: cannot rebuild the ledger"));
  EXPECT_THAT(journal_,
              ElementsAre("setUp a", "setUp b", "start a synced=1 holder=me", "stop a", "stop b"));
  EXPECT_EQ(world_.holder(), "<released>");
}

// A setUp() error: nothing starts, not even the informers, and the exit code is non-zero.
TEST_F(ManagerTest, ASetUpErrorExitsNonZeroBeforeTheInformersStart) {
  LogCapture log;
  create();
  addRunnable("a", "things")->setUpError = "no such resource";
  addRunnable("b", "widgets");
  run();
  ASSERT_TRUE(exit_);
  EXPECT_EQ(*exit_, kExitError);
  EXPECT_THAT(log.text(), HasSubstr("a: setting up failed: no such resource"));
  EXPECT_THAT(journal_, ElementsAre("setUp a", "stop a", "stop b"));
}

// A run() that throws stops the Manager like any failure: the others are drained, and the exit
// code is non-zero.
TEST_F(ManagerTest, ARunThatThrowsStopsTheManagerNonZero) {
  LogCapture log;
  create();
  addRunnable("a", "things")->throwInRun = true;
  addRunnable("b", "widgets");
  run();
  advance(milliseconds(100));
  ASSERT_TRUE(exit_);
  EXPECT_EQ(*exit_, kExitError);
  EXPECT_THAT(log.text(), HasSubstr("a: run() failed: worker crashed"));
  EXPECT_THAT(journal_, ::testing::IsSupersetOf({"stop a", "stop b", "returned b holder=<none>"}));
}

// Leader-election durations client-go would refuse are refused when the Manager is built.
TEST_F(ManagerTest, InvalidLeaderElectionDurationsAreRefused) {
  options_.leaderElect = true;
  options_.leaseDuration = seconds(5);
  ManagerDeps deps;
  deps.clock = &clock_;
  deps.restConfig = kube::RestConfig();
  deps.restConfig->server = "http://127.0.0.1:1";
  deps.leaseLock = &lock_;
  deps.handleSignals = false;
  auto manager = Manager::create(ioc_.get_executor(), options_, std::move(deps));
  ASSERT_FALSE(manager);
  EXPECT_THAT(manager.error(), HasSubstr("--leader-elect-lease-duration"));
  EXPECT_THAT(manager.error(), HasSubstr("leaseDuration must be greater than renewDeadline"));
}

// A lost lease (renewals fail past renewDeadline): the runnables are stopped, their work is
// awaited, and run() returns non-zero ("leader election lost").
TEST_F(ManagerTest, LostLeadershipStopsTheRunnablesAndExitsNonZero) {
  LogCapture log;
  runTwoAsLeader();
  a_->busy = true;
  for (int i = 0; i < 100; ++i) {
    store_.updateErrors.push_back(leaderelection::testing::serverError());
  }
  advance(seconds(11));
  EXPECT_THAT(log.text(), HasSubstr("leader election lost"));
  EXPECT_THAT(journal_, ::testing::IsSupersetOf({"stop a", "stop b", "returned b holder=me"}));
  EXPECT_FALSE(exit_);  // a's reconcile still runs
  a_->finishWork();
  poll();
  ASSERT_TRUE(exit_);
  EXPECT_EQ(*exit_, kExitError);
  EXPECT_FALSE(manager_->isLeader());
}

// Another holder took the lease (seen at the next renewal): a successor may be writing already,
// so the deposed leader writes nothing more (its client's writes are fenced, a reconcile still
// in flight included) and exits at once instead of granting its runnables the rest of the lease.
TEST_F(ManagerTest, LeadershipTakenByAnotherHolderFencesWritesAndExitsAtOnce) {
  LogCapture log;
  runTwoAsLeader();
  a_->busy = true;
  auto taken = *store_.record();
  taken.holderIdentity = "successor";
  store_.setRecord(taken);
  advance(seconds(3));  // the next renewal (retry period 2 s) sees it
  EXPECT_THAT(log.text(), HasSubstr("leader election lost to successor: writes fenced"));
  ASSERT_TRUE(exit_) << "waited for a reconcile in flight while the successor may write";
  EXPECT_EQ(*exit_, kExitError);
  EXPECT_EQ(world_.holder(), "successor") << "the deposed leader wrote the lease";
  ASSERT_TRUE(manager_->client().writesFenced());
  const kube::Resource things{"example.com", "v1", "things", true};
  auto write = testutil::runSync(ioc_, manager_->client().create(things, "ns", "{}"));
  ASSERT_FALSE(write);
  EXPECT_TRUE(write.error().isFenced()) << write.error().message();
  a_->finishWork();
  poll();
}

// The same while draining after SIGTERM (a rolling update, when a successor is waiting): the
// drain keeps renewing; once it sees another holder, the writes are fenced at once.
TEST_F(ManagerTest, ASuccessorSeenWhileDrainingFencesWrites) {
  runTwoAsLeader();
  a_->busy = true;
  manager_->requestShutdown();
  poll();
  ASSERT_FALSE(manager_->client().writesFenced());
  auto taken = *store_.record();
  taken.holderIdentity = "successor";
  store_.setRecord(taken);
  advance(seconds(3));  // the drain's next renewal sees it
  EXPECT_TRUE(manager_->client().writesFenced());
  EXPECT_EQ(world_.holder(), "successor");
  a_->finishWork();
  poll();
  ASSERT_TRUE(exit_);
}

// SIGTERM: stop() every runnable, await the work in flight while the lease is still renewed,
// release the lease only after every run() returned, exit 0.
TEST_F(ManagerTest, ShutdownDrainsThenReleasesTheLease) {
  runTwoAsLeader();
  a_->busy = true;
  manager_->requestShutdown();
  poll();
  EXPECT_THAT(journal_, ::testing::IsSupersetOf({"stop a", "stop b", "returned b holder=me"}));
  EXPECT_FALSE(exit_);
  const size_t before = updates();
  advance(seconds(20));  // longer than renewDeadline: the lease must be renewed meanwhile
  EXPECT_GT(updates(), before);
  EXPECT_EQ(world_.holder(), kIdentity);
  EXPECT_FALSE(exit_);
  a_->finishWork();
  poll();
  EXPECT_THAT(journal_, ::testing::Contains("returned a holder=me"));
  ASSERT_TRUE(exit_);
  EXPECT_EQ(*exit_, kExitOk);
  EXPECT_EQ(world_.holder(), "<released>");
}

// The runnables stop taking work in the very turn the signal is handled, not a few turns later
// once the elector has stopped renewing: a worker finishing a reconcile in between must not
// take another key.
TEST_F(ManagerTest, ASignalStopsTheRunnablesAtOnce) {
  runTwoAsLeader();
  a_->busy = true;
  manager_->requestShutdown();
  EXPECT_THAT(journal_, ::testing::IsSupersetOf({"stop a", "stop b"}));
  poll();
  EXPECT_EQ(std::count(journal_.begin(), journal_.end(), "stop a"), 1);
  EXPECT_EQ(world_.holder(), kIdentity);
  a_->finishWork();
  poll();
  ASSERT_TRUE(exit_);
  EXPECT_EQ(*exit_, kExitOk);
  EXPECT_EQ(world_.holder(), "<released>");
}

// --graceful-shutdown-timeout: a runnable whose work never ends does not hang the Manager; it
// is named in the log, and the shutdown goes on (lease released, exit 0).
TEST_F(ManagerTest, TheDrainDeadlineIsHonoured) {
  LogCapture log;
  options_.gracefulShutdownTimeout = seconds(30);
  runTwoAsLeader();
  a_->busy = true;
  manager_->requestShutdown();
  advance(seconds(29));
  EXPECT_FALSE(exit_);
  EXPECT_EQ(world_.holder(), kIdentity);
  advance(seconds(1));
  ASSERT_TRUE(exit_);
  EXPECT_EQ(*exit_, kExitOk);
  EXPECT_THAT(log.text(), HasSubstr("graceful shutdown timeout: a still running"));
  EXPECT_EQ(world_.holder(), "<released>");
}

// A second signal during the drain: run() returns non-zero at once, without waiting for the
// work in flight and without releasing the lease. The informers are stopped all the same (their
// watches must not be left for the io_context's destructor to cancel).
TEST_F(ManagerTest, ASecondSignalExitsAtOnce) {
  runTwoAsLeader();
  a_->busy = true;
  manager_->requestShutdown();
  poll();
  EXPECT_FALSE(exit_);
  manager_->requestShutdown();
  poll();
  ASSERT_TRUE(exit_);
  EXPECT_EQ(*exit_, kExitError);
  EXPECT_THAT(journal_, Not(::testing::Contains("returned a holder=me")));
  EXPECT_EQ(world_.holder(), kIdentity);
  EXPECT_TRUE(world_.factory->stopped());
}

// A shutdown requested while the caches still sync ends the Manager cleanly, nothing started.
TEST_F(ManagerTest, ShutdownDuringTheCacheSyncExitsZero) {
  hangingResource_ = "things";
  create();
  addRunnable("a", "things");
  run();
  advance(seconds(5));
  manager_->requestShutdown();
  poll();
  ASSERT_TRUE(exit_);
  EXPECT_EQ(*exit_, kExitOk);
  EXPECT_THAT(journal_, ElementsAre("setUp a", "stop a"));
}

// The servers: /metrics exports the registry the client, the elector and the process collector
// write to, and /readyz passes once the caches synced.
TEST_F(ManagerTest, ServesMetricsAndProbes) {
  options_.metricsBindAddress = "127.0.0.1:0";
  options_.healthProbeBindAddress = "127.0.0.1:0";
  options_.leaderElect = true;
  create();
  run();
  advance(milliseconds(100));
  ASSERT_NE(manager_->metricsServer(), nullptr);
  ASSERT_NE(manager_->healthProbeServer(), nullptr);
  auto metrics = testutil::runSync(
      ioc_, testing::exchange(testing::loopback(manager_->metricsServer()->port()),
                              testing::get("/metrics")));
  EXPECT_EQ(metrics.status, 200u);
  EXPECT_THAT(metrics.body, HasSubstr("process_cpu_seconds_total"));
  EXPECT_THAT(metrics.body,
              HasSubstr("leader_election_master_status{name=\"egress-gateway-operator\"} 1"));
  auto ready = testutil::runSync(
      ioc_, testing::exchange(testing::loopback(manager_->healthProbeServer()->port()),
                              testing::get("/readyz?verbose")));
  EXPECT_EQ(ready.status, 200u);
  EXPECT_THAT(ready.body, HasSubstr("[+]informers ok"));
  auto live = testutil::runSync(
      ioc_, testing::exchange(testing::loopback(manager_->healthProbeServer()->port()),
                              testing::get("/healthz")));
  EXPECT_EQ(live.status, 200u);
  manager_->requestShutdown();
  poll();
  ASSERT_TRUE(exit_);
  EXPECT_EQ(*exit_, kExitOk);
}

}  // namespace
}  // namespace egress::controllerruntime
