// SharedIndexInformer unit tests with a scripted ListerWatcher; each names the client-go
// reference test and client-go behaviour it covers.
#include "pkg/cache/shared_informer.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "pkg/cache/lister.h"
#include "test/unit/cache/fake_lister_watcher.h"

namespace egress::cache {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using testing::event;
using testing::FakeListerWatcher;
using testing::FakeWatch;
using testing::listDoc;
using testing::objectJson;
using testing::TestObject;
using WT = kube::WatchEventType;
using Ptr = std::shared_ptr<const TestObject>;

class InformerTest : public ::testing::Test {
 protected:
  InformerTest() { remake(0ms); }

  // A fresh informer with this default resync period, over the fake API.
  void remake(std::chrono::milliseconds defaultResync) {
    auto lw = std::make_unique<FakeListerWatcher>();
    lw_ = lw.get();
    lw_->onList = [this](const kube::ListOptions&) {
      return kube::Result<rapidjson::Document>(listDoc(initial_, "10"));
    };
    lw_->onWatch = [this](const kube::ListOptions&) -> kube::Result<std::unique_ptr<kube::Watch>> {
      auto w = std::make_unique<FakeWatch>(ioc_.get_executor());
      watch_ = w.get();
      return std::unique_ptr<kube::Watch>(std::move(w));
    };
    SharedIndexInformer<TestObject>::Options options;
    options.name = "test";
    options.defaultResync = defaultResync;
    options.metrics = &registry_;
    informer_ = std::make_unique<SharedIndexInformer<TestObject>>(
        std::move(lw), testing::decodeTestObject, clock_, options, ioc_.get_executor());
  }
  ~InformerTest() override {
    if (informer_) {
      informer_->stop();
      for (int i = 0; i < 100 && !informer_->stopped(); ++i) {
        ioc_.poll();
      }
    }
  }

  using Registration = SharedIndexInformer<TestObject>::Registration;
  // addEventHandler, for a handler the test expects to be accepted.
  Registration& add(EventHandler<TestObject> handler,
                    std::chrono::milliseconds resync = std::chrono::milliseconds(-1)) {
    auto reg = informer_->addEventHandler(std::move(handler), resync);
    EXPECT_TRUE(reg) << reg.error().message();
    return **reg;
  }

  EventHandler<TestObject> recorder(std::vector<std::string>& log) {
    EventHandler<TestObject> h;
    h.onAdd = [&log](const Ptr& o, bool initial) {
      log.push_back("add " + o->metadata.name + (initial ? " (initial)" : ""));
    };
    h.onUpdate = [&log](const Ptr& old, const Ptr& now) {
      log.push_back("update " + now->metadata.name + " " + old->metadata.resourceVersion + "->" +
                    now->metadata.resourceVersion);
    };
    h.onDelete = [&log](const Ptr& o, bool unknown) {
      log.push_back("delete " + o->metadata.name + (unknown ? " (final state unknown)" : ""));
    };
    return h;
  }

