#include "pkg/apis/meta/object_meta.h"

#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "pkg/apis/meta/list_meta.h"
#include "pkg/apis/meta/object_list.h"
#include "pkg/apis/meta/owner_reference.h"
#include "test/unit/apis/testing.h"

namespace egress::meta {
namespace {

using egress::testing::errorOf;
using egress::testing::readTestdata;
using egress::testing::utc;

// A list item reduced to its metadata (stands in for a full object type).
Decoded<ObjectMeta> decodeItemMeta(const rapidjson::Value& v) {
  FieldReader r(v);
  ObjectMeta m;
  r.object("metadata", m, decodeObjectMeta);
  return r.finish(std::move(m));
}

Decoded<ObjectMeta> metadataOf(std::string_view objectJson) {
  return parseAndDecode(objectJson, decodeItemMeta);
}

TEST(ObjectMeta, DecodesRealPodMetadataAndDropsTheRest) {
  auto m = metadataOf(readTestdata("pod.json"));
  ASSERT_TRUE(m) << m.error().toString();
  EXPECT_EQ(m->name, "egress-gw-prod-7d9f8b6c5-x2k4q");
  EXPECT_EQ(m->namespace_, "egress-system");
  EXPECT_EQ(m->uid, "3f1c2a9e-8b7d-4c6e-9a5f-1e2d3c4b5a69");
  EXPECT_EQ(m->resourceVersion, "48213377");
  EXPECT_EQ(m->generation, 0);
  EXPECT_EQ(m->creationTimestamp, utc(2026, 11, 30, 3, 27, 13));
  EXPECT_FALSE(m->deletionTimestamp.has_value());
  EXPECT_EQ(m->labels, (StringMap{{"app.kubernetes.io/name", "egress-gateway"},
                                  {"egress.example.com/gateway", "prod"},
                                  {"pod-template-hash", "7d9f8b6c5"}}));
  EXPECT_EQ(m->annotations.at("egress.example.com/config-hash"),
            "sha256:9f86d081884c7d659a2feaa0c55ad015");
  ASSERT_EQ(m->ownerReferences.size(), 1u);
  const OwnerReference& ref = m->ownerReferences[0];
  EXPECT_EQ(ref.apiVersion, "apps/v1");
  EXPECT_EQ(ref.kind, "ReplicaSet");
  EXPECT_EQ(ref.name, "egress-gw-prod-7d9f8b6c5");
  EXPECT_EQ(ref.uid, "a7b6c5d4-e3f2-4a1b-9c8d-7e6f5a4b3c2d");
  EXPECT_EQ(ref.controller, true);
  EXPECT_EQ(ref.blockOwnerDeletion, true);
  EXPECT_EQ(controllerOf(*m), &ref);
  EXPECT_EQ(m->finalizers, std::vector<std::string>{"egress.example.com/route-cleanup"});
  EXPECT_TRUE(hasFinalizer(*m, "egress.example.com/route-cleanup"));
  EXPECT_FALSE(hasFinalizer(*m, "other"));
}

TEST(ObjectMeta, GenerationIsInt64AndResourceVersionOpaque) {
  auto m = parseAndDecode(
      R"({"generation":9223372036854775807,"resourceVersion":"00123",
          "deletionTimestamp":"2026-11-30T03:30:00Z","deletionGracePeriodSeconds":30})",
      decodeObjectMeta);
  ASSERT_TRUE(m) << m.error().toString();
  EXPECT_EQ(m->generation, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(m->resourceVersion, "00123");
  ASSERT_TRUE(m->deletionTimestamp.has_value());
  EXPECT_EQ(*m->deletionTimestamp, utc(2026, 11, 30, 3, 30, 0));
  // A number is not an acceptable resourceVersion (it is a string on the wire).
  EXPECT_EQ(errorOf(parseAndDecode(R"({"resourceVersion":123})", decodeObjectMeta)),
            "resourceVersion: expected string");
}

TEST(ObjectMeta, WrongTypesCarryThePath) {
  EXPECT_EQ(errorOf(metadataOf(R"({"metadata":{"labels":{"app":7}}})")),
            "metadata.labels[\"app\"]: expected string");
  EXPECT_EQ(errorOf(metadataOf(R"({"metadata":{"ownerReferences":[{"controller":"yes"}]}})")),
            "metadata.ownerReferences[0].controller: expected boolean");
  EXPECT_EQ(errorOf(metadataOf(R"({"metadata":{"generation":"1"}})")),
            "metadata.generation: expected integer");
  EXPECT_EQ(errorOf(metadataOf(R"({"metadata":{"creationTimestamp":"2026-11-30"}})")),
            "metadata.creationTimestamp: invalid RFC 3339 time \"2026-11-30\"");
  EXPECT_EQ(errorOf(metadataOf(R"({"metadata":[]})")), "metadata: expected object");
}

TEST(OwnerReference, EncodeDecodeRoundTrip) {
  OwnerReference ref{"egress.example.com/v1alpha1",
                     "EgressGateway",
                     "prod",
                     "0badf00d-0000-4000-8000-000000000001",
                     true,
                     true};
  const std::string json = encodeToString(ref, encodeOwnerReference);
  EXPECT_EQ(json,
            R"({"apiVersion":"egress.example.com/v1alpha1","kind":"EgressGateway","name":"prod",)"
            R"("uid":"0badf00d-0000-4000-8000-000000000001","controller":true,)"
            R"("blockOwnerDeletion":true})");
  auto back = parseAndDecode(json, decodeOwnerReference);
  ASSERT_TRUE(back) << back.error().toString();
  EXPECT_EQ(*back, ref);

  // Absent optionals stay absent through the round trip; false stays false.
  OwnerReference plain{"v1", "ConfigMap", "c", "u", false, std::nullopt};
  const std::string plainJson = encodeToString(plain, encodeOwnerReference);
  EXPECT_EQ(plainJson,
            R"({"apiVersion":"v1","kind":"ConfigMap","name":"c","uid":"u","controller":false})");
  auto plainBack = parseAndDecode(plainJson, decodeOwnerReference);
  ASSERT_TRUE(plainBack);
  EXPECT_EQ(*plainBack, plain);
  EXPECT_FALSE(plainBack->blockOwnerDeletion.has_value());
}

TEST(ObjectMeta, EncodeWritesClientFieldsOnly) {
  ObjectMeta m;
  m.name = "prod.187c2b3a4d5e6f70";
  m.namespace_ = "egress-system";
  m.generation = 4;
  m.creationTimestamp = utc(2026, 1, 1);
  m.labels = {{"b", "2"}, {"a", "1"}};
  m.ownerReferences.push_back({"v1", "Pod", "p", "u", std::nullopt, std::nullopt});
  m.finalizers = {"f"};
  EXPECT_EQ(
      encodeToString(m, encodeObjectMeta),
      R"({"name":"prod.187c2b3a4d5e6f70","namespace":"egress-system","labels":{"a":"1","b":"2"},)"
      R"("ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"p","uid":"u"}],)"
      R"("finalizers":["f"]})");
  EXPECT_EQ(controllerOf(m), nullptr);
  EXPECT_EQ(encodeToString(ObjectMeta{}, encodeObjectMeta), "{}");
}

