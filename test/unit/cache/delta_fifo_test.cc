// DeltaFIFO and Indexer unit tests; each names the client-go reference test and the
// runtime-anchors.md §1.3 / §1.6 checklist items it covers.
#include "pkg/cache/delta_fifo.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/unit/cache/fake_lister_watcher.h"

namespace egress::cache {
namespace {

using ::testing::ElementsAre;
using testing::TestObject;
using ::testing::UnorderedElementsAre;

std::shared_ptr<const TestObject> obj(const std::string& name, const std::string& rv,
                                      const std::string& ns = "ns") {
  auto o = std::make_shared<TestObject>();
  o->metadata.namespace_ = ns;
  o->metadata.name = name;
  o->metadata.resourceVersion = rv;
  return o;
}

// "Type:name@rv" per delta, with "?" marking DeletedFinalStateUnknown.
std::vector<std::string> describe(const DeltaFifo<TestObject>::Deltas& deltas) {
  std::vector<std::string> out;
  for (const auto& d : deltas) {
    out.push_back(
        std::string(toString(d.type)) + (d.finalStateUnknown ? "?" : "") + ":" +
        (d.object ? d.object->metadata.name + "@" + d.object->metadata.resourceVersion : "<nil>"));
  }
  return out;
}

DeltaFifo<TestObject> makeFifo(const Indexer<TestObject>* known) {
  return DeltaFifo<TestObject>(testing::decodeTestObject, nullptr, known);
}

// §1.3 item 2: one queue entry per key, all deltas popped together, oldest first.
TEST(DeltaFifo, AccumulatesDeltasPerKeyInOrder) {
  auto fifo = makeFifo(nullptr);
  fifo.add(obj("a", "1"));
  fifo.add(obj("b", "1"));
  fifo.update(obj("a", "2"));
  EXPECT_EQ(fifo.size(), 2u);
  auto a = fifo.pop();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->key, "ns/a");
  EXPECT_THAT(describe(a->deltas), ElementsAre("Added:a@1", "Updated:a@2"));
  EXPECT_EQ(fifo.pop()->key, "ns/b");
  EXPECT_FALSE(fifo.pop());
}

// §1.3 item 3 (TestDeltaFIFO dedup): only two trailing deletes collapse; the one that knows
// the final state wins.
TEST(DeltaFifo, DedupesConsecutiveDeletesOnly) {
  Indexer<TestObject> known;
  known.put("ns/a", obj("a", "1"));
  auto fifo = makeFifo(&known);
  fifo.remove(obj("a", "2"));
  fifo.remove(obj("a", "3"));
  EXPECT_THAT(describe(*fifo.peek("ns/a")), ElementsAre("Deleted:a@2"));

  auto fifo2 = makeFifo(&known);
  fifo2.replaceObjects({});  // tombstone for the known a
  fifo2.remove(obj("a", "4"));
  EXPECT_THAT(describe(*fifo2.peek("ns/a")), ElementsAre("Deleted:a@4"));
}

// §1.3 item 4 (TestDeltaFIFO_DeleteExistingNonPropagated): a delete of an unknown, unqueued
// key is dropped.
TEST(DeltaFifo, DeleteOfUnknownObjectIsDropped) {
  Indexer<TestObject> known;
  auto fifo = makeFifo(&known);
  fifo.remove(obj("ghost", "1"));
  EXPECT_EQ(fifo.size(), 0u);
}

// TestDeltaFIFO_ReplaceMakesDeletions; §1.3 item 5: listed objects are Replaced; queued keys
// and known keys missing from the list get DeletedFinalStateUnknown tombstones.
TEST(DeltaFifo, ReplaceMakesTombstonesForWhatTheListLacks) {
  Indexer<TestObject> known;
  known.put("ns/a", obj("a", "1"));
  known.put("ns/b", obj("b", "1"));
  known.put("ns/c", obj("c", "1"));
  auto fifo = makeFifo(&known);
  fifo.update(obj("c", "2"));  // queued, and missing from the list below
  fifo.add(obj("d", "1"));     // queued only
  fifo.replaceObjects({obj("a", "5")});
  EXPECT_THAT(describe(*fifo.peek("ns/a")), ElementsAre("Replaced:a@5"));
  EXPECT_THAT(describe(*fifo.peek("ns/b")), ElementsAre("Deleted?:b@1"));
  EXPECT_THAT(describe(*fifo.peek("ns/c")), ElementsAre("Updated:c@2", "Deleted?:c@2"));
  EXPECT_THAT(describe(*fifo.peek("ns/d")), ElementsAre("Added:d@1", "Deleted?:d@1"));
}

// TestDeltaFIFO_UpdateResyncRace; §1.3 item 6: resync skips keys that already have deltas, so
// it can never deliver a stale object after a newer one.
TEST(DeltaFifo, ResyncSkipsKeysWithQueuedDeltas) {
  Indexer<TestObject> known;
  known.put("ns/a", obj("a", "1"));
  known.put("ns/b", obj("b", "1"));
  auto fifo = makeFifo(&known);
  fifo.update(obj("a", "2"));
  fifo.resync();
  EXPECT_THAT(describe(*fifo.peek("ns/a")), ElementsAre("Updated:a@2"));
  EXPECT_THAT(describe(*fifo.peek("ns/b")), ElementsAre("Sync:b@1"));
}

// TestDeltaFIFO_HasSyncedCorrectOnDeletion; §1.3 item 7 (with RealFIFO's "after processing").
TEST(DeltaFifo, HasSyncedAfterTheInitialListIsProcessed) {
  Indexer<TestObject> known;
  known.put("ns/gone", obj("gone", "1"));
  auto fifo = makeFifo(&known);
  EXPECT_FALSE(fifo.hasSynced());
  fifo.replaceObjects({obj("a", "1"), obj("b", "1")});
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(fifo.hasSynced()) << i;
    auto p = fifo.pop();
    ASSERT_TRUE(p);
    EXPECT_TRUE(p->isInInitialList);
    fifo.done(*p);
  }
  EXPECT_TRUE(fifo.hasSynced());
}

