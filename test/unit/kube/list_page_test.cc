#include "pkg/kube/list_page.h"

#include <random>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "pkg/kube/gzip.h"
#include "test/unit/kube/gzip_testing.h"

namespace egress::kube {
namespace {

using testing::gzipped;
using ::testing::HasSubstr;

struct Decoded {
  std::vector<rapidjson::Document> items;
  std::optional<Error> error;
};

Decoded decodeAll(ListPage& page) {
  Decoded out;
  for (;;) {
    auto item = page.next();
    if (!item) {
      out.error = item.error();
      // Sticky: the same error again, never an item after it.
      auto again = page.next();
      EXPECT_FALSE(again);
      if (!again) {
        EXPECT_EQ(again.error().message(), item.error().message());
      }
      return out;
    }
    if (!*item) {
      EXPECT_FALSE(page.next().value()) << "nullopt stays the end";
      return out;
    }
    out.items.push_back(std::move(**item));
  }
}

Decoded decode(const std::string& json, size_t chunkBytes = 64 * 1024) {
  ListPage page(json, false, size_t{1} << 30, chunkBytes);
  return decodeAll(page);
}

std::string serialize(const rapidjson::Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  return std::string(buf.GetString(), buf.GetSize());
}

std::vector<std::string> names(const Decoded& d) {
  std::vector<std::string> out;
  for (const auto& item : d.items) {
    out.emplace_back(item["metadata"]["name"].GetString());
  }
  return out;
}

TEST(ListPageTest, DecodesItemsInOrderWithTheMetadataBeforeOrAfterThem) {
  const std::vector<std::string> bodies = {
      R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"42","continue":"c1"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})",
      R"({"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}],"kind":"PodList","metadata":{"continue":"c1","resourceVersion":"42"}})",
      " \n{ \"items\" : [ {\"metadata\":{\"name\":\"a\"}} "
      ",\r\n\t{\"metadata\":{\"name\":\"b\"}} ] "
      ", \"metadata\" : { \"resourceVersion\" : \"42\" , \"continue\" : \"c1\" } }\n ",
  };
  for (const std::string& json : bodies) {
    ListPage page(json, false);
    auto d = decodeAll(page);
    ASSERT_FALSE(d.error) << d.error->message();
    EXPECT_THAT(names(d), ::testing::ElementsAre("a", "b")) << json;
    EXPECT_EQ(page.resourceVersion(), "42") << json;
    EXPECT_EQ(page.continueToken(), "c1") << json;
  }
}

TEST(ListPageTest, AnEmptyBodyNullOrMissingItemsIsAnEmptyList) {
  for (const std::string& json :
       {std::string(""), std::string(" \n"), std::string("{}"),
        std::string(R"({"items":null,"metadata":{"resourceVersion":"7"}})"),
        std::string(R"({"items":[],"metadata":{}})")}) {
    auto d = decode(json);
    EXPECT_FALSE(d.error) << json << ": " << d.error->message();
    EXPECT_TRUE(d.items.empty()) << json;
  }
  ListPage page(R"({"items":null,"metadata":{"resourceVersion":"7"}})", false);
  decodeAll(page);
  EXPECT_EQ(page.resourceVersion(), "7");
}

TEST(ListPageTest, StringsThatLookLikeStructureDoNotEndAnItem) {
  const std::string json =
      R"({"items":[{"metadata":{"name":"a]}\"{["},"data":{"k":"\\","q":"\"]","u":"\u00e9\u005d"}},)"
      R"([1,[2,[3]],{"x":[]}],"just a string",12.5e3,true,null],)"
      R"("metadata":{"resourceVersion":"1"}})";
  auto d = decode(json, 3);
  ASSERT_FALSE(d.error) << d.error->message();
  ASSERT_EQ(d.items.size(), 6u);
  EXPECT_STREQ(d.items[0]["metadata"]["name"].GetString(), "a]}\"{[");
  EXPECT_STREQ(d.items[0]["data"]["k"].GetString(), "\\");
  EXPECT_STREQ(d.items[0]["data"]["u"].GetString(), "\xc3\xa9]");
  EXPECT_TRUE(d.items[1].IsArray());
  EXPECT_STREQ(d.items[2].GetString(), "just a string");
  EXPECT_EQ(d.items[3].GetDouble(), 12500.0);
  EXPECT_TRUE(d.items[4].IsTrue());
  EXPECT_TRUE(d.items[5].IsNull());
}