TEST(ListMeta, RemainingItemCountAbsentVersusZero) {
  auto absent = parseAndDecode(R"({"resourceVersion":"42"})", decodeListMeta);
  ASSERT_TRUE(absent);
  EXPECT_EQ(absent->resourceVersion, "42");
  EXPECT_EQ(absent->continue_, "");
  EXPECT_FALSE(absent->remainingItemCount.has_value());
  auto zero = parseAndDecode(R"({"resourceVersion":"42","continue":"eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ",
                                 "remainingItemCount":0})",
                             decodeListMeta);
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->continue_, "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ");
  EXPECT_EQ(zero->remainingItemCount, 0);
}

TEST(ObjectList, DecodesItemsAndListMeta) {
  auto list = parseAndDecode(
      R"({"kind":"ConfigMapList","apiVersion":"v1",
          "metadata":{"resourceVersion":"777","continue":"c1","remainingItemCount":12},
          "items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b","namespace":"ns"}}]})",
      [](const rapidjson::Value& v) { return decodeList(v, decodeItemMeta); });
  ASSERT_TRUE(list) << list.error().toString();
  EXPECT_EQ(list->metadata.resourceVersion, "777");
  EXPECT_EQ(list->metadata.continue_, "c1");
  EXPECT_EQ(list->metadata.remainingItemCount, 12);
  ASSERT_EQ(list->items.size(), 2u);
  EXPECT_EQ(list->items[0].name, "a");
  EXPECT_EQ(list->items[1].namespace_, "ns");
}

TEST(ObjectList, EmptyAndNullItems) {
  auto decode = [](const rapidjson::Value& v) { return decodeList(v, decodeItemMeta); };
  auto empty = parseAndDecode(R"({"metadata":{"resourceVersion":"1"},"items":[]})", decode);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->items.empty());
  auto null = parseAndDecode(R"({"metadata":{"resourceVersion":"1"},"items":null})", decode);
  ASSERT_TRUE(null);
  EXPECT_TRUE(null->items.empty());
}

TEST(ObjectList, ItemErrorsNameTheIndex) {
  auto decode = [](const rapidjson::Value& v) { return decodeList(v, decodeItemMeta); };
  EXPECT_EQ(errorOf(parseAndDecode(
                R"({"metadata":{},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}},
                    {"metadata":{"name":"c"}},{"metadata":{"name":42}}]})",
                decode)),
            "items[3].metadata.name: expected string");
  EXPECT_EQ(
      errorOf(parseAndDecode(R"({"metadata":{"remainingItemCount":"5"},"items":[]})", decode)),
      "metadata.remainingItemCount: expected integer");
  EXPECT_EQ(errorOf(parseAndDecode(R"({"items":{}})", decode)), "items: expected array");
}

}  // namespace
}  // namespace egress::meta
