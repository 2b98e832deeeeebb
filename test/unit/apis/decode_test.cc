#include "pkg/apis/meta/decode.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "pkg/apis/meta/encode.h"
#include "test/unit/apis/testing.h"

namespace egress::meta {
namespace {

using egress::testing::errorOf;
using egress::testing::utc;

struct Sample {
  std::string name;
  std::optional<std::string> optName;
  int64_t big = 0;
  std::optional<int64_t> optBig;
  int32_t small = 0;
  std::optional<int32_t> optSmall;
  bool flag = false;
  std::optional<bool> optFlag;
  StringMap labels;
  std::vector<std::string> list;
  Time time{};
  std::optional<Time> optTime;
  std::string innerValue;
  std::vector<std::string> itemNames;
};

Decoded<std::string> decodeItem(const rapidjson::Value& v) {
  FieldReader r(v);
  std::string name;
  r.read("name", name);
  return r.finish(std::move(name));
}

Decoded<Sample> decodeSample(const rapidjson::Value& v) {
  FieldReader r(v);
  Sample s;
  r.read("name", s.name);
  r.read("optName", s.optName);
  r.read("big", s.big);
  r.read("optBig", s.optBig);
  r.read("small", s.small);
  r.read("optSmall", s.optSmall);
  r.read("flag", s.flag);
  r.read("optFlag", s.optFlag);
  r.read("labels", s.labels);
  r.read("list", s.list);
  r.read("time", s.time);
  r.read("optTime", s.optTime);
  r.nested("inner", [&](FieldReader& inner) { inner.read("value", s.innerValue); });
  r.list("items", s.itemNames, decodeItem);
  return r.finish(std::move(s));
}

Decoded<Sample> parse(std::string_view json) {
  return parseAndDecode(json, decodeSample);
}

TEST(DecodeError, ToStringJoinsPathAndMessage) {
  EXPECT_EQ((DecodeError{"spec.replicas", "expected integer"}.toString()),
            "spec.replicas: expected integer");
  EXPECT_EQ((DecodeError{"", "expected object"}.toString()), "expected object");
}

TEST(DecodeError, PrefixJoinsFieldsWithDotsAndIndexesWithout) {
  EXPECT_EQ(prefixError("items[3]", {"metadata.name", "m"}).path, "items[3].metadata.name");
  EXPECT_EQ(prefixError("labels", {"[\"a\"]", "m"}).path, "labels[\"a\"]");
  EXPECT_EQ(prefixError("spec", {"", "m"}).path, "spec");
}

TEST(FieldReader, AbsentOptionalsStayAbsentAndPlainFieldsKeepDefaults) {
  auto r = parse("{}");
  ASSERT_TRUE(r) << r.error().toString();
  EXPECT_EQ(r->name, "");
  EXPECT_FALSE(r->optName.has_value());
  EXPECT_FALSE(r->optBig.has_value());
  EXPECT_FALSE(r->optSmall.has_value());
  EXPECT_FALSE(r->optFlag.has_value());
  EXPECT_FALSE(r->optTime.has_value());
  EXPECT_EQ(r->time, Time{});
}

TEST(FieldReader, PresentZeroValuesArePresent) {
  auto r = parse(R"({"optName":"","optBig":0,"optSmall":0,"optFlag":false})");
  ASSERT_TRUE(r) << r.error().toString();
  ASSERT_TRUE(r->optName.has_value());
  EXPECT_EQ(*r->optName, "");
  ASSERT_TRUE(r->optBig.has_value());
  EXPECT_EQ(*r->optBig, 0);
  ASSERT_TRUE(r->optSmall.has_value());
  EXPECT_EQ(*r->optSmall, 0);
  ASSERT_TRUE(r->optFlag.has_value());
  EXPECT_FALSE(*r->optFlag);
}

TEST(FieldReader, NullIsAbsent) {
  auto r = parse(R"({"optName":null,"optBig":null,"labels":null,"inner":null,"items":null})");
  ASSERT_TRUE(r) << r.error().toString();
  EXPECT_FALSE(r->optName.has_value());
  EXPECT_FALSE(r->optBig.has_value());
  EXPECT_TRUE(r->labels.empty());
  auto root = parse("null");
  ASSERT_TRUE(root) << root.error().toString();
}

TEST(FieldReader, Int64ExtremesAreExact) {
  auto r = parse(R"({"big":9223372036854775807,"optBig":-9223372036854775808})");
  ASSERT_TRUE(r) << r.error().toString();
  EXPECT_EQ(r->big, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(*r->optBig, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(errorOf(parse(R"({"big":9223372036854775808})")), "big: expected integer");
  EXPECT_EQ(errorOf(parse(R"({"big":1.5})")), "big: expected integer");
  EXPECT_EQ(errorOf(parse(R"({"big":"7"})")), "big: expected integer");
}

TEST(FieldReader, Int32RangeIsChecked) {
  auto r = parse(R"({"small":2147483647,"optSmall":-2147483648})");
  ASSERT_TRUE(r) << r.error().toString();
  EXPECT_EQ(r->small, std::numeric_limits<int32_t>::max());
  EXPECT_EQ(*r->optSmall, std::numeric_limits<int32_t>::min());
  EXPECT_EQ(errorOf(parse(R"({"small":2147483648})")), "small: integer out of range for int32");
  EXPECT_EQ(errorOf(parse(R"({"optSmall":true})")), "optSmall: expected integer");
}

TEST(FieldReader, WrongTypesNameTheField) {
  EXPECT_EQ(errorOf(parse(R"({"name":5})")), "name: expected string");
  EXPECT_EQ(errorOf(parse(R"({"optFlag":"true"})")), "optFlag: expected boolean");
  EXPECT_EQ(errorOf(parse(R"({"labels":[]})")), "labels: expected object");
  EXPECT_EQ(errorOf(parse(R"({"labels":{"ok":"x","app":1}})")), "labels[\"app\"]: expected string");
  EXPECT_EQ(errorOf(parse(R"({"list":"a"})")), "list: expected array");
  EXPECT_EQ(errorOf(parse(R"({"list":["a","b",null]})")), "list[2]: expected string");
  EXPECT_EQ(errorOf(parse(R"({"time":"yesterday"})")), "time: invalid RFC 3339 time \"yesterday\"");
  EXPECT_EQ(errorOf(parse(R"({"inner":{"value":false}})")), "inner.value: expected string");
  EXPECT_EQ(errorOf(parse(R"({"inner":"x"})")), "inner: expected object");
  EXPECT_EQ(errorOf(parse(R"({"items":{}})")), "items: expected array");
  EXPECT_EQ(errorOf(parse(R"({"items":[{"name":"a"},{"name":"b"},7]})")),
            "items[2]: expected object");
  EXPECT_EQ(errorOf(parse(R"({"items":[{"name":"a"},{"name":["b"]}]})")),
            "items[1].name: expected string");
  EXPECT_EQ(errorOf(parse("[1]")), "expected object");
}

TEST(FieldReader, FirstErrorWins) {
  EXPECT_EQ(errorOf(parse(R"({"name":1,"big":"x","labels":[]})")), "name: expected string");
}

TEST(FieldReader, ReadsValuesAndIgnoresUnknownFields) {
  auto r = parse(R"({"name":"n","unknown":{"deep":[1,2,{"x":null}]},"labels":{"b":"2","a":"1"},
    "list":["x","y"],"time":"2026-11-30T03:27:13Z","optTime":"2026-11-30T03:27:13.5+01:00",
    "inner":{"value":"v","other":1},"items":[{"name":"i0"},{"name":"i1","extra":true}],
    "flag":true})");
  ASSERT_TRUE(r) << r.error().toString();
  EXPECT_EQ(r->name, "n");
  EXPECT_EQ(r->labels, (StringMap{{"a", "1"}, {"b", "2"}}));
  EXPECT_EQ(r->list, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(r->time, utc(2026, 11, 30, 3, 27, 13));
  EXPECT_EQ(*r->optTime, utc(2026, 11, 30, 2, 27, 13, std::chrono::milliseconds(500)));
  EXPECT_EQ(r->innerValue, "v");
  EXPECT_EQ(r->itemNames, (std::vector<std::string>{"i0", "i1"}));
  EXPECT_TRUE(r->flag);
}

TEST(FieldReader, StringsMayContainNulAndUnicode) {
  auto r = parse(R"({"name":"a\u0000b","labels":{"k":"caf\u00e9"}})");
  ASSERT_TRUE(r) << r.error().toString();
  EXPECT_EQ(r->name, std::string("a\0b", 3));
  EXPECT_EQ(r->labels.at("k"), "caf\xc3\xa9");
}

TEST(ParseAndDecode, InvalidJsonIsADecodeError) {
  auto r = parse(R"({"name": )");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().path, "");
  EXPECT_NE(r.error().message.find("invalid JSON at offset"), std::string::npos)
      << r.error().message;
}

TEST(Encode, StringLiteralIsWrittenAsAStringNotABool) {
  std::string json = encodeToString(0, [](JsonWriter& w, int) {
    w.StartObject();
    writeField(w, "kind", "Event");
    writeField(w, "flag", true);
    writeField(w, "n", int64_t{-9223372036854775807 - 1});
    writeFieldIfSet(w, "empty", "");
    writeFieldIfSet(w, "none", std::optional<int32_t>{});
    writeFieldIfSet(w, "zero", std::optional<int32_t>{0});
    w.EndObject();
  });
  EXPECT_EQ(json, R"({"kind":"Event","flag":true,"n":-9223372036854775808,"zero":0})");
}

}  // namespace
}  // namespace egress::meta

namespace egress::meta {
namespace {

// The parser must not recurse per nesting level: 200,000 levels overflowed the stack (fuzzer).
TEST(ParseJsonTest, DeeplyNestedJsonDoesNotOverflowTheStack) {
  const std::string json =
      R"({"metadata":)" + std::string(200'000, '[') + std::string(200'000, ']') + "}";
  rapidjson::Document doc;
  EXPECT_FALSE(parseJson(json, doc).has_value());
  auto r = parseAndDecode(json, [](const rapidjson::Value& v) -> Decoded<std::string> {
    FieldReader reader(v);
    std::string name;
    reader.nested("metadata", [&](FieldReader& m) { m.read("name", name); });
    return reader.finish(name);
  });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().toString(), "metadata: expected object");
  const std::string unclosed = std::string(200'000, '[');
  EXPECT_TRUE(parseJson(unclosed, doc).has_value());
}

}  // namespace
}  // namespace egress::meta