TEST(ListPageTest, AnEscapedMemberNameIsStillItsName) {
  auto d = decode(R"({"\u0069tems":[{"metadata":{"name":"a"}}],"items\"":[1,2]})");
  ASSERT_FALSE(d.error) << d.error->message();
  EXPECT_THAT(names(d), ::testing::ElementsAre("a"));
}

TEST(ListPageTest, AMalformedBodyIsADecodeErrorAtItsByte) {
  struct Case {
    std::string json;
    std::string message;
    size_t itemsFirst;  // items decoded before the error
  };
  for (const auto& c : std::vector<Case>{
           {"[]", "not a JSON object at byte 0", 0},
           {"null", "not a JSON object at byte 0", 0},
           {R"({"items":[{"a":1},{"a":)", "ended early", 1},
           {R"({"items":[{"a":1},{"a":2)", "ended early", 1},
           {R"({"items":[{"a":1})", "ended early; expected \"]\"", 1},
           {R"({"items":[{"a":1}])", "ended early; expected \"}\"", 1},
           {R"({"items":[{"a":1}]} x)", "data after the list object at byte 20", 1},
           {R"({"items":[{"a":1}]}{})", "data after the list object at byte 19", 1},
           {R"({"items":{"a":1}})", "items is not an array at byte 9", 0},
           {R"({"items": "pods"})", "items is not an array at byte 10", 0},
           {R"({"items":[{"a":1} {"a":2}]})", "expected \",\" or \"]\" at byte 18", 1},
           {R"({"items":[{"a":1},]})", "expected a value at byte 18", 1},
           {R"({"items":[{"a":tru}]})", "an item is not JSON (Invalid value.) at byte 18", 0},
           {R"({"items":[{"a":1}}]})", "expected \",\" or \"]\" at byte 17", 1},
           {R"({"items":[1] "kind":"x"})", "expected \",\" or \"}\" at byte 13", 1},
           {R"({"items":[1],})", "expected a member name at byte 13", 1},
           {R"({items:[1]})", "expected a member name at byte 1", 0},
           {R"({"items" [1]})", "expected \":\" at byte 9", 0},
           {R"({"kind":Pod,"items":[1]})", "a member is not JSON (Invalid value.) at byte 8", 0},
           {R"({"metadata":{"resourceVersion":"1",}})", "a member is not JSON", 0},
           {std::string(R"({"items":[1,2)") + '\0' + "]}", "an item holds a NUL byte at byte 13",
            1},
       }) {
    auto d = decode(c.json);
    ASSERT_TRUE(d.error) << c.json;
    EXPECT_EQ(d.error->kind(), Error::Kind::Decode) << c.json;
    EXPECT_THAT(d.error->message(), HasSubstr(c.message)) << c.json;
    EXPECT_THAT(d.error->message(), HasSubstr("list response: ")) << c.json;
    EXPECT_EQ(d.items.size(), c.itemsFirst) << c.json;
  }
}

// --- Compressed bodies --------------------------------------------------------------------------

const std::string kTwoPods =
    R"({"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}],"metadata":{"resourceVersion":"3"}})";

// As the REST client's other calls read an empty body, whatever its Content-Encoding says.
TEST(ListPageTest, AnEmptyBodyIsAnEmptyListEvenIfSaidToBeGzip) {
  for (bool gzip : {false, true}) {
    ListPage page("", gzip);
    auto d = decodeAll(page);
    ASSERT_FALSE(d.error) << d.error->message();
    EXPECT_TRUE(d.items.empty());
    EXPECT_EQ(page.resourceVersion(), "");
  }
}

