#include "pkg/kube/errors.h"

#include <gtest/gtest.h>

namespace egress::kube {
namespace {

TEST(Error, DecodesStatusBodyAndPredicates) {
  auto status = meta::parseStatus(R"({"kind":"Status","apiVersion":"v1","status":"Failure",
    "message":"pods \"x\" not found","reason":"NotFound","details":{"name":"x","kind":"pods"},
    "code":404})");
  ASSERT_TRUE(status);
  auto err = Error::api(404, *status);
  EXPECT_TRUE(err.isNotFound());
  EXPECT_FALSE(err.isConflict());
  EXPECT_EQ(err.status().name, "x");
  EXPECT_EQ(err.message(), "NotFound (404): pods \"x\" not found");
}

TEST(Error, ReasonFallsBackToHttpCode) {
  EXPECT_TRUE(Error::api(409, {}).isConflict());
  EXPECT_TRUE(Error::api(410, {}).isGone());
  EXPECT_TRUE(Error::api(429, {}).isTooManyRequests());
  EXPECT_TRUE(Error::api(401, {}).isUnauthorized());
  EXPECT_TRUE(Error::api(503, {}).isServerError());
  EXPECT_FALSE(Error::transport("refused").isServerError());
}

TEST(Error, ExpiredAndGoneAreDistinctButBothRelist) {
  meta::Status expired;
  expired.reason = "Expired";
  auto err = Error::api(410, expired);
  EXPECT_TRUE(err.isResourceExpired());
  EXPECT_TRUE(err.isGone());  // the 410 code still counts as Gone
}

TEST(Error, CausesAndRetryAfterAreKept) {
  auto status = meta::parseStatus(R"({"kind":"Status","reason":"Invalid","code":422,
    "details":{"causes":[{"reason":"FieldValueInvalid","message":"bad","field":"spec.replicas"}],
    "retryAfterSeconds":3}})");
  ASSERT_TRUE(status);
  auto err = Error::api(422, *status);
  ASSERT_EQ(err.status().causes.size(), 1u);
  EXPECT_EQ(err.status().causes[0].field, "spec.replicas");
  ASSERT_TRUE(err.retryAfter());
  EXPECT_EQ(err.retryAfter()->count(), 3);
}

TEST(Error, NonStatusBodiesAreNotStatuses) {
  EXPECT_FALSE(meta::parseStatus("not json"));
  EXPECT_FALSE(meta::parseStatus(R"({"kind":"Pod"})"));
}

}  // namespace
}  // namespace egress::kube
