// Controller unit tests (pkg/controllerruntime/controller.h): the contracts controller-runtime
// users rely on, each on the FakeClock (time moves only when a test advances it), and the
// controller_runtime_* metrics read back from the registry.
#include "pkg/controllerruntime/controller.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include "pkg/cache/informer_factory.h"
#include "pkg/controllerruntime/controller_metrics.h"
#include "pkg/controllerruntime/event_handlers.h"
#include "pkg/controllerruntime/processor.h"
#include "test/testutil/run_sync.h"
#include "test/unit/cache/fake_lister_watcher.h"

namespace egress::controllerruntime {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

// What the test controller's reconcile runs, scripted: records every call, how many ran at once
// (per key and in all), and optionally suspends each call on the fake clock.
class ScriptedProcessor {
 public:
  // The result of the n-th call (1-based) for `key`; may throw.
  using Script = std::function<ReconcileResult(const std::string& key, int n)>;
  struct Call {
    std::string key;
    Clock::TimePoint at;
  };

  ScriptedProcessor(Clock& clock, std::string name) : clock_(&clock), name_(std::move(name)) {}
  const std::string& name() const { return name_; }

  net::awaitable<ReconcileResult> process(const std::string& key) {
    calls.push_back({key, clock_->now()});
    const int n = ++perKey[key];
    if (++inFlight[key] > 1) {
      ++overlaps;
    }
    maxRunning = std::max(maxRunning, ++running);
    if (onStart) {
      onStart(key);
    }
    const Clock::Duration d = workFor ? workFor(key, n) : work;
    if (d > Clock::Duration::zero()) {
      co_await clock_->sleepFor(d);
    }
    --inFlight[key];
    --running;
    ++finished;
    co_return script(key, n);
  }

  Script script = [](const std::string&, int) { return ReconcileResult::done(); };
  Clock::Duration work{0};
  // If set, each call's duration instead of `work`.
  std::function<Clock::Duration(const std::string& key, int n)> workFor;
  std::function<void(const std::string&)> onStart;

  std::vector<Call> calls;
  std::map<std::string, int> perKey;
  std::map<std::string, int> inFlight;
  int running = 0;
  int maxRunning = 0;
  int overlaps = 0;
  int finished = 0;

 private:
  Clock* clock_;
  std::string name_;
};

// A controller whose watch and handler hooks the test supplies.
class TestController : public Controller {
 public:
  using Controller::Controller;
  std::function<Result<Ok, std::string>(cache::SharedInformerFactory&)> watch;
  std::function<Result<Ok, std::string>()> handlers;
  // What reconcile() runs.
  std::shared_ptr<ScriptedProcessor> processor;

 protected:
  net::awaitable<ReconcileResult> reconcile(const std::string& key) override {
    // Not a coroutine itself: the processor runs in a frame that co-owns it, not `this`, so the
    // controller may be destroyed while it is suspended.
    return runScripted(processor, key);
  }
  static net::awaitable<ReconcileResult> runScripted(std::shared_ptr<ScriptedProcessor> p,
                                                     std::string key) {
    co_return co_await p->process(key);
  }
  Result<Ok, std::string> watchResources(cache::SharedInformerFactory& factory) override {
    return watch ? watch(factory) : Ok{};
  }
  Result<Ok, std::string> addEventHandlers() override { return handlers ? handlers() : Ok{}; }
};

net::awaitable<void> awaitAndFlag(net::awaitable<void> task, bool* done) {
  co_await std::move(task);
  *done = true;
}

// The value of one series (a counter's or gauge's value, a histogram's count); NaN if absent.
double metricValue(prometheus::Registry& registry, const std::string& name,
                   const prometheus::Labels& labels) {
  for (const auto& family : registry.Collect()) {
    if (family.name != name) {
      continue;
    }
    for (const auto& metric : family.metric) {
      prometheus::Labels got;
      for (const auto& label : metric.label) {
        got[label.name] = label.value;
      }
      if (got != labels) {
        continue;
      }
      switch (family.type) {
        case prometheus::MetricType::Counter:
          return metric.counter.value;
        case prometheus::MetricType::Gauge:
          return metric.gauge.value;
        case prometheus::MetricType::Histogram:
          return static_cast<double>(metric.histogram.sample_count);
        default:
          return NAN;
      }
    }
  }
  return NAN;
}

class ControllerTest : public ::testing::Test {
 protected:
  // Declared first: the controllers' state (and so their metrics) may live as long as the
  // io_context's coroutine frames.
  prometheus::Registry registry_;
  net::io_context ioc_;
  FakeClock clock_{ioc_.get_executor()};
  bool runReturned_ = false;