TEST(ListPageTest, DecodesAGzippedBodyInSmallChunks) {
  for (size_t chunk : {size_t{1}, size_t{2}, size_t{5}, size_t{64 * 1024}}) {
    ListPage page(gzipped(kTwoPods), true, size_t{1} << 20, chunk);
    auto d = decodeAll(page);
    ASSERT_FALSE(d.error) << d.error->message();
    EXPECT_THAT(names(d), ::testing::ElementsAre("a", "b"));
    EXPECT_EQ(page.resourceVersion(), "3");
  }
  // Concatenated gzip members are one body, as for Go's reader.
  const size_t half = kTwoPods.size() / 2;
  ListPage split(gzipped(kTwoPods.substr(0, half)) + gzipped(kTwoPods.substr(half)), true);
  EXPECT_THAT(names(decodeAll(split)), ::testing::ElementsAre("a", "b"));
}

TEST(ListPageTest, ABrokenGzipBodyIsAGzipError) {
  const std::string whole = gzipped(kTwoPods);
  for (const std::string& broken :
       {std::string("not gzip at all"), whole.substr(0, whole.size() - 4), whole.substr(0, 12),
        whole + "trailing"}) {
    ListPage page(broken, true);
    auto d = decodeAll(page);
    ASSERT_TRUE(d.error) << broken.size();
    EXPECT_EQ(d.error->kind(), Error::Kind::Decode);
    EXPECT_THAT(d.error->message(), HasSubstr("gzip")) << d.error->message();
  }
  ListPage tooBig(whole, true, kTwoPods.size() - 1);
  auto d = decodeAll(tooBig);
  ASSERT_TRUE(d.error);
  EXPECT_THAT(d.error->message(), HasSubstr("more than " + std::to_string(kTwoPods.size() - 1)));
  ListPage exact(whole, true, kTwoPods.size());
  EXPECT_FALSE(decodeAll(exact).error);
}

TEST(ListPageTest, FromDocumentGivesTheDocumentsItems) {
  rapidjson::Document list;
  list.Parse(kTwoPods.c_str());
  auto page = ListPage::fromDocument(list);
  auto d = decodeAll(page);
  EXPECT_THAT(names(d), ::testing::ElementsAre("a", "b"));
  EXPECT_EQ(page.resourceVersion(), "3");
}

// --- Against RapidJSON's whole-document parse ---------------------------------------------------

class RandomJson {
 public:
  explicit RandomJson(uint32_t seed) : rng_(seed) {}

  void value(rapidjson::Value& v, rapidjson::Document::AllocatorType& a, int depth) {
    switch (pick(depth > 0 ? 8 : 5)) {
      case 0:
        v.SetNull();
        break;
      case 1:
        v.SetBool(pick(2) == 1);
        break;
      case 2:
        v.SetInt64(static_cast<int64_t>(rng_()) - (int64_t{1} << 31));
        break;
      case 3:
        v.SetDouble(static_cast<double>(rng_()) / 7.0);
        break;
      case 4:
        v.SetString(string().c_str(), a);
        break;
      case 5:
      case 6: {
        v.SetObject();
        for (size_t n = pick(5); n > 0; --n) {
          rapidjson::Value key(string().c_str(), a);
          rapidjson::Value member;
          value(member, a, depth - 1);
          v.AddMember(key, member, a);
        }
        break;
      }
      default: {
        v.SetArray();
        for (size_t n = pick(5); n > 0; --n) {
          rapidjson::Value element;
          value(element, a, depth - 1);
          v.PushBack(element, a);
        }
      }
    }
  }

  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

 private:
  std::string string() {
    static const std::string kAlphabet = "ab{}[]\",:\\/ \t\n\x01\xc3\xa9";
    std::string s;
    for (size_t n = pick(12); n > 0; --n) {
      s += kAlphabet[pick(kAlphabet.size())];
    }
    return s;
  }

  std::mt19937 rng_;
};