  net::io_context ioc_;
  FakeClock clock_{ioc_.get_executor()};
  prometheus::Registry registry_;
  FakeListerWatcher* lw_;
  FakeWatch* watch_ = nullptr;
  std::vector<std::string> initial_{objectJson("ns", "a", "1"), objectJson("ns", "b", "2")};
  std::unique_ptr<SharedIndexInformer<TestObject>> informer_;
};

// The cache is updated before handlers hear of a change; adds from the
// initial list are flagged; every handler sees every change in order.
TEST_F(InformerTest, HandlersSeeChangesAfterTheCacheHasThem) {
  std::vector<std::string> log;
  auto handler = recorder(log);
  auto onAdd = handler.onAdd;
  handler.onAdd = [this, onAdd](const Ptr& o, bool initial) {
    EXPECT_NE(informer_->indexer().get(objectKey(o->metadata)), nullptr);
    onAdd(o, initial);
  };
  auto& reg = add(handler);
  informer_->start(ioc_.get_executor());
  ioc_.poll();
  EXPECT_TRUE(informer_->hasSynced());
  EXPECT_TRUE(reg.hasSynced());
  watch_->push(event(WT::Modified, objectJson("ns", "a", "11")));
  watch_->push(event(WT::Deleted, objectJson("ns", "b", "12")));
  watch_->push(event(WT::Added, objectJson("ns", "c", "13")));
  ioc_.poll();
  EXPECT_THAT(log, ElementsAre("add a (initial)", "add b (initial)", "update a 1->11", "delete b",
                               "add c"));
  EXPECT_EQ(informer_->indexer().size(), 2u);
}

// Not in client-go: indexedResourceVersion() never runs ahead of the indexer. Stepped one
// handler at a time, whenever it says version v, every event up to v is in the indexer; and
// lastSyncResourceVersion() (the reflector's, client-go's) is never behind it: nothing the
// indexer shows is newer. Then both follow the stream, and a bookmark, to the end.
TEST_F(InformerTest, TheIndexedVersionNeverRunsAheadOfTheIndexerNorTheLastSyncOneBehind) {
  EXPECT_EQ(informer_->indexedResourceVersion(), "");
  informer_->start(ioc_.get_executor());
  ioc_.poll();
  EXPECT_EQ(informer_->indexedResourceVersion(), "10");
  watch_->push(event(WT::Modified, objectJson("ns", "a", "11")));
  watch_->push(event(WT::Deleted, objectJson("ns", "b", "12")));
  watch_->push(event(WT::Added, objectJson("ns", "c", "13")));
  auto reflected = [this](int v) {
    const auto& idx = informer_->indexer();
    auto a = idx.get("ns/a");
    return (v < 11 || (a && a->metadata.resourceVersion == "11")) &&
           (v < 12 || idx.get("ns/b") == nullptr) && (v < 13 || idx.get("ns/c") != nullptr);
  };
  bool reflectorAhead = false;
  for (int i = 0; i < 1000 && ioc_.poll_one() > 0; ++i) {
    const int v = std::stoi(informer_->indexedResourceVersion());
    ASSERT_TRUE(reflected(v)) << "version " << v << " claimed before the indexer has it";
    const int last = std::stoi(informer_->lastSyncResourceVersion());
    const auto& idx = informer_->indexer();
    auto a = idx.get("ns/a");
    const int newest = idx.get("ns/c") != nullptr            ? 13
                       : idx.get("ns/b") == nullptr          ? 12
                       : a->metadata.resourceVersion == "11" ? 11
                                                             : 10;
    ASSERT_GE(last, newest) << "the indexer shows version " << newest << " past " << last;
    reflectorAhead |= last > v;
  }
  ioc_.restart();
  ioc_.poll();
  EXPECT_EQ(informer_->indexedResourceVersion(), "13");
  EXPECT_EQ(informer_->lastSyncResourceVersion(), "13");
  EXPECT_TRUE(reflectorAhead) << "the interleaving this test is for never happened";
  watch_->push(event(WT::Bookmark, R"({"metadata":{"resourceVersion":"20"}})"));
  ioc_.poll();
  EXPECT_EQ(informer_->indexedResourceVersion(), "20");
}

// TestAddWhileActive: a handler added after start gets synthetic initial adds of
// the current contents, and is synced only once they are delivered.
TEST_F(InformerTest, LateHandlerReceivesTheCurrentContentsAsInitialAdds) {
  informer_->start(ioc_.get_executor());
  ioc_.poll();
  std::vector<std::string> log;
  auto& reg = add(recorder(log));
  EXPECT_FALSE(reg.hasSynced());
  ioc_.poll();
  EXPECT_TRUE(reg.hasSynced());
  std::sort(log.begin(), log.end());
  EXPECT_THAT(log, ElementsAre("add a (initial)", "add b (initial)"));
}

// Each handler has its own buffer; one that has not run yet holds its backlog
// without holding up the others or the cache.
TEST_F(InformerTest, EachHandlerHasItsOwnBuffer) {
  std::vector<std::string> fast;
  auto& fastReg = add(recorder(fast));
  informer_->start(ioc_.get_executor());
  ioc_.poll();
  std::vector<std::string> late;
  auto& lateReg = add(recorder(late));
  for (int i = 0; i < 200; ++i) {
    watch_->push(event(WT::Modified, objectJson("ns", "a", std::to_string(100 + i))));
  }
  // Run only a few handlers' worth of steps: the cache and the fast handler move on while the
  // late handler still has its backlog buffered.
  for (int i = 0; i < 3; ++i) {
    ioc_.run_one();
  }
  ioc_.poll();
  EXPECT_EQ(fastReg.pending(), 0u);
  EXPECT_EQ(lateReg.pending(), 0u);
  EXPECT_EQ(fast.size(), 202u);
  EXPECT_EQ(late.size(), 202u);
  EXPECT_EQ(informer_->indexer().get("ns/a")->metadata.resourceVersion, "299");
}

// TestListenerResyncPeriods / TestResyncCheckPeriod: periods below 1s are
// raised; the check period is the shortest before start; resync updates (same RV) go only to
// handlers that are due.
TEST_F(InformerTest, ResyncUpdatesGoOnlyToHandlersThatAreDue) {
  remake(10s);
  std::vector<std::string> every2s;
  std::vector<std::string> every5s;
  std::vector<std::string> never;
  add(recorder(every2s), 2s);
  add(recorder(every5s), 5s);
  add(recorder(never), 0ms);
  EXPECT_EQ(informer_->resyncCheckPeriod(), 2s);
  informer_->start(ioc_.get_executor());
  ioc_.poll();
  for (int i = 0; i < 5; ++i) {
    clock_.advance(1s);
    ioc_.poll();
  }
  auto updates = [](const std::vector<std::string>& log) {
    return std::count_if(log.begin(), log.end(),
                         [](const std::string& s) { return s.rfind("update", 0) == 0; });
  };
  EXPECT_EQ(updates(every2s), 2 * 2);  // two resyncs (at 2s and 4s) of two objects
  EXPECT_EQ(updates(every5s), 0);      // first due at 5s, checked at 6s
  EXPECT_EQ(updates(never), 0);
  clock_.advance(1s);
  ioc_.poll();
  EXPECT_EQ(updates(every5s), 2);
  EXPECT_EQ(updates(never), 0);
  EXPECT_EQ(lw_->lists.size(), 1u) << "resync never contacts the server";
}

// A handler period in (0, 1s) is raised to 1s.
TEST_F(InformerTest, TinyResyncPeriodIsRaisedToOneSecond) {
  remake(10s);
  std::vector<std::string> log;
  add(recorder(log), 10ms);
  EXPECT_EQ(informer_->resyncCheckPeriod(), 1s);
}

// A relist whose list lacks an object deletes it with "final state unknown".
TEST_F(InformerTest, RelistDeletesWhatDisappearedWithFinalStateUnknown) {
  std::vector<std::string> log;
  add(recorder(log));
  informer_->start(ioc_.get_executor());
  ioc_.poll();
  initial_ = {objectJson("ns", "a", "1")};
  clock_.advance(5s);
  watch_->push(testing::apiError(410, "Expired"));
  ioc_.poll();
  clock_.advance(*clock_.nextDeadline() - clock_.now());
  ioc_.poll();
  EXPECT_THAT(log,
              ElementsAre("add a (initial)", "add b (initial)", "delete b (final state unknown)"));
  EXPECT_EQ(informer_->indexer().size(), 1u);
}

// As client-go's determineResyncPeriod: an informer whose default resync period
// is 0 never resyncs; a handler asking for a period does not turn resync on.
TEST_F(InformerTest, HandlerResyncDoesNotTurnOnResyncOfAnInformerThatNeverResyncs) {
  std::vector<std::string> log;
  add(recorder(log), 2s);
  EXPECT_EQ(informer_->resyncCheckPeriod(), 0ms);
  informer_->start(ioc_.get_executor());
  ioc_.poll();
  for (int i = 0; i < 10; ++i) {
    clock_.advance(1s);
    ioc_.poll();
  }
  EXPECT_THAT(log, ElementsAre("add a (initial)", "add b (initial)"));
}

// Item 6 (client-go's processorListener: syncTracker.Finished() after OnAdd): a handler has
// synced once it has run its initial adds, not when they are merely queued for it.
TEST_F(InformerTest, HandlerIsSyncedOnlyAfterItRanItsInitialAdds) {
  const InformerTest::Registration* reg = nullptr;
  std::vector<bool> syncedDuringAdd;
  EventHandler<TestObject> h;
  h.onAdd = [&](const Ptr&, bool) { syncedDuringAdd.push_back(reg->hasSynced()); };
  reg = &add(h);
  informer_->start(ioc_.get_executor());
  ioc_.poll();
  EXPECT_THAT(syncedDuringAdd, ElementsAre(false, false));
  EXPECT_TRUE(reg->hasSynced());

  // The same for a handler added after start (synthetic initial adds).
  const InformerTest::Registration* late = nullptr;
  std::vector<bool> lateSynced;
  EventHandler<TestObject> h2;
  h2.onAdd = [&](const Ptr&, bool) { lateSynced.push_back(late->hasSynced()); };
  late = &add(h2);
  ioc_.poll();
  EXPECT_THAT(lateSynced, ElementsAre(false, false));
  EXPECT_TRUE(late->hasSynced());
}

// Item 5: the informer's processing loop (FIFO → cache → handlers) yields to the io_context
// every few hundred items instead of draining a 10,000-object list in one go. Counted as
// interleavings of another coroutine, not as time.
TEST_F(InformerTest, DrainingALargeListYieldsToOtherCoroutines) {
  initial_.clear();
  for (int i = 0; i < 10000; ++i) {
    initial_.push_back(objectJson("ns", "o" + std::to_string(i), "5"));
  }
  std::vector<size_t> cached;
  bool done = false;
  testing::spawnTicker(
      ioc_,
      [&] {
        cached.push_back(informer_->indexer().size());
        return informer_->indexer().size() == 10000;
      },
      &done);
  informer_->start(ioc_.get_executor());
  while (!done) {
    ioc_.run_one();
  }
  const auto during =
      std::count_if(cached.begin(), cached.end(), [](size_t n) { return n > 0 && n < 10000; });
  EXPECT_GE(during, 10000 / 500) << "the ticker ran while the cache was being filled";
}

// Item 4: an informer may be destroyed with the io_context still running -- mid-LIST (the
// request is cancelled), mid-watch, mid-handler delivery -- and nothing touches it afterwards
// (ASan checks); its handlers are not called again.
TEST_F(InformerTest, DestroyedMidListWithTheIoContextRunning) {
  lw_->hangLists = true;
  informer_->start(ioc_.get_executor());
  ioc_.poll();
  ASSERT_EQ(lw_->lists.size(), 1u);
  const auto* lw = lw_;
  (void)lw;
  informer_.reset();
  ioc_.poll();
  clock_.advance(1min);
  ioc_.poll();
}

TEST_F(InformerTest, DestroyedMidWatchWithTheIoContextRunning) {
  std::vector<std::string> log;
  add(recorder(log));
  informer_->start(ioc_.get_executor());
  ioc_.poll();
  ASSERT_NE(watch_, nullptr);
  watch_->push(event(WT::Modified, objectJson("ns", "a", "11")));
  informer_.reset();
  ioc_.poll();
  clock_.advance(1min);
  ioc_.poll();
  EXPECT_THAT(log, ElementsAre("add a (initial)", "add b (initial)"));
}

TEST_F(InformerTest, DestroyedMidHandlerDeliveryWithTheIoContextRunning) {
  std::vector<std::string> log;
  add(recorder(log));
  informer_->start(ioc_.get_executor());
  ioc_.poll();
  for (int i = 0; i < 200; ++i) {
    watch_->push(event(WT::Modified, objectJson("ns", "a", std::to_string(100 + i))));
  }
  // Part of the backlog delivered (delivery yields every 64), then the informer goes away.
  while (log.size() < 2 + 70) {
    ioc_.run_one();
  }
  informer_.reset();
  const size_t delivered = log.size();
  ioc_.poll();
  EXPECT_EQ(log.size(), delivered) << "no handler runs after the informer is gone";
}

TEST_F(InformerTest, DestroyedByItsOwnHandler) {
  int calls = 0;
  EventHandler<TestObject> h;
  h.onAdd = [&](const Ptr&, bool) {
    ++calls;
    informer_.reset();
  };
  add(h);
  informer_->start(ioc_.get_executor());
  ioc_.poll();
  EXPECT_EQ(calls, 1);
}

// Item 4: stopped() covers every coroutine, the reflector's resync loop included.
TEST_F(InformerTest, StoppedCoversTheResyncLoop) {
  SharedIndexInformer<TestObject>::Options options;
  options.name = "resyncing";
  options.defaultResync = 30s;
  auto lw = std::make_unique<FakeListerWatcher>();
  lw->onList = lw_->onList;
  lw->onWatch = lw_->onWatch;
  SharedIndexInformer<TestObject> informer(std::move(lw), testing::decodeTestObject, clock_,
                                           options, ioc_.get_executor());
  informer.start(ioc_.get_executor());
  ioc_.poll();
  ASSERT_TRUE(informer.reflector()->running());
  informer.stop();
  while (!informer.stopped()) {
    ASSERT_EQ(ioc_.run_one(), 1u);
  }
  EXPECT_FALSE(informer.reflector()->running()) << "stopped() while the resync loop still ran";
}

double decodeFailuresMetric(prometheus::Registry& registry, const std::string& resource) {
  for (const auto& family : registry.Collect()) {
    if (family.name != "informer_decode_failures_total") {
      continue;
    }
    for (const auto& metric : family.metric) {
      for (const auto& label : metric.label) {
        if (label.name == "resource" && label.value == resource) {
          return metric.counter.value;
        }
      }
    }
  }
  return -1;
}

// An object that does not decode stays in the cache as an explicit
// undecodable entry (not in the typed view), handlers are told, the failure is counted and
// logged once per object version, a later good version replaces the entry and a DELETED removes
// it; the resourceVersion advances throughout.
TEST_F(InformerTest, UndecodableObjectsAreKeptAsExplicitEntries) {
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100);
  spdlog::default_logger()->sinks().push_back(sink);
  auto undecodableLogs = [&sink] {
    const auto lines = sink->last_formatted();
    return std::count_if(lines.begin(), lines.end(), [](const std::string& l) {
      return l.find("ns/bad") != std::string::npos &&
             l.find("does not decode") != std::string::npos;
    });
  };
  auto bad = [](const std::string& rv) {
    return R"({"metadata":{"namespace":"ns","name":"bad","resourceVersion":")" + rv +
           R"("},"value":7})";
  };
  initial_ = {objectJson("ns", "a", "1"), bad("2")};
  std::vector<std::string> log;
  auto handler = recorder(log);
  handler.onUndecodable = [&log](const UndecodablePtr& e) {
    log.push_back("undecodable " + e->key + "@" + e->resourceVersion + ": " + e->error);
  };
  add(handler);
  informer_->start(ioc_.get_executor());
  ioc_.poll();
  ASSERT_TRUE(informer_->hasSynced());
  const auto& idx = informer_->indexer();
  Lister<TestObject> lister(idx);
  EXPECT_EQ(lister.get("ns", "bad"), nullptr) << "typed readers never see it";
  EXPECT_EQ(lister.list().size(), 1u);
  ASSERT_NE(lister.undecodable("ns", "bad"), nullptr);
  EXPECT_EQ(lister.undecodable("ns", "bad")->resourceVersion, "2");
  EXPECT_EQ(lister.undecodable("ns", "bad")->error, "value: expected string");
  EXPECT_EQ(lister.undecodable().size(), 1u);
  EXPECT_EQ(lister.undecodable("ns").size(), 1u);
  EXPECT_EQ(lister.undecodable("other").size(), 0u);
  EXPECT_EQ(decodeFailuresMetric(registry_, "test"), 1);
  EXPECT_EQ(undecodableLogs(), 1);

  // A relist meets the same version: nothing new to say.
  clock_.advance(5s);
  watch_->push(testing::apiError(410, "Expired"));
  ioc_.poll();
  clock_.advance(*clock_.nextDeadline() - clock_.now());
  ioc_.poll();
  EXPECT_EQ(lw_->lists.size(), 2u);
  EXPECT_EQ(decodeFailuresMetric(registry_, "test"), 1);
  EXPECT_EQ(undecodableLogs(), 1);

  // A version that decodes replaces the entry; a later one that does not takes it out of the
  // typed view again (no delete: the object exists); its DELETED removes it.
  watch_->push(event(WT::Modified, objectJson("ns", "bad", "12", "fixed")));
  ioc_.poll();
  EXPECT_NE(lister.get("ns", "bad"), nullptr);
  EXPECT_EQ(lister.undecodable("ns", "bad"), nullptr);
  watch_->push(event(WT::Modified, bad("13")));
  ioc_.poll();
  EXPECT_EQ(lister.get("ns", "bad"), nullptr);
  ASSERT_NE(lister.undecodable("ns", "bad"), nullptr);
  EXPECT_EQ(lister.undecodable("ns", "bad")->resourceVersion, "13");
  EXPECT_EQ(decodeFailuresMetric(registry_, "test"), 2);
  EXPECT_EQ(undecodableLogs(), 2);
  watch_->push(event(WT::Deleted, bad("14")));
  ioc_.poll();
  EXPECT_EQ(lister.undecodable("ns", "bad"), nullptr);
  EXPECT_TRUE(lister.undecodable().empty());
  EXPECT_EQ(informer_->reflector()->lastSyncResourceVersion(), "14");
  EXPECT_THAT(log, ElementsAre("add a (initial)", "undecodable ns/bad@2: value: expected string",
                               "add bad", "undecodable ns/bad@13: value: expected string",
                               "delete bad (final state unknown)"));
  spdlog::default_logger()->sinks().pop_back();
}

