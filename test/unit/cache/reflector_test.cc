// Reflector unit tests against a scripted ListerWatcher and a FakeClock. Each test names the
// client-go reference test and the runtime-anchors.md §1.1 checklist items it covers.
#include "pkg/cache/reflector.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/unit/cache/fake_lister_watcher.h"

namespace egress::cache {
namespace {

using namespace std::chrono_literals;
using testing::apiError;
using ::testing::ElementsAre;
using testing::event;
using testing::FakeListerWatcher;
using testing::FakeWatch;
using testing::listDoc;
using testing::objectJson;
using WT = kube::WatchEventType;

std::string nameAndRv(const rapidjson::Value& v) {
  return std::string(v["metadata"]["name"].GetString()) + "@" +
         v["metadata"]["resourceVersion"].GetString();
}

class RecordingStore : public ReflectorStore {
 public:
  void startList() override { calls.push_back("start"); }
  void listItem(const rapidjson::Value& v) override { calls.push_back("item " + nameAndRv(v)); }
  void finishList(const std::string& rv) override { calls.push_back("replace @" + rv); }
  void addJson(const rapidjson::Value& v) override { calls.push_back("add " + nameAndRv(v)); }
  void updateJson(const rapidjson::Value& v) override { calls.push_back("update " + nameAndRv(v)); }
  void removeJson(const rapidjson::Value& v) override { calls.push_back("delete " + nameAndRv(v)); }
  void resync() override { calls.push_back("resync"); }
  std::vector<std::string> calls;
};

class ReflectorTest : public ::testing::Test {
 protected:
  ~ReflectorTest() override {
    if (reflector_) {
      reflector_->stop();
      ioc_.poll();
    }
  }

  static ReflectorOptions listThenWatch() {
    ReflectorOptions o;
    o.useWatchList = false;
    return o;
  }

  void start(ReflectorOptions options = listThenWatch()) {
    options.name = "test";
    reflector_ =
        std::make_unique<Reflector>(lw_, store_, clock_, options, [this] { return random_; });
    net::co_spawn(ioc_, reflector_->run(), net::detached);
    ioc_.poll();
  }

  // Hands out a new FakeWatch; the test keeps a pointer to push events into it.
  kube::Result<std::unique_ptr<kube::Watch>> newWatch() {
    auto w = std::make_unique<FakeWatch>(ioc_.get_executor());
    watches_.push_back(w.get());
    return std::unique_ptr<kube::Watch>(std::move(w));
  }

  // How long the reflector now waits (its next timer deadline).
  Clock::Duration pendingWait() const {
    auto d = clock_.nextDeadline();
    return d ? *d - clock_.now() : Clock::Duration::max();
  }

  net::io_context ioc_;
  FakeClock clock_{ioc_.get_executor()};
  FakeListerWatcher lw_;
  RecordingStore store_;
  double random_ = 0.0;
  std::vector<FakeWatch*> watches_;
  std::unique_ptr<Reflector> reflector_;
};

// TestReflectorListAndWatchInitConnBackoff; §1.1 items 1-2: every failed ListAndWatch is
// followed by 800ms·2^n (jitter 0 here), capped at 30s.
TEST_F(ReflectorTest, InitialConnectionFailuresBackOffExponentially) {
  lw_.onList = [](const kube::ListOptions&) {
    return kube::Result<rapidjson::Document>(kube::Error::transport("connect: Connection refused"));
  };
  start();
  std::vector<std::chrono::milliseconds> waits;
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(lw_.lists.size(), static_cast<size_t>(i + 1));
    waits.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(pendingWait()));
    clock_.advance(pendingWait());
    ioc_.poll();
  }
  EXPECT_THAT(waits,
              ElementsAre(800ms, 1600ms, 3200ms, 6400ms, 12800ms, 25600ms, 30000ms, 30000ms));
}

// §1.1 item 2: jitter 1.0 puts each delay in [d, 2d).
TEST_F(ReflectorTest, BackoffJitterStaysBelowTwiceTheStep) {
  random_ = 0.999;
  lw_.onList = [](const kube::ListOptions&) {
    return kube::Result<rapidjson::Document>(kube::Error::transport("refused"));
  };
  start();
  EXPECT_GE(pendingWait(), 1598ms);
  EXPECT_LT(pendingWait(), 1600ms);
}