  Controller::Options options(std::string name, int workers) {
    return Controller::Options{.name = std::move(name),
                               .workers = workers,
                               .clock = clock_,
                               .executor = ioc_.get_executor(),
                               .registry = &registry_};
  }
  std::shared_ptr<ScriptedProcessor> processor(const std::string& name = "scripted") {
    return std::make_shared<ScriptedProcessor>(clock_, name);
  }
  std::unique_ptr<TestController> make(const std::string& name, int workers,
                                       std::shared_ptr<ScriptedProcessor> p) {
    auto c = std::make_unique<TestController>(options(name, workers));
    c->processor = std::move(p);
    return c;
  }

  void poll() {
    ioc_.restart();
    ioc_.poll();
  }
  void advance(Clock::Duration d) {
    clock_.advance(d);
    poll();
  }
  void startRun(Controller& c) {
    runReturned_ = false;
    net::co_spawn(ioc_, awaitAndFlag(c.run(), &runReturned_), rethrowUnhandled);
    poll();
  }
  // The next reconcile comes exactly `delay` from now: not a microsecond sooner, and then.
  void expectNextCallAfter(const ScriptedProcessor& p, Clock::Duration delay) {
    const size_t before = p.calls.size();
    advance(delay - microseconds(1));
    EXPECT_EQ(p.calls.size(), before)
        << "reconciled before " << std::chrono::duration<double>(delay).count() << "s";
    advance(microseconds(1));
    EXPECT_EQ(p.calls.size(), before + 1)
        << "not reconciled after " << std::chrono::duration<double>(delay).count() << "s";
  }
  double total(const std::string& controller, const std::string& result) {
    return metricValue(registry_, "controller_runtime_reconcile_total",
                       {{"controller", controller}, {"result", result}});
  }
  double perController(const std::string& metric, const std::string& controller) {
    return metricValue(registry_, metric, {{"controller", controller}});
  }
};

// Contract: a key is never reconciled by two workers at once, even when it is added again while
// it is being reconciled; and `workers` reconciles of different keys do run at the same time.
TEST_F(ControllerTest, AKeyIsNeverReconciledByTwoWorkersAtOnce) {
  auto p = processor();
  std::vector<std::string> keys;
  for (int i = 0; i < 6; ++i) {
    keys.push_back("ns/obj-" + std::to_string(i));
  }
  auto index = [&keys](const std::string& key) {
    return static_cast<int>(std::find(keys.begin(), keys.end(), key) - keys.begin());
  };
  // Uneven durations (5 to 20ms), so workers fall idle while keys are being reconciled.
  p->workFor = [&index](const std::string& key, int n) {
    return milliseconds(5 * (1 + (n + index(key)) % 4));
  };
  auto c = make("concurrency", 4, p);
  Enqueuer queue = c->enqueuer();
  // While a key is reconciled, add it and its neighbour again (events arriving mid-reconcile).
  p->onStart = [&](const std::string& key) {
    if (p->calls.size() > 300) {
      return;
    }
    queue.add(key);
    queue.add(keys[(index(key) + 1) % keys.size()]);
  };
  for (const auto& key : keys) {
    queue.add(key);
  }
  startRun(*c);
  EXPECT_EQ(p->running, 4);
  EXPECT_EQ(perController("controller_runtime_active_workers", "concurrency"), 4);
  for (int i = 0; i < 2000 && (p->running > 0 || c->queueLength() > 0); ++i) {
    advance(milliseconds(5));
  }
  EXPECT_EQ(p->running, 0);
  EXPECT_EQ(p->overlaps, 0) << "a key was reconciled by two workers at once";
  EXPECT_EQ(p->maxRunning, 4);
  EXPECT_GT(p->calls.size(), 300u);
  for (const auto& key : keys) {
    EXPECT_GE(p->perKey[key], 2) << key << ": an add during its reconcile was lost";
  }
  EXPECT_EQ(perController("controller_runtime_active_workers", "concurrency"), 0);
}

// Contract: an error requeues through the rate limiter (5ms, 10ms, 20ms, 40ms: the default
// limiter's per-item exponential backoff), and success forgets the key: its next failure backs
// off from 5ms again.
TEST_F(ControllerTest, AnErrorBacksOffExponentiallyAndSuccessForgets) {
  auto p = processor();
  p->script = [](const std::string&, int n) {
    return (n <= 4 || n == 6) ? ReconcileResult::error("failed " + std::to_string(n))
                              : ReconcileResult::done();
  };
  auto c = make("backoff", 1, p);
  c->enqueuer().add("ns/a");
  startRun(*c);
  ASSERT_EQ(p->calls.size(), 1u);
  for (auto delay : {milliseconds(5), milliseconds(10), milliseconds(20), milliseconds(40)}) {
    SCOPED_TRACE(delay.count());
    expectNextCallAfter(*p, delay);
  }
  ASSERT_EQ(p->calls.size(), 5u);  // the 5th succeeded
  EXPECT_EQ(c->numRequeues("ns/a"), 0);
  advance(seconds(2000));
  EXPECT_EQ(p->calls.size(), 5u) << "a success was requeued";

  c->enqueuer().add("ns/a");  // a new event; the 6th reconcile fails again
  poll();
  ASSERT_EQ(p->calls.size(), 6u);
  EXPECT_EQ(c->numRequeues("ns/a"), 1);
  expectNextCallAfter(*p, milliseconds(5));

  EXPECT_EQ(total("backoff", "error"), 5);
  EXPECT_EQ(total("backoff", "success"), 2);
  EXPECT_EQ(perController("controller_runtime_reconcile_errors_total", "backoff"), 5);
  EXPECT_EQ(total("backoff", "requeue"), 0);
}

// Contract: requeueAfter(d) reconciles again exactly d later, bypassing the rate limiter, and
// forgets the key's failures (controller-runtime calls Forget before AddAfter).
TEST_F(ControllerTest, RequeueAfterWaitsExactlyThatLongAndForgetsTheBackoff) {
  auto p = processor();
  p->script = [](const std::string&, int n) {
    switch (n) {
      case 1:
      case 2:
      case 4:
        return ReconcileResult::error("failed");
      case 3:
        return ReconcileResult::requeueAfter(seconds(30));
      default:
        return ReconcileResult::done();
    }
  };
  auto c = make("requeue-after", 1, p);
  c->enqueuer().add("cluster-scoped");
  startRun(*c);
  expectNextCallAfter(*p, milliseconds(5));
  EXPECT_EQ(c->numRequeues("cluster-scoped"), 2);
  expectNextCallAfter(*p, milliseconds(10));  // the 3rd: requeue after 30s
  EXPECT_EQ(c->numRequeues("cluster-scoped"), 0);
  expectNextCallAfter(*p, seconds(30));      // the 4th fails...
  expectNextCallAfter(*p, milliseconds(5));  // ...and backs off from the start
  EXPECT_EQ(total("requeue-after", "requeue_after"), 1);
  EXPECT_EQ(total("requeue-after", "error"), 3);
  EXPECT_EQ(total("requeue-after", "success"), 1);
}

// Contract: a plain requeue goes through the rate limiter (and is not an error).
TEST_F(ControllerTest, PlainRequeueGoesThroughTheRateLimiter) {
  auto p = processor();
  p->script = [](const std::string&, int n) {
    return n <= 3 ? ReconcileResult::requeue() : ReconcileResult::done();
  };
  auto c = make("requeue", 1, p);
  c->enqueuer().add("ns/a");
  startRun(*c);
  for (auto delay : {milliseconds(5), milliseconds(10), milliseconds(20)}) {
    SCOPED_TRACE(delay.count());
    expectNextCallAfter(*p, delay);
  }
  EXPECT_EQ(total("requeue", "requeue"), 3);
  EXPECT_EQ(total("requeue", "success"), 1);
  EXPECT_EQ(perController("controller_runtime_reconcile_errors_total", "requeue"), 0);
}

// Contract: an exception escaping a reconcile (a std::exception or anything else) is caught,
// counted in reconcile_panics_total (and as an error, as controller-runtime turns a recovered
// panic into an error) and retried through the rate limiter; the workers and the io_context
// carry on.
TEST_F(ControllerTest, AnExceptionIsCaughtCountedAndRetried) {
  auto p = processor();
  p->script = [](const std::string&, int n) -> ReconcileResult {
    if (n == 1) {
      throw std::runtime_error("boom");
    }
    if (n == 2) {
      throw 42;
    }
    return ReconcileResult::done();
  };
  auto c = make("panics", 1, p);
  c->enqueuer().add("ns/a");
  ASSERT_NO_THROW(startRun(*c));
  EXPECT_EQ(perController("controller_runtime_reconcile_panics_total", "panics"), 1);
  ASSERT_NO_THROW(expectNextCallAfter(*p, milliseconds(5)));
  ASSERT_NO_THROW(expectNextCallAfter(*p, milliseconds(10)));
  EXPECT_EQ(perController("controller_runtime_reconcile_panics_total", "panics"), 2);
  EXPECT_EQ(perController("controller_runtime_reconcile_errors_total", "panics"), 2);
  EXPECT_EQ(total("panics", "error"), 2);
  EXPECT_EQ(total("panics", "success"), 1);
  EXPECT_FALSE(runReturned_);
  EXPECT_EQ(perController("controller_runtime_active_workers", "panics"), 0);
}

// Contract: stop() takes no new keys, lets the reconciles that run finish, and run() returns
// once they have. stop() is idempotent.
TEST_F(ControllerTest, StopTakesNoNewKeysAndLetsRunningReconcilesFinish) {
  auto p = processor();
  p->work = seconds(1);
  auto c = make("stop", 2, p);
  for (const char* key : {"ns/a", "ns/b", "ns/c"}) {
    c->enqueuer().add(key);
  }
  startRun(*c);
  ASSERT_EQ(p->running, 2);
  c->stop();
  c->stop();
  poll();
  EXPECT_FALSE(runReturned_) << "run() returned while reconciles were running";
  advance(seconds(1));
  EXPECT_EQ(p->finished, 2);
  EXPECT_TRUE(runReturned_);
  advance(seconds(10));
  EXPECT_EQ(p->calls.size(), 2u) << "a key was taken after stop()";
  EXPECT_EQ(total("stop", "success"), 2);
  c->enqueuer().add("ns/d");  // ignored once stopped
  poll();
  EXPECT_EQ(c->queueLength(), 1u) << "only ns/c, never taken, should be queued";
}

TEST_F(ControllerTest, RunReturnsAtOnceAfterStop) {
  auto c = make("stopped-first", 2, processor());
  c->enqueuer().add("ns/a");
  c->stop();
  startRun(*c);
  EXPECT_TRUE(runReturned_);
}

// Destroying the controller while its workers reconcile (and while the io_context runs on) is
// safe: the running processors finish, nothing is requeued, run() returns, and handlers that
// still hold its Enqueuer add nothing. ASan checks the memory.
TEST_F(ControllerTest, DestroyedWhileReconciling) {
  auto p = processor();
  p->work = seconds(1);
  p->script = [](const std::string&, int) { return ReconcileResult::error("again"); };
  auto c = make("destroyed", 2, p);
  Enqueuer queue = c->enqueuer();
  queue.add("ns/a");
  queue.add("ns/b");
  queue.add("ns/c");
  startRun(*c);
  ASSERT_EQ(p->running, 2);
  c.reset();
  queue.add("ns/d");
  advance(seconds(1));
  EXPECT_EQ(p->finished, 2);
  EXPECT_TRUE(runReturned_);
  advance(seconds(100));
  EXPECT_EQ(p->calls.size(), 2u);
  // Its series are gone with it once the workers are: the name is free again.
  EXPECT_TRUE(std::isnan(total("destroyed", "error")));
  auto again = make("destroyed", 1, processor());
  cache::SharedInformerFactory factory(nullptr, clock_, ioc_.get_executor());
  EXPECT_TRUE(again->setUp(factory));
}

TEST_F(ControllerTest, DestroyedWhileIdle) {
  auto c = make("idle", 3, processor());
  startRun(*c);
  c.reset();
  poll();
  EXPECT_TRUE(runReturned_);
}

// Names are the metrics' label: a second controller of the same name in one registry is refused
// by setUp, as controller-runtime refuses it.
TEST_F(ControllerTest, DuplicateNamesAreRefused) {
  cache::SharedInformerFactory factory(nullptr, clock_, ioc_.get_executor());
  auto first = make("twin", 1, processor());
  auto second = make("twin", 1, processor());
  EXPECT_TRUE(first->setUp(factory));
  auto result = second->setUp(factory);
  ASSERT_FALSE(result);
  EXPECT_THAT(result.error(), HasSubstr("unique"));
}

// The metrics' names, labels, initial values and buckets are controller-runtime's, and the
// workqueue's series carry the controller's name.
TEST_F(ControllerTest, Metrics) {
  auto p = processor();
  p->work = milliseconds(250);
  auto c = make("metrics", 3, p);
  for (const char* result : {"success", "error", "requeue", "requeue_after"}) {
    EXPECT_EQ(total("metrics", result), 0) << result;
  }
  EXPECT_EQ(perController("controller_runtime_reconcile_errors_total", "metrics"), 0);
  EXPECT_EQ(perController("controller_runtime_reconcile_panics_total", "metrics"), 0);
  EXPECT_EQ(perController("controller_runtime_max_concurrent_reconciles", "metrics"), 3);
  EXPECT_EQ(perController("controller_runtime_active_workers", "metrics"), 0);
  EXPECT_EQ(perController("controller_runtime_reconcile_time_seconds", "metrics"), 0);

  c->enqueuer().add("ns/a");
  startRun(*c);
  EXPECT_EQ(perController("controller_runtime_active_workers", "metrics"), 1);
  advance(milliseconds(250));
  EXPECT_EQ(perController("controller_runtime_active_workers", "metrics"), 0);
  EXPECT_EQ(total("metrics", "success"), 1);
  EXPECT_EQ(metricValue(registry_, "workqueue_adds_total", {{"name", "metrics"}}), 1);

  const std::string text = prometheus::TextSerializer().Serialize(registry_.Collect());
  EXPECT_THAT(text, HasSubstr("# TYPE controller_runtime_reconcile_time_seconds histogram"));
  EXPECT_THAT(text, HasSubstr("controller_runtime_reconcile_total{controller=\"metrics\","
                              "result=\"requeue_after\"} 0"));
  EXPECT_THAT(text, HasSubstr("controller_runtime_reconcile_time_seconds_sum{controller="
                              "\"metrics\"} 0.25"));
  EXPECT_THAT(text, HasSubstr("controller_runtime_reconcile_time_seconds_bucket{controller="
                              "\"metrics\",le=\"0.2\"} 0"));
  EXPECT_THAT(text, HasSubstr("controller_runtime_reconcile_time_seconds_bucket{controller="
                              "\"metrics\",le=\"0.25\"} 1"));

  std::vector<double> bounds;
  for (const auto& family : registry_.Collect()) {
    if (family.name == "controller_runtime_reconcile_time_seconds") {
      for (const auto& bucket : family.metric.at(0).histogram.bucket) {
        bounds.push_back(bucket.upper_bound);
      }
    }
  }
  std::vector<double> expected = reconcileTimeBuckets();
  expected.push_back(std::numeric_limits<double>::infinity());
  EXPECT_EQ(bounds, expected);
  EXPECT_EQ(reconcileTimeBuckets().size(), 40u);
  EXPECT_EQ(reconcileTimeBuckets().front(), 0.005);
  EXPECT_EQ(reconcileTimeBuckets().back(), 60);
}

const kube::Resource kThings{"example.com", "v1", "things", true};

// A factory over fake ListerWatchers with a 30s default resync: lists return `initial_`, watches
// stay idle.
class ControllerInformerTest : public ControllerTest {
 protected:
  ControllerInformerTest()
      : factory_(
            [this](const kube::Resource&, const std::string&,
                   const std::string&) -> std::unique_ptr<cache::ListerWatcher> {
              auto lw = std::make_unique<cache::testing::FakeListerWatcher>();
              lw->onList = [this](const kube::ListOptions&) {
                return kube::Result<rapidjson::Document>(cache::testing::listDoc(initial_, "10"));
              };
              lw->onWatch =
                  [this](const kube::ListOptions&) -> kube::Result<std::unique_ptr<kube::Watch>> {
                return std::unique_ptr<kube::Watch>(
                    std::make_unique<cache::testing::FakeWatch>(ioc_.get_executor()));
              };
              return lw;
            },
            clock_, ioc_.get_executor(), seconds(30)) {}

