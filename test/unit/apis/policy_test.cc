#include <string>

#include <gtest/gtest.h>

#include "pkg/apis/meta/encode.h"
#include "pkg/apis/meta/int_or_string.h"
#include "pkg/apis/policy/pod_disruption_budget.h"
#include "test/unit/apis/testing.h"

namespace egress::policy {
namespace {

using egress::testing::errorOf;
using egress::testing::readTestdata;
using meta::IntOrString;
using meta::parseAndDecode;

TEST(PodDisruptionBudget, DecodesARealPdb) {
  auto pdb = parseAndDecode(readTestdata("pod_disruption_budget.json"), decodePodDisruptionBudget);
  ASSERT_TRUE(pdb) << pdb.error().toString();
  EXPECT_EQ(pdb->metadata.name, "egress-gw-prod");
  ASSERT_TRUE(pdb->spec.minAvailable.has_value());
  EXPECT_EQ(*pdb->spec.minAvailable, IntOrString::fromString("50%"));
  EXPECT_FALSE(pdb->spec.maxUnavailable.has_value());
  ASSERT_TRUE(pdb->spec.selector.has_value());
  EXPECT_TRUE(pdb->spec.selector->matches({{"egress.example.com/gateway", "prod"}}));
  EXPECT_EQ(pdb->status.observedGeneration, 2);
  EXPECT_EQ(pdb->status.disruptionsAllowed, 1);
  EXPECT_EQ(pdb->status.currentHealthy, 3);
  EXPECT_EQ(pdb->status.desiredHealthy, 2);
  EXPECT_EQ(pdb->status.expectedPods, 3);
}

TEST(PodDisruptionBudget, NullSelectorDiffersFromEmpty) {
  auto none = parseAndDecode(R"({"spec":{"maxUnavailable":1}})", decodePodDisruptionBudget);
  ASSERT_TRUE(none) << none.error().toString();
  EXPECT_FALSE(none->spec.selector.has_value());
  EXPECT_FALSE(meta::optionalSelectorMatches(none->spec.selector, {{"a", "b"}}));
  EXPECT_EQ(none->spec.maxUnavailable, IntOrString::fromInt(1));
  auto empty =
      parseAndDecode(R"({"spec":{"maxUnavailable":0,"selector":{}}})", decodePodDisruptionBudget);
  ASSERT_TRUE(empty) << empty.error().toString();
  ASSERT_TRUE(empty->spec.selector.has_value());
  EXPECT_TRUE(meta::optionalSelectorMatches(empty->spec.selector, {{"a", "b"}}));
  // Present zero is not absent.
  ASSERT_TRUE(empty->spec.maxUnavailable.has_value());
  EXPECT_EQ(empty->spec.maxUnavailable->intValue(), 0);
}

TEST(PodDisruptionBudget, WrongTypesCarryThePath) {
  EXPECT_EQ(errorOf(parseAndDecode(R"({"spec":{"minAvailable":true}})", decodePodDisruptionBudget)),
            "spec.minAvailable: expected integer or string");
  EXPECT_EQ(
      errorOf(parseAndDecode(R"({"spec":{"maxUnavailable":1.5}})", decodePodDisruptionBudget)),
      "spec.maxUnavailable: expected integer or string");
  EXPECT_EQ(
      errorOf(parseAndDecode(R"({"status":{"expectedPods":"3"}})", decodePodDisruptionBudget)),
      "status.expectedPods: expected integer");
}

TEST(IntOrString, DecodeEncodeRoundTrip) {
  for (const char* json : {"0", "2147483647", "-5", "\"25%\"", "\"\"", "\"abc\""}) {
    auto v = parseAndDecode(json, meta::decodeIntOrString);
    ASSERT_TRUE(v) << json;
    EXPECT_EQ(meta::encodeToString(*v, meta::encodeIntOrString), json);
  }
  auto i = parseAndDecode("7", meta::decodeIntOrString);
  ASSERT_TRUE(i);
  EXPECT_TRUE(i->isInt());
  EXPECT_EQ(i->intValue(), 7);
  auto s = parseAndDecode("\"7\"", meta::decodeIntOrString);
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->isString());
  EXPECT_NE(*i, *s);
  EXPECT_EQ(errorOf(parseAndDecode("2147483648", meta::decodeIntOrString)),
            "expected integer or string");
  EXPECT_EQ(errorOf(parseAndDecode("null", meta::decodeIntOrString)), "expected integer or string");
}

TEST(IntOrString, ScaledValueLikeApimachinery) {
  EXPECT_EQ(*IntOrString::fromInt(2).scaledValue(10, true), 2);
  EXPECT_EQ(*IntOrString::fromString("50%").scaledValue(3, true), 2);
  EXPECT_EQ(*IntOrString::fromString("50%").scaledValue(3, false), 1);
  EXPECT_EQ(*IntOrString::fromString("100%").scaledValue(3, false), 3);
  EXPECT_EQ(*IntOrString::fromString("0%").scaledValue(3, true), 0);
  EXPECT_EQ(*IntOrString::fromString("25%").scaledValue(4, true), 1);
  EXPECT_FALSE(IntOrString::fromString("50").scaledValue(3, true).ok());
  EXPECT_FALSE(IntOrString::fromString("%").scaledValue(3, true).ok());
  EXPECT_FALSE(IntOrString::fromString("5x%").scaledValue(3, true).ok());
}

}  // namespace
}  // namespace egress::policy
