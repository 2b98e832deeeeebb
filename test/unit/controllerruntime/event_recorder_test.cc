// Unit tests of the EventRecorder: EventCorrelator's decisions on a FakeClock (client-go's
// tools/record/events_cache.go: counting repeats, combining similar events, the spam filter,
// the LRU bounds), and the recorder's writes against the in-process API server of test/unit/kube
// holding Events in memory (create, the count/lastTimestamp patch, 404 → create, retries,
// drops and their metric, shutdown).
#include "pkg/controllerruntime/event_recorder.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <rapidjson/document.h>

#include "pkg/apis/meta/time.h"
#include "pkg/kube/rest_client.h"
#include "test/testutil/run_sync.h"
#include "test/unit/kube/fake_api_client.h"
#include "test/unit/kube/fake_api_server.h"

namespace egress::controllerruntime {
namespace {

using kube::testing::FakeApiServer;
using kube::testing::FakeRequest;
using kube::testing::FakeResponse;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::MatchesRegex;

core::ObjectReference podRef(const std::string& name, const std::string& ns = "team-a") {
  meta::ObjectMeta m;
  m.name = name;
  m.namespace_ = ns;
  m.uid = "uid-" + name;
  m.resourceVersion = "7";
  return objectReference(m, "v1", "Pod");
}

core::Event rawEvent(const core::ObjectReference& ref, std::string_view type,
                     std::string_view reason, std::string message, meta::Time now,
                     std::string name) {
  return makeEvent(ref, type, reason, std::move(message), now, std::move(name),
                   "egress-gateway-operator", "");
}

// ---------------------------------------------------------------------------------------------
// LruCache

TEST(LruCache, ForgetsTheLeastRecentlyUsedEntry) {
  LruCache<int> cache(2);
  cache.add("a", 1);
  cache.add("b", 2);
  ASSERT_NE(cache.get("a"), nullptr);  // "b" is now the least recently used
  cache.add("c", 3);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.get("b"), nullptr);
  ASSERT_NE(cache.get("a"), nullptr);
  EXPECT_EQ(*cache.get("a"), 1);
  cache.add("a", 10);  // replacing is a use, not an insertion
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(*cache.get("a"), 10);
  EXPECT_EQ(*cache.get("c"), 3);
}

// ---------------------------------------------------------------------------------------------
// EventCorrelator

class EventCorrelatorTest : public ::testing::Test {
 protected:
  CorrelatedEvent correlate(const core::ObjectReference& ref, std::string_view type,
                            std::string_view reason, std::string message) {
    return correlator_.correlate(rawEvent(ref, type, reason, std::move(message), clock_.wallNow(),
                                          ref.name + "." + std::to_string(++names_)));
  }
  CorrelatedEvent correlate(std::string_view reason, std::string message) {
    return correlate(podRef("web"), core::kEventTypeNormal, reason, std::move(message));
  }

