// StringMap against std::map: the same contents, order and answers after every operation of a
// random sequence (with copies taken along the way that must never change), plus the cases a
// sequence rarely hits, and copy-on-write.
#include "pkg/apis/meta/string_map.h"

#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace egress::meta {
namespace {

std::vector<std::pair<std::string, std::string>> entries(const StringMap& m) {
  return {m.begin(), m.end()};
}

std::vector<std::pair<std::string, std::string>> entries(
    const std::map<std::string, std::string>& m) {
  return {m.begin(), m.end()};
}

TEST(StringMapTest, BehavesAsStdMapOverARandomSequence) {
  std::mt19937 rng(7);
  StringMap flat;
  std::map<std::string, std::string> tree;
  std::vector<std::pair<StringMap, std::map<std::string, std::string>>> snapshots;
  for (int step = 0; step < 20000; ++step) {
    const std::string key = "k" + std::to_string(rng() % 40);
    const std::string value = "v" + std::to_string(rng() % 1000);
    switch (rng() % 6) {
      case 0: {
        auto [it, inserted] = flat.emplace(key, value);
        auto [want, wantInserted] = tree.emplace(key, value);
        ASSERT_EQ(inserted, wantInserted);
        ASSERT_EQ(it->second, want->second);
        break;
      }
      case 1: {
        auto [it, inserted] = flat.insert_or_assign(key, value);
        auto [want, wantInserted] = tree.insert_or_assign(key, value);
        ASSERT_EQ(inserted, wantInserted);
        ASSERT_EQ(it->first, key);
        break;
      }
      case 2:
        flat[key] += value;
        tree[key] += value;
        break;
      case 3:
        ASSERT_EQ(flat.erase(key), tree.erase(key));
        break;
      case 4: {
        auto it = flat.find(key);
        auto want = tree.find(key);
        ASSERT_EQ(it == flat.end(), want == tree.end());
        if (it != flat.end()) {
          ASSERT_EQ(it->second, want->second);
          ASSERT_EQ(flat.at(key), want->second);
          it->second = value;
          want->second = value;
        }
        break;
      }
      default:
        ASSERT_EQ(flat.count(key), tree.count(key));
        ASSERT_EQ(flat.contains(key), tree.contains(key));
    }
    ASSERT_EQ(flat.size(), tree.size());
    ASSERT_EQ(entries(flat), entries(tree)) << "after step " << step;
    if (step % 97 == 0) {
      snapshots.emplace_back(flat, tree);
    }
  }
  for (const auto& [copy, want] : snapshots) {
    ASSERT_EQ(entries(copy), entries(want)) << "a later write reached an earlier copy";
  }
}

TEST(StringMapTest, InitializerListSortsAndTheLastDuplicateWins) {
  StringMap m{{"b", "1"}, {"a", "2"}, {"b", "3"}};
  std::vector<std::pair<std::string, std::string>> want{{"a", "2"}, {"b", "3"}};
  EXPECT_EQ(entries(m), want);
}

TEST(StringMapTest, EqualityIsByContentsNotByInsertionOrder) {
  StringMap a{{"x", "1"}, {"y", "2"}};
  StringMap b;
  b.emplace("y", "2");
  b.emplace("x", "1");
  EXPECT_EQ(a, b);
  b["x"] = "other";
  EXPECT_NE(a, b);
}

TEST(StringMapTest, EraseByIteratorReturnsTheNextEntry) {
  StringMap m{{"a", "1"}, {"b", "2"}, {"c", "3"}};
  auto next = m.erase(m.find("b"));
  ASSERT_NE(next, m.end());
  EXPECT_EQ(next->first, "c");
  EXPECT_EQ(m.size(), 2u);
  EXPECT_TRUE(m.find("missing") == m.end());
}

TEST(StringMapTest, ACopySharesTheBlockUntilEitherSideWrites) {
  const StringMap a{{"app", "web"}, {"tier", "front"}};
  StringMap b = a;
  EXPECT_TRUE(b.sharesStorageWith(a));
  EXPECT_EQ(std::as_const(b).find("app")->second, "web");
  EXPECT_TRUE(b.sharesStorageWith(a)) << "a const read must not copy";
  b["app"] = "db";
  EXPECT_FALSE(b.sharesStorageWith(a));
  EXPECT_EQ(a.at("app"), "web");
  EXPECT_EQ(b.at("app"), "db");
}

TEST(StringMapTest, WritingThroughANonConstIteratorNeverReachesACopy) {
  StringMap a{{"x", "1"}, {"y", "2"}};
  const StringMap copy = a;
  a.find("x")->second = "changed";
  for (auto& [k, v] : a) {
    v += "!";
  }
  EXPECT_EQ(copy, (StringMap{{"x", "1"}, {"y", "2"}}));
  EXPECT_EQ(a, (StringMap{{"x", "changed!"}, {"y", "2!"}}));
}

TEST(StringMapTest, EraseByAConstIteratorOfASharedBlockErasesFromTheCopyOnly) {
  StringMap a{{"a", "1"}, {"b", "2"}, {"c", "3"}};
  const StringMap copy = a;
  auto next = a.erase(std::as_const(a).find("b"));
  ASSERT_NE(next, a.end());
  EXPECT_EQ(next->first, "c");
  EXPECT_EQ(a, (StringMap{{"a", "1"}, {"c", "3"}}));
  EXPECT_EQ(copy.size(), 3u);
  EXPECT_EQ(a.erase("missing"), 0u);
  EXPECT_EQ(a.erase("a"), 1u);
  EXPECT_EQ(copy.at("a"), "1");
}

TEST(StringMapTest, AnEmptyMapHoldsNoBlock) {
  StringMap m;
  EXPECT_EQ(m.capacity(), 0u);
  EXPECT_TRUE(m.begin() == m.end()) << "a non-const begin() of an empty map";
  EXPECT_EQ(m.capacity(), 0u);
  m.emplace("k", "v");
  m.erase("k");
  m.shrinkToFit();
  EXPECT_EQ(m.capacity(), 0u);
  EXPECT_FALSE(m.sharesStorageWith(StringMap()));
  EXPECT_EQ(m, StringMap());
}

TEST(StringMapTest, SwapAndClearLeaveTheOtherHoldersAlone) {
  StringMap a{{"a", "1"}};
  StringMap b = a;
  StringMap c{{"c", "3"}};
  b.swap(c);
  EXPECT_EQ(b, (StringMap{{"c", "3"}}));
  EXPECT_TRUE(c.sharesStorageWith(a));
  c.clear();
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(a.at("a"), "1");
}

}  // namespace
}  // namespace egress::meta
