#include "pkg/apis/meta/label_selector.h"

#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "pkg/apis/meta/encode.h"
#include "test/unit/apis/testing.h"

namespace egress::meta {
namespace {

using egress::testing::errorOf;

LabelSelector selector(std::string_view json) {
  auto r = parseAndDecode(json, decodeLabelSelector);
  EXPECT_TRUE(r) << r.error().toString();
  return r ? *r : LabelSelector{};
}

struct MatchCase {
  const char* selector;
  StringMap labels;
  bool want;
};

TEST(LabelSelector, MatchesWithApimachinerySemantics) {
  const MatchCase cases[] = {
      // matchLabels: key present with the same value.
      {R"({"matchLabels":{"app":"gw"}})", {{"app", "gw"}}, true},
      {R"({"matchLabels":{"app":"gw"}})", {{"app", "gw"}, {"extra", "x"}}, true},
      {R"({"matchLabels":{"app":"gw"}})", {{"app", "other"}}, false},
      {R"({"matchLabels":{"app":"gw"}})", {}, false},
      {R"({"matchLabels":{"app":""}})", {{"app", ""}}, true},
      {R"({"matchLabels":{"app":""}})", {}, false},
      // In
      {R"({"matchExpressions":[{"key":"env","operator":"In","values":["prod","stage"]}]})",
       {{"env", "stage"}},
       true},
      {R"({"matchExpressions":[{"key":"env","operator":"In","values":["prod","stage"]}]})",
       {{"env", "dev"}},
       false},
      {R"({"matchExpressions":[{"key":"env","operator":"In","values":["prod","stage"]}]})",
       {},
       false},
      // NotIn: an absent key matches.
      {R"({"matchExpressions":[{"key":"env","operator":"NotIn","values":["prod"]}]})",
       {{"env", "dev"}},
       true},
      {R"({"matchExpressions":[{"key":"env","operator":"NotIn","values":["prod"]}]})",
       {{"env", "prod"}},
       false},
      {R"({"matchExpressions":[{"key":"env","operator":"NotIn","values":["prod"]}]})", {}, true},
      // Exists / DoesNotExist
      {R"({"matchExpressions":[{"key":"tier","operator":"Exists"}]})", {{"tier", ""}}, true},
      {R"({"matchExpressions":[{"key":"tier","operator":"Exists"}]})", {{"other", "x"}}, false},
      {R"({"matchExpressions":[{"key":"legacy","operator":"DoesNotExist"}]})", {}, true},
      {R"({"matchExpressions":[{"key":"legacy","operator":"DoesNotExist","values":[]}]})",
       {{"legacy", "true"}},
       false},
      // Everything is ANDed.
      {R"({"matchLabels":{"a":"b"},"matchExpressions":[
          {"key":"env","operator":"In","values":["prod"]},{"key":"legacy","operator":"DoesNotExist"}]})",
       {{"a", "b"}, {"env", "prod"}},
       true},
      {R"({"matchLabels":{"a":"b"},"matchExpressions":[
          {"key":"env","operator":"In","values":["prod"]},{"key":"legacy","operator":"DoesNotExist"}]})",
       {{"a", "b"}, {"env", "prod"}, {"legacy", "1"}},
       false},
      {R"({"matchLabels":{"a":"b"},"matchExpressions":[
          {"key":"env","operator":"In","values":["prod"]}]})",
       {{"env", "prod"}},
       false},
      // The empty selector matches everything.
      {R"({})", {}, true},
      {R"({"matchLabels":{},"matchExpressions":[]})", {{"any", "thing"}}, true},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(selector(c.selector).matches(c.labels), c.want) << c.selector;
  }
}

TEST(LabelSelector, NullSelectorMatchesNothingButEmptyMatchesEverything) {
  const StringMap labels{{"app", "gw"}};
  EXPECT_FALSE(optionalSelectorMatches(std::nullopt, labels));
  EXPECT_FALSE(optionalSelectorMatches(std::nullopt, {}));
  EXPECT_TRUE(optionalSelectorMatches(LabelSelector{}, labels));
  EXPECT_TRUE(optionalSelectorMatches(LabelSelector{}, {}));
  EXPECT_TRUE(LabelSelector{}.empty());
}

TEST(LabelSelector, ToQueryStringSortsByKeyAndValues) {
  auto s = selector(R"({"matchLabels":{"a":"b"},"matchExpressions":[
      {"key":"tier","operator":"Exists"},
      {"key":"legacy","operator":"DoesNotExist"},
      {"key":"env","operator":"In","values":["stage","prod"]}]})");
  EXPECT_EQ(s.toQueryString(), "a=b,env in (prod,stage),!legacy,tier");
  EXPECT_EQ(
      selector(R"({"matchExpressions":[{"key":"zone","operator":"NotIn","values":["b","a","b"]}],
                         "matchLabels":{"z":"1","app":"gw"}})")
          .toQueryString(),
      "app=gw,z=1,zone notin (a,b)");
  EXPECT_EQ(LabelSelector{}.toQueryString(), "");
}