// §1.1 item 4: the first list asks for RV "0" (watch cache), paginated by 500 (item 5); then
// the watch starts at the list's RV with bookmarks and a timeout in [300,599]s (item 9).
TEST_F(ReflectorTest, FirstListFromZeroThenWatchFromItsResourceVersion) {
  lw_.onList = [](const kube::ListOptions&) {
    return kube::Result<rapidjson::Document>(listDoc({objectJson("ns", "a", "5")}, "7"));
  };
  lw_.onWatch = [this](const kube::ListOptions&) { return newWatch(); };
  start();
  ASSERT_EQ(lw_.lists.size(), 1u);
  EXPECT_EQ(lw_.lists[0].resourceVersion, "0");
  EXPECT_EQ(lw_.lists[0].limit, 500);
  ASSERT_EQ(lw_.watches.size(), 1u);
  EXPECT_EQ(lw_.watches[0].resourceVersion, "7");
  EXPECT_TRUE(lw_.watches[0].allowWatchBookmarks);
  EXPECT_EQ(lw_.watches[0].timeoutSeconds, 300);
  EXPECT_THAT(store_.calls, ElementsAre("start", "item a@5", "replace @7"));

  watches_[0]->push(event(WT::Added, objectJson("ns", "b", "8")));
  watches_[0]->push(event(WT::Modified, objectJson("ns", "a", "9")));
  watches_[0]->push(event(WT::Bookmark, R"({"metadata":{"resourceVersion":"10"}})"));
  watches_[0]->push(event(WT::Deleted, objectJson("ns", "b", "11")));
  ioc_.poll();
  EXPECT_THAT(store_.calls, ElementsAre("start", "item a@5", "replace @7", "add b@8", "update a@9",
                                        "delete b@11"));
  EXPECT_EQ(reflector_->lastSyncResourceVersion(), "11");
}

// TestWatchTimeout; §1.1 items 9 and 13: a clean end re-watches at once from the last RV,
// without relist or backoff; the timeout is min + rand·min.
TEST_F(ReflectorTest, CleanWatchEndReWatchesImmediatelyFromLastResourceVersion) {
  random_ = 0.999;
  lw_.onList = [](const kube::ListOptions&) {
    return kube::Result<rapidjson::Document>(listDoc({}, "7"));
  };
  lw_.onWatch = [this](const kube::ListOptions&) { return newWatch(); };
  start();
  EXPECT_EQ(lw_.watches[0].timeoutSeconds, 599);
  watches_[0]->push(event(WT::Added, objectJson("ns", "a", "8")));
  ioc_.poll();
  clock_.advance(5s);  // not a "very short" watch
  watches_[0]->push(FakeWatch::End{});
  ioc_.poll();
  ASSERT_EQ(lw_.watches.size(), 2u);
  EXPECT_EQ(lw_.watches[1].resourceVersion, "8");
  EXPECT_EQ(lw_.lists.size(), 1u);
  EXPECT_EQ(reflector_->stats().backoffs, 0);
}

// §1.1 item 13: a watch closed within 1s with no events is an error: backoff, then relist.
TEST_F(ReflectorTest, VeryShortWatchBacksOffAndRelists) {
  lw_.onList = [](const kube::ListOptions&) {
    return kube::Result<rapidjson::Document>(listDoc({}, "7"));
  };
  lw_.onWatch = [this](const kube::ListOptions&) { return newWatch(); };
  start();
  watches_[0]->push(FakeWatch::End{});
  ioc_.poll();
  EXPECT_EQ(reflector_->stats().backoffs, 1);
  clock_.advance(pendingWait());
  ioc_.poll();
  EXPECT_EQ(lw_.lists.size(), 2u);
  EXPECT_EQ(lw_.lists[1].resourceVersion, "7");
}

// TestBackoffOnTooManyRequests / TestNoRelistOnTooManyRequests; §1.1 items 10 and 15: 429 when
// starting or during a watch backs off and watches again, never relists.
TEST_F(ReflectorTest, TooManyRequestsBacksOffWithoutRelisting) {
  int watchCalls = 0;
  lw_.onList = [](const kube::ListOptions&) {
    return kube::Result<rapidjson::Document>(listDoc({}, "7"));
  };
  lw_.onWatch = [&](const kube::ListOptions&) -> kube::Result<std::unique_ptr<kube::Watch>> {
    if (++watchCalls <= 2) {
      return apiError(429, "TooManyRequests");
    }
    return newWatch();
  };
  start();
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(lw_.watches.size(), static_cast<size_t>(i + 1));
    clock_.advance(pendingWait());
    ioc_.poll();
  }
  ASSERT_EQ(lw_.watches.size(), 3u);
  watches_[0]->push(apiError(429, "TooManyRequests"));
  ioc_.poll();
  clock_.advance(pendingWait());
  ioc_.poll();
  EXPECT_EQ(lw_.watches.size(), 4u);
  EXPECT_EQ(lw_.lists.size(), 1u) << "429 never causes a relist";
  EXPECT_EQ(reflector_->stats().backoffs, 3);
}

