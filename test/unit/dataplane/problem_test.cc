// The agent's report of its problems (kProblemsAnnotation): one entry per policy, the same text
// for the same problems in any order, bounded in size.
#include "pkg/dataplane/problem.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

namespace egress::dataplane {
namespace {

using ::testing::HasSubstr;

rapidjson::Document parse(const std::string& text) {
  rapidjson::Document d;
  d.Parse(text.c_str());
  EXPECT_FALSE(d.HasParseError()) << text;
  return d;
}

TEST(Problems, NoneThatConcernsAPolicyIsAnEmptyReport) {
  EXPECT_EQ(problemsAnnotation({}), "");
  EXPECT_EQ(problemsAnnotation({{ProblemKind::kInvalidSlice, "", "", "no policy uid"}}), "");
}

TEST(Problems, OnePerPolicyByUIDTheSameWhateverTheOrder) {
  const Problem b1{ProblemKind::kRefusedAddress, "uid-b", "ns/b", "egress IP 10.0.0.1 refused"};
  const Problem b2{ProblemKind::kContestedAddress, "uid-b", "ns/b", "egress IP 192.0.2.1 is in"};
  const Problem a{ProblemKind::kNoMark, "uid-a", "ns/a", "no mark left"};
  const std::string text = problemsAnnotation({b1, b2, a});
  EXPECT_EQ(text, problemsAnnotation({a, b2, b1}));
  EXPECT_EQ(
      text,
      R"([{"uid":"uid-a","policy":"ns/a","reason":"NoMark","message":"no mark left","count":1},)"
      R"({"uid":"uid-b","policy":"ns/b","reason":"ContestedAddress",)"
      R"("message":"egress IP 192.0.2.1 is in","count":2}])");
}

TEST(Problems, TheReportIsBounded) {
  std::vector<Problem> many;
  const std::string longMessage(1000, 'x');
  for (size_t i = 0; i < kMaxReportedPolicies + 7; ++i) {
    char uid[16];
    std::snprintf(uid, sizeof uid, "uid-%04zu", i);
    many.push_back({ProblemKind::kUnparsable, uid, "ns/p", longMessage + "\xc3\xa9"});
  }
  const std::string text = problemsAnnotation(many);
  auto d = parse(text);
  ASSERT_TRUE(d.IsArray());
  ASSERT_EQ(d.Size(), kMaxReportedPolicies + 1);
  EXPECT_EQ(d[0]["message"].GetStringLength(), kMaxReportedMessage);
  EXPECT_EQ(d[kMaxReportedPolicies]["omitted"].GetInt(), 7);
  EXPECT_LT(text.size(), 100'000U);
  // A cut never splits a UTF-8 sequence.
  const Problem accent{ProblemKind::kUnparsable, "u", "ns/p",
                       std::string(kMaxReportedMessage - 1, 'y') + "\xc3\xa9"};
  auto one = parse(problemsAnnotation({accent}));
  EXPECT_EQ(one[0]["message"].GetStringLength(), kMaxReportedMessage - 1);
}

TEST(Problems, KindsHaveALabelAndAReason) {
  for (auto kind : kProblemKinds) {
    EXPECT_EQ(problemKindFromReason(problemReason(kind)), kind);
    EXPECT_THAT(std::string(problemLabel(kind)), ::testing::MatchesRegex("[a-z-]+"));
  }
  EXPECT_EQ(problemKindFromReason("Nope"), std::nullopt);
  EXPECT_THAT(Problem({ProblemKind::kDuplicateSlot, "u", "k", "m"}).toString(),
              HasSubstr("duplicate-slot: m"));
}

}  // namespace
}  // namespace egress::dataplane