// Decoding accepts everything the API server's schema accepts (the CRD schema has an enum for
// the operator and no rule tying values to it): In/NotIn without values and Exists/DoesNotExist
// with values decode as written, and validate() reports them afterwards. A selector that does
// not decode would drop its whole object from an informer's typed cache.
TEST(LabelSelector, DecodeAcceptsRequirementsTheSchemaAccepts) {
  auto in =
      parseAndDecode(R"({"matchExpressions":[{"key":"a","operator":"In"}]})", decodeLabelSelector);
  ASSERT_TRUE(in) << in.error().toString();
  EXPECT_EQ(in->matchExpressions[0].op, SelectorOperator::In);
  EXPECT_TRUE(in->matchExpressions[0].values.empty());
  EXPECT_FALSE(in->matches({{"a", "x"}})) << "In with no values matches nothing";

  auto notIn = parseAndDecode(
      R"({"matchExpressions":[{"key":"a","operator":"NotIn","values":[]}]})", decodeLabelSelector);
  ASSERT_TRUE(notIn) << notIn.error().toString();
  EXPECT_TRUE(notIn->matchExpressions[0].values.empty());

  auto exists =
      parseAndDecode(R"({"matchExpressions":[{"key":"a","operator":"Exists","values":["x","y"]}]})",
                     decodeLabelSelector);
  ASSERT_TRUE(exists) << exists.error().toString();
  EXPECT_EQ(exists->matchExpressions[0].values, (std::vector<std::string>{"x", "y"}));
  EXPECT_TRUE(exists->matches({{"a", "z"}})) << "Exists ignores values";

  auto doesNotExist = parseAndDecode(
      R"({"matchExpressions":[{"key":"a","operator":"DoesNotExist","values":["x"]}]})",
      decodeLabelSelector);
  ASSERT_TRUE(doesNotExist) << doesNotExist.error().toString();
  EXPECT_EQ(doesNotExist->matchExpressions[0].values, (std::vector<std::string>{"x"}));
}

// What the schema refuses still fails to decode, with the path: an operator outside the enum,
// values of the wrong type.
TEST(LabelSelector, DecodeRejectsWhatTheSchemaRejectsWithPath) {
  EXPECT_EQ(
      errorOf(parseAndDecode(
          R"({"matchExpressions":[{"key":"a","operator":"Exists"},{"key":"b","operator":"Has"}]})",
          decodeLabelSelector)),
      "matchExpressions[1].operator: unknown operator \"Has\"");
  EXPECT_EQ(
      errorOf(parseAndDecode(R"({"matchExpressions":[{"key":"a","operator":"in","values":["x"]}]})",
                             decodeLabelSelector)),
      "matchExpressions[0].operator: unknown operator \"in\"");
  EXPECT_EQ(errorOf(parseAndDecode(R"({"matchLabels":{"app":true}})", decodeLabelSelector)),
            "matchLabels[\"app\"]: expected string");
  EXPECT_EQ(
      errorOf(parseAndDecode(R"({"matchExpressions":[{"key":"a","operator":"In","values":[1]}]})",
                             decodeLabelSelector)),
      "matchExpressions[0].values[0]: expected string");
}

TEST(LabelSelector, EncodeDecodeRoundTrip) {
  LabelSelector s;
  s.matchLabels = {{"app", "gw"}, {"egress.example.com/gateway", "prod"}};
  s.matchExpressions = {{"env", SelectorOperator::In, {"prod", "stage"}},
                        {"zone", SelectorOperator::NotIn, {"a"}},
                        {"tier", SelectorOperator::Exists, {}},
                        {"legacy", SelectorOperator::DoesNotExist, {}}};
  const std::string json = encodeToString(s, encodeLabelSelector);
  EXPECT_EQ(
      json,
      R"({"matchLabels":{"app":"gw","egress.example.com/gateway":"prod"},"matchExpressions":[)"
      R"({"key":"env","operator":"In","values":["prod","stage"]},)"
      R"({"key":"zone","operator":"NotIn","values":["a"]},)"
      R"({"key":"tier","operator":"Exists"},{"key":"legacy","operator":"DoesNotExist"}]})");
  auto back = parseAndDecode(json, decodeLabelSelector);
  ASSERT_TRUE(back) << back.error().toString();
  EXPECT_EQ(*back, s);
  EXPECT_EQ(encodeToString(LabelSelector{}, encodeLabelSelector), "{}");
}

}  // namespace
}  // namespace egress::meta