  net::io_context ioc_;
  FakeClock clock_{ioc_.get_executor()};
  EventCorrelatorOptions options_;
  EventCorrelator correlator_{clock_, options_};
  int names_ = 0;
};

TEST_F(EventCorrelatorTest, RepeatsKeepTheFirstNameAndTimestampAndCountUp) {
  const auto first = correlate("Allocated", "assigned 203.0.113.5");
  EXPECT_FALSE(first.skip);
  EXPECT_EQ(first.event.count, 1);
  EXPECT_EQ(first.event.metadata.name, "web.1");
  const auto t0 = clock_.wallNow();

  clock_.advance(seconds(30));
  const auto second = correlate("Allocated", "assigned 203.0.113.5");
  EXPECT_EQ(second.event.count, 2);
  EXPECT_EQ(second.event.metadata.name, "web.1");
  EXPECT_EQ(second.event.firstTimestamp, t0);
  EXPECT_EQ(second.event.lastTimestamp, clock_.wallNow());
  EXPECT_EQ(second.key, first.key);

  const auto third = correlate("Allocated", "assigned 203.0.113.5");
  EXPECT_EQ(third.event.count, 3);
  EXPECT_EQ(third.event.metadata.name, "web.1");

  // Another message, type or object is another Event.
  const auto other = correlate("Allocated", "assigned 203.0.113.6");
  EXPECT_EQ(other.event.count, 1);
  EXPECT_EQ(other.event.metadata.name, "web.4");
  EXPECT_NE(other.key, first.key);
  EXPECT_EQ(correlate(podRef("web"), core::kEventTypeWarning, "Allocated", "assigned 203.0.113.5")
                .event.count,
            1);
  EXPECT_EQ(correlate(podRef("db"), core::kEventTypeNormal, "Allocated", "assigned 203.0.113.5")
                .event.count,
            1);
}

TEST_F(EventCorrelatorTest, SimilarEventsAreCombinedFromTheTenthDistinctMessage) {
  for (int i = 0; i < 9; ++i) {
    const auto e = correlate("SyncFailed", "attempt " + std::to_string(i));
    EXPECT_EQ(e.event.message, "attempt " + std::to_string(i));
    EXPECT_EQ(e.event.count, 1);
    clock_.advance(seconds(59));
  }
  const auto combined = correlate("SyncFailed", "attempt 9");
  EXPECT_EQ(combined.event.message, "(combined from similar events): attempt 9");
  EXPECT_EQ(combined.event.count, 1);
  EXPECT_EQ(combined.event.reason, "SyncFailed");
  EXPECT_EQ(combined.event.involvedObject, podRef("web"));

  const auto again = correlate("SyncFailed", "attempt 10");
  EXPECT_EQ(again.event.message, "(combined from similar events): attempt 10");
  EXPECT_EQ(again.event.count, 2);
  EXPECT_EQ(again.event.metadata.name, combined.event.metadata.name);
  EXPECT_EQ(again.key, combined.key);

  // A message seen before the threshold is still counted on its own Event.
  const auto old = correlate("SyncFailed", "attempt 0");
  EXPECT_EQ(old.event.message, "attempt 0");
  EXPECT_EQ(old.event.count, 2);

  // Another reason is not similar.
  EXPECT_EQ(correlate("Allocated", "attempt 11").event.message, "attempt 11");

  // More than 10 minutes after the last similar event the group starts afresh.
  clock_.advance(seconds(601));
  const auto fresh = correlate("SyncFailed", "attempt 12");
  EXPECT_EQ(fresh.event.message, "attempt 12");
  EXPECT_EQ(fresh.event.count, 1);
}

TEST_F(EventCorrelatorTest, SpamFilterAllowsABurstOf25ThenOnePerFiveMinutesPerObjectAndType) {
  for (int i = 0; i < 25; ++i) {
    EXPECT_FALSE(correlate("Reason" + std::to_string(i), "m").skip) << i;
  }
  EXPECT_TRUE(correlate("Reason25", "m").skip);
  // Another object, or the other type about the same object, has a bucket of its own.
  EXPECT_FALSE(correlate(podRef("db"), core::kEventTypeNormal, "Reason0", "m").skip);
  EXPECT_FALSE(correlate(podRef("web"), core::kEventTypeWarning, "Reason0", "m").skip);

  clock_.advance(seconds(299));
  EXPECT_TRUE(correlate("Reason26", "m").skip);
  clock_.advance(seconds(1));
  EXPECT_FALSE(correlate("Reason27", "m").skip);
  EXPECT_TRUE(correlate("Reason28", "m").skip);
}

TEST_F(EventCorrelatorTest, RepeatsTheSpamFilterSkipsStillCount) {
  for (int i = 1; i <= 25; ++i) {
    const auto e = correlate("Retrying", "m");
    EXPECT_FALSE(e.skip);
    EXPECT_EQ(e.event.count, i);
  }
  EXPECT_TRUE(correlate("Retrying", "m").skip);
  EXPECT_TRUE(correlate("Retrying", "m").skip);
  clock_.advance(seconds(300));
  const auto next = correlate("Retrying", "m");
  EXPECT_FALSE(next.skip);
  EXPECT_EQ(next.event.count, 28);
}

TEST(EventCorrelator, TablesAreBoundedLruCaches) {
  net::io_context ioc;
  FakeClock clock(ioc.get_executor());
  EventCorrelatorOptions options;
  options.cacheSize = 2;
  EventCorrelator correlator(clock, options);
  const auto now = clock.wallNow();
  const auto ref = podRef("web");
  auto correlate = [&](const std::string& message, const std::string& name) {
    return correlator.correlate(rawEvent(ref, core::kEventTypeNormal, "R", message, now, name));
  };
  EXPECT_EQ(correlate("a", "n1").event.count, 1);
  EXPECT_EQ(correlate("a", "n2").event.count, 2);
  EXPECT_EQ(correlate("b", "n3").event.count, 1);
  EXPECT_EQ(correlate("c", "n4").event.count, 1);
  // "a" was the least recently used of three: forgotten, so a new Event.
  const auto a = correlate("a", "n5");
  EXPECT_EQ(a.event.count, 1);
  EXPECT_EQ(a.event.metadata.name, "n5");
}

// ---------------------------------------------------------------------------------------------
// EventRecorder against an API server that keeps Events in memory

std::string statusJson(int code, const std::string& reason) {
  return R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"fake","reason":")" +
         reason + R"(","code":)" + std::to_string(code) + "}";
}

