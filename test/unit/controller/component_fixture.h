// File: component_fixture.h
//
// The fixture of the controller package's component tests: an io_context with a fake clock, the
// in-process API server of test/unit/kube answering through handle(), a REST client to it, the
// shared cache over an informer factory whose ListerWatchers the test makes, an event recorder,
// and the Context over all of them (with an allocator, metrics and agents of its own). The real
// processors and subcontrollers run against it; nothing of theirs is replaced.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include "pkg/cache/informer_factory.h"
#include "pkg/controller/controller.h"
#include "pkg/kube/rest_client.h"
#include "test/testutil/run_sync.h"
#include "test/unit/cache/fake_lister_watcher.h"
#include "test/unit/kube/fake_api_client.h"
#include "test/unit/kube/fake_api_server.h"

namespace egress::controller::testing {

// A controller that records the keys it reconciles: in a test, the place of the controller a
// Trigger of the Context feeds.
class RecordingController : public controllerruntime::Controller {
 public:
  using Controller::Controller;
  std::vector<std::string> keys;

 protected:
  net::awaitable<controllerruntime::ReconcileResult> reconcile(const std::string& key) override {
    keys.push_back(key);
    co_return controllerruntime::ReconcileResult::done();
  }
};

class ComponentTest : public ::testing::Test {
 protected:
  ~ComponentTest() override {
    recorder_.reset();
    if (factory_) {
      factory_->stop();
    }
    server_.closeAll();
    settle();
  }

  // The factory (its ListerWatchers made by `makeListerWatcher`), the cache over it, the client,
  // the recorder and the Context. The factory is not started.
  void makeContext(cache::SharedInformerFactory::ListerWatcherMaker makeListerWatcher) {
    factory_ = std::make_unique<cache::SharedInformerFactory>(std::move(makeListerWatcher), clock_,
                                                              ioc_.get_executor());
    cache_ = std::make_unique<Cache>(*factory_, true);
    auto c = kube::testing::clientFor(ioc_.get_executor(), server_);
    ASSERT_TRUE(c) << c.error().message();
    client_ = std::move(*c);
    recorder_ = std::make_unique<controllerruntime::EventRecorder>(
        ioc_.get_executor(), *client_, clock_, controllerruntime::EventRecorderOptions{}, nullptr);
    ctx_ = std::make_unique<Context>(*client_, *cache_, allocator_, *recorder_, clock_, metrics_,
                                     agents_);
  }

  // makeContext() with ListerWatchers that list lists_[resource] ("pods", "leases", ...) at
  // resourceVersion 10, and hand out watches the test pushes events into (watches_).
  void makeContextFromLists() {
    makeContext([this](const kube::Resource& resource, const std::string&,
                       const std::string&) -> std::unique_ptr<cache::ListerWatcher> {
      auto lw = std::make_unique<cache::testing::FakeListerWatcher>();
      const std::string name = resource.resource;
      lw->onList = [this, name](const kube::ListOptions&) {
        return kube::Result<rapidjson::Document>(cache::testing::listDoc(lists_[name], "10"));
      };
      lw->onWatch = [this,
                     name](const kube::ListOptions&) -> kube::Result<std::unique_ptr<kube::Watch>> {
        auto w = std::make_unique<cache::testing::FakeWatch>(ioc_.get_executor());
        watches_[name] = w.get();
        return std::unique_ptr<kube::Watch>(std::move(w));
      };
      return lw;
    });
  }

  // A watch event of `resource` modifying the object `json`, handed to the informer; runs what
  // is ready to run then.
  void modified(const std::string& resource, const std::string& json) {
    kube::WatchEvent e = cache::testing::event(kube::WatchEventType::Modified, json);
    watches_.at(resource)->push(std::move(e));
    settle();
  }

  // What the API server answers; by default, 201 with the request's body.
  virtual kube::testing::FakeResponse handle(const kube::testing::FakeRequest& r) {
    kube::testing::FakeResponse out;
    out.status = 201;
    out.headers = {{"Content-Type", "application/json"}};
    out.body = r.body;
    return out;
  }

  // Controller C over the Context, its metrics in registry_: set up, the factory started, and
  // run once `synced` holds.
  template <class C>
  std::unique_ptr<C> startController(const std::string& name, const std::function<bool()>& synced) {
    auto c = std::make_unique<C>(
        controllerruntime::Controller::Options{name, 1, clock_, ioc_.get_executor(), &registry_},
        *ctx_);
    EXPECT_TRUE(c->setUp(*factory_));
    factory_->start();
    runUntil(synced);
    net::co_spawn(ioc_, c->run(), net::detached);
    return c;
  }

  // The sum of a metric's series in registry_.
  double sum(const std::string& name) {
    double n = 0;
    for (const auto& family : registry_.Collect()) {
      for (const auto& metric : family.name == name ? family.metric : decltype(family.metric){}) {
        n += family.type == prometheus::MetricType::Counter ? metric.counter.value
                                                            : metric.gauge.value;
      }
    }
    return n;
  }
  // Reconciles so far, whatever their result.
  double reconciles() { return sum("controller_runtime_reconcile_total"); }

  // Runs until what is ready has run and `controller` has no reconcile queued or running (one
  // may wait for the API server's answer).
  void quiesce(const controllerruntime::Controller& controller) {
    settle();
    runUntil([&] {
      return controller.queueLength() == 0 && sum("controller_runtime_active_workers") == 0;
    });
  }

  void runUntil(const std::function<bool()>& done) {
    ASSERT_TRUE(testutil::runUntil(ioc_, done)) << "the io_context went idle first";
  }
  // Runs what is ready to run, and what that makes ready, until nothing is.
  void settle() {
    for (int i = 0; i < 1000 && ioc_.poll() > 0; ++i) {
      ioc_.restart();
    }
    ioc_.restart();
  }

  net::io_context ioc_;
  FakeClock clock_{ioc_.get_executor()};
  kube::testing::FakeApiServer server_{
      ioc_, [this](const kube::testing::FakeRequest& r) { return handle(r); }};
  std::unique_ptr<kube::RestClient> client_;
  std::unique_ptr<cache::SharedInformerFactory> factory_;
  std::unique_ptr<Cache> cache_;
  ipam::Allocator allocator_;
  Metrics metrics_{nullptr};
  prometheus::Registry registry_;
  Agents agents_;
  std::unique_ptr<controllerruntime::EventRecorder> recorder_;
  std::unique_ptr<Context> ctx_;
  std::map<std::string, std::vector<std::string>> lists_;
  std::map<std::string, cache::testing::FakeWatch*> watches_;
};

}  // namespace egress::controller::testing