// §1.1 item 10: a refused connection (apiserver restarting) is treated like 429.
TEST_F(ReflectorTest, RefusedWatchConnectionBacksOffWithoutRelisting) {
  bool refuse = true;
  lw_.onList = [](const kube::ListOptions&) {
    return kube::Result<rapidjson::Document>(listDoc({}, "7"));
  };
  lw_.onWatch = [&](const kube::ListOptions&) -> kube::Result<std::unique_ptr<kube::Watch>> {
    if (refuse) {
      return kube::Error::transport("connecting: Connection refused to 127.0.0.1:1");
    }
    return newWatch();
  };
  start();
  refuse = false;
  clock_.advance(pendingWait());
  ioc_.poll();
  EXPECT_EQ(lw_.watches.size(), 2u);
  EXPECT_EQ(lw_.lists.size(), 1u);
}

// TestReflectorFullListIfExpired; §1.1 items 5-6: an expired continue token repeats the list
// without a limit and without the token.
TEST_F(ReflectorTest, ExpiredContinueTokenFallsBackToAFullList) {
  lw_.onList = [](const kube::ListOptions& o) -> kube::Result<rapidjson::Document> {
    if (o.continueToken.empty() && o.limit == 500) {
      return listDoc({objectJson("ns", "a", "3")}, "10", "page2");
    }
    if (o.continueToken == "page2") {
      return apiError(410, "Expired", "The provided continue parameter is too old");
    }
    return listDoc({objectJson("ns", "a", "3"), objectJson("ns", "b", "4")}, "12");
  };
  lw_.onWatch = [this](const kube::ListOptions&) { return newWatch(); };
  start();
  ASSERT_EQ(lw_.lists.size(), 3u);
  EXPECT_EQ(lw_.lists[1].continueToken, "page2");
  EXPECT_EQ(lw_.lists[1].resourceVersion, "") << "continuations carry no resourceVersion";
  EXPECT_EQ(lw_.lists[2].continueToken, "");
  EXPECT_EQ(lw_.lists[2].limit, 0);
  EXPECT_THAT(store_.calls,
              ElementsAre("start", "item a@3", "start", "item a@3", "item b@4", "replace @12"));
  EXPECT_EQ(lw_.watches[0].resourceVersion, "12");
}

// TestReflectorExpiredExactResourceVersion; §1.1 items 7 and 14: after a 410 during the watch
// the relist first uses the last RV; if that list is also expired, it retries at once with "".
TEST_F(ReflectorTest, GoneDuringWatchRelistsFromLastRvThenFromEmpty) {
  lw_.onList = [](const kube::ListOptions& o) -> kube::Result<rapidjson::Document> {
    if (o.resourceVersion == "0") {
      return listDoc({}, "10");
    }
    if (o.resourceVersion == "11") {
      return apiError(410, "Expired", "too old resource version: 11 (20)");
    }
    return listDoc({objectJson("ns", "a", "20")}, "20");
  };
  lw_.onWatch = [this](const kube::ListOptions&) { return newWatch(); };
  start();
  watches_[0]->push(event(WT::Added, objectJson("ns", "x", "11")));
  watches_[0]->push(apiError(410, "Expired", "too old resource version"));
  ioc_.poll();
  clock_.advance(pendingWait());
  ioc_.poll();
  ASSERT_EQ(lw_.lists.size(), 3u);
  EXPECT_EQ(lw_.lists[1].resourceVersion, "11") << "relist from the last RV seen, not \"\"";
  EXPECT_EQ(lw_.lists[2].resourceVersion, "") << "then a quorum read, immediately";
  EXPECT_EQ(reflector_->stats().backoffs, 1);
  EXPECT_EQ(lw_.watches.back().resourceVersion, "20");
}

// TestReflectorFullListIfTooLarge; §1.1 item 7: "too large resource version" also means "".
TEST_F(ReflectorTest, TooLargeResourceVersionRelistsFromEmpty) {
  meta::Status tooLarge;
  tooLarge.code = 504;
  tooLarge.reason = "Timeout";
  tooLarge.message = "Too large resource version: 30, current: 20";
  tooLarge.causes.push_back({"ResourceVersionTooLarge", "Too large resource version", ""});
  lw_.onList = [&](const kube::ListOptions& o) -> kube::Result<rapidjson::Document> {
    if (o.resourceVersion == "0") {
      return kube::Error::api(504, tooLarge);
    }
    return listDoc({}, "20");
  };
  lw_.onWatch = [this](const kube::ListOptions&) { return newWatch(); };
  start();
  ASSERT_EQ(lw_.lists.size(), 2u);
  EXPECT_EQ(lw_.lists[1].resourceVersion, "");
}