FakeResponse status(int code, const std::string& reason) {
  FakeResponse r;
  r.status = code;
  r.body = statusJson(code, reason);
  return r;
}

// core/v1 events of every namespace: POST creates, a strategic-merge PATCH of count,
// lastTimestamp and message updates. `override` may answer a request instead.
class FakeEventStore {
 public:
  std::map<std::string, core::Event> events;  // "namespace/name"
  std::function<std::optional<FakeResponse>(const FakeRequest&)> override;

  FakeResponse handle(const FakeRequest& req) {
    if (override) {
      if (auto r = override(req)) {
        return *r;
      }
    }
    // /api/v1/namespaces/<ns>/events[/<name>]
    const std::string prefix = "/api/v1/namespaces/";
    if (req.target.rfind(prefix, 0) != 0) {
      return status(404, "NotFound");
    }
    const std::string rest = req.target.substr(prefix.size());
    const auto slash = rest.find('/');
    const std::string ns = rest.substr(0, slash);
    const std::string tail = rest.substr(slash + 1);
    if (req.method == "POST" && tail == "events") {
      auto doc = parse(req.body);
      auto e = core::decodeEvent(doc);
      if (!e || e->metadata.namespace_ != ns) {
        return status(400, "BadRequest");
      }
      const std::string key = ns + "/" + e->metadata.name;
      if (events.count(key) != 0) {
        return status(409, "AlreadyExists");
      }
      e->metadata.resourceVersion = std::to_string(++resourceVersion_);
      events[key] = *e;
      return ok(*e);
    }
    if (req.method == "PATCH" && tail.rfind("events/", 0) == 0) {
      auto it = events.find(ns + "/" + tail.substr(7));
      if (it == events.end()) {
        return status(404, "NotFound");
      }
      auto doc = parse(req.body);
      for (auto m = doc.MemberBegin(); m != doc.MemberEnd(); ++m) {
        const std::string field = m->name.GetString();
        if (field == "count") {
          it->second.count = m->value.GetInt();
        } else if (field == "lastTimestamp") {
          it->second.lastTimestamp = meta::parseRfc3339(m->value.GetString());
        } else if (field == "message") {
          it->second.message = m->value.GetString();
        } else {
          return status(422, "Invalid");
        }
      }
      it->second.metadata.resourceVersion = std::to_string(++resourceVersion_);
      return ok(it->second);
    }
    return status(405, "MethodNotAllowed");
  }

  const core::Event* find(const std::string& ns, const std::string& name) const {
    auto it = events.find(ns + "/" + name);
    return it == events.end() ? nullptr : &it->second;
  }

 private:
  static rapidjson::Document parse(const std::string& body) {
    rapidjson::Document d;
    d.Parse(body.c_str());
    if (d.HasParseError()) {
      d.SetObject();
    }
    return d;
  }
  static FakeResponse ok(const core::Event& e) {
    FakeResponse r;
    r.body = meta::encodeToString(e, core::encodeEvent);
    return r;
  }

  int resourceVersion_ = 100;
};

// The value of event_recorder_dropped_total{reason}; -1 if absent.
double dropped(prometheus::Registry& registry, const std::string& reason) {
  for (const auto& f : registry.Collect()) {
    if (f.name != "event_recorder_dropped_total") {
      continue;
    }
    for (const auto& m : f.metric) {
      for (const auto& label : m.label) {
        if (label.name == "reason" && label.value == reason) {
          return m.counter.value;
        }
      }
    }
  }
  return -1;
}

// The server closes the connection without answering.
FakeResponse hangUp() {
  FakeResponse r;
  r.hangUp = true;
  return r;
}