// Item 3b: a handler added after start hears of the undecodable entries too.
TEST_F(InformerTest, LateHandlerHearsOfUndecodableEntries) {
  initial_ = {objectJson("ns", "a", "1"),
              R"({"metadata":{"namespace":"ns","name":"bad","resourceVersion":"2"},"value":7})"};
  informer_->start(ioc_.get_executor());
  ioc_.poll();
  std::vector<std::string> log;
  auto handler = recorder(log);
  handler.onUndecodable = [&log](const UndecodablePtr& e) {
    log.push_back("undecodable " + e->key);
  };
  auto& reg = add(handler);
  ioc_.poll();
  EXPECT_TRUE(reg.hasSynced());
  EXPECT_THAT(log, ElementsAre("add a (initial)", "undecodable ns/bad"));
}

// Item 6: a stopped informer takes no more handlers.
TEST_F(InformerTest, AddEventHandlerAfterStopFails) {
  informer_->start(ioc_.get_executor());
  ioc_.poll();
  informer_->stop();
  std::vector<std::string> log;
  auto reg = informer_->addEventHandler(recorder(log));
  ASSERT_FALSE(reg);
  EXPECT_TRUE(reg.error().isCancelled());
}

}  // namespace
}  // namespace egress::cache

#include "pkg/cache/lister.h"

