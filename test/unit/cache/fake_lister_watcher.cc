#include "test/unit/cache/fake_lister_watcher.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace egress::cache::testing {

meta::Decoded<TestObject> decodeTestObject(const rapidjson::Value& v) {
  TestObject o;
  auto meta = meta::decodeObjectMeta(v["metadata"]);
  if (!meta) {
    return meta.error();
  }
  o.metadata = std::move(*meta);
  if (auto it = v.FindMember("value"); it != v.MemberEnd() && it->value.IsString()) {
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

net::awaitable<kube::Result<rapidjson::Document>> FakeListerWatcher::list(
    kube::ListOptions options) {
  lists.push_back(options);
  co_return onList(options);
}

net::awaitable<kube::Result<std::unique_ptr<kube::Watch>>> FakeListerWatcher::watch(
    kube::ListOptions options) {
  watches.push_back(options);
  co_return onWatch(options);
}

}  // namespace egress::cache::testing