// §1.3 item 8: a popped item that failed processing goes back in front of newer deltas.
TEST(DeltaFifo, RequeuePutsDeltasBackInFront) {
  auto fifo = makeFifo(nullptr);
  fifo.add(obj("a", "1"));
  auto p = fifo.pop();
  fifo.update(obj("a", "2"));
  fifo.requeue(std::move(*p));
  EXPECT_THAT(describe(fifo.pop()->deltas), ElementsAre("Added:a@1", "Updated:a@2"));
}

TEST(DeltaFifo, DecodesAndTransformsJsonBeforeQueueing) {
  DeltaFifo<TestObject> fifo(
      testing::decodeTestObject, [](TestObject& o) { o.value = "stripped"; }, nullptr);
  rapidjson::Document d;
  d.Parse(testing::objectJson("ns", "a", "1", "big").c_str());
  fifo.addJson(d);
  rapidjson::Document bad;
  bad.Parse(R"({"metadata":{"name":7}})");
  fifo.addJson(bad);
  EXPECT_EQ(fifo.size(), 1u);
  EXPECT_EQ(fifo.decodeFailures(), 1u);
  EXPECT_EQ(fifo.pop()->deltas[0].object->value, "stripped");
}

// §1.6 items 2-3: the namespace index, custom indexes, index moves on update, and empty
// value sets removed.
TEST(Indexer, MaintainsNamespaceAndCustomIndexes) {
  Indexer<TestObject> idx;
  ASSERT_TRUE(idx.addIndexers(
      {{"byValue", [](const TestObject& o) { return std::vector<std::string>{o.value}; }}}));
  EXPECT_FALSE(idx.addIndexers({{"byValue", nullptr}})) << "name clash";
  auto a = std::make_shared<TestObject>(*obj("a", "1", "x"));
  a->value = "red";
  idx.put("x/a", a);
  auto b = std::make_shared<TestObject>(*obj("b", "1", "y"));
  b->value = "red";
  idx.put("y/b", b);
  EXPECT_THAT(*idx.indexKeys("byValue", "red"), UnorderedElementsAre("x/a", "y/b"));
  EXPECT_THAT(*idx.indexKeys(kNamespaceIndex, "x"), ElementsAre("x/a"));
  auto a2 = std::make_shared<TestObject>(*a);
  a2->value = "blue";
  idx.put("x/a", a2);
  EXPECT_THAT(*idx.indexKeys("byValue", "red"), ElementsAre("y/b"));
  EXPECT_THAT(*idx.indexKeys("byValue", "blue"), ElementsAre("x/a"));
  idx.remove("x/a");
  EXPECT_THAT(idx.indexValues("byValue"), ElementsAre("red")) << "empty 'blue' set dropped";
  EXPECT_FALSE(idx.indexKeys("nope", "x")) << "unknown index";
}

// §1.6 item 1.
TEST(Indexer, KeysSplitLikeClientGo) {
  EXPECT_EQ(objectKey(obj("a", "1", "ns")->metadata), "ns/a");
  EXPECT_EQ(objectKey(obj("node1", "1", "")->metadata), "node1");
  EXPECT_EQ(splitKey("ns/a"), std::make_pair(std::string("ns"), std::string("a")));
  EXPECT_EQ(splitKey("a"), std::make_pair(std::string(), std::string("a")));
  EXPECT_FALSE(splitKey("a/b/c"));
}

}  // namespace
}  // namespace egress::cache
