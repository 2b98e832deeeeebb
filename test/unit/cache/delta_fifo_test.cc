// DeltaFIFO and Indexer unit tests; each names the client-go reference test and the
// client-go behaviour it covers.
#include "pkg/cache/delta_fifo.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pkg/base/clock.h"
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

// Replace, run to completion on an io_context of its own.
void replace(DeltaFifo<TestObject>& fifo, std::vector<std::shared_ptr<const TestObject>> objects) {
  std::vector<DeltaFifo<TestObject>::Listed> list;
  for (auto& o : objects) {
    std::string key = objectKey(o->metadata);
    list.push_back({std::move(key), std::move(o), nullptr});
  }
  net::io_context ioc;
  net::co_spawn(ioc, fifo.replace(std::move(list)), egress::rethrowUnhandled);
  ioc.run();
}

// One queue entry per key, all deltas popped together, oldest first.
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

// TestDeltaFIFO dedup: only two trailing deletes collapse; the one that knows
// the final state wins.
TEST(DeltaFifo, DedupesConsecutiveDeletesOnly) {
  Indexer<TestObject> known;
  known.put(obj("a", "1"));
  auto fifo = makeFifo(&known);
  fifo.remove(obj("a", "2"));
  fifo.remove(obj("a", "3"));
  EXPECT_THAT(describe(*fifo.peek("ns/a")), ElementsAre("Deleted:a@2"));

  auto fifo2 = makeFifo(&known);
  replace(fifo2, {});  // tombstone for the known a
  fifo2.remove(obj("a", "4"));
  EXPECT_THAT(describe(*fifo2.peek("ns/a")), ElementsAre("Deleted:a@4"));
}

// TestDeltaFIFO_DeleteExistingNonPropagated: a delete of an unknown, unqueued
// key is dropped.
TEST(DeltaFifo, DeleteOfUnknownObjectIsDropped) {
  Indexer<TestObject> known;
  auto fifo = makeFifo(&known);
  fifo.remove(obj("ghost", "1"));
  EXPECT_EQ(fifo.size(), 0u);
}

// TestDeltaFIFO_ReplaceMakesDeletions: listed objects are Replaced; queued keys
// and known keys missing from the list get DeletedFinalStateUnknown tombstones.
TEST(DeltaFifo, ReplaceMakesTombstonesForWhatTheListLacks) {
  Indexer<TestObject> known;
  known.put(obj("a", "1"));
  known.put(obj("b", "1"));
  known.put(obj("c", "1"));
  auto fifo = makeFifo(&known);
  fifo.update(obj("c", "2"));  // queued, and missing from the list below
  fifo.add(obj("d", "1"));     // queued only
  replace(fifo, {obj("a", "5")});
  EXPECT_THAT(describe(*fifo.peek("ns/a")), ElementsAre("Replaced:a@5"));
  EXPECT_THAT(describe(*fifo.peek("ns/b")), ElementsAre("Deleted?:b@1"));
  EXPECT_THAT(describe(*fifo.peek("ns/c")), ElementsAre("Updated:c@2", "Deleted?:c@2"));
  EXPECT_THAT(describe(*fifo.peek("ns/d")), ElementsAre("Added:d@1", "Deleted?:d@1"));
}

// A list that failed partway is dropped at once (abortList): none of what it staged reaches a
// later Replace, and it is not held in memory until the next list starts.
TEST(DeltaFifo, AnAbortedListStagesNothing) {
  Indexer<TestObject> known;
  auto fifo = makeFifo(&known);
  rapidjson::Document a;
  a.Parse(testing::objectJson("ns", "a", "5").c_str());
  fifo.startList();
  fifo.listItem(a);
  fifo.abortList();
  net::io_context ioc;
  net::co_spawn(ioc, fifo.finishList("9"), egress::rethrowUnhandled);
  ioc.run();
  EXPECT_EQ(fifo.peek("ns/a"), nullptr);
  EXPECT_TRUE(fifo.hasSynced()) << "the (empty) Replace still counts as the first list";
}

// TestDeltaFIFO_UpdateResyncRace: resync skips keys that already have deltas, so
// it can never deliver a stale object after a newer one.
TEST(DeltaFifo, ResyncSkipsKeysWithQueuedDeltas) {
  Indexer<TestObject> known;
  known.put(obj("a", "1"));
  known.put(obj("b", "1"));
  auto fifo = makeFifo(&known);
  fifo.update(obj("a", "2"));
  fifo.resync();
  EXPECT_THAT(describe(*fifo.peek("ns/a")), ElementsAre("Updated:a@2"));
  EXPECT_THAT(describe(*fifo.peek("ns/b")), ElementsAre("Sync:b@1"));
}