// TestReflectorResync; §1.1 item 17: resync on its own timer, asking shouldResync first, and
// never contacting the server.
TEST_F(ReflectorTest, ResyncFiresOnItsTimerWhenAllowed) {
  bool allow = false;
  lw_.onList = [](const kube::ListOptions&) {
    return kube::Result<rapidjson::Document>(listDoc({}, "7"));
  };
  lw_.onWatch = [this](const kube::ListOptions&) { return newWatch(); };
  ReflectorOptions options = listThenWatch();
  options.resyncPeriod = 30s;
  options.shouldResync = [&] { return allow; };
  start(options);
  clock_.advance(30s);
  ioc_.poll();
  EXPECT_EQ(std::count(store_.calls.begin(), store_.calls.end(), "resync"), 0);
  allow = true;
  clock_.advance(30s);
  ioc_.poll();
  EXPECT_EQ(std::count(store_.calls.begin(), store_.calls.end(), "resync"), 1);
  EXPECT_EQ(lw_.lists.size(), 1u);
  EXPECT_EQ(lw_.watches.size(), 1u);
}

// §1.2: a streaming list collects initial events until the annotated bookmark, replaces the
// store at the bookmark's RV and keeps the same stream.
TEST_F(ReflectorTest, StreamingListReplacesAtTheInitialEventsBookmark) {
  lw_.onWatch = [this](const kube::ListOptions&) { return newWatch(); };
  ReflectorOptions options;
  options.useWatchList = true;
  start(options);
  ASSERT_EQ(lw_.watches.size(), 1u);
  EXPECT_TRUE(lw_.watches[0].sendInitialEvents);
  EXPECT_EQ(lw_.watches[0].resourceVersionMatch, "NotOlderThan");
  EXPECT_EQ(lw_.watches[0].resourceVersion, "");
  watches_[0]->push(event(WT::Added, objectJson("ns", "a", "3")));
  watches_[0]->push(event(
      WT::Bookmark,
      R"({"metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}})"));
  watches_[0]->push(event(WT::Added, objectJson("ns", "b", "10")));
  ioc_.poll();
  EXPECT_THAT(store_.calls, ElementsAre("start", "item a@3", "replace @9", "add b@10"));
  EXPECT_TRUE(lw_.lists.empty());
}

// §1.2 item 4: a server without streaming lists (our 1.20) rejects the options; the reflector
// lists instead and does not try streaming again.
TEST_F(ReflectorTest, StreamingListRejectedFallsBackToListForGood) {
  lw_.onList = [](const kube::ListOptions&) {
    return kube::Result<rapidjson::Document>(listDoc({}, "7"));
  };
  lw_.onWatch = [this](const kube::ListOptions& o) -> kube::Result<std::unique_ptr<kube::Watch>> {
    if (o.sendInitialEvents) {
      return apiError(422, "Invalid", "resourceVersionMatch is forbidden for watch");
    }
    return newWatch();
  };
  ReflectorOptions options;
  options.useWatchList = true;
  start(options);
  EXPECT_EQ(lw_.lists.size(), 1u);
  EXPECT_FALSE(reflector_->stats().watchListSupported);
  clock_.advance(5s);
  watches_[0]->push(apiError(410, "Expired"));
  ioc_.poll();
  clock_.advance(pendingWait());
  ioc_.poll();
  EXPECT_EQ(lw_.lists.size(), 2u);
  for (const auto& w : lw_.watches) {
    if (&w != &lw_.watches.front()) {
      EXPECT_FALSE(w.sendInitialEvents);
    }
  }
}

// stop() ends run() promptly, cancelling the watch.
TEST_F(ReflectorTest, StopCancelsTheWatch) {
  lw_.onList = [](const kube::ListOptions&) {
    return kube::Result<rapidjson::Document>(listDoc({}, "7"));
  };
  lw_.onWatch = [this](const kube::ListOptions&) { return newWatch(); };
  start();
  EXPECT_TRUE(reflector_->running());
  reflector_->stop();
  ioc_.poll();
  EXPECT_FALSE(reflector_->running());
}

}  // namespace
}  // namespace egress::cache