// The server starts an answer and never finishes it.
FakeResponse noAnswer() {
  FakeResponse r;
  r.chunks = {"{"};
  r.keepStreamOpen = true;
  return r;
}

std::vector<std::string> requestLines(const FakeApiServer& server) {
  std::vector<std::string> out;
  for (const auto& r : server.requests()) {
    out.push_back(r.method + " " + r.target);
  }
  return out;
}

class EventRecorderTest : public ::testing::Test {
 protected:
  EventRecorderTest() {
    options_.instance = "egress-operator-0";
    options_.random = [] { return 0.5; };
  }

  void TearDown() override {
    recorder_.reset();
    drain();
  }

  void start() {
    auto c = kube::testing::clientFor(ioc_.get_executor(), server_);
    ASSERT_TRUE(c) << c.error().message();
    client_ = std::move(*c);
    recorder_ = std::make_unique<EventRecorder>(ioc_.get_executor(), *client_, clock_, options_,
                                                &registry_);
  }

  void runUntil(const std::function<bool()>& done) {
    ASSERT_TRUE(testutil::runUntil(ioc_, done)) << "the io_context went idle first";
  }
  void runUntilWritten() {
    runUntil([&] { return recorder_->pending() == 0; });
  }
  // Lets everything that is ready run (no waiting for the network).
  void poll() {
    ioc_.restart();
    ioc_.poll();
  }
  // Stops whatever still runs on the io_context so that the fixture can be destroyed.
  void drain() {
    server_.closeAll();
    for (int i = 0; i < 100 && ioc_.poll() > 0; ++i) {
      ioc_.restart();
    }
  }

  void record(const std::string& reason, const std::string& message,
              const core::ObjectReference& ref = podRef("web")) {
    recorder_->event(ref, core::kEventTypeNormal, reason, message);
  }

  net::io_context ioc_;
  FakeClock clock_{ioc_.get_executor(), *meta::parseRfc3339("2026-11-30T03:27:20Z")};
  FakeEventStore store_;
  FakeApiServer server_{ioc_, [this](const FakeRequest& r) { return store_.handle(r); }};
  prometheus::Registry registry_;
  EventRecorderOptions options_;
  std::unique_ptr<kube::RestClient> client_;
  std::unique_ptr<EventRecorder> recorder_;
};

TEST(ObjectReference, NamesTheObjectByItsMetadataAndType) {
  meta::ObjectMeta m;
  m.name = "billing";
  m.namespace_ = "team-a";
  m.uid = "0badf00d";
  m.resourceVersion = "42";
  m.generation = 3;
  EXPECT_EQ(objectReference(m, "networking.egressgateway.dev/v1alpha1", "EgressGatewayPolicy"),
            (core::ObjectReference{"EgressGatewayPolicy", "team-a", "billing", "0badf00d",
                                   "networking.egressgateway.dev/v1alpha1", "42"}));
}

TEST_F(EventRecorderTest, CreatesACompleteEventInTheObjectsNamespace) {
  start();
  recorder_->eventf(podRef("web"), core::kEventTypeWarning, "PoolExhausted",
                    "no free {} address in pool {}", "IPv4", "corp");
  EXPECT_EQ(recorder_->pending(), 1u);
  runUntilWritten();

  ASSERT_EQ(server_.requests().size(), 1u);
  const auto& req = server_.requests()[0];
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.target, "/api/v1/namespaces/team-a/events");
  ASSERT_EQ(store_.events.size(), 1u);
  const core::Event& e = store_.events.begin()->second;
  EXPECT_THAT(e.metadata.name, MatchesRegex("web\\.[0-9a-f]+"));
  EXPECT_EQ(e.metadata.namespace_, "team-a");
  EXPECT_EQ(e.involvedObject, podRef("web"));
  EXPECT_EQ(e.type, "Warning");
  EXPECT_EQ(e.reason, "PoolExhausted");
  EXPECT_EQ(e.message, "no free IPv4 address in pool corp");
  EXPECT_EQ(e.count, 1);
  EXPECT_EQ(e.firstTimestamp, clock_.wallNow());
  EXPECT_EQ(e.lastTimestamp, clock_.wallNow());
  EXPECT_EQ(e.sourceComponent, "egress-gateway-operator");
  EXPECT_EQ(e.reportingComponent, "egress-gateway-operator");
  EXPECT_EQ(e.reportingInstance, "egress-operator-0");
  // The suffix is the wall clock in nanoseconds, as client-go names events.
  const auto nanos =
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.wallNow().time_since_epoch());
  EXPECT_EQ(e.metadata.name, fmt::format("web.{:x}", nanos.count()));
}