TEST(ListPageTest, EveryItemEqualsAWholeDocumentParseAtEveryChunkSize) {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    RandomJson random(seed);
    rapidjson::Document list(rapidjson::kObjectType);
    auto& a = list.GetAllocator();
    rapidjson::Value items(rapidjson::kArrayType);
    for (size_t n = random.pick(20); n > 0; --n) {
      rapidjson::Value item;
      random.value(item, a, 4);
      items.PushBack(item, a);
    }
    rapidjson::Value meta(rapidjson::kObjectType);
    meta.AddMember("resourceVersion", rapidjson::Value(std::to_string(seed).c_str(), a), a);
    if (random.pick(2) == 1) {
      list.AddMember("metadata", meta, a);
      list.AddMember("items", items, a);
    } else {
      list.AddMember("items", items, a);
      list.AddMember("metadata", meta, a);
    }
    rapidjson::StringBuffer buf;
    if (seed % 2 == 0) {
      rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buf);
      list.Accept(w);
    } else {
      rapidjson::Writer<rapidjson::StringBuffer> w(buf);
      list.Accept(w);
    }
    const std::string json(buf.GetString(), buf.GetSize());
    rapidjson::Document whole;
    whole.Parse(json.c_str(), json.size());
    ASSERT_FALSE(whole.HasParseError());
    const auto& want = whole["items"];
    for (bool gzip : {false, true}) {
      for (size_t chunk : {size_t{1}, size_t{2}, size_t{3}, size_t{4}, size_t{5}, size_t{6},
                           size_t{7}, size_t{64 * 1024}}) {
        ListPage page(gzip ? gzipped(json) : json, gzip, size_t{1} << 30, chunk);
        auto d = decodeAll(page);
        ASSERT_FALSE(d.error) << seed << " " << d.error->message();
        ASSERT_EQ(d.items.size(), want.Size()) << seed;
        for (rapidjson::SizeType i = 0; i < want.Size(); ++i) {
          // Compared as text: RapidJSON's == finds a duplicate member name's first value only.
          EXPECT_EQ(serialize(d.items[i]), serialize(want[i]))
              << "seed " << seed << " chunk " << chunk << " item " << i;
        }
        EXPECT_EQ(page.resourceVersion(), std::to_string(seed));
      }
    }
  }
}

// --- GunzipReader -------------------------------------------------------------------------------

TEST(GunzipReaderTest, HandsOutTheBodyInChunksOfAtMostTheGivenSize) {
  std::string data;
  for (int i = 0; i < 5000; ++i) {
    data += std::to_string(i * 7919) + ",";
  }
  const std::string compressed = gzipped(data) + gzipped("tail");
  GunzipReader reader(compressed, size_t{1} << 20, 1000);
  std::string got;
  for (;;) {
    auto chunk = reader.read();
    ASSERT_TRUE(chunk) << chunk.error().message();
    if (chunk->empty()) {
      break;
    }
    EXPECT_LE(chunk->size(), 1000u);
    got.append(*chunk);
  }
  EXPECT_EQ(got, data + "tail");
  EXPECT_EQ(reader.produced(), got.size());
  EXPECT_TRUE(reader.read().value().empty()) << "the end stays the end";
  EXPECT_EQ(gunzip(compressed, size_t{1} << 20).value(), data + "tail");
}

TEST(GunzipReaderTest, ErrorsAreStickyAndSayWhy) {
  const std::string whole = gzipped("{\"kind\":\"PodList\"}");
  struct Case {
    std::string compressed;
    size_t maxBytes;
    std::string message;
  };
  for (const auto& c : std::vector<Case>{{"", 100, "truncated"},
                                         {whole.substr(0, whole.size() - 1), 100, "truncated"},
                                         {whole + "trailing", 100, "incorrect header check"},
                                         {whole, 17, "more than 17 bytes once decompressed"}}) {
    GunzipReader reader(c.compressed, c.maxBytes, 4);
    Result<std::string_view> chunk = std::string_view("x");
    while ((chunk = reader.read()) && !chunk->empty()) {
    }
    ASSERT_FALSE(chunk) << c.message;
    EXPECT_THAT(chunk.error().message(), HasSubstr(c.message));
    auto again = reader.read();
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().message(), chunk.error().message());
  }
}

}  // namespace
}  // namespace egress::kube
