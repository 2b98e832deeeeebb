// SharedInformerFactory unit tests: which requests share an informer, and that a factory can go
// away with the io_context still running.
#include "pkg/cache/informer_factory.h"

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "test/unit/cache/fake_lister_watcher.h"

namespace egress::cache {
namespace {

using testing::TestObject;

const kube::Resource kThings{"example.com", "v1", "things", true};

void dropValue(TestObject& o) {
  o.value.clear();
}
void upperValue(TestObject& o) {
  for (auto& c : o.value) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
}

class FactoryTest : public ::testing::Test {
 protected:
  FactoryTest() {
    kube::RestConfig config;
    config.server = "http://127.0.0.1:1";  // never contacted: no informer is started
    auto client = kube::RestClient::create(ioc_.get_executor(), config, nullptr);
    EXPECT_TRUE(client) << client.error().message();
    client_ = std::move(*client);
    factory_ = std::make_unique<SharedInformerFactory>(*client_, clock_, ioc_.get_executor());
  }

  net::io_context ioc_;
  FakeClock clock_{ioc_.get_executor()};
  std::unique_ptr<kube::RestClient> client_;
  std::unique_ptr<SharedInformerFactory> factory_;
};

// The transform is part of what identifies a shared informer. Two callers that
// ask for different transforms get different informers (each caches what it asked for); the
// same transform, or none, shares.
TEST_F(FactoryTest, TheTransformIsPartOfTheInformersIdentity) {
  auto& plain = factory_->informerFor<TestObject>(kThings, testing::decodeTestObject, "ns");
  auto& plainAgain = factory_->informerFor<TestObject>(kThings, testing::decodeTestObject, "ns");
  auto& dropped =
      factory_->informerFor<TestObject>(kThings, testing::decodeTestObject, "ns", "", dropValue);
  auto& droppedAgain =
      factory_->informerFor<TestObject>(kThings, testing::decodeTestObject, "ns", "", dropValue);
  auto& upper =
      factory_->informerFor<TestObject>(kThings, testing::decodeTestObject, "ns", "", upperValue);
  EXPECT_EQ(&plain, &plainAgain);
  EXPECT_EQ(&dropped, &droppedAgain);
  EXPECT_NE(&plain, &dropped);
  EXPECT_NE(&dropped, &upper);
  EXPECT_EQ(factory_->size(), 3u);
}

// A factory over fake ListerWatchers: lists return `initial`, watches hand out FakeWatches the
// test can push into.
class FakeFactoryTest : public ::testing::Test {
 protected:
  FakeFactoryTest() {
    factory_ = std::make_unique<SharedInformerFactory>(
        [this](const kube::Resource&, const std::string&,
               const std::string&) -> std::unique_ptr<ListerWatcher> {
          auto lw = std::make_unique<testing::FakeListerWatcher>();
          lw->hangLists = hangLists_;
          lw->onList = [this](const kube::ListOptions&) {
            return kube::Result<rapidjson::Document>(testing::listDoc(initial_, "10"));
          };
          lw->onWatch =
              [this](const kube::ListOptions&) -> kube::Result<std::unique_ptr<kube::Watch>> {
            auto w = std::make_unique<testing::FakeWatch>(ioc_.get_executor());
            watches_.push_back(w.get());
            return std::unique_ptr<kube::Watch>(std::move(w));
          };
          return lw;
        },
        clock_, ioc_.get_executor(), std::chrono::seconds(30));
  }

  // Two informers, each with a counting handler.
  void startTwo() {
    for (const char* ns : {"a", "b"}) {
      auto& informer = factory_->informerFor<TestObject>(kThings, testing::decodeTestObject, ns);
      EventHandler<TestObject> h;
      h.onAdd = [this](const auto&, bool) { ++calls_; };
      h.onUpdate = [this](const auto&, const auto&) { ++calls_; };
      ASSERT_TRUE(informer.addEventHandler(h));
    }
    factory_->start();
  }

  // Destroys the factory, then keeps the io_context (and time) running.
  void destroyAndRunOn() {
    factory_.reset();
    const int callsAtDestruction = calls_;
    ioc_.poll();
    clock_.advance(std::chrono::minutes(5));
    ioc_.poll();
    EXPECT_EQ(calls_, callsAtDestruction) << "a handler ran after the factory was gone";
  }

  net::io_context ioc_;
  FakeClock clock_{ioc_.get_executor()};
  std::vector<std::string> initial_{testing::objectJson("ns", "x", "1")};
  bool hangLists_ = false;
  std::vector<testing::FakeWatch*> watches_;
  int calls_ = 0;
  std::unique_ptr<SharedInformerFactory> factory_;
};

// A factory (and its informers) may be destroyed with the io_context running:
// mid-LIST, mid-watch, mid-handler delivery. ASan checks that nothing touches freed memory.
TEST_F(FakeFactoryTest, DestroyedMidList) {
  hangLists_ = true;
  startTwo();
  ioc_.poll();
  EXPECT_FALSE(factory_->informers()[0]->hasSynced());
  destroyAndRunOn();
}

TEST_F(FakeFactoryTest, DestroyedMidWatch) {
  startTwo();
  ioc_.poll();
  ASSERT_EQ(watches_.size(), 2u);
  watches_[0]->push(
      testing::event(kube::WatchEventType::Modified, testing::objectJson("ns", "x", "11")));
  destroyAndRunOn();
}

TEST_F(FakeFactoryTest, DestroyedMidHandlerDelivery) {
  startTwo();
  ioc_.poll();
  for (int i = 0; i < 300; ++i) {
    watches_[0]->push(testing::event(kube::WatchEventType::Modified,
                                     testing::objectJson("ns", "x", std::to_string(100 + i))));
  }
  while (calls_ < 2 + 100) {
    ASSERT_EQ(ioc_.run_one(), 1u);
  }
  destroyAndRunOn();
}

TEST_F(FakeFactoryTest, StopEndsEveryCoroutine) {
  startTwo();
  ioc_.poll();
  factory_->stop();
  ioc_.poll();
  EXPECT_TRUE(factory_->stopped());
}

}  // namespace
}  // namespace egress::cache
