#include "test/unit/cache/fake_lister_watcher.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "pkg/base/clock.h"

namespace egress::cache::testing {

meta::Decoded<TestObject> decodeTestObject(const rapidjson::Value& v) {
  TestObject o;
  auto meta = meta::decodeObjectMeta(v["metadata"]);
  if (!meta) {
    return meta.error();
  }
  o.metadata = std::move(*meta);
  if (auto it = v.FindMember("value"); it != v.MemberEnd()) {
    if (!it->value.IsString()) {
      return meta::DecodeError{"value", "expected string"};
    }
    o.value = it->value.GetString();
  }
  return o;
}

std::string objectJson(const std::string& ns, const std::string& name, const std::string& rv,
                       const std::string& value) {
  return R"({"metadata":{"namespace":")" + ns + R"(","name":")" + name +
         R"(","resourceVersion":")" + rv + R"("},"value":")" + value + "\"}";
}

rapidjson::Document listDoc(const std::vector<std::string>& items, const std::string& rv,
                            const std::string& cont) {
  std::string json = R"({"kind":"List","metadata":{"resourceVersion":")" + rv + "\"";
  if (!cont.empty()) {
    json += R"(,"continue":")" + cont + "\"";
  }
  json += R"(},"items":[)";
  for (size_t i = 0; i < items.size(); ++i) {
    json += (i ? "," : "") + items[i];
  }
  json += "]}";
  rapidjson::Document d;
  d.Parse(json.c_str());
  return d;
}

kube::WatchEvent event(kube::WatchEventType type, const std::string& objectJson) {
  kube::WatchEvent e;
  e.type = type;
  const std::string json =
      std::string(R"({"type":")") + kube::toString(type) + R"(","object":)" + objectJson + "}";
  e.doc.Parse(json.c_str());
  return e;
}

kube::Error apiError(int code, const std::string& reason, const std::string& message) {
  meta::Status s;
  s.code = code;
  s.reason = reason;
  s.message = message;
  return kube::Error::api(code, s);
}

void FakeWatch::push(Item item) {
  items_.push_back(std::move(item));
  wake_.notify();
}

net::awaitable<kube::Result<std::optional<kube::WatchEvent>>> FakeWatch::next() {
  for (;;) {
    if (cancelled_) {
      co_return kube::Error::cancelled();
    }
    if (!items_.empty()) {
      Item item = std::move(items_.front());
      items_.pop_front();
      if (auto* ev = std::get_if<kube::WatchEvent>(&item)) {
        co_return std::optional<kube::WatchEvent>(std::move(*ev));
      }
      if (auto* err = std::get_if<kube::Error>(&item)) {
        co_return *err;
      }
      co_return std::optional<kube::WatchEvent>();
    }
    co_await wake_.wait();
  }
}

namespace {

std::string nameAndRv(const rapidjson::Value& v) {
  return std::string(v["metadata"]["name"].GetString()) + "@" +
         v["metadata"]["resourceVersion"].GetString();
}

net::awaitable<void> tick(std::function<bool()> turn, bool* done) {
  while (!turn()) {
    auto executor = co_await net::this_coro::executor;
    co_await net::post(executor, net::use_awaitable);
  }
  *done = true;
}

// Waits on a timer that never expires: only a cancellation of this operation ends the wait.
net::awaitable<void> waitForCancellation() {
  net::steady_timer timer(co_await net::this_coro::executor);
  timer.expires_at(net::steady_timer::time_point::max());
  auto [ec] = co_await timer.async_wait(net::as_tuple(net::use_awaitable));
  (void)ec;
}

}  // namespace

void RecordingStore::listItem(const rapidjson::Value& v) {
  calls.push_back("item " + nameAndRv(v));
}
net::awaitable<void> RecordingStore::finishList(std::string rv) {
  calls.push_back("replace @" + rv);
  co_return;
}
void RecordingStore::addJson(const rapidjson::Value& v) {
  calls.push_back("add " + nameAndRv(v));
}
void RecordingStore::updateJson(const rapidjson::Value& v) {
  calls.push_back("update " + nameAndRv(v));
}
void RecordingStore::removeJson(const rapidjson::Value& v) {
  calls.push_back("delete " + nameAndRv(v));
}

void spawnTicker(net::io_context& ioc, std::function<bool()> turn, bool* done) {
  net::co_spawn(ioc, tick(std::move(turn), done), egress::rethrowUnhandled);
}

net::awaitable<kube::Result<kube::ListPage>> FakeListerWatcher::list(kube::ListOptions options) {
  lists.push_back(options);
  if (hangLists) {
    co_await waitForCancellation();
    ++cancelled;
    co_return kube::Error::cancelled();
  }
  if (onListPage) {
    co_return onListPage(options);
  }
  auto listed = onList(options);
  if (!listed) {
    co_return listed.error();
  }
  // Through the real item-by-item decoder, as the REST client's pages are.
  co_return kube::ListPage::fromDocument(*listed);
}

net::awaitable<kube::Result<std::unique_ptr<kube::Watch>>> FakeListerWatcher::watch(
    kube::ListOptions options) {
  watches.push_back(options);
  if (hangWatches) {
    co_await waitForCancellation();
    ++cancelled;
    co_return kube::Error::cancelled();
  }
  co_return onWatch(options);
}

}  // namespace egress::cache::testing
