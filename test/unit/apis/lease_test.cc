#include "pkg/apis/coordination/lease.h"

#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "test/unit/apis/testing.h"

namespace egress::coordination {
namespace {

using egress::testing::errorOf;
using egress::testing::readTestdata;
using egress::testing::utc;
using meta::parseAndDecode;
using std::chrono::microseconds;

TEST(Lease, DecodesARealLeaseWithMicroTimes) {
  auto lease = parseAndDecode(readTestdata("lease.json"), decodeLease);
  ASSERT_TRUE(lease) << lease.error().toString();
  EXPECT_EQ(lease->metadata.name, "egress-gateway-operator");
  EXPECT_EQ(lease->metadata.resourceVersion, "48213501");
  EXPECT_EQ(lease->spec.holderIdentity,
            "egress-operator-5b8c9d-7xq2z_4f8e2a1c-6b3d-4e5f-9a8b-7c6d5e4f3a2b");
  EXPECT_EQ(lease->spec.leaseDurationSeconds, 15);
  EXPECT_EQ(lease->spec.acquireTime, utc(2026, 11, 30, 3, 27, 13, microseconds(123456)));
  EXPECT_EQ(lease->spec.renewTime, utc(2026, 11, 30, 3, 29, 41, microseconds(42)));
  EXPECT_EQ(lease->spec.leaseTransitions, 4);
}

TEST(Lease, AbsentFieldsVersusPresentZero) {
  auto fresh = parseAndDecode(R"({"metadata":{"name":"l"},"spec":{}})", decodeLease);
  ASSERT_TRUE(fresh) << fresh.error().toString();
  EXPECT_FALSE(fresh->spec.holderIdentity.has_value());
  EXPECT_FALSE(fresh->spec.leaseDurationSeconds.has_value());
  EXPECT_FALSE(fresh->spec.acquireTime.has_value());
  EXPECT_FALSE(fresh->spec.renewTime.has_value());
  EXPECT_FALSE(fresh->spec.leaseTransitions.has_value());
  auto released = parseAndDecode(
      R"({"spec":{"holderIdentity":"","leaseDurationSeconds":1,"leaseTransitions":0}})",
      decodeLease);
  ASSERT_TRUE(released) << released.error().toString();
  EXPECT_EQ(released->spec.holderIdentity, "");
  EXPECT_EQ(released->spec.leaseTransitions, 0);
}

TEST(Lease, WrongTypesCarryThePath) {
  EXPECT_EQ(errorOf(parseAndDecode(R"({"spec":{"leaseDurationSeconds":"15"}})", decodeLease)),
            "spec.leaseDurationSeconds: expected integer");
  EXPECT_EQ(errorOf(parseAndDecode(R"({"spec":{"renewTime":"2026-11-30T03:29:41.000042"}})",
                                   decodeLease)),
            "spec.renewTime: invalid RFC 3339 time \"2026-11-30T03:29:41.000042\"");
  EXPECT_EQ(errorOf(parseAndDecode(R"({"spec":{"holderIdentity":{}}})", decodeLease)),
            "spec.holderIdentity: expected string");
  EXPECT_EQ(errorOf(parseAndDecode(R"({"spec":{"leaseTransitions":4294967296}})", decodeLease)),
            "spec.leaseTransitions: integer out of range for int32");
}

TEST(Lease, EncodeSpecWritesMicroTimes) {
  LeaseSpec spec;
  spec.holderIdentity = "op-1";
  spec.leaseDurationSeconds = 15;
  spec.acquireTime = utc(2026, 11, 30, 3, 27, 13, std::chrono::nanoseconds(123456789));
  spec.renewTime = utc(2026, 11, 30, 3, 27, 13);
  spec.leaseTransitions = 0;
  EXPECT_EQ(
      meta::encodeToString(spec, encodeLeaseSpec),
      R"({"holderIdentity":"op-1","leaseDurationSeconds":15,)"
      R"("acquireTime":"2026-11-30T03:27:13.123456Z","renewTime":"2026-11-30T03:27:13.000000Z",)"
      R"("leaseTransitions":0})");
  EXPECT_EQ(meta::encodeToString(LeaseSpec{}, encodeLeaseSpec), "{}");
}

TEST(Lease, EncodeDecodeRoundTrip) {
  auto real = parseAndDecode(readTestdata("lease.json"), decodeLease);
  ASSERT_TRUE(real) << real.error().toString();
  const std::string json = meta::encodeToString(*real, encodeLease);
  EXPECT_EQ(json.rfind(R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{)", 0),
            0u)
      << json;
  auto back = parseAndDecode(json, decodeLease);
  ASSERT_TRUE(back) << back.error().toString();
  EXPECT_EQ(back->spec, real->spec);
  EXPECT_EQ(back->metadata.name, real->metadata.name);
  EXPECT_EQ(back->metadata.namespace_, real->metadata.namespace_);
  EXPECT_EQ(back->metadata.uid, real->metadata.uid);
  EXPECT_EQ(back->metadata.resourceVersion, real->metadata.resourceVersion);

  // Sub-microsecond precision is what MicroTime drops; everything else survives.
  Lease mine;
  mine.metadata.name = "egress-gateway-operator";
  mine.metadata.namespace_ = "egress-system";
  mine.spec.holderIdentity = "op-2";
  mine.spec.leaseDurationSeconds = 15;
  mine.spec.acquireTime = utc(2026, 11, 30, 4, 0, 0, std::chrono::nanoseconds(1500));
  mine.spec.renewTime = mine.spec.acquireTime;
  mine.spec.leaseTransitions = 5;
  auto mineBack = parseAndDecode(meta::encodeToString(mine, encodeLease), decodeLease);
  ASSERT_TRUE(mineBack) << mineBack.error().toString();
  mine.spec.acquireTime = utc(2026, 11, 30, 4, 0, 0, microseconds(1));
  mine.spec.renewTime = mine.spec.acquireTime;
  EXPECT_EQ(*mineBack, mine);
}

}  // namespace
}  // namespace egress::coordination
