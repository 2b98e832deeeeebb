#include "pkg/apis/meta/condition.h"

#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "pkg/apis/meta/encode.h"
#include "test/unit/apis/testing.h"

namespace egress::meta {
namespace {

using egress::testing::errorOf;
using egress::testing::utc;
using std::chrono::milliseconds;

Condition ready(std::string status, std::string reason = "Reconciled", std::string message = "",
                int64_t generation = 1) {
  return Condition{"Ready", std::move(status), generation,
                   Time{},  std::move(reason), std::move(message)};
}

TEST(SetCondition, AddsANewConditionWithNowTruncatedToSeconds) {
  std::vector<Condition> conditions;
  const Time now = utc(2026, 11, 30, 3, 27, 13, milliseconds(640));
  EXPECT_TRUE(setCondition(conditions, ready("True"), now));
  ASSERT_EQ(conditions.size(), 1u);
  EXPECT_EQ(conditions[0].status, "True");
  EXPECT_EQ(conditions[0].lastTransitionTime, utc(2026, 11, 30, 3, 27, 13));
}

TEST(SetCondition, KeepsAnExplicitTransitionTimeOnAdd) {
  std::vector<Condition> conditions;
  Condition c = ready("False");
  c.lastTransitionTime = utc(2026, 1, 1);
  EXPECT_TRUE(setCondition(conditions, c, utc(2026, 11, 30)));
  EXPECT_EQ(conditions[0].lastTransitionTime, utc(2026, 1, 1));
}

TEST(SetCondition, UnchangedConditionReportsNoChangeAndKeepsTime) {
  std::vector<Condition> conditions;
  ASSERT_TRUE(setCondition(conditions, ready("True", "Reconciled", "ok"), utc(2026, 11, 30, 3)));
  EXPECT_FALSE(setCondition(conditions, ready("True", "Reconciled", "ok"), utc(2026, 11, 30, 4)));
  EXPECT_EQ(conditions[0].lastTransitionTime, utc(2026, 11, 30, 3));
}

TEST(SetCondition, ReasonMessageOrGenerationChangeKeepsTransitionTime) {
  std::vector<Condition> conditions;
  ASSERT_TRUE(setCondition(conditions, ready("True", "Reconciled", "ok", 1), utc(2026, 11, 30, 3)));
  EXPECT_TRUE(setCondition(conditions, ready("True", "Other", "ok", 1), utc(2026, 11, 30, 4)));
  EXPECT_TRUE(setCondition(conditions, ready("True", "Other", "new msg", 1), utc(2026, 11, 30, 5)));
  EXPECT_TRUE(setCondition(conditions, ready("True", "Other", "new msg", 2), utc(2026, 11, 30, 6)));
  ASSERT_EQ(conditions.size(), 1u);
  EXPECT_EQ(conditions[0].reason, "Other");
  EXPECT_EQ(conditions[0].message, "new msg");
  EXPECT_EQ(conditions[0].observedGeneration, 2);
  EXPECT_EQ(conditions[0].lastTransitionTime, utc(2026, 11, 30, 3));
}

TEST(SetCondition, StatusChangeMovesTransitionTime) {
  std::vector<Condition> conditions;
  ASSERT_TRUE(setCondition(conditions, ready("True"), utc(2026, 11, 30, 3)));
  EXPECT_TRUE(setCondition(conditions, ready("False", "RolloutStuck"), utc(2026, 11, 30, 4)));
  EXPECT_EQ(conditions[0].status, "False");
  EXPECT_EQ(conditions[0].reason, "RolloutStuck");
  EXPECT_EQ(conditions[0].lastTransitionTime, utc(2026, 11, 30, 4));
  // An explicit transition time wins over `now` on a status change.
  Condition c = ready("True");
  c.lastTransitionTime = utc(2026, 11, 30, 4, 30);
  EXPECT_TRUE(setCondition(conditions, c, utc(2026, 11, 30, 5)));
  EXPECT_EQ(conditions[0].lastTransitionTime, utc(2026, 11, 30, 4, 30));
}

TEST(SetCondition, OtherTypesAreLeftAlone) {
  std::vector<Condition> conditions;
  ASSERT_TRUE(setCondition(conditions, ready("True"), utc(2026, 11, 30, 3)));
  Condition degraded{"Degraded", "False", 1, Time{}, "AsExpected", ""};
  EXPECT_TRUE(setCondition(conditions, degraded, utc(2026, 11, 30, 4)));
  ASSERT_EQ(conditions.size(), 2u);
  ASSERT_NE(findCondition(conditions, "Ready"), nullptr);
  EXPECT_EQ(findCondition(conditions, "Ready")->lastTransitionTime, utc(2026, 11, 30, 3));
  EXPECT_EQ(findCondition(conditions, "Degraded")->lastTransitionTime, utc(2026, 11, 30, 4));
  EXPECT_EQ(findCondition(conditions, "Missing"), nullptr);
  EXPECT_TRUE(removeCondition(conditions, "Ready"));
  EXPECT_FALSE(removeCondition(conditions, "Ready"));
  ASSERT_EQ(conditions.size(), 1u);
  EXPECT_EQ(conditions[0].type, "Degraded");
}

TEST(Condition, EncodeDecodeRoundTrip) {
  Condition c{"Ready",
              "True",
              9223372036854775807,
              utc(2026, 11, 30, 3, 27, 13),
              "RolloutComplete",
              "3/3 gateway pods ready"};
  const std::string json = encodeToString(c, encodeCondition);
  EXPECT_EQ(json, R"({"type":"Ready","status":"True","observedGeneration":9223372036854775807,)"
                  R"("lastTransitionTime":"2026-11-30T03:27:13Z","reason":"RolloutComplete",)"
                  R"("message":"3/3 gateway pods ready"})");
  auto back = parseAndDecode(json, decodeCondition);
  ASSERT_TRUE(back) << back.error().toString();
  EXPECT_EQ(*back, c);

  Condition noGen{"Degraded", "False", 0, utc(2026, 1, 1), "AsExpected", ""};
  EXPECT_EQ(encodeToString(noGen, encodeCondition),
            R"({"type":"Degraded","status":"False","lastTransitionTime":"2026-01-01T00:00:00Z",)"
            R"("reason":"AsExpected","message":""})");
}

TEST(Condition, DecodeErrorsCarryThePath) {
  EXPECT_EQ(
      errorOf(parseAndDecode(R"({"type":"Ready","observedGeneration":1.5})", decodeCondition)),
      "observedGeneration: expected integer");
  EXPECT_EQ(errorOf(parseAndDecode(R"({"type":"Ready","status":true})", decodeCondition)),
            "status: expected string");
}

}  // namespace
}  // namespace egress::meta