// TestDeltaFIFO_HasSyncedCorrectOnDeletion (with RealFIFO's "after processing").
TEST(DeltaFifo, HasSyncedAfterTheInitialListIsProcessed) {
  Indexer<TestObject> known;
  known.put(obj("gone", "1"));
  auto fifo = makeFifo(&known);
  EXPECT_FALSE(fifo.hasSynced());
  replace(fifo, {obj("a", "1"), obj("b", "1")});
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(fifo.hasSynced()) << i;
    auto p = fifo.pop();
    ASSERT_TRUE(p);
    EXPECT_TRUE(p->isInInitialList);
    fifo.done(*p);
  }
  EXPECT_TRUE(fifo.hasSynced());
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

// Replace yields to the io_context every few hundred objects, and the consumer
// is handed nothing until it is complete (never half a relist).
TEST(DeltaFifo, ReplaceYieldsAndHoldsPopsUntilComplete) {
  Indexer<TestObject> known;
  known.put(obj("gone", "1"));
  auto fifo = makeFifo(&known);
  std::vector<DeltaFifo<TestObject>::Listed> list;
  for (int i = 0; i < 10000; ++i) {
    auto o = obj("o" + std::to_string(i), "5");
    std::string key = objectKey(o->metadata);
    list.push_back({std::move(key), std::move(o), nullptr});
  }
  net::io_context ioc;
  bool replaced = false;
  auto run = [](DeltaFifo<TestObject>* fifo, std::vector<DeltaFifo<TestObject>::Listed> list,
                bool* replaced) -> net::awaitable<void> {
    co_await fifo->replace(std::move(list));
    *replaced = true;
  };
  net::co_spawn(ioc, run(&fifo, std::move(list), &replaced), egress::rethrowUnhandled);
  size_t interleavings = 0;
  while (!replaced) {
    ASSERT_EQ(ioc.run_one(), 1u);
    if (!replaced) {
      ++interleavings;
      EXPECT_FALSE(fifo.pop()) << "popped in the middle of a Replace";
    }
  }
  EXPECT_GE(interleavings, 10000u / 500) << "Replace ran without yielding";
  EXPECT_EQ(fifo.size(), 10001u) << "every listed object and the tombstone";
  EXPECT_TRUE(fifo.pop());
}

// An object that does not decode is queued as undecodable (key, resource
// version, error from the raw JSON), so its MODIFIED and DELETED are not lost; each failing
// version is counted once, however often relists meet it.
TEST(DeltaFifo, UndecodableObjectsAreQueuedAndCountedOncePerVersion) {
  Indexer<TestObject> known;
  auto fifo = makeFifo(&known);
  auto json = [](const std::string& rv, const std::string& value) {
    auto d = std::make_shared<rapidjson::Document>();
    d->Parse((R"({"metadata":{"namespace":"ns","name":"bad","resourceVersion":")" + rv +
              R"("},"value":)" + value + "}")
                 .c_str());
    return d;
  };
  auto bad1 = json("1", "7");  // value must be a string
  fifo.addJson(*bad1);
  const auto* deltas = fifo.peek("ns/bad");
  ASSERT_NE(deltas, nullptr);
  ASSERT_EQ(deltas->size(), 1u);
  EXPECT_EQ((*deltas)[0].object, nullptr);
  ASSERT_NE((*deltas)[0].undecodable, nullptr);
  EXPECT_EQ((*deltas)[0].undecodable->key, "ns/bad");
  EXPECT_EQ((*deltas)[0].undecodable->resourceVersion, "1");
  EXPECT_EQ((*deltas)[0].undecodable->error, "value: expected string");
  EXPECT_EQ(fifo.decodeFailures(), 1u);

  // The cache now holds it; a relist meets the same version: not counted again.
  known.putUndecodable("ns/bad", (*deltas)[0].undecodable);
  fifo.pop();
  fifo.startList();
  fifo.listItem(*bad1);
  net::io_context ioc;
  net::co_spawn(ioc, fifo.finishList("9"), egress::rethrowUnhandled);
  ioc.run();
  EXPECT_EQ(fifo.decodeFailures(), 1u);
  fifo.pop();

  // A new version that does not decode either is counted; its DELETED is queued even though it
  // does not decode (it used not to be).
  auto bad2 = json("2", "8");
  fifo.updateJson(*bad2);
  EXPECT_EQ(fifo.decodeFailures(), 2u);
  known.putUndecodable("ns/bad", fifo.pop()->deltas[0].undecodable);
  auto deleted = json("3", "8");
  fifo.removeJson(*deleted);
  deltas = fifo.peek("ns/bad");
  ASSERT_NE(deltas, nullptr);
  EXPECT_EQ((*deltas)[0].type, DeltaType::Deleted);
  EXPECT_EQ((*deltas)[0].undecodable->resourceVersion, "3");
  EXPECT_EQ(fifo.decodeFailures(), 2u) << "a DELETED needs only the key: not a failure";
}

