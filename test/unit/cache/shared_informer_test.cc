// SharedIndexInformer unit tests with a scripted ListerWatcher; each names the client-go
// reference test and the runtime-anchors.md §1.5 / §1.7 items it covers.
#include "pkg/cache/shared_informer.h"

#include <boost/asio/io_context.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

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
  InformerTest() {
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
    options.reflector.useWatchList = false;
    options.defaultResync = 0ms;
    informer_ = std::make_unique<SharedIndexInformer<TestObject>>(
        std::move(lw), testing::decodeTestObject, clock_, options, ioc_.get_executor());
  }
  ~InformerTest() override {
    informer_->stop();
    for (int i = 0; i < 100 && !informer_->stopped(); ++i) {
      ioc_.poll();
    }
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
  FakeListerWatcher* lw_;
  FakeWatch* watch_ = nullptr;
  std::vector<std::string> initial_{objectJson("ns", "a", "1"), objectJson("ns", "b", "2")};
  std::unique_ptr<SharedIndexInformer<TestObject>> informer_;
};

// §1.5 items 1-3 and §1.7: the cache is updated before handlers hear of a change; adds from the
// initial list are flagged; every handler sees every change in order.
TEST_F(InformerTest, HandlersSeeChangesAfterTheCacheHasThem) {
  std::vector<std::string> log;
  auto handler = recorder(log);
  auto onAdd = handler.onAdd;
  handler.onAdd = [this, onAdd](const Ptr& o, bool initial) {
    EXPECT_NE(informer_->indexer().get(objectKey(o->metadata)), nullptr);
    onAdd(o, initial);
  };
  auto& reg = informer_->addEventHandler(handler);
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

// TestAddWhileActive; §1.7 item 1: a handler added after start gets synthetic initial adds of
// the current contents, and is synced only once they are delivered.
TEST_F(InformerTest, LateHandlerReceivesTheCurrentContentsAsInitialAdds) {
  informer_->start(ioc_.get_executor());
  ioc_.poll();
  std::vector<std::string> log;
  auto& reg = informer_->addEventHandler(recorder(log));
  EXPECT_FALSE(reg.hasSynced());
  ioc_.poll();
  EXPECT_TRUE(reg.hasSynced());
  std::sort(log.begin(), log.end());
  EXPECT_THAT(log, ElementsAre("add a (initial)", "add b (initial)"));
}

// §1.7 item 5: each handler has its own buffer; one that has not run yet holds its backlog
// without holding up the others or the cache.
TEST_F(InformerTest, EachHandlerHasItsOwnBuffer) {
  std::vector<std::string> fast;
  auto& fastReg = informer_->addEventHandler(recorder(fast));
  informer_->start(ioc_.get_executor());
  ioc_.poll();
  std::vector<std::string> late;
  auto& lateReg = informer_->addEventHandler(recorder(late));
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

// TestListenerResyncPeriods / TestResyncCheckPeriod; §1.7 items 3-4: periods below 1s are
// raised; the check period is the shortest before start; resync updates (same RV) go only to
// handlers that are due.
TEST_F(InformerTest, ResyncUpdatesGoOnlyToHandlersThatAreDue) {
  std::vector<std::string> every2s;
  std::vector<std::string> every5s;
  std::vector<std::string> never;
  informer_->addEventHandler(recorder(every2s), 2s);
  informer_->addEventHandler(recorder(every5s), 5s);
  informer_->addEventHandler(recorder(never), 0ms);
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

// §1.7 item 3: a handler period in (0, 1s) is raised to 1s.
TEST_F(InformerTest, TinyResyncPeriodIsRaisedToOneSecond) {
  std::vector<std::string> log;
  informer_->addEventHandler(recorder(log), 10ms);
  EXPECT_EQ(informer_->resyncCheckPeriod(), 1s);
}

// A relist whose list lacks an object deletes it with "final state unknown" (§1.3 item 5).
TEST_F(InformerTest, RelistDeletesWhatDisappearedWithFinalStateUnknown) {
  std::vector<std::string> log;
  informer_->addEventHandler(recorder(log));
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

}  // namespace
}  // namespace egress::cache

#include "pkg/cache/lister.h"

namespace egress::cache {
namespace {

// §1.6 item 9: listers by namespace (through the index) and by label selector.
TEST(Lister, ListsByNamespaceAndSelector) {
  Indexer<TestObject> idx;
  auto put = [&idx](const std::string& ns, const std::string& name, const std::string& app) {
    auto o = std::make_shared<TestObject>();
    o->metadata.namespace_ = ns;
    o->metadata.name = name;
    o->metadata.labels["app"] = app;
    idx.put(ns + "/" + name, o);
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
