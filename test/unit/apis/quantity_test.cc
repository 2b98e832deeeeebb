// meta::Quantity: apimachinery's quantity grammar (what is accepted, what is refused and with
// which message), exact values (no floating point, sub-nano digits rounded away from zero),
// ordering across suffixes, overflow past 2^63-1, and the JSON codec (strings and integers in,
// strings out).
#include "pkg/apis/meta/quantity.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace egress::meta {

// GoogleTest's printer hooks, named by GoogleTest.
// NOLINTNEXTLINE(readability-identifier-naming)
void PrintTo(const QuantityValue& value, std::ostream* os) {
  *os << value.toString();
}

// NOLINTNEXTLINE(readability-identifier-naming)
void PrintTo(const Quantity& q, std::ostream* os) {
  *os << '"' << q.text() << '"';
}

namespace {

using ::testing::HasSubstr;

std::string valueOf(std::string_view text) {
  auto v = parseQuantity(text);
  return v ? v->toString() : "error: " + v.error();
}

QuantityValue v(std::string_view text) {
  auto r = parseQuantity(text);
  EXPECT_TRUE(r) << text << ": " << r.error();
  return r ? *r : QuantityValue();
}

TEST(QuantityTest, AcceptedTextsAndTheirExactValues) {
  const std::vector<std::pair<std::string, std::string>> accepted = {
      {"0", "0"},
      {"1", "1"},
      {"+1", "1"},
      {"-1", "-1"},
      {"007", "7"},
      {"0.5", "0.5"},
      {".5", "0.5"},
      {"1.", "1"},
      {"1.0", "1"},
      {"500m", "0.5"},
      {"500.1m", "0.5001"},
      {"1n", "0.000000001"},
      {"1u", "0.000001"},
      {"1k", "1000"},
      {"1M", "1000000"},
      {"1G", "1000000000"},
      {"1T", "1000000000000"},
      {"1P", "1000000000000000"},
      {"1E", "1000000000000000000"},
      {"1Ki", "1024"},
      {"128Mi", "134217728"},
      {"2Gi", "2147483648"},
      {"1Ti", "1099511627776"},
      {"1Pi", "1125899906842624"},
      {"1Ei", "1152921504606846976"},
      {"1.5Ki", "1536"},
      {"0.1Ki", "102.4"},
      {"1e3", "1000"},
      {"1E3", "1000"},
      {"1e+3", "1000"},
      {"1e-3", "0.001"},
      {"2.5e2", "250"},
      {"12e-1", "1.2"},
      {"0.000000001", "0.000000001"},
      {"-0", "0"},
      {"0Mi", "0"},
      {"9223372036854775807", "9223372036854775807"},
      {"9223372036854775807.000000000", "9223372036854775807"},
      {"-9223372036854775807", "-9223372036854775807"},
      {"7Ei", "8070450532247928832"},
  };
  for (const auto& [text, want] : accepted) {
    EXPECT_EQ(valueOf(text), want) << text;
  }
}

TEST(QuantityTest, RefusedTextsSayWhyAsApimachineryDoes) {
  const std::string format = "quantities must match the regular expression";
  const std::string suffix = "unable to parse quantity's suffix";
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"", format},      {".", format},
      {"+", format},     {"-", format},
      {"1.5.5", format}, {"one core", format},
      {"lots", format},  {" 1", format},
      {"1 ", format},    {"1e1.5", format},
      {"0.1mi", suffix}, {"1K", suffix},
      {"1i", suffix},    {"1e", suffix},
      {"1e+", suffix},   {"1Ki5", suffix},
      {"1kk", suffix},   {"1mM", suffix},
      {"1Q", format},    {"1,5", format},
      {"0x10", format},  {"1e2147483648", suffix},
      {"--1", format},   {"1E-", suffix},
  };
  for (const auto& [text, want] : refused) {
    auto r = parseQuantity(text);
    ASSERT_FALSE(r) << "'" << text << "' was accepted as " << r->toString();
    EXPECT_THAT(r.error(), HasSubstr(want)) << "'" << text << "'";
  }
}

TEST(QuantityTest, DigitsBelowANanoRoundAwayFromZero) {
  EXPECT_EQ(valueOf("0.1n"), "0.000000001");
  EXPECT_EQ(valueOf("1.5n"), "0.000000002");
  EXPECT_EQ(valueOf("-0.1n"), "-0.000000001");
  EXPECT_EQ(valueOf("1e-2147483648"), "0.000000001");
  EXPECT_EQ(valueOf("0.0000000001Ki"), "0.000000103") << "102.4n rounds up";
  EXPECT_EQ(valueOf("0.5n"), valueOf("1n"));
  EXPECT_EQ(valueOf("1.000000000000000000000000000000000000000001"), "1.000000001");
}

