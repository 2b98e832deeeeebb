// Reflector unit tests against a scripted ListerWatcher and a FakeClock. Each test names the
// client-go reference test and client-go behaviour it covers.
#include "pkg/cache/reflector.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
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

using testing::RecordingStore;

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

  // Lists answer with no items at `rv`; every watch is a new FakeWatch.
  void serveEmptyListAt(const std::string& rv) {
    lw_.onList = [rv](const kube::ListOptions&) {
      return kube::Result<rapidjson::Document>(listDoc({}, rv));
    };
    lw_.onWatch = [this](const kube::ListOptions&) { return newWatch(); };
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

// TestReflectorListAndWatchInitConnBackoff: every failed ListAndWatch is
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

// Jitter 1.0 puts each delay in [d, 2d).
TEST_F(ReflectorTest, BackoffJitterStaysBelowTwiceTheStep) {
  random_ = 0.999;
  lw_.onList = [](const kube::ListOptions&) {
    return kube::Result<rapidjson::Document>(kube::Error::transport("refused"));
  };
  start();
  EXPECT_GE(pendingWait(), 1598ms);
  EXPECT_LT(pendingWait(), 1600ms);
}

// The first list asks for RV "0" (watch cache), paginated by 500; then
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

// TestWatchTimeout: a clean end re-watches at once from the last RV,
// without relist or backoff; the timeout is min + rand·min.
TEST_F(ReflectorTest, CleanWatchEndReWatchesImmediatelyFromLastResourceVersion) {
  random_ = 0.999;
  serveEmptyListAt("7");
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

// A watch closed within 1s with no events is an error: backoff, then relist.
TEST_F(ReflectorTest, VeryShortWatchBacksOffAndRelists) {
  serveEmptyListAt("7");
  start();
  watches_[0]->push(FakeWatch::End{});
  ioc_.poll();
  EXPECT_EQ(reflector_->stats().backoffs, 1);
  clock_.advance(pendingWait());
  ioc_.poll();
  EXPECT_EQ(lw_.lists.size(), 2u);
  EXPECT_EQ(lw_.lists[1].resourceVersion, "7");
}

// TestBackoffOnTooManyRequests / TestNoRelistOnTooManyRequests: 429 when
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

// A refused connection (apiserver restarting) is treated like 429.
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

// TestReflectorFullListIfExpired: an expired continue token repeats the list
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

// A page whose second item is not JSON fails the list after its first item was staged: the store
// is told to drop it (not to replace with half a list), no watch starts, and the next attempt
// lists afresh.
TEST_F(ReflectorTest, AListThatFailsPartwayIsDroppedNotReplaced) {
  int listed = 0;
  lw_.onListPage = [&listed](const kube::ListOptions&) -> kube::Result<kube::ListPage> {
    if (listed++ == 0) {
      return kube::ListPage(R"({"metadata":{"resourceVersion":"7"},"items":[)" +
                                objectJson("ns", "a", "5") + R"(,{"metadata":}]})",
                            false);
    }
    return kube::ListPage::fromDocument(listDoc({objectJson("ns", "b", "6")}, "8"));
  };
  lw_.onWatch = [this](const kube::ListOptions&) { return newWatch(); };
  start();
  EXPECT_THAT(store_.calls, ElementsAre("start", "item a@5", "abort"));
  EXPECT_TRUE(lw_.watches.empty());
  clock_.advance(pendingWait());
  ioc_.poll();
  EXPECT_THAT(store_.calls,
              ElementsAre("start", "item a@5", "abort", "start", "item b@6", "replace @8"));
  ASSERT_EQ(lw_.watches.size(), 1u);
  EXPECT_EQ(lw_.watches[0].resourceVersion, "8");
}

// TestReflectorExpiredExactResourceVersion: after a 410 during the watch
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

// TestReflectorFullListIfTooLarge: "too large resource version" also means "".
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

// TestReflectorResync: resync on its own timer, asking shouldResync first, and
// never contacting the server.
TEST_F(ReflectorTest, ResyncFiresOnItsTimerWhenAllowed) {
  bool allow = false;
  serveEmptyListAt("7");
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

// A streaming list collects initial events until the annotated bookmark, replaces the
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

// A server without streaming lists (our 1.20) rejects the options; the reflector
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

// As client-go's StreamWatcher + Reflector.watch: a watch that breaks on the
// wire -- EOF, a reset, EOF inside a chunk, the idle timeout -- has ended normally. The reflector
// watches again at once from the last resourceVersion: no LIST, no backoff.
TEST_F(ReflectorTest, BrokenWatchConnectionReWatchesFromLastResourceVersionWithoutListing) {
  serveEmptyListAt("7");
  start();
  const char* breaks[] = {"reading the response stream: end of stream",
                          "reading the response stream: partial message",
                          "reading the response stream: Connection reset by peer",
                          "watch: no data for 330s (idle timeout)"};
  int rv = 8;
  for (const char* why : breaks) {
    const std::string eventRv = std::to_string(rv++);
    watches_.back()->push(event(WT::Added, objectJson("ns", "a", eventRv)));
    ioc_.poll();
    watches_.back()->push(kube::Error::transport(why));
    ioc_.poll();
    EXPECT_EQ(lw_.watches.back().resourceVersion, eventRv) << why;
  }
  EXPECT_EQ(lw_.watches.size(), 5u);
  EXPECT_EQ(lw_.lists.size(), 1u) << "a broken connection never relists";
  EXPECT_EQ(reflector_->stats().backoffs, 0);
}

// Item 1, kept from client-go: a watch that ends (cleanly or broken) within 1s without a single
// event is "very short": something is wrong, so back off and relist.
TEST_F(ReflectorTest, VeryShortBrokenWatchBacksOffAndRelists) {
  serveEmptyListAt("7");
  start();
  watches_[0]->push(kube::Error::transport("reading the response stream: end of stream"));
  ioc_.poll();
  EXPECT_EQ(reflector_->stats().backoffs, 1);
  clock_.advance(pendingWait());
  ioc_.poll();
  EXPECT_EQ(lw_.lists.size(), 2u);
}

// Item 1: what is not a broken connection still ends ListAndWatch: an event the stream cannot
// decode relists (client-go turns decode errors into an error event).
TEST_F(ReflectorTest, UndecodableWatchStreamRelists) {
  serveEmptyListAt("7");
  start();
  watches_[0]->push(event(WT::Added, objectJson("ns", "a", "8")));
  ioc_.poll();
  watches_[0]->push(kube::Error::decode("watch event: expected object"));
  ioc_.poll();
  clock_.advance(pendingWait());
  ioc_.poll();
  ASSERT_EQ(lw_.lists.size(), 2u);
  EXPECT_EQ(lw_.lists[1].resourceVersion, "8");
}

// Item 2: streaming lists are off unless asked for, as in client-go.
TEST_F(ReflectorTest, StreamingListsAreOffByDefault) {
  EXPECT_FALSE(ReflectorOptions{}.useWatchList);
  serveEmptyListAt("7");
  ReflectorOptions defaults;
  reflector_ =
      std::make_unique<Reflector>(lw_, store_, clock_, defaults, [this] { return random_; });
  net::co_spawn(ioc_, reflector_->run(), net::detached);
  ioc_.poll();
  ASSERT_EQ(lw_.lists.size(), 1u);
  ASSERT_EQ(lw_.watches.size(), 1u);
  EXPECT_FALSE(lw_.watches[0].sendInitialEvents);
}

// Item 2 (client-go's ListAndWatch fallbackToList): any failure of a streaming attempt -- here a
// broken stream before the initial-events bookmark -- lists instead, in the same attempt
// (no backoff); the next attempt streams again.
TEST_F(ReflectorTest, FailedStreamingAttemptFallsBackToAPagedListForThatAttempt) {
  lw_.onList = [](const kube::ListOptions&) {
    return kube::Result<rapidjson::Document>(listDoc({objectJson("ns", "a", "5")}, "7"));
  };
  lw_.onWatch = [this](const kube::ListOptions&) { return newWatch(); };
  ReflectorOptions options;
  options.useWatchList = true;
  start(options);
  ASSERT_EQ(lw_.watches.size(), 1u);
  EXPECT_TRUE(lw_.watches[0].sendInitialEvents);
  watches_[0]->push(event(WT::Added, objectJson("ns", "a", "3")));
  watches_[0]->push(apiError(500, "InternalError", "etcd is unhappy"));
  ioc_.poll();
  ASSERT_EQ(lw_.lists.size(), 1u) << "the same attempt lists";
  EXPECT_EQ(lw_.lists[0].limit, 500) << "paged";
  EXPECT_EQ(reflector_->stats().backoffs, 0);
  ASSERT_EQ(lw_.watches.size(), 2u);
  EXPECT_FALSE(lw_.watches[1].sendInitialEvents);
  EXPECT_EQ(lw_.watches[1].resourceVersion, "7");
  EXPECT_THAT(store_.calls,
              ElementsAre("start", "item a@3", "abort", "start", "item a@5", "replace @7"));

  // A 410 ends this ListAndWatch; the next attempt tries streaming again.
  clock_.advance(5s);
  watches_[1]->push(apiError(410, "Expired"));
  ioc_.poll();
  clock_.advance(pendingWait());
  ioc_.poll();
  ASSERT_EQ(lw_.watches.size(), 3u);
  EXPECT_TRUE(lw_.watches[2].sendInitialEvents);
}

// Item 4: stop() cancels an in-flight LIST at once (Asio per-operation cancellation), instead of
// waiting for the request's timeout.
TEST_F(ReflectorTest, StopCancelsAnInFlightList) {
  lw_.hangLists = true;
  start();
  ASSERT_EQ(lw_.lists.size(), 1u);
  EXPECT_EQ(lw_.cancelled, 0);
  reflector_->stop();
  ioc_.poll();
  EXPECT_EQ(lw_.cancelled, 1);
  EXPECT_FALSE(reflector_->running());
}

// Item 4: the same for a watch request that has not been answered yet.
TEST_F(ReflectorTest, StopCancelsAWatchRequestInFlight) {
  lw_.onList = [](const kube::ListOptions&) {
    return kube::Result<rapidjson::Document>(listDoc({}, "7"));
  };
  lw_.hangWatches = true;
  start();
  ASSERT_EQ(lw_.watches.size(), 1u);
  reflector_->stop();
  ioc_.poll();
  EXPECT_EQ(lw_.cancelled, 1);
  EXPECT_FALSE(reflector_->running());
}

// Item 4: the Reflector may be destroyed mid-LIST, mid-watch or while its resync loop waits,
// with the io_context still running; nothing touches it afterwards (ASan checks).
TEST_F(ReflectorTest, DestroyedMidListWithTheIoContextRunning) {
  lw_.hangLists = true;
  ReflectorOptions options = listThenWatch();
  options.resyncPeriod = 30s;
  start(options);
  reflector_.reset();
  ioc_.poll();
  clock_.advance(1min);
  ioc_.poll();
  EXPECT_EQ(lw_.cancelled, 1);
}

TEST_F(ReflectorTest, DestroyedMidWatchWithTheIoContextRunning) {
  serveEmptyListAt("7");
  ReflectorOptions options = listThenWatch();
  options.resyncPeriod = 30s;
  start(options);
  watches_[0]->push(event(WT::Added, objectJson("ns", "a", "8")));
  reflector_.reset();
  ioc_.poll();
  clock_.advance(1min);
  ioc_.poll();
  EXPECT_THAT(store_.calls, ElementsAre("start", "replace @7"));
}

// Item 5: decoding a big list page yields to the io_context every few hundred items, so lease
// renewals and probes are not held up for the whole page. Counted as interleavings of another
// coroutine with the decoding, not as time.
TEST_F(ReflectorTest, DecodingALargeListYieldsToOtherCoroutines) {
  std::vector<std::string> items;
  for (int i = 0; i < 10000; ++i) {
    items.push_back(objectJson("ns", "o" + std::to_string(i), "5"));
  }
  auto page = std::make_shared<rapidjson::Document>(listDoc(items, "7"));
  lw_.onList = [page](const kube::ListOptions&) {
    rapidjson::Document copy;
    copy.CopyFrom(*page, copy.GetAllocator());
    return kube::Result<rapidjson::Document>(std::move(copy));
  };
  lw_.onWatch = [this](const kube::ListOptions&) { return newWatch(); };
  // Records how far the store got each time it runs; stops when the list is complete.
  std::vector<size_t> seen;
  bool done = false;
  testing::spawnTicker(
      ioc_,
      [&] {
        seen.push_back(store_.calls.size());
        return !store_.calls.empty() && store_.calls.back().rfind("replace", 0) == 0;
      },
      &done);
  start();
  while (!done) {
    ioc_.run_one();
  }
  const auto during =
      std::count_if(seen.begin(), seen.end(), [](size_t n) { return n > 1 && n < 10001; });
  EXPECT_GE(during, 10000 / 500) << "the ticker ran while the page was being decoded";
}

// stop() ends run() promptly, cancelling the watch.
TEST_F(ReflectorTest, StopCancelsTheWatch) {
  serveEmptyListAt("7");
  start();
  EXPECT_TRUE(reflector_->running());
  reflector_->stop();
  ioc_.poll();
  EXPECT_FALSE(reflector_->running());
}

}  // namespace
}  // namespace egress::cache