TEST_F(EventRecorderTest, AnObjectNameThatMakesNoValidEventNameGetsAUuid) {
  start();
  meta::ObjectMeta role;
  role.name = "system:controller:egress";
  record("Bound", "m", objectReference(role, "rbac.authorization.k8s.io/v1", "ClusterRole"));
  runUntilWritten();
  ASSERT_EQ(store_.events.size(), 1u);
  EXPECT_THAT(store_.events.begin()->second.metadata.name,
              MatchesRegex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"));
}

TEST_F(EventRecorderTest, TimestampsComeFromTheInjectedWallClock) {
  options_.wallNow = [] { return *meta::parseRfc3339("2030-01-02T03:04:05Z"); };
  start();
  record("Synced", "ok");
  runUntilWritten();
  ASSERT_EQ(store_.events.size(), 1u);
  EXPECT_EQ(store_.events.begin()->second.firstTimestamp,
            meta::parseRfc3339("2030-01-02T03:04:05Z"));
}

TEST_F(EventRecorderTest, ClusterScopedObjectsGetTheirEventsInDefault) {
  start();
  meta::ObjectMeta pool;
  pool.name = "corp-egress";
  pool.uid = "u-pool";
  record("Exhausted", "no free address",
         objectReference(pool, "networking.egressgateway.dev/v1alpha1", "IPAMPool"));
  runUntilWritten();
  ASSERT_EQ(server_.requests().size(), 1u);
  EXPECT_EQ(server_.requests()[0].target, "/api/v1/namespaces/default/events");
  ASSERT_EQ(store_.events.size(), 1u);
  EXPECT_EQ(store_.events.begin()->second.involvedObject.namespace_, "");
}

TEST_F(EventRecorderTest, NamesAreUniqueEvenAtTheSameInstant) {
  start();
  record("A", "a");
  record("B", "b");
  record("C", "c");
  runUntilWritten();
  EXPECT_EQ(store_.events.size(), 3u);
  EXPECT_EQ(dropped(registry_, "rejected"), 0);
}

TEST_F(EventRecorderTest, ARepeatPatchesCountLastTimestampAndMessage) {
  start();
  record("Allocated", "assigned 203.0.113.5");
  runUntilWritten();
  ASSERT_EQ(store_.events.size(), 1u);
  const std::string name = store_.events.begin()->second.metadata.name;
  const auto first = clock_.wallNow();

  clock_.advance(seconds(42));
  record("Allocated", "assigned 203.0.113.5");
  runUntilWritten();
  ASSERT_EQ(server_.requests().size(), 2u);
  const auto& patch = server_.requests()[1];
  EXPECT_EQ(patch.method, "PATCH");
  EXPECT_EQ(patch.target, "/api/v1/namespaces/team-a/events/" + name);
  EXPECT_EQ(patch.headers.at("content-type"), "application/strategic-merge-patch+json");
  EXPECT_EQ(patch.body, R"({"count":2,"lastTimestamp":")" + meta::formatRfc3339(clock_.wallNow()) +
                            R"(","message":"assigned 203.0.113.5"})");

  clock_.advance(seconds(1));
  record("Allocated", "assigned 203.0.113.5");
  runUntilWritten();
  ASSERT_EQ(store_.events.size(), 1u);
  const core::Event& e = store_.events.begin()->second;
  EXPECT_EQ(e.metadata.name, name);
  EXPECT_EQ(e.count, 3);
  EXPECT_EQ(e.firstTimestamp, first);
  EXPECT_EQ(e.lastTimestamp, clock_.wallNow());
}

TEST_F(EventRecorderTest, RepeatsQueuedTogetherBecomeOneWrite) {
  start();
  for (int i = 0; i < 5; ++i) {
    record("Allocated", "assigned 203.0.113.5");
    clock_.advance(seconds(1));
  }
  EXPECT_EQ(recorder_->pending(), 1u);
  runUntilWritten();
  EXPECT_THAT(requestLines(server_), ElementsAre("POST /api/v1/namespaces/team-a/events"));
  ASSERT_EQ(store_.events.size(), 1u);
  EXPECT_EQ(store_.events.begin()->second.count, 5);
  EXPECT_EQ(store_.events.begin()->second.lastTimestamp, clock_.wallNow() - seconds(1));
}