  // Watches the things; each maps to its own key and, through `value`, to an "owner" key.
  void watchThings(TestController& c) {
    c.watch = [this](cache::SharedInformerFactory& f) -> Result<Ok, std::string> {
      things_ =
          &f.informerFor<cache::testing::TestObject>(kThings, cache::testing::decodeTestObject);
      return Ok{};
    };
    c.handlers = [this, &c]() -> Result<Ok, std::string> {
      using cache::testing::TestObject;
      if (!things_->addEventHandler(enqueueForObject<TestObject>(c.enqueuer()))) {
        return std::string("handler refused");
      }
      MapFunc<TestObject> toOwner = [](const TestObject& o) {
        return std::vector<std::string>{"owner/" + o.value};
      };
      if (!things_->addEventHandler(enqueueMapped<TestObject>(c.enqueuer(), toOwner))) {
        return std::string("handler refused");
      }
      return Ok{};
    };
  }

  std::vector<std::string> initial_{cache::testing::objectJson("ns", "x", "1", "v")};
  cache::SharedIndexInformer<cache::testing::TestObject>* things_ = nullptr;
  cache::SharedInformerFactory factory_;
};

// Contract: resync events (an update with the same resourceVersion, every 30s here) reach the
// handlers and cause reconciles, of the object's key and of the keys mapped from it.
TEST_F(ControllerInformerTest, ResyncEventsCauseReconciles) {
  auto p = processor();
  auto c = make("resync", 2, p);
  watchThings(*c);
  ASSERT_TRUE(c->setUp(factory_));
  factory_.start();
  startRun(*c);
  EXPECT_EQ(p->perKey["ns/x"], 1);
  EXPECT_EQ(p->perKey["owner/v"], 1);
  advance(seconds(29));
  EXPECT_EQ(p->perKey["ns/x"], 1);
  advance(seconds(1));
  EXPECT_EQ(p->perKey["ns/x"], 2);
  EXPECT_EQ(p->perKey["owner/v"], 2);
  advance(seconds(30));
  EXPECT_EQ(p->perKey["ns/x"], 3);
  EXPECT_EQ(p->perKey["owner/v"], 3);
}

// enqueueMapped's update filter: an update it refuses queues nothing; one it passes queues the
// old and the new object's keys; a resync (same resourceVersion) is never filtered.
TEST_F(ControllerTest, EnqueueMappedSkipsUpdatesItsFilterRefusesButNeverAResync) {
  using cache::testing::TestObject;
  auto p = processor();
  auto c = make("filtered", 1, p);
  startRun(*c);
  MapFunc<TestObject> toOwner = [](const TestObject& o) {
    return std::vector<std::string>{"owner/" + o.value};
  };
  const std::string labelled = "labelled";
  auto handler = enqueueMapped<TestObject>(
      c->enqueuer(), toOwner, [&labelled](const TestObject& a, const TestObject& b) {
        return a.value != b.value ||
               a.metadata.labels.contains(labelled) != b.metadata.labels.contains(labelled);
      });
  auto thing = [](std::string rv, std::string value, bool label = false) {
    auto o = std::make_shared<TestObject>();
    o->metadata.namespace_ = "ns";
    o->metadata.name = "x";
    o->metadata.resourceVersion = std::move(rv);
    o->value = std::move(value);
    if (label) {
      o->metadata.labels["labelled"] = "yes";
    }
    return std::shared_ptr<const TestObject>(std::move(o));
  };
  handler.onUpdate(thing("1", "a"), thing("2", "a"));  // refused
  poll();
  EXPECT_TRUE(p->perKey.empty());
  handler.onUpdate(thing("2", "a"), thing("2", "a"));  // a resync
  poll();
  EXPECT_EQ(p->perKey["owner/a"], 1);
  handler.onUpdate(thing("2", "a"), thing("3", "a", true));  // passed
  poll();
  EXPECT_EQ(p->perKey["owner/a"], 2);
  handler.onUpdate(thing("3", "a"), thing("4", "b"));  // passed: both keys
  poll();
  EXPECT_EQ(p->perKey["owner/a"], 3);
  EXPECT_EQ(p->perKey["owner/b"], 1);
  // Adds and deletes are never filtered.
  handler.onAdd(thing("5", "c"), false);
  handler.onDelete(thing("6", "d"), false);
  poll();
  EXPECT_EQ(p->perKey["owner/c"], 1);
  EXPECT_EQ(p->perKey["owner/d"], 1);
  c->stop();
  poll();
}

// The informers outlive the controller here: their handlers keep firing into a gone controller's
// Enqueuer, which drops the keys.
TEST_F(ControllerInformerTest, HandlersOutliveTheController) {
  auto p = processor();
  auto c = make("outlived", 1, p);
  watchThings(*c);
  ASSERT_TRUE(c->setUp(factory_));
  factory_.start();
  startRun(*c);
  EXPECT_EQ(p->calls.size(), 2u);
  c.reset();
  advance(seconds(90));  // three resyncs
  EXPECT_EQ(p->calls.size(), 2u);
  EXPECT_TRUE(runReturned_);
}

// How processor results combine (processor.h): a chain of processors that return `results`,
// run as a reconcile runs its steps.
class ProcessorsTest : public ::testing::Test {
 protected:
  ReconcileResult run(const std::vector<ReconcileResult>& results) {
    ProcessorResults chain;
    for (size_t i = 0; i < results.size(); ++i) {
      const std::string name = "p" + std::to_string(i);
      log_.push_back(name + ":k");
      if (!chain.add(results[i], name)) {
        break;
      }
    }
    return chain.result();
  }
  std::vector<std::string> log_;
};

TEST_F(ProcessorsTest, AllDoneIsDone) {
  EXPECT_EQ(run({ReconcileResult::done(), ReconcileResult::done()}), ReconcileResult::done());
  EXPECT_EQ(log_, (std::vector<std::string>{"p0:k", "p1:k"}));
}

TEST_F(ProcessorsTest, AnErrorStopsTheChainAndNamesTheProcessor) {
  EXPECT_EQ(
      run({ReconcileResult::done(), ReconcileResult::error("no pool"), ReconcileResult::done()}),
      ReconcileResult::error("p1: no pool"));
  EXPECT_EQ(log_, (std::vector<std::string>{"p0:k", "p1:k"}));
}

TEST_F(ProcessorsTest, ARequeueStopsTheChain) {
  EXPECT_EQ(run({ReconcileResult::requeue(), ReconcileResult::error("x")}),
            ReconcileResult::requeue());
  EXPECT_EQ(log_, (std::vector<std::string>{"p0:k"}));
}

TEST_F(ProcessorsTest, RequeueAfterContinuesAndTheShortestWins) {
  EXPECT_EQ(
      run({ReconcileResult::requeueAfter(seconds(30)), ReconcileResult::done(),
           ReconcileResult::requeueAfter(seconds(10)), ReconcileResult::requeueAfter(seconds(20))}),
      ReconcileResult::requeueAfter(seconds(10)));
  EXPECT_EQ(log_.size(), 4u);
}

TEST_F(ProcessorsTest, AnErrorAfterARequeueAfterWins) {
  EXPECT_EQ(run({ReconcileResult::requeueAfter(seconds(30)), ReconcileResult::error("x"),
                 ReconcileResult::requeueAfter(seconds(10))}),
            ReconcileResult::error("p1: x"));
  EXPECT_EQ(log_, (std::vector<std::string>{"p0:k", "p1:k"}));
}

TEST_F(ProcessorsTest, ARequeueAfterARequeueAfterWinsAndStopsTheChain) {
  EXPECT_EQ(run({ReconcileResult::requeueAfter(seconds(30)), ReconcileResult::requeue(),
                 ReconcileResult::requeueAfter(seconds(10))}),
            ReconcileResult::requeue());
  EXPECT_EQ(log_, (std::vector<std::string>{"p0:k", "p1:k"}));
}

TEST_F(ProcessorsTest, NoProcessorsIsDone) {
  EXPECT_EQ(run({}), ReconcileResult::done());
  EXPECT_TRUE(log_.empty());
}

// Every chain of up to three processors over every kind of result (two requeueAfter durations,
// so both orders of a shorter and a longer one occur), against the rules of processor.h stated
// the other way round: the first error or requeue, if any, is the result and the last processor
// that ran; otherwise every processor ran and the result is the shortest requeueAfter, or done.
TEST_F(ProcessorsTest, EveryCombinationOfUpToThreeResults) {
  const std::vector<ReconcileResult> kinds = {ReconcileResult::done(), ReconcileResult::requeue(),
                                              ReconcileResult::requeueAfter(seconds(10)),
                                              ReconcileResult::requeueAfter(seconds(20)),
                                              ReconcileResult::error("e")};
  std::vector<std::vector<ReconcileResult>> chains = {{}};
  for (size_t length = 1; length <= 3; ++length) {
    std::vector<std::vector<ReconcileResult>> longer;
    for (const auto& chain : chains) {
      if (chain.size() + 1 != length) {
        continue;
      }
      for (const auto& kind : kinds) {
        longer.push_back(chain);
        longer.back().push_back(kind);
      }
    }
    chains.insert(chains.end(), longer.begin(), longer.end());
  }
  ASSERT_EQ(chains.size(), 1u + 5 + 25 + 125);

  for (const auto& chain : chains) {
    const auto stopper = std::find_if(chain.begin(), chain.end(), [](const ReconcileResult& r) {
      return r.kind() == ReconcileResult::Kind::Error || r.kind() == ReconcileResult::Kind::Requeue;
    });
    const size_t ran = stopper == chain.end() ? chain.size() : stopper - chain.begin() + 1;
    ReconcileResult want = ReconcileResult::done();
    if (stopper != chain.end()) {
      const std::string index = std::to_string(stopper - chain.begin());
      want = stopper->isError() ? ReconcileResult::error("p" + index + ": e")
                                : ReconcileResult::requeue();
    } else {
      std::vector<Clock::Duration> afters;
      for (const auto& r : chain) {
        if (r.kind() == ReconcileResult::Kind::RequeueAfter) {
          afters.push_back(r.after());
        }
      }
      if (!afters.empty()) {
        want = ReconcileResult::requeueAfter(*std::min_element(afters.begin(), afters.end()));
      }
    }
    std::string name;
    for (const auto& r : chain) {
      name += "[" + toString(r) + "]";
    }
    log_.clear();
    EXPECT_EQ(run(chain), want) << name;
    EXPECT_EQ(log_.size(), ran) << name;
  }
}

TEST(ReconcileResultTest, RequeueAfterZeroIsAPlainRequeue) {
  EXPECT_EQ(ReconcileResult::requeueAfter(Clock::Duration::zero()), ReconcileResult::requeue());
  EXPECT_EQ(toString(ReconcileResult::requeueAfter(seconds(30))), "requeue after 30s");
}

}  // namespace
}  // namespace egress::controllerruntime
