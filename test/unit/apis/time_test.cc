#include "pkg/apis/meta/time.h"

#include <chrono>

#include <gtest/gtest.h>

#include "test/unit/apis/testing.h"

namespace egress::meta {
namespace {

using egress::testing::utc;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

TEST(Rfc3339, ParsesUtcSeconds) {
  EXPECT_EQ(parseRfc3339("2026-11-30T03:27:13Z"), utc(2026, 11, 30, 3, 27, 13));
  EXPECT_EQ(parseRfc3339("1970-01-01T00:00:00Z"), Time{});
  EXPECT_EQ(parseRfc3339("2024-02-29T23:59:59z"), utc(2024, 2, 29, 23, 59, 59));
  EXPECT_EQ(parseRfc3339("2026-11-30t03:27:13Z"), utc(2026, 11, 30, 3, 27, 13));
}

TEST(Rfc3339, ParsesFractionalSeconds) {
  EXPECT_EQ(parseRfc3339("2026-11-30T03:27:13.5Z"),
            utc(2026, 11, 30, 3, 27, 13, milliseconds(500)));
  EXPECT_EQ(parseRfc3339("2026-11-30T03:27:13.123456Z"),
            utc(2026, 11, 30, 3, 27, 13, microseconds(123456)));
  EXPECT_EQ(parseRfc3339("2026-11-30T03:27:13.000000001Z"),
            utc(2026, 11, 30, 3, 27, 13, nanoseconds(1)));
  // Digits past nanoseconds are truncated, not rounded.
  EXPECT_EQ(parseRfc3339("2026-11-30T03:27:13.9999999999Z"),
            utc(2026, 11, 30, 3, 27, 13, nanoseconds(999999999)));
}

TEST(Rfc3339, ParsesOffsets) {
  EXPECT_EQ(parseRfc3339("2026-11-30T05:27:13+02:00"), utc(2026, 11, 30, 3, 27, 13));
  EXPECT_EQ(parseRfc3339("2026-11-29T21:57:13.25-05:30"),
            utc(2026, 11, 30, 3, 27, 13, milliseconds(250)));
  EXPECT_EQ(parseRfc3339("2027-01-01T00:30:00+01:00"), utc(2026, 12, 31, 23, 30, 0));
  EXPECT_EQ(parseRfc3339("2026-11-30T03:27:13-00:00"), utc(2026, 11, 30, 3, 27, 13));
}

TEST(Rfc3339, RejectsMalformed) {
  for (const char* s : {"",
                        "2026-11-30",
                        "2026-11-30T03:27:13",
                        "2026-11-30 03:27:13Z",
                        "2026-11-30T03:27Z",
                        "2026-02-30T00:00:00Z",
                        "2025-02-29T00:00:00Z",
                        "2026-13-01T00:00:00Z",
                        "2026-00-01T00:00:00Z",
                        "2026-11-30T24:00:00Z",
                        "2026-11-30T03:60:00Z",
                        "2026-11-30T03:27:60Z",
                        "2026-11-30T03:27:13.Z",
                        "2026-11-30T03:27:13+0200",
                        "2026-11-30T03:27:13+02",
                        "2026-11-30T03:27:13ZZ",
                        "26-11-30T03:27:13Z",
                        "2026-1-30T03:27:13Z",
                        "2026-11-30T03:27:13+24:00",
                        "2026-11-30T03:27:13Z "}) {
    EXPECT_FALSE(parseRfc3339(s).has_value()) << s;
  }
}

TEST(Rfc3339, RejectsWhatTimeCannotRepresent) {
  // Time is int64 nanoseconds since 1970; parsing must not wrap around.
  EXPECT_FALSE(parseRfc3339("9999-12-31T23:59:59Z").has_value());
  EXPECT_FALSE(parseRfc3339("0001-01-01T00:00:00Z").has_value());
  EXPECT_FALSE(parseRfc3339("2262-04-11T23:47:17Z").has_value());
  EXPECT_FALSE(parseRfc3339("2262-04-11T23:47:16.854775808Z").has_value());
  EXPECT_EQ(parseRfc3339("2262-04-11T23:47:16.854775807Z"), Time::max());
  EXPECT_FALSE(parseRfc3339("1677-09-21T00:12:43Z").has_value());
  EXPECT_TRUE(parseRfc3339("1677-09-21T00:12:44Z").has_value());
  // An offset can bring an out-of-range local time back into range.
  EXPECT_TRUE(parseRfc3339("2262-04-12T00:47:16+01:00").has_value());
}

TEST(Rfc3339, FormatsUtcWholeSeconds) {
  EXPECT_EQ(formatRfc3339(utc(2026, 11, 30, 3, 27, 13)), "2026-11-30T03:27:13Z");
  EXPECT_EQ(formatRfc3339(utc(2026, 11, 30, 3, 27, 13, milliseconds(999))), "2026-11-30T03:27:13Z");
  EXPECT_EQ(formatRfc3339(Time{}), "1970-01-01T00:00:00Z");
  // Before the epoch the sub-second part still rounds toward the past.
  EXPECT_EQ(formatRfc3339(Time{} - milliseconds(1)), "1969-12-31T23:59:59Z");
}

TEST(Rfc3339, FormatsMicroTime) {
  EXPECT_EQ(formatRfc3339Micro(utc(2026, 11, 30, 3, 27, 13, nanoseconds(123456789))),
            "2026-11-30T03:27:13.123456Z");
  EXPECT_EQ(formatRfc3339Micro(utc(2026, 11, 30, 3, 27, 13)), "2026-11-30T03:27:13.000000Z");
  EXPECT_EQ(formatRfc3339Micro(utc(2026, 1, 2, 3, 4, 5, microseconds(42))),
            "2026-01-02T03:04:05.000042Z");
}

TEST(Rfc3339, RoundTrips) {
  for (const char* s : {"2026-11-30T03:27:13Z", "2000-02-29T00:00:00Z", "2262-04-11T23:47:16Z",
                        "1969-07-20T20:17:40Z", "1677-09-21T00:12:44Z"}) {
    auto t = parseRfc3339(s);
    ASSERT_TRUE(t) << s;
    EXPECT_EQ(formatRfc3339(*t), s);
  }
  auto micro = parseRfc3339("2026-11-30T03:27:13.000001Z");
  ASSERT_TRUE(micro);
  EXPECT_EQ(formatRfc3339Micro(*micro), "2026-11-30T03:27:13.000001Z");
  EXPECT_EQ(parseRfc3339(formatRfc3339Micro(*micro)), micro);
  // An offset is normalised to UTC.
  auto offset = parseRfc3339("2026-11-30T05:27:13.5+02:00");
  ASSERT_TRUE(offset);
  EXPECT_EQ(formatRfc3339Micro(*offset), "2026-11-30T03:27:13.500000Z");
}

TEST(Rfc3339, TruncateToSecondsMatchesWhatTheServerKeeps) {
  const Time t = utc(2026, 11, 30, 3, 27, 13, milliseconds(750));
  EXPECT_EQ(truncateToSeconds(t), utc(2026, 11, 30, 3, 27, 13));
  EXPECT_EQ(parseRfc3339(formatRfc3339(t)), truncateToSeconds(t));
}

}  // namespace
}  // namespace egress::meta
