// RapidJSON 1.1.0 under C++20 with g++ 12: its operator== / operator!= templates become
// recursive under C++20's rewritten comparisons (rapidjson#1846). Debian's 1.1.0+dfsg2 has the
// bug: `value == 1` recurses forever (a stack overflow at -O0, an endless loop at -O2). House
// rule: compare a Value only with another Value or a string; for numbers use GetInt64() etc.
// These tests pin which shapes are safe, and the last one is a canary that fails (reminding us
// to relax the rule) once a fixed RapidJSON is installed.
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <sys/wait.h>
#include <unistd.h>

namespace {

TEST(RapidJsonCxx20, ValueComparisonsTerminateAndAreCorrect) {
  rapidjson::Document a;
  rapidjson::Document b;
  a.Parse(R"({"k":[1,2,{"x":"y"}],"n":null})");
  b.Parse(R"({"n":null,"k":[1,2,{"x":"y"}]})");
  ASSERT_FALSE(a.HasParseError());
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a != b);
  rapidjson::Value one(1);
  rapidjson::Value otherOne(1);
  EXPECT_TRUE(one == otherOne);
  EXPECT_TRUE(one.IsInt() && one.GetInt() == 1);
  rapidjson::Value s("text");
  EXPECT_TRUE(s == "text");
  EXPECT_TRUE(s != "other");
}

TEST(RapidJsonCxx20DeathTest, ComparingWithANumberStillRecurses) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  rapidjson::Value one(1);
  // Killed by the stack overflow (SIGSEGV) or, when optimised into a loop, by the alarm.
  EXPECT_EXIT(
      {
        alarm(2);
        const bool equal = one == 1;
        std::exit(equal ? 0 : 1);
      },
      [](int status) { return WIFSIGNALED(status); }, "");
}

TEST(RapidJsonCxx20, Int64RoundTripsExactly) {
  const int64_t big = std::numeric_limits<int64_t>::max() - 1;
  rapidjson::Document d;
  d.Parse(("{\"v\":" + std::to_string(big) + "}").c_str());
  ASSERT_TRUE(d["v"].IsInt64());
  EXPECT_EQ(d["v"].GetInt64(), big);
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  d.Accept(w);
  EXPECT_EQ(std::string(buf.GetString()), "{\"v\":" + std::to_string(big) + "}");
}

TEST(RapidJsonCxx20, ParseWithLengthNeedsNoTerminator) {
  const std::string twoLines = "{\"a\":1}\n{\"b\":2}\n";
  rapidjson::Document d;
  d.Parse(twoLines.data(), 7);
  ASSERT_FALSE(d.HasParseError());
  EXPECT_TRUE(d.HasMember("a"));
}

}  // namespace
