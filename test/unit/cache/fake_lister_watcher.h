// File: fake_lister_watcher.h
//
// A scripted ListerWatcher for reflector and informer tests: each list() and watch() call is
// answered by the test's functions, or hangs until the caller cancels it (Asio per-operation
// cancellation, as the REST client honours it); a FakeWatch hands out events pushed by the test
// and waits (without blocking the io_context) when it has none, like an idle watch connection.
#pragma once

#include <deque>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <rapidjson/document.h>

#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/object_meta.h"
#include "pkg/base/notifier.h"
#include "pkg/cache/lister_watcher.h"
#include "pkg/cache/reflector_store.h"

namespace egress::cache::testing {

// A fake object type: just metadata and one value.
struct TestObject {
  meta::ObjectMeta metadata;
  std::string value;
};
meta::Decoded<TestObject> decodeTestObject(const rapidjson::Value& v);
std::string objectJson(const std::string& ns, const std::string& name, const std::string& rv,
                       const std::string& value = "");
// {"kind":"List","metadata":{"resourceVersion":rv,"continue":cont},"items":[...]}
rapidjson::Document listDoc(const std::vector<std::string>& items, const std::string& rv,
                            const std::string& cont = "");
kube::WatchEvent event(kube::WatchEventType type, const std::string& objectJson);
kube::Error apiError(int code, const std::string& reason, const std::string& message = "");

class FakeWatch : public kube::Watch {
 public:
  struct End {};  // a clean end of the watch
  using Item = std::variant<kube::WatchEvent, kube::Error, End>;

  explicit FakeWatch(const net::any_io_executor& ex) : wake_(ex) {}
  // Out of line: inlined into a test, g++ 12 warns that the variant's Error may be used
  // uninitialized (-Wmaybe-uninitialized misfiring on std::variant's move).
  void push(Item item);
  net::awaitable<kube::Result<std::optional<kube::WatchEvent>>> next() override;
  void cancel() override {
    cancelled_ = true;
    wake_.notify();
  }
  bool cancelled() const { return cancelled_; }

 private:
  std::deque<Item> items_;
  Notifier wake_;
  bool cancelled_ = false;
};

// A ReflectorStore that records what the reflector told it: "start", "item a@5", "abort",
// "replace @7", "add b@8", "update a@9", "delete b@11", "resync".
class RecordingStore : public ReflectorStore {
 public:
  void startList() override { calls.push_back("start"); }
  void listItem(const rapidjson::Value& v) override;
  void abortList() override { calls.push_back("abort"); }
  net::awaitable<void> finishList(std::string rv) override;
  void addJson(const rapidjson::Value& v) override;
  void updateJson(const rapidjson::Value& v) override;
  void removeJson(const rapidjson::Value& v) override;
  void resync() override { calls.push_back("resync"); }
  std::vector<std::string> calls;
};

// Runs `turn` once per turn of the io_context, yielding in between, until it returns true; then
// sets *done. For counting how often other work interleaves with a long operation.
void spawnTicker(net::io_context& ioc, std::function<bool()> turn, bool* done);

class FakeListerWatcher : public ListerWatcher {
 public:
  using ListFn = std::function<kube::Result<rapidjson::Document>(const kube::ListOptions&)>;
  // Returns the watch to hand out, or an error. The FakeWatch stays owned by the test via
  // `lastWatch` (a raw pointer valid until the reflector drops it).
  using WatchFn =
      std::function<kube::Result<std::unique_ptr<kube::Watch>>(const kube::ListOptions&)>;

  // When set, answers list() instead of onList with a page of its own making (say a raw body
  // that fails partway through ListPage's decoder).
  using PageFn = std::function<kube::Result<kube::ListPage>(const kube::ListOptions&)>;

  ListFn onList;
  PageFn onListPage;
  WatchFn onWatch;
  std::vector<kube::ListOptions> lists;
  std::vector<kube::ListOptions> watches;
  // While set, list() / watch() calls wait until their operation is cancelled and then fail
  // with a Cancelled error; `cancelled` counts those.
  bool hangLists = false;
  bool hangWatches = false;
  int cancelled = 0;

  net::awaitable<kube::Result<kube::ListPage>> list(kube::ListOptions options) override;
  net::awaitable<kube::Result<std::unique_ptr<kube::Watch>>> watch(
      kube::ListOptions options) override;
  std::string describe() const override { return "fake"; }
};

}  // namespace egress::cache::testing