TEST_F(EventRecorderTest, APatchThatFindsNoEventCreatesIt) {
  start();
  record("Allocated", "assigned 203.0.113.5");
  runUntilWritten();
  ASSERT_EQ(store_.events.size(), 1u);
  const std::string name = store_.events.begin()->second.metadata.name;
  store_.events.clear();  // the API server's event TTL ran out

  record("Allocated", "assigned 203.0.113.5");
  runUntilWritten();
  EXPECT_THAT(requestLines(server_), ElementsAre("POST /api/v1/namespaces/team-a/events",
                                                 "PATCH /api/v1/namespaces/team-a/events/" + name,
                                                 "POST /api/v1/namespaces/team-a/events"));
  const core::Event* e = store_.find("team-a", name);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->count, 2);
  EXPECT_EQ(dropped(registry_, "rejected"), 0);
}

TEST_F(EventRecorderTest, SimilarEventsEndUpCombinedOnTheServer) {
  start();
  for (int i = 0; i < 12; ++i) {
    record("SyncFailed", "attempt " + std::to_string(i));
    runUntilWritten();
  }
  ASSERT_EQ(store_.events.size(), 10u);
  int combined = 0;
  for (const auto& [key, e] : store_.events) {
    if (e.message.rfind("(combined from similar events): ", 0) == 0) {
      ++combined;
      EXPECT_EQ(e.count, 3);
      EXPECT_EQ(e.message, "(combined from similar events): attempt 11");
    } else {
      EXPECT_EQ(e.count, 1);
    }
  }
  EXPECT_EQ(combined, 1);
}

TEST_F(EventRecorderTest, SpamIsDroppedAndCounted) {
  start();
  EXPECT_EQ(dropped(registry_, "spam"), 0);  // every reason is exported from the start
  for (int i = 0; i < 26; ++i) {
    record("Reason" + std::to_string(i), "m");
  }
  EXPECT_EQ(dropped(registry_, "spam"), 1);
  runUntilWritten();
  EXPECT_EQ(store_.events.size(), 25u);
  clock_.advance(seconds(300));
  record("Reason26", "m");
  record("Reason27", "m");
  EXPECT_EQ(dropped(registry_, "spam"), 2);
  runUntilWritten();
  EXPECT_EQ(store_.events.size(), 26u);
}

TEST_F(EventRecorderTest, AnUnknownTypeIsDroppedAndCounted) {
  start();
  recorder_->event(podRef("web"), "Error", "Broken", "m");
  EXPECT_EQ(recorder_->pending(), 0u);
  EXPECT_EQ(dropped(registry_, "invalid"), 1);
}

// The API server does not answer the first request: recording goes on at once, the queue fills
// and what does not fit is dropped and counted.
TEST_F(EventRecorderTest, RecordingNeverBlocksAndAFullQueueDropsAndCounts) {
  options_.queueLength = 2;
  options_.writers = 1;  // so that one unanswered request holds the queue
  bool hang = true;
  store_.override = [&](const FakeRequest&) -> std::optional<FakeResponse> {
    if (!hang) {
      return std::nullopt;
    }
    hang = false;
    return noAnswer();
  };
  start();
  record("A", "a");
  runUntil([&] { return server_.requests().size() == 1; });
  record("B", "b");
  record("C", "c");
  record("D", "d");
  EXPECT_EQ(dropped(registry_, "queue_full"), 1);
  EXPECT_EQ(recorder_->pending(), 3u);  // A in flight, B and C queued
  poll();
  EXPECT_EQ(server_.requests().size(), 1u) << "one write at a time";

  // The hung request fails; A is retried after the jittered sleep, then B and C follow.
  server_.closeAll();
  runUntil([&] { return clock_.waiters() == 1; });
  clock_.advance(options_.retryInterval / 2);
  runUntilWritten();
  EXPECT_EQ(store_.events.size(), 3u);
  for (const auto& [key, e] : store_.events) {
    EXPECT_NE(e.reason, "D");
  }
}