TEST(QuantityTest, ValuesCompareExactlyAcrossSuffixes) {
  EXPECT_EQ(v("1"), v("1000m"));
  EXPECT_EQ(v("1Ki"), v("1024"));
  EXPECT_EQ(v("1k"), v("1e3"));
  EXPECT_EQ(v("0.5"), v("500m"));
  EXPECT_EQ(v("1Mi"), v("1048576"));
  EXPECT_LT(v("0.5"), v("500.1m"));
  EXPECT_LT(v("1000"), v("1Ki"));
  EXPECT_GT(v("1Gi"), v("1G"));
  EXPECT_LT(v("-1"), v("0"));
  EXPECT_LT(v("999999999n"), v("1"));
  EXPECT_LT(v("9223372036854775806.999999999"), v("9223372036854775807"));
  EXPECT_EQ(v("0").sign(), 0);
  EXPECT_EQ(v("-1m").sign(), -1);
  EXPECT_EQ(v("1n").sign(), 1);
}

// apimachinery caps silently at 2^63-1; we refuse, so a typo is reported instead of rewritten.
TEST(QuantityTest, MagnitudesAbove2To63Minus1AreRefused) {
  for (const char* text : {"9223372036854775808", "9223372036854775807.000000001", "8Ei", "10E",
                           "1e19", "-9223372036854775808", "99999999999999999999999999999",
                           "1e2147483647", "0.00000000000000000001e40"}) {
    auto r = parseQuantity(text);
    ASSERT_FALSE(r) << text << " was accepted as " << r->toString();
    EXPECT_THAT(r.error(), HasSubstr("quantity too large")) << text;
  }
  EXPECT_EQ(valueOf("7.99999999999999999Ei"), "9223372036854775796.470784954");
  EXPECT_EQ(valueOf("0.000000000000000000000000000001e48"), "1000000000000000000");
}

TEST(QuantityTest, LongTextsParseInLinearTime) {
  // A million digits: the parser makes one pass over them (a quadratic one would take minutes).
  const std::string zeros(1'000'000, '0');
  EXPECT_EQ(valueOf("0." + zeros + "1"), "0.000000001");
  EXPECT_EQ(valueOf(zeros + "5Ki"), "5120");
  EXPECT_THAT(valueOf("1" + zeros), HasSubstr("quantity too large"));
  EXPECT_EQ(valueOf("1." + zeros + "1Ei"), "1152921504606846976.000000001");
}

TEST(QuantityTest, DecodesStringsAndIntegersToTheirText) {
  auto decode = [](const std::string& json) {
    auto q = parseAndDecode(json, decodeQuantity);
    return q ? q->text() : "error: " + q.error().toString();
  };
  EXPECT_EQ(decode(R"("500m")"), "500m");
  EXPECT_EQ(decode(R"("")"), "") << "text as given; validation refuses it";
  EXPECT_EQ(decode("1"), "1");
  EXPECT_EQ(decode("-3"), "-3");
  EXPECT_EQ(decode("18446744073709551615"), "18446744073709551615");
  EXPECT_EQ(decode("1.0"), "1") << "an integral number is an integer to the API server";
  EXPECT_EQ(decode("1e3"), "1000");
  EXPECT_EQ(decode("0.5"), "error: expected integer or string") << "not int-or-string";
  EXPECT_EQ(decode("true"), "error: expected integer or string");
  EXPECT_EQ(decode("{}"), "error: expected integer or string");

  auto m = parseAndDecode(R"({"cpu":1,"memory":"128Mi","gone":null})", decodeQuantityMap);
  ASSERT_TRUE(m) << m.error().toString();
  EXPECT_EQ(*m, (QuantityMap{{"cpu", "1"}, {"memory", "128Mi"}}));
  EXPECT_EQ(encodeToString(*m, encodeQuantityMap), R"({"cpu":"1","memory":"128Mi"})");
  EXPECT_EQ(parseAndDecode(R"({"cpu":[1]})", decodeQuantityMap).error().toString(),
            "[\"cpu\"]: expected integer or string");
  EXPECT_EQ(parseAndDecode(R"([])", decodeQuantityMap).error().toString(), "expected object");
}

TEST(QuantityTest, QuantitiesCompareByTextAndTheirValuesByValue) {
  const Quantity one = "1";
  const Quantity thousandMilli = std::string("1000m");
  EXPECT_NE(one, thousandMilli) << "different texts";
  EXPECT_EQ(*one.value(), *thousandMilli.value());
  EXPECT_TRUE(Quantity().empty());
  EXPECT_FALSE(Quantity().value());
}

}  // namespace
}  // namespace egress::meta
