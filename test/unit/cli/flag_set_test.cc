#include "pkg/cli/flag_set.h"

#include <optional>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace egress::cli {
namespace {

using ::testing::HasSubstr;

struct Parsed {
  std::string err;
  std::string name = "default";
  bool leader = true;
  int64_t workers = 2;
  std::chrono::milliseconds lease{15000};
  std::vector<std::string> args;
};

Parsed parse(std::vector<const char*> argv) {
  Parsed p;
  FlagSet flags("test");
  flags.addString("name", p.name, "a name");
  flags.addBool("leader-elect", p.leader, "elect");
  flags.addInt("workers", p.workers, "workers");
  flags.addDuration("lease-duration", p.lease, "lease");
  argv.insert(argv.begin(), "test");
  p.err = flags.parse(static_cast<int>(argv.size()), argv.data());
  p.args = flags.args();
  return p;
}

TEST(FlagSet, AcceptsBothValueForms) {
  auto p = parse({"--name=a", "--workers", "7", "--lease-duration=1m30s", "pos"});
  ASSERT_EQ(p.err, "");
  EXPECT_EQ(p.name, "a");
  EXPECT_EQ(p.workers, 7);
  EXPECT_EQ(p.lease, std::chrono::milliseconds(90000));
  EXPECT_EQ(p.args, std::vector<std::string>{"pos"});
}

// Integers as people write them: decimal, or hexadecimal after 0x (a mark mask: 0xff00).
TEST(FlagSet, IntegersAreDecimalOrHex) {
  EXPECT_EQ(parse({"--workers=0xff00"}).workers, 0xff00);
  EXPECT_EQ(parse({"--workers=0XFF"}).workers, 255);
  EXPECT_EQ(parse({"--workers=-0x10"}).workers, -16);
  EXPECT_EQ(parse({"--workers=010"}).workers, 10);
  EXPECT_EQ(parse({"--workers=+7"}).workers, 7);
  EXPECT_EQ(parse({"--workers=-9223372036854775808"}).workers, INT64_MIN);
  EXPECT_EQ(parse({"--workers=0x7fffffffffffffff"}).workers, INT64_MAX);
  for (const char* bad : {"--workers=0x", "--workers=0xg", "--workers=9223372036854775808",
                          "--workers=-", "--workers=0x-1", "--workers=1e3"}) {
    EXPECT_THAT(parse({bad}).err, HasSubstr("not an integer")) << bad;
  }
}

TEST(FlagSet, BoolFlagsTakeNoSeparateValue) {
  auto p = parse({"--leader-elect=false", "x"});
  ASSERT_EQ(p.err, "");
  EXPECT_FALSE(p.leader);
  EXPECT_EQ(p.args, std::vector<std::string>{"x"});
  EXPECT_TRUE(parse({"--leader-elect"}).leader);
  EXPECT_THAT(parse({"--leader-elect=maybe"}).err, HasSubstr("--leader-elect"));
}

TEST(FlagSet, ErrorsNameTheFlag) {
  EXPECT_THAT(parse({"--nope"}).err, HasSubstr("unknown flag: --nope"));
  EXPECT_THAT(parse({"--workers=two"}).err, HasSubstr("--workers: not an integer"));
  EXPECT_THAT(parse({"--workers"}).err, HasSubstr("needs an argument: --workers"));
  EXPECT_THAT(parse({"--lease-duration=15"}).err, HasSubstr("not a duration"));
}

TEST(FlagSet, DoubleDashEndsFlags) {
  auto p = parse({"--", "--name=x"});
  ASSERT_EQ(p.err, "");
  EXPECT_EQ(p.name, "default");
  EXPECT_EQ(p.args, std::vector<std::string>{"--name=x"});
}

TEST(FlagSet, DuplicateDefinitionIsReported) {
  std::string a;
  std::string b;
  FlagSet flags("test");
  flags.addString("x", a, "");
  flags.addString("x", b, "");
  const char* argv[] = {"test"};
  EXPECT_THAT(flags.parse(1, argv), HasSubstr("defined twice"));
}

TEST(FlagSet, UsageListsDefaults) {
  std::string name = "egress";
  std::chrono::milliseconds d{2000};
  FlagSet flags("prog");
  flags.addString("name", name, "The name.");
  flags.addDuration("retry-period", d, "Retry.");
  const auto usage = flags.usage();
  EXPECT_THAT(usage, HasSubstr("--name value\n          The name. (default \"egress\")"));
  EXPECT_THAT(usage, HasSubstr("(default 2s)"));
}

TEST(Duration, ParsesAndFormatsGoDurations) {
  std::chrono::milliseconds d{};
  ASSERT_TRUE(parseDuration("1h2m3.5s", d));
  EXPECT_EQ(d.count(), 3723500);
  ASSERT_TRUE(parseDuration("250ms", d));
  EXPECT_EQ(d.count(), 250);
  ASSERT_TRUE(parseDuration("0", d));
  EXPECT_EQ(d.count(), 0);
  EXPECT_FALSE(parseDuration("", d));
  EXPECT_FALSE(parseDuration("5", d));
  EXPECT_FALSE(parseDuration("5d", d));
  EXPECT_EQ(formatDuration(std::chrono::milliseconds(15000)), "15s");
  EXPECT_EQ(formatDuration(std::chrono::milliseconds(120000)), "2m");
  EXPECT_EQ(formatDuration(std::chrono::milliseconds(1500)), "1500ms");
}

// Every form Go's time.ParseDuration takes (values.schema.json's duration patterns are a subset),
// to the nearest millisecond; sub-millisecond ones never become 0 ("off" for --sync-period);
// what Go refuses, overflow included, is refused.
TEST(Duration, TakesWhatGoTakes) {
  const auto ms = [](const std::string& text) -> std::optional<int64_t> {
    std::chrono::milliseconds d{-7};
    if (!parseDuration(text, d)) {
      return std::nullopt;
    }
    return d.count();
  };
  EXPECT_EQ(ms("1h30m"), 5'400'000);
  EXPECT_EQ(ms("1.5h"), 5'400'000);
  EXPECT_EQ(ms("0.5s"), 500);
  EXPECT_EQ(ms("1.s"), 1000);
  EXPECT_EQ(ms(".5s"), 500);
  EXPECT_EQ(ms("1m1h"), 3'660'000);  // Go takes the units in any order, repeated too
  EXPECT_EQ(ms("0s"), 0);
  EXPECT_EQ(ms("0h0m0.000s"), 0);
  EXPECT_EQ(ms("2500us"), 3);             // 2.5ms, to the nearest
  EXPECT_EQ(ms("2400\u00b5s"), 2);        // µs, the micro sign
  EXPECT_EQ(ms("1500000\u03bcs"), 1500);  // μs, the Greek mu
  EXPECT_EQ(ms("1000000000ns"), 1000);
  EXPECT_EQ(ms("10ns"), 1);
  EXPECT_EQ(ms("1ns"), 1);
  EXPECT_EQ(ms("0.001ms"), 1);
  EXPECT_EQ(ms("0.0000001ms"), 0);                           // under a nanosecond, 0 in Go too
  EXPECT_EQ(ms("1.0000000000000000000000001h"), 3'600'000);  // below a nanosecond: nothing
  // Go's largest duration, and just past it.
  EXPECT_EQ(ms("2562047h47m16.854775807s"), 9'223'372'036'855);
  EXPECT_EQ(ms("9223372036854775807ns"), 9'223'372'036'855);
  EXPECT_EQ(ms("9223372036854775808ns"), std::nullopt);
  EXPECT_EQ(ms("2562048h"), std::nullopt);
  EXPECT_EQ(ms("2562047h2562047h"), std::nullopt);
  EXPECT_EQ(ms("99999999999999999999h"), std::nullopt);
  for (const char* bad : {"", "5", "5d", "h", ".s", "1.2.3s", "-1s", "+1s", "1s ", " 1s", "1S",
                          "1hh", "1e3s", "0x10s", "1_000s"}) {
    EXPECT_EQ(ms(bad), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace egress::cli