namespace egress::cache {
namespace {

// Listers by namespace (through the index) and by label selector.
TEST(Lister, ListsByNamespaceAndSelector) {
  Indexer<TestObject> idx;
  auto put = [&idx](const std::string& ns, const std::string& name, const std::string& app) {
    auto o = std::make_shared<TestObject>();
    o->metadata.namespace_ = ns;
    o->metadata.name = name;
    o->metadata.labels["app"] = app;
    idx.put(o);
  };
  put("a", "web-1", "web");
  put("a", "db-1", "db");
  put("b", "web-2", "web");
  Lister<TestObject> lister(idx);
  meta::LabelSelector web;
  web.matchLabels["app"] = "web";
  EXPECT_EQ(lister.list().size(), 3u);
  EXPECT_EQ(lister.list(&web).size(), 2u);
  EXPECT_EQ(lister.listInNamespace("a").size(), 2u);
  EXPECT_EQ(lister.listInNamespace("a", &web).size(), 1u);
  EXPECT_EQ(lister.listInNamespace("").size(), 3u) << "NamespaceAll";
  EXPECT_EQ(lister.listInNamespace("missing").size(), 0u);
  ASSERT_NE(lister.get("b", "web-2"), nullptr);
  EXPECT_EQ(lister.get("b", "nope"), nullptr);
}

}  // namespace
}  // namespace egress::cache