TEST_F(EventRecorderTest, AnApiRefusalIsNotRetried) {
  store_.override = [](const FakeRequest&) { return std::optional(status(403, "Forbidden")); };
  start();
  record("A", "a");
  runUntilWritten();
  poll();
  EXPECT_EQ(server_.requests().size(), 1u);
  EXPECT_EQ(clock_.waiters(), 0u);
  EXPECT_EQ(dropped(registry_, "rejected"), 1);
}

TEST_F(EventRecorderTest, NetworkErrorsAreRetriedAfterJitteredSleeps) {
  int failures = 2;
  store_.override = [&](const FakeRequest&) -> std::optional<FakeResponse> {
    if (failures == 0) {
      return std::nullopt;
    }
    --failures;
    return hangUp();
  };
  start();
  record("A", "a");
  // client-go: the first sleep is a random fraction of the interval, later ones the interval.
  runUntil([&] { return clock_.waiters() == 1; });
  EXPECT_EQ(clock_.nextDeadline(), clock_.now() + seconds(5));
  clock_.advance(seconds(5));
  runUntil([&] { return server_.requests().size() == 2 && clock_.waiters() == 1; });
  EXPECT_EQ(clock_.nextDeadline(), clock_.now() + seconds(10));
  clock_.advance(seconds(10));
  runUntilWritten();
  EXPECT_EQ(server_.requests().size(), 3u);
  EXPECT_EQ(store_.events.size(), 1u);
  EXPECT_EQ(dropped(registry_, "retries_exhausted"), 0);
}

// The first create reaches the server but its answer is lost; the retry's AlreadyExists means
// the Event is there.
TEST_F(EventRecorderTest, ACreateThatLandedAlthoughItsAnswerWasLostCountsAsWritten) {
  bool loseAnswer = true;
  store_.override = [&](const FakeRequest& req) -> std::optional<FakeResponse> {
    if (!loseAnswer) {
      return std::nullopt;
    }
    loseAnswer = false;
    (void)store_.handle(req);
    return hangUp();
  };
  start();
  record("A", "a");
  runUntil([&] { return clock_.waiters() == 1; });
  clock_.advance(seconds(5));
  runUntilWritten();
  EXPECT_EQ(server_.requests().size(), 2u);
  EXPECT_EQ(store_.events.size(), 1u);
  EXPECT_EQ(dropped(registry_, "rejected"), 0);
}

TEST_F(EventRecorderTest, AnotherEventOfTheSameNameIsRejected) {
  store_.override = [](const FakeRequest&) { return std::optional(status(409, "AlreadyExists")); };
  start();
  record("A", "a");
  runUntilWritten();
  EXPECT_EQ(server_.requests().size(), 1u);
  EXPECT_EQ(dropped(registry_, "rejected"), 1);
}

TEST_F(EventRecorderTest, AWriteIsDroppedAfterMaxTries) {
  options_.maxTries = 3;
  options_.writers = 1;  // client-go's single writer: B waits for A
  store_.override = [](const FakeRequest&) { return std::optional(hangUp()); };
  start();
  record("A", "a");
  record("B", "b");
  for (int i = 0; i < 2; ++i) {
    runUntil([&] { return clock_.waiters() == 1; });
    clock_.advance(seconds(10));
  }
  runUntil([&] {
    return dropped(registry_, "retries_exhausted") == 1 && server_.requests().size() == 4;
  });  // then B is tried
  EXPECT_EQ(recorder_->pending(), 1u);
}

// A write that is being retried holds back no other object's Events (client-go's single writer
// would: the measured tail of make bench).
TEST_F(EventRecorderTest, AWriteBeingRetriedDoesNotHoldBackOtherObjectsEvents) {
  store_.override = [](const FakeRequest& req) -> std::optional<FakeResponse> {
    if (req.body.find("\"name\":\"stuck\"") != std::string::npos) {
      return hangUp();
    }
    return std::nullopt;
  };
  start();
  record("A", "a", podRef("stuck"));
  for (const char* pod : {"web", "db", "cache", "queue"}) {
    record("A", "a", podRef(pod));
  }
  runUntil([&] { return store_.events.size() == 4 && recorder_->pending() == 1; });
  EXPECT_EQ(clock_.waiters(), 1u);
}