// The namespace index, custom indexes, index moves on update, and empty
// value sets removed.
TEST(Indexer, MaintainsNamespaceAndCustomIndexes) {
  Indexer<TestObject> idx;
  ASSERT_TRUE(idx.addIndexers(
      {{"byValue", [](const TestObject& o) { return std::vector<std::string>{o.value}; }}}));
  EXPECT_FALSE(idx.addIndexers({{"byValue", nullptr}})) << "name clash";
  auto a = std::make_shared<TestObject>(*obj("a", "1", "x"));
  a->value = "red";
  idx.put(a);
  auto b = std::make_shared<TestObject>(*obj("b", "1", "y"));
  b->value = "red";
  idx.put(b);
  EXPECT_THAT(*idx.indexKeys("byValue", "red"), UnorderedElementsAre("x/a", "y/b"));
  EXPECT_THAT(*idx.indexKeys(kNamespaceIndex, "x"), ElementsAre("x/a"));
  auto a2 = std::make_shared<TestObject>(*a);
  a2->value = "blue";
  idx.put(a2);
  EXPECT_THAT(*idx.indexKeys("byValue", "red"), ElementsAre("y/b"));
  EXPECT_THAT(*idx.indexKeys("byValue", "blue"), ElementsAre("x/a"));
  idx.remove("x/a");
  EXPECT_THAT(idx.indexValues("byValue"), ElementsAre("red")) << "empty 'blue' set dropped";
  EXPECT_FALSE(idx.indexKeys("nope", "x")) << "unknown index";
}

// The namespace index is the store's order itself: (namespace, name). Namespaces that are
// prefixes of one another, or that sort around '/' as key strings, stay apart, and cluster-scoped
// objects (keys without '/') are namespace "".
TEST(Indexer, NamespaceIndexKeepsNamespacesThatArePrefixesApart) {
  Indexer<TestObject> idx;
  for (const auto& [ns, name] : std::vector<std::pair<std::string, std::string>>{
           {"a", "x"}, {"a", "y"}, {"a-b", "x"}, {"ab", "x"}, {"a.b", "z"}, {"b", "x"}}) {
    idx.put(obj(name, "1", ns));
  }
  EXPECT_THAT(*idx.indexKeys(kNamespaceIndex, "a"), ElementsAre("a/x", "a/y"));
  EXPECT_THAT(*idx.indexKeys(kNamespaceIndex, "a-b"), ElementsAre("a-b/x"));
  EXPECT_THAT(*idx.indexKeys(kNamespaceIndex, "ab"), ElementsAre("ab/x"));
  EXPECT_THAT(*idx.indexKeys(kNamespaceIndex, "a."), ElementsAre());
  EXPECT_THAT(*idx.indexKeys(kNamespaceIndex, "c"), ElementsAre());
  ASSERT_EQ(idx.byIndex(kNamespaceIndex, "a.b")->size(), 1u);
  EXPECT_EQ(idx.byIndex(kNamespaceIndex, "a.b")->front()->metadata.name, "z");
  EXPECT_THAT(idx.indexValues(kNamespaceIndex), ElementsAre("a", "a-b", "a.b", "ab", "b"));
  EXPECT_THAT(idx.listKeys(), ElementsAre("a/x", "a/y", "a-b/x", "a.b/z", "ab/x", "b/x"));
  idx.remove("a/x");
  idx.remove("a/y");
  EXPECT_THAT(idx.indexValues(kNamespaceIndex), ElementsAre("a-b", "a.b", "ab", "b"));

  Indexer<TestObject> cluster;
  cluster.put(obj("n1", "1", ""));
  cluster.put(obj("n2", "1", ""));
  EXPECT_THAT(*cluster.indexKeys(kNamespaceIndex, ""), ElementsAre("n1", "n2"));
  EXPECT_THAT(cluster.indexValues(kNamespaceIndex), ElementsAre(""));
}

// An update computes the new object's index values once and compares them
// with the ones the index already holds; it does not recompute them from the old object.
TEST(Indexer, UpdatesComputeIndexValuesOncePerIndex) {
  Indexer<TestObject> idx;
  int calls = 0;
  ASSERT_TRUE(idx.addIndexers({{"byValue", [&calls](const TestObject& o) {
                                  ++calls;
                                  return std::vector<std::string>{o.value};
                                }}}));
  auto a = std::make_shared<TestObject>(*obj("a", "1", "x"));
  a->value = "red";
  idx.put(a);
  EXPECT_EQ(calls, 1);
  for (int i = 2; i <= 101; ++i) {
    auto next = std::make_shared<TestObject>(*obj("a", std::to_string(i), "x"));
    next->value = "red";
    idx.put(next);
  }
  EXPECT_EQ(calls, 101) << "one evaluation per update";
  auto blue = std::make_shared<TestObject>(*obj("a", "102", "x"));
  blue->value = "blue";
  idx.put(blue);
  EXPECT_EQ(calls, 102);
  EXPECT_THAT(*idx.indexKeys("byValue", "blue"), ElementsAre("x/a"));
  EXPECT_THAT(*idx.indexKeys("byValue", "red"), ElementsAre());
  EXPECT_THAT(*idx.indexKeys(kNamespaceIndex, "x"), ElementsAre("x/a"));
  idx.remove("x/a");
  EXPECT_EQ(calls, 102) << "a removal uses the values the index holds";
  EXPECT_THAT(idx.indexValues("byValue"), ElementsAre());
  EXPECT_THAT(idx.indexValues(kNamespaceIndex), ElementsAre());
}

