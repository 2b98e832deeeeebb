#include "pkg/kube/watch_decoder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace egress::kube {
namespace {

using ::testing::HasSubstr;

const std::string kStream =
    R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"1"}}})"
    "\n"
    R"({"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"2"}}})"
    "\r\n"
    "\n"
    R"({"type":"DELETED","object":{"metadata":{"name":"a","resourceVersion":"3"}}})"
    "\n";

std::vector<std::string> summarize(const std::vector<WatchEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) {
    out.push_back(std::string(toString(e.type)) + "/" +
                  e.object()["metadata"]["resourceVersion"].GetString());
  }
  return out;
}

TEST(WatchDecoder, EveryPairOfSplitPointsYieldsTheSameEvents) {
  const std::vector<std::string> want{"ADDED/1", "MODIFIED/2", "DELETED/3"};
  for (size_t i = 0; i <= kStream.size(); ++i) {
    for (size_t j = i; j <= kStream.size(); j += 7) {
      WatchDecoder d;
      std::vector<WatchEvent> events;
      ASSERT_TRUE(d.feed(std::string_view(kStream).substr(0, i), events));
      ASSERT_TRUE(d.feed(std::string_view(kStream).substr(i, j - i), events));
      ASSERT_TRUE(d.feed(std::string_view(kStream).substr(j), events));
      ASSERT_TRUE(d.finish());
      ASSERT_EQ(summarize(events), want) << "splits at " << i << ", " << j;
    }
  }
}

TEST(WatchDecoder, ByteByByteFeeding) {
  WatchDecoder d;
  std::vector<WatchEvent> events;
  for (char c : kStream) {
    ASSERT_TRUE(d.feed(std::string_view(&c, 1), events));
  }
  EXPECT_EQ(summarize(events), (std::vector<std::string>{"ADDED/1", "MODIFIED/2", "DELETED/3"}));
  EXPECT_EQ(d.pending(), 0u);
}

TEST(WatchDecoder, RejectsMalformedEventsClearly) {
  auto fail = [](const std::string& line) {
    WatchDecoder d;
    std::vector<WatchEvent> events;
    auto r = d.feed(line + "\n", events);
    return r ? std::string("accepted") : r.error().message();
  };
  EXPECT_THAT(fail("{not json"), HasSubstr("not valid JSON"));
  EXPECT_THAT(fail("[1,2]"), HasSubstr("not a JSON object"));
  EXPECT_THAT(fail(R"({"object":{}})"), HasSubstr("without a type"));
  EXPECT_THAT(fail(R"({"type":"ADDED"})"), HasSubstr("without an object"));
  EXPECT_THAT(fail(R"({"type":"RENAMED","object":{}})"), HasSubstr("unknown watch event type"));
}

TEST(WatchDecoder, TruncatedStreamIsReportedAtFinish) {
  WatchDecoder d;
  std::vector<WatchEvent> events;
  ASSERT_TRUE(d.feed(R"({"type":"ADDED","obj)", events));
  EXPECT_FALSE(d.finish());
}

TEST(WatchDecoder, OversizedEventIsRefusedInsteadOfBufferedForever) {
  WatchDecoder d(1024);
  std::vector<WatchEvent> events;
  ASSERT_TRUE(d.feed(std::string(1000, ' '), events));
  auto r = d.feed(std::string(100, ' '), events);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("larger than 1024"));
}

// Found by test/fuzz/watch_fuzz.cc: the limit held only for a line still waiting for its
// newline, so an oversized event that arrived in one read with its newline was decoded, and the
// same bytes cut into two reads were refused. The limit is on the line, however it arrives.
TEST(WatchDecoder, OversizedEventIsRefusedWhateverTheReads) {
  const std::string line =
      R"({"type":"ADDED","object":{"metadata":{"name":")" + std::string(100, 'x') + "\"}}}\n";
  for (size_t cut : {size_t{0}, size_t{70}, line.size() - 1}) {
    WatchDecoder d(64);
    std::vector<WatchEvent> events;
    auto first = d.feed(std::string_view(line).substr(0, cut), events);
    auto r = first ? d.feed(std::string_view(line).substr(cut), events) : first;
    ASSERT_FALSE(r) << "cut at " << cut;
    EXPECT_THAT(r.error().message(), HasSubstr("larger than 64")) << "cut at " << cut;
    EXPECT_TRUE(events.empty()) << "cut at " << cut;
  }
  // At the limit exactly (the newline not counted) it is an event.
  const std::string fits = R"({"type":"ADDED","object":{"n":")" + std::string(30, 'x') + "\"}}";
  ASSERT_EQ(fits.size(), 64u);
  WatchDecoder d(64);
  std::vector<WatchEvent> events;
  ASSERT_TRUE(d.feed(fits + "\n", events));
  EXPECT_EQ(events.size(), 1u);
}

TEST(WatchDecoder, ErrorEventCarriesStatus) {
  WatchDecoder d;
  std::vector<WatchEvent> events;
  ASSERT_TRUE(d.feed(
      R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Gone","message":"x"}})"
      "\n",
      events));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, WatchEventType::Error);
  EXPECT_TRUE(events[0].toError().isGone());
}

// An event owns the memory it was decoded into: it stays valid while later events reuse the
// decoder's arenas, and after the decoder is gone.
TEST(WatchDecoder, EventsOutliveLaterEventsAndTheirDecoder) {
  std::vector<WatchEvent> kept;
  {
    WatchDecoder d;
    std::vector<WatchEvent> events;
    ASSERT_TRUE(d.feed(kStream, events));
    kept.push_back(std::move(events[0]));
    for (int round = 0; round < 20; ++round) {
      events.clear();                        // gives the arenas back...
      ASSERT_TRUE(d.feed(kStream, events));  // ...to be reused here
      ASSERT_EQ(summarize(events),
                (std::vector<std::string>{"ADDED/1", "MODIFIED/2", "DELETED/3"}));
    }
    kept.push_back(std::move(events[2]));
  }
  EXPECT_EQ(summarize(kept), (std::vector<std::string>{"ADDED/1", "DELETED/3"}));
  EXPECT_STREQ(kept[0].object()["metadata"]["name"].GetString(), "a");
}

// An event bigger than an arena's buffer overflows into chunks; the arena is then rebuilt
// bigger, and small events after it decode as before.
TEST(WatchDecoder, BigAndSmallEventsInTurn) {
  WatchDecoder d;
  for (size_t size : {size_t{10}, size_t{200'000}, size_t{10}, size_t{3'000'000}, size_t{10}}) {
    const std::string blob(size, 'x');
    const std::string line = R"({"type":"ADDED","object":{"metadata":{"resourceVersion":")" +
                             std::to_string(size) + R"("},"data":{"blob":")" + blob + "\"}}}\n";
    std::vector<WatchEvent> events;
    ASSERT_TRUE(d.feed(line, events));
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].object()["data"]["blob"].GetStringLength(), size);
  }
}

}  // namespace
}  // namespace egress::kube