// A repeat is not sent while its Event's create is in flight (its patch would find nothing and
// its create collide): it follows once the create has landed.
TEST_F(EventRecorderTest, ARepeatWaitsForItsPredecessorInFlight) {
  bool holdFirst = true;
  store_.override = [&](const FakeRequest&) -> std::optional<FakeResponse> {
    if (!holdFirst) {
      return std::nullopt;
    }
    holdFirst = false;
    return noAnswer();
  };
  start();
  record("Allocated", "assigned 203.0.113.5");
  runUntil([&] { return server_.requests().size() == 1; });
  record("Allocated", "assigned 203.0.113.5");
  poll();
  EXPECT_EQ(server_.requests().size(), 1u);
  EXPECT_EQ(recorder_->pending(), 2u);
  server_.closeAll();  // the create fails unanswered: retried after 5 s
  runUntil([&] { return clock_.waiters() == 1; });
  EXPECT_EQ(server_.requests().size(), 1u) << "the repeat still waits";
  clock_.advance(seconds(5));
  runUntilWritten();
  ASSERT_EQ(store_.events.size(), 1u);
  const std::string name = store_.events.begin()->second.metadata.name;
  EXPECT_THAT(requestLines(server_), ElementsAre("POST /api/v1/namespaces/team-a/events",
                                                 "POST /api/v1/namespaces/team-a/events",
                                                 "PATCH /api/v1/namespaces/team-a/events/" + name));
  EXPECT_EQ(store_.events.begin()->second.count, 2);
}

net::awaitable<bool> shutDown(EventRecorder* recorder, Clock::TimePoint deadline) {
  co_await recorder->shutdown(deadline);
  co_return true;
}

TEST_F(EventRecorderTest, ShutdownFlushesWhatIsQueued) {
  start();
  record("A", "a");
  record("B", "b");
  record("C", "c");
  std::optional<bool> done;
  testutil::spawnInto(ioc_, shutDown(recorder_.get(), clock_.now() + seconds(30)), done);
  runUntil([&] { return done.has_value(); });
  EXPECT_EQ(store_.events.size(), 3u);
  EXPECT_EQ(dropped(registry_, "shutdown"), 0);

  record("D", "d");
  poll();
  EXPECT_EQ(dropped(registry_, "shutdown"), 1);
  EXPECT_EQ(server_.requests().size(), 3u);
}

TEST_F(EventRecorderTest, ShutdownDropsWhatIsLeftAtTheDeadline) {
  store_.override = [](const FakeRequest&) { return std::optional(hangUp()); };
  start();
  record("A", "a");
  record("B", "b");
  record("C", "c");
  // Four writers: A, B and C each wait to be retried.
  runUntil([&] { return clock_.waiters() == 3; });
  std::optional<bool> done;
  testutil::spawnInto(ioc_, shutDown(recorder_.get(), clock_.now() + seconds(3)), done);
  poll();
  EXPECT_FALSE(done);
  clock_.advance(seconds(3));
  runUntil([&] { return done.has_value(); });
  EXPECT_EQ(dropped(registry_, "shutdown"), 3);
  EXPECT_EQ(recorder_->pending(), 0u);
  EXPECT_EQ(server_.requests().size(), 3u);
  EXPECT_EQ(clock_.waiters(), 0u);
}

TEST_F(EventRecorderTest, ShutdownWaitsForTheRequestInFlight) {
  store_.override = [](const FakeRequest&) { return std::optional(noAnswer()); };
  start();
  record("A", "a");
  record("B", "b");
  runUntil([&] { return server_.requests().size() == 2; });  // both in flight
  std::optional<bool> done;
  testutil::spawnInto(ioc_, shutDown(recorder_.get(), clock_.now() + seconds(3)), done);
  clock_.advance(seconds(3));
  poll();
  EXPECT_FALSE(done) << "the writers still use the client";
  server_.closeAll();
  runUntil([&] { return done.has_value(); });
  EXPECT_EQ(dropped(registry_, "shutdown"), 2);
  EXPECT_EQ(server_.requests().size(), 2u);
}

TEST_F(EventRecorderTest, DestroyingTheRecorderDropsWhatIsQueued) {
  start();
  record("A", "a");
  record("B", "b");
  recorder_.reset();
  EXPECT_EQ(dropped(registry_, "shutdown"), 2);
  poll();
  EXPECT_TRUE(server_.requests().empty());
}

}  // namespace
}  // namespace egress::controllerruntime
