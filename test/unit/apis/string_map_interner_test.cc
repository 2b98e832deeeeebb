// StringMapInterner: equal maps end up sharing one block, unequal ones never do, an interned block
// is never written in place, expired blocks are swept, and interning from several threads agrees.
#include "pkg/apis/meta/string_map_interner.h"

#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace egress::meta {
namespace {

StringMap labels(const std::string& app) {
  return StringMap{{"app", app}, {"tier", "front"}};
}

TEST(StringMapInterner, EqualMapsShareOneBlock) {
  StringMapInterner interner;
  StringMap a = labels("web");
  StringMap b = labels("web");
  ASSERT_FALSE(a.sharesStorageWith(b));
  interner.intern(a);
  interner.intern(b);
  EXPECT_TRUE(a.sharesStorageWith(b));
  EXPECT_EQ(b, labels("web"));
  EXPECT_EQ(interner.tracked(), 1u);
}

TEST(StringMapInterner, UnequalMapsKeepTheirOwnBlocks) {
  StringMapInterner interner;
  StringMap a = labels("web");
  StringMap b = labels("db");
  StringMap c{{"app", "web"}};  // a prefix of a's entries
  interner.intern(a);
  interner.intern(b);
  interner.intern(c);
  EXPECT_FALSE(a.sharesStorageWith(b));
  EXPECT_FALSE(a.sharesStorageWith(c));
  EXPECT_EQ(interner.tracked(), 3u);
}

TEST(StringMapInterner, AWriteToAnInternedMapCopiesEvenForItsOnlyHolder) {
  StringMapInterner interner;
  StringMap a = labels("web");
  interner.intern(a);
  const auto* before = &*std::as_const(a).begin();
  a["app"] = "db";
  EXPECT_NE(&*std::as_const(a).begin(), before)
      << "written in place: the interner would hand out a block whose contents changed";
  StringMap b = labels("web");
  interner.intern(b);
  EXPECT_EQ(b, labels("web"));
  EXPECT_FALSE(b.sharesStorageWith(a));
}

TEST(StringMapInterner, AWriteToOneSharerLeavesTheOthersAlone) {
  StringMapInterner interner;
  StringMap a = labels("web");
  StringMap b = labels("web");
  interner.intern(a);
  interner.intern(b);
  b.erase("tier");
  EXPECT_EQ(a, labels("web"));
  EXPECT_EQ(b.size(), 1u);
}

TEST(StringMapInterner, ABlockSharedWithUninternedCopiesIsCopiedFirst) {
  StringMapInterner interner;
  StringMap a = labels("web");
  StringMap copy = a;  // not interned: may be written in place once it is the only holder
  interner.intern(a);
  EXPECT_FALSE(a.sharesStorageWith(copy));
  copy["app"] = "db";
  EXPECT_EQ(a, labels("web"));
}

TEST(StringMapInterner, EmptyMapsStayWithoutABlock) {
  StringMapInterner interner;
  StringMap m{{"k", "v"}};
  m.erase("k");
  interner.intern(m);
  EXPECT_EQ(m.capacity(), 0u);
  EXPECT_EQ(interner.tracked(), 0u);
}

TEST(StringMapInterner, ExpiredBlocksAreSweptAsTheTableGrows) {
  StringMapInterner interner;
  for (int i = 0; i < 1000; ++i) {
    StringMap m = labels("app-" + std::to_string(i));
    interner.intern(m);  // dies at the end of the iteration
  }
  EXPECT_LT(interner.tracked(), 128u) << "expired blocks are never swept";
  std::vector<StringMap> live;
  for (int i = 0; i < 1000; ++i) {
    live.push_back(labels("live-" + std::to_string(i)));
    interner.intern(live.back());
  }
  EXPECT_GE(interner.tracked(), 1000u);
  StringMap again = labels("live-7");
  interner.intern(again);
  EXPECT_TRUE(again.sharesStorageWith(live[7])) << "a sweep dropped a live block";
}

TEST(StringMapInterner, ThreadsInterningEqualMapsAgreeOnOneBlock) {
  StringMapInterner interner;
  constexpr int kPerThread = 2000;
  std::vector<StringMap> left(kPerThread, labels("web"));
  std::vector<StringMap> right(kPerThread, labels("web"));
  // Distinct blocks to start with: the copies above share their source's block.
  for (auto* v : {&left, &right}) {
    for (auto& m : *v) {
      m["tier"] = "front";
    }
  }
  std::thread t([&] {
    for (auto& m : left) {
      interner.intern(m);
    }
  });
  for (auto& m : right) {
    interner.intern(m);
  }
  t.join();
  for (const auto& m : left) {
    ASSERT_TRUE(m.sharesStorageWith(right.front()));
  }
  for (const auto& m : right) {
    ASSERT_TRUE(m.sharesStorageWith(right.front()));
  }
}

}  // namespace
}  // namespace egress::meta