// An object whose index values are none holds no entry of that index (most pods carry no
// gateway-policy label); it must still move in and out of the index as its values come and go.
TEST(Indexer, ObjectsWithoutIndexValuesMoveInAndOut) {
  Indexer<TestObject> idx;
  ASSERT_TRUE(idx.addIndexers({{"byValue", [](const TestObject& o) {
                                  return o.value.empty() ? std::vector<std::string>{}
                                                         : std::vector<std::string>{o.value};
                                }}}));
  auto none = std::make_shared<TestObject>(*obj("a", "1", "x"));
  idx.put(none);
  EXPECT_THAT(idx.indexValues("byValue"), ElementsAre());
  auto red = std::make_shared<TestObject>(*obj("a", "2", "x"));
  red->value = "red";
  idx.put(red);
  EXPECT_THAT(*idx.indexKeys("byValue", "red"), ElementsAre("x/a"));
  idx.put(std::make_shared<TestObject>(*obj("a", "3", "x")));
  EXPECT_THAT(idx.indexValues("byValue"), ElementsAre()) << "its values went: so did its keys";
  auto blue = std::make_shared<TestObject>(*obj("a", "4", "x"));
  blue->value = "blue";
  idx.put(blue);
  EXPECT_THAT(*idx.indexKeys("byValue", "blue"), ElementsAre("x/a"));
  EXPECT_THAT(*idx.indexKeys("byValue", "red"), ElementsAre());
  idx.remove("x/a");
  EXPECT_THAT(idx.indexValues("byValue"), ElementsAre());
  idx.put(std::make_shared<TestObject>(*obj("b", "1", "x")));
  idx.remove("x/b");
  EXPECT_THAT(*idx.indexKeys(kNamespaceIndex, "x"), ElementsAre());
}

// The store keeps no key strings: a key finds its object by (namespace, name), and a key that
// names no storable object (a second '/', a namespace without a name) finds nothing.
TEST(Indexer, KeysFindObjectsByNamespaceAndName) {
  Indexer<TestObject> idx;
  idx.put(obj("a", "1", "x"));
  idx.put(obj("a", "1", ""));
  idx.put(obj("x", "1", ""));
  EXPECT_EQ(idx.size(), 3u);
  ASSERT_NE(idx.get("x/a"), nullptr);
  EXPECT_EQ(idx.get("x/a")->metadata.namespace_, "x");
  ASSERT_NE(idx.get("a"), nullptr);
  EXPECT_EQ(idx.get("a")->metadata.namespace_, "");
  EXPECT_TRUE(idx.contains("x"));
  EXPECT_FALSE(idx.contains("x/"));
  EXPECT_FALSE(idx.contains("/a"));
  EXPECT_FALSE(idx.contains("x/a/b"));
  EXPECT_FALSE(idx.contains("y/a"));
  EXPECT_THAT(idx.listKeys(), ElementsAre("a", "x", "x/a")) << "cluster-scoped first";
  auto replaced = std::make_shared<TestObject>(*obj("a", "2", "x"));
  idx.put(replaced);
  EXPECT_EQ(idx.size(), 3u);
  EXPECT_EQ(idx.get("x/a"), replaced);
  idx.remove("a");
  EXPECT_EQ(idx.get("a"), nullptr);
  EXPECT_NE(idx.get("x/a"), nullptr);
}

// Keys are made and split as client-go's MetaNamespaceKeyFunc and SplitMetaNamespaceKey do.
TEST(Indexer, KeysSplitLikeClientGo) {
  EXPECT_EQ(objectKey(obj("a", "1", "ns")->metadata), "ns/a");
  EXPECT_EQ(objectKey(obj("node1", "1", "")->metadata), "node1");
  EXPECT_EQ(splitKey("ns/a"), std::make_pair(std::string("ns"), std::string("a")));
  EXPECT_EQ(splitKey("a"), std::make_pair(std::string(), std::string("a")));
  EXPECT_FALSE(splitKey("a/b/c"));
}

}  // namespace
}  // namespace egress::cache
