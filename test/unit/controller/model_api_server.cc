#include "test/unit/controller/model_api_server.h"

#include <deque>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "pkg/apis/meta/time.h"
#include "pkg/base/notifier.h"
#include "pkg/kube/list_page.h"
#include "pkg/kube/watch_decoder.h"
#include "test/unit/cache/fake_lister_watcher.h"

namespace egress::controller::model {

namespace {

using rapidjson::Document;
using rapidjson::Value;

std::string statusBody(int code, const std::string& reason, const std::string& message) {
  Document d(rapidjson::kObjectType);
  auto& a = d.GetAllocator();
  d.AddMember("kind", "Status", a);
  d.AddMember("apiVersion", "v1", a);
  d.AddMember("status", "Failure", a);
  d.AddMember("message", Value(message.c_str(), a), a);
  d.AddMember("reason", Value(reason.c_str(), a), a);
  d.AddMember("code", code, a);
  return toJson(d);
}

kube::HttpResponse reply(int code, std::string body) {
  kube::HttpResponse r;
  r.status = code;
  r.headers["content-type"] = "application/json";
  r.body = std::move(body);
  return r;
}

kube::HttpResponse failure(int code, const std::string& reason, const std::string& message) {
  return reply(code, statusBody(code, reason, message));
}

Value& member(Value& obj, const char* name, Document::AllocatorType& a) {
  if (!obj.HasMember(name)) {
    obj.AddMember(Value(name, a), Value(rapidjson::kObjectType), a);
  }
  return obj[name];
}

void setString(Value& obj, const char* name, const std::string& v, Document::AllocatorType& a) {
  if (obj.HasMember(name)) {
    obj[name].SetString(v.c_str(), a);
  } else {
    obj.AddMember(Value(name, a), Value(v.c_str(), a), a);
  }
}

void setMember(Value& obj, const char* name, Value v, Document::AllocatorType& a) {
  if (obj.HasMember(name)) {
    obj[name] = v;
  } else {
    obj.AddMember(Value(name, a), v, a);
  }
}

// RFC 7386, except that two "conditions" arrays merge by their items' "type" (strategic merge
// patch's rule for conditions, which the operator's pod status patches rely on).
void mergePatch(Value& target, const Value& patch, Document::AllocatorType& a) {
  if (!patch.IsObject()) {
    target.CopyFrom(patch, a);
    return;
  }
  if (!target.IsObject()) {
    target.SetObject();
  }
  for (auto it = patch.MemberBegin(); it != patch.MemberEnd(); ++it) {
    const char* name = it->name.GetString();
    if (it->value.IsNull()) {
      target.RemoveMember(name);
      continue;
    }
    if (std::string_view(name) == "conditions" && it->value.IsArray() && target.HasMember(name) &&
        target[name].IsArray()) {
      auto& list = target[name];
      for (const auto& c : it->value.GetArray()) {
        const std::string type = stringAt(c, {"type"});
        bool merged = false;
        for (auto& old : list.GetArray()) {
          if (stringAt(old, {"type"}) == type) {
            old.CopyFrom(c, a);
            merged = true;
          }
        }
        if (!merged) {
          list.PushBack(Value(c, a), a);
        }
      }
      continue;
    }
    if (!target.HasMember(name)) {
      target.AddMember(Value(name, a), Value(rapidjson::kNullType), a);
    }
    mergePatch(target[name], it->value, a);
  }
}

std::map<std::string, std::string> parseQuery(std::string_view q) {
  std::map<std::string, std::string> out;
  while (!q.empty()) {
    const size_t amp = q.find('&');
    std::string_view kv = q.substr(0, amp);
    const size_t eq = kv.find('=');
    std::string value(eq == std::string_view::npos ? "" : kv.substr(eq + 1));
    // Percent-decoding of the few characters a label selector carries.
    std::string decoded;
    for (size_t i = 0; i < value.size(); ++i) {
      if (value[i] == '%' && i + 2 < value.size()) {
        decoded += static_cast<char>(std::stoi(value.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        decoded += value[i];
      }
    }
    out[std::string(kv.substr(0, eq))] = decoded;
    if (amp == std::string_view::npos) {
      break;
    }
    q.remove_prefix(amp + 1);
  }
  return out;
}

// Equality selectors only ("a=b,c!=d,e"), all the operator asks for.
bool selectorMatches(const std::string& selector, const Value& obj) {
  const Value* labels = path(obj, {"metadata", "labels"});
  std::string_view s = selector;
  while (!s.empty()) {
    const size_t comma = s.find(',');
    std::string_view req = s.substr(0, comma);
    const size_t ne = req.find("!=");
    const size_t eq = req.find('=');
    std::string key(req.substr(0, ne != std::string_view::npos ? ne : eq));
    const bool has = labels != nullptr && labels->HasMember(key.c_str());
    const std::string value = has ? (*labels)[key.c_str()].GetString() : "";
    if (ne != std::string_view::npos) {
      if (has && value == req.substr(ne + 2)) {
        return false;
      }
    } else if (eq != std::string_view::npos) {
      if (!has || value != req.substr(eq + 1)) {
        return false;
      }
    } else if (!has) {
      return false;
    }
    if (comma == std::string_view::npos) {
      break;
    }
    s.remove_prefix(comma + 1);
  }
  return true;
}

struct Target {
  std::string resource;
  std::string ns;
  std::string name;
  std::string subresource;
  std::map<std::string, std::string> query;
};

Target parseTarget(const std::string& target) {
  Target t;
  const size_t qm = target.find('?');
  if (qm != std::string::npos) {
    t.query = parseQuery(std::string_view(target).substr(qm + 1));
  }
  std::vector<std::string> seg;
  std::string_view p = std::string_view(target).substr(0, qm);
  while (!p.empty()) {
    if (p.front() == '/') {
      p.remove_prefix(1);
      continue;
    }
    const size_t slash = p.find('/');
    seg.emplace_back(p.substr(0, slash));
    p.remove_prefix(slash == std::string_view::npos ? p.size() : slash);
  }
  size_t i = !seg.empty() && seg[0] == "api" ? 2 : 3;
  if (seg.size() > i + 2 && seg[i] == "namespaces") {
    t.ns = seg[i + 1];
    i += 2;
  }
  if (i < seg.size()) {
    t.resource = seg[i];
  }
  if (i + 1 < seg.size()) {
    t.name = seg[i + 1];
  }
  if (i + 2 < seg.size()) {
    t.subresource = seg[i + 2];
  }
  return t;
}

std::string header(const kube::HttpRequest& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k.size() == name.size() && std::equal(k.begin(), k.end(), name.begin(), [](char a, char b) {
          return std::tolower(a) == std::tolower(b);
        })) {
      return v;
    }
  }
  return "";
}

// Resources whose writes are never faulted: Events (best effort anyway) and Leases (leader
// changes are the test's to make, by partitions).
bool faultable(const std::string& resource) {
  return resource != "events" && resource != "leases";
}

}  // namespace

std::string toJson(const Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  return std::string(buf.GetString(), buf.GetSize());
}

Document parseJson(const std::string& json) {
  Document d;
  d.Parse(json.c_str());
  return d;
}

const Value* path(const Value& obj, std::initializer_list<const char*> keys) {
  const Value* v = &obj;
  for (const char* k : keys) {
    if (!v->IsObject() || !v->HasMember(k)) {
      return nullptr;
    }
    v = &(*v)[k];
  }
  return v;
}

std::string stringAt(const Value& obj, std::initializer_list<const char*> keys) {
  const Value* v = path(obj, keys);
  return v != nullptr && v->IsString() ? v->GetString() : "";
}

std::vector<std::string> stringsAt(const Value& obj, std::initializer_list<const char*> keys) {
  const Value* v = path(obj, keys);
  if (v == nullptr || !v->IsArray()) {
    return {};
  }
  std::vector<std::string> out;
  for (const auto& s : v->GetArray()) {
    out.emplace_back(s.IsString() ? s.GetString() : "");
  }
  return out;
}

std::string keyOf(const Value& obj) {
  const std::string ns = stringAt(obj, {"metadata", "namespace"});
  const std::string name = stringAt(obj, {"metadata", "name"});
  return ns.empty() ? name : ns + "/" + name;
}

struct ApiServer::Watcher {
  explicit Watcher(const net::any_io_executor& ex) : wake(ex) {}
  std::string resource;
  std::string ns;
  std::string selector;
  const Link* link = nullptr;
  std::deque<std::pair<Clock::TimePoint, std::string>> pending;  // due time, event line
  std::deque<std::variant<std::string, kube::Error>> ready;
  Clock::TimePoint last{};
  Notifier wake;
  bool open = true;
};

namespace {

class ModelWatch : public kube::Watch {
 public:
  explicit ModelWatch(std::shared_ptr<ApiServer::Watcher> w) : w_(std::move(w)) {}
  ~ModelWatch() override { w_->open = false; }
  net::awaitable<kube::Result<std::optional<kube::WatchEvent>>> next() override {
    auto w = w_;
    for (;;) {
      if (!w->open) {
        co_return kube::Error::cancelled();
      }
      if (!w->ready.empty()) {
        auto item = std::move(w->ready.front());
        w->ready.pop_front();
        if (auto* err = std::get_if<kube::Error>(&item)) {
          w->open = false;
          co_return *err;
        }
        auto doc = parseJson(std::get<std::string>(item));
        kube::WatchEventType type = kube::WatchEventType::Added;
        const std::string t = doc["type"].GetString();
        if (t == "MODIFIED") {
          type = kube::WatchEventType::Modified;
        } else if (t == "DELETED") {
          type = kube::WatchEventType::Deleted;
        }
        co_return std::optional<kube::WatchEvent>(
            cache::testing::event(type, toJson(doc["object"])));
      }
      if (!co_await w->wake.wait()) {
        co_return kube::Error::cancelled();
      }
    }
  }
  void cancel() override {
    w_->open = false;
    w_->wake.notify();
  }

 private:
  std::shared_ptr<ApiServer::Watcher> w_;
};

class ModelListerWatcher : public cache::ListerWatcher {
 public:
  ModelListerWatcher(
      ApiServer& server,
      std::function<void(std::shared_ptr<ApiServer::Watcher>, const std::string&)> addWatcher,
      std::string resource, std::string ns, std::string selector, const Link& link)
      : server_(server),
        addWatcher_(std::move(addWatcher)),
        resource_(std::move(resource)),
        ns_(std::move(ns)),
        selector_(std::move(selector)),
        link_(link) {}

  net::awaitable<kube::Result<kube::ListPage>> list(kube::ListOptions) override {
    if (link_.partitioned) {
      co_return kube::Error::transport("partitioned from the API server");
    }
    bool lost = false;
    kube::HttpRequest req;
    req.method = "GET";
    req.target = "/api/v1/" + (ns_.empty() ? "" : "namespaces/" + ns_ + "/") + resource_ +
                 (selector_.empty() ? "" : "?labelSelector=" + selector_);
    auto r = server_.handle(req, lost);
    auto doc = parseJson(r.body);
    co_return kube::ListPage::fromDocument(doc);
  }

  net::awaitable<kube::Result<std::unique_ptr<kube::Watch>>> watch(
      kube::ListOptions options) override {
    if (link_.partitioned) {
      co_return kube::Error::transport("partitioned from the API server");
    }
    auto w = std::make_shared<ApiServer::Watcher>(co_await net::this_coro::executor);
    w->resource = resource_;
    w->ns = ns_;
    w->selector = selector_;
    w->link = &link_;
    addWatcher_(w, options.resourceVersion);
    co_return std::unique_ptr<kube::Watch>(std::make_unique<ModelWatch>(w));
  }

  std::string describe() const override { return resource_; }

 private:
  ApiServer& server_;
  std::function<void(std::shared_ptr<ApiServer::Watcher>, const std::string&)> addWatcher_;
  std::string resource_;
  std::string ns_;
  std::string selector_;
  const Link& link_;
};

class ModelTransport : public kube::Transport {
 public:
  ModelTransport(ApiServer& server, Link& link) : server_(server), link_(link) {}
  net::awaitable<kube::Result<kube::HttpResponse>> roundTrip(kube::HttpRequest request,
                                                             bool) override {
    if (link_.partitioned) {
      co_return kube::Error::transport("partitioned from the API server");
    }
    bool lost = false;
    auto r = server_.handle(request, lost);
    if (lost) {
      co_return kube::Error::transport("connection reset after the request was sent");
    }
    co_return r;
  }
  net::awaitable<kube::Result<std::unique_ptr<kube::ResponseStream>>> openStream(
      kube::HttpRequest) override {
    co_return kube::Error::transport("the model serves watches through its ListerWatchers");
  }
  kube::Result<Ok> setClientCertificate(const std::string&, const std::string&) override {
    return Ok{};
  }
  const std::string& hostLabel() const override { return host_; }

 private:
  ApiServer& server_;
  Link& link_;
  std::string host_ = "model";
};

}  // namespace

ApiServer::ApiServer(net::any_io_executor executor, Clock& clock, std::mt19937_64& random)
    : executor_(std::move(executor)), clock_(clock), random_(random) {}

ApiServer::~ApiServer() {
  for (auto& w : watchers_) {
    w->open = false;
    w->wake.notify();
  }
}

bool ApiServer::roll(double p) {
  return p > 0 && std::uniform_real_distribution<double>(0, 1)(random_) < p;
}

const Value* ApiServer::get(const std::string& resource, const std::string& key) const {
  auto r = objects_.find(resource);
  if (r == objects_.end()) {
    return nullptr;
  }
  auto it = r->second.find(key);
  return it == r->second.end() ? nullptr : &it->second;
}

std::vector<const Value*> ApiServer::list(const std::string& resource) const {
  std::vector<const Value*> out;
  auto r = objects_.find(resource);
  if (r != objects_.end()) {
    for (const auto& [key, obj] : r->second) {
      out.push_back(&obj);
    }
  }
  return out;
}

void ApiServer::queue(Watcher& w, const Event& e) {
  Document obj = parseJson(e.json);
  if (!w.ns.empty() && stringAt(obj, {"metadata", "namespace"}) != w.ns) {
    return;
  }
  if (!w.selector.empty() && !selectorMatches(w.selector, obj)) {
    return;
  }
  Clock::TimePoint due = clock_.now();
  if (faults.maxWatchDelay.count() > 0) {
    due += std::chrono::milliseconds(
        std::uniform_int_distribution<int64_t>(0, faults.maxWatchDelay.count())(random_));
  }
  due = std::max(due, w.last);
  w.last = due;
  w.pending.emplace_back(due, R"({"type":")" + e.type + R"(","object":)" + e.json + "}");
}

void ApiServer::emit(const std::string& resource, const std::string& type, const Value& obj) {
  Event e{resource, rv_, type, toJson(obj)};
  for (auto& w : watchers_) {
    if (w->open && w->resource == resource) {
      queue(*w, e);
    }
  }
  history_.push_back(std::move(e));
}

void ApiServer::deliver() {
  const auto now = clock_.now();
  std::erase_if(watchers_, [](const auto& w) { return !w->open; });
  for (auto& w : watchers_) {
    bool any = false;
    while (!w->pending.empty() && w->pending.front().first <= now) {
      w->ready.emplace_back(std::move(w->pending.front().second));
      w->pending.pop_front();
      any = true;
    }
    if (any) {
      w->wake.notify();
    }
  }
}

void ApiServer::breakWatches(const Link& link) {
  for (auto& w : watchers_) {
    if (w->open && w->link == &link) {
      w->pending.clear();
      w->ready.emplace_back(kube::Error::transport("connection reset"));
      w->wake.notify();
    }
  }
}

std::string ApiServer::create(const std::string& resource, Document obj) {
  const std::string key = keyOf(obj);
  auto& bucket = objects_[resource];
  if (bucket.contains(key)) {
    return "";
  }
  auto& a = obj.GetAllocator();
  auto& meta = member(obj, "metadata", a);
  std::string uid = "uid-" + std::to_string(++uid_);
  setString(meta, "uid", uid, a);
  setString(meta, "resourceVersion", std::to_string(++rv_), a);
  setString(meta, "creationTimestamp", meta::formatRfc3339(clock_.wallNow()), a);
  setMember(meta, "generation", Value(int64_t{1}), a);
  emit(resource, "ADDED", obj);
  bucket.emplace(key, std::move(obj));
  return uid;
}

void ApiServer::replace(const std::string& resource, Document obj) {
  const std::string key = keyOf(obj);
  auto& old = objects_[resource][key];
  auto& a = obj.GetAllocator();
  auto& meta = member(obj, "metadata", a);
  int64_t generation = 1;
  if (const Value* g = path(old, {"metadata", "generation"}); g != nullptr && g->IsInt64()) {
    generation = g->GetInt64();
  }
  const Value* oldSpec = path(old, {"spec"});
  const Value* newSpec = path(obj, {"spec"});
  if ((oldSpec == nullptr) != (newSpec == nullptr) ||
      (oldSpec != nullptr && toJson(*oldSpec) != toJson(*newSpec))) {
    ++generation;
  }
  setMember(meta, "generation", Value(generation), a);
  setString(meta, "resourceVersion", std::to_string(++rv_), a);
  emit(resource, "MODIFIED", obj);
  old = std::move(obj);
}

void ApiServer::remove(const std::string& resource, const std::string& key) {
  auto& bucket = objects_[resource];
  auto it = bucket.find(key);
  if (it == bucket.end()) {
    return;
  }
  auto& a = it->second.GetAllocator();
  setString(member(it->second, "metadata", a), "resourceVersion", std::to_string(++rv_), a);
  emit(resource, "DELETED", it->second);
  bucket.erase(it);
}

kube::HttpResponse ApiServer::handle(const kube::HttpRequest& request, bool& lostReply) {
  auto r = answer(request, lostReply);
  if (onWrite && request.method != "GET") {
    onWrite(request, r.status, lostReply);
  }
  return r;
}

kube::HttpResponse ApiServer::answer(const kube::HttpRequest& request, bool& lostReply) {
  Target t = parseTarget(request.target);
  const std::string& m = request.method;
  if (t.resource.empty()) {
    // Discovery (/apis/policy/v1 and the like): everything is served.
    return reply(200, R"({"kind":"APIResourceList","resources":[]})");
  }
  const std::string key = t.ns.empty() ? t.name : t.ns + "/" + t.name;
  if (m == "GET") {
    if (!t.name.empty()) {
      const Value* obj = get(t.resource, key);
      return obj == nullptr ? failure(404, "NotFound", t.resource + " \"" + t.name + "\" not found")
                            : reply(200, toJson(*obj));
    }
    std::string items;
    for (const Value* obj : list(t.resource)) {
      if (!t.ns.empty() && stringAt(*obj, {"metadata", "namespace"}) != t.ns) {
        continue;
      }
      if (t.query.contains("labelSelector") && !selectorMatches(t.query["labelSelector"], *obj)) {
        continue;
      }
      items += (items.empty() ? "" : ",") + toJson(*obj);
    }
    return reply(200, R"({"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":")" +
                          std::to_string(rv_) + R"("},"items":[)" + items + "]}");
  }
  if (t.resource == "events") {
    return reply(201, request.body.empty() ? "{}" : request.body);
  }
  ++writes_;
  if (faultable(t.resource)) {
    if (roll(faults.conflict)) {
      ++faulted_;
      return failure(409, "Conflict", "the object has been modified (injected)");
    }
    if (roll(faults.serverError)) {
      ++faulted_;
      return failure(500, "InternalError", "injected");
    }
    lostReply = roll(faults.lostReply);
    faulted_ += lostReply ? 1 : 0;
  }
  Document body = parseJson(request.body.empty() ? "{}" : request.body);
  auto& a = body.GetAllocator();
  const Value* current = t.name.empty() ? nullptr : get(t.resource, key);
  const std::string contentType = header(request, "content-type");

  if (m == "POST") {
    auto& meta = member(body, "metadata", a);
    if (!t.ns.empty()) {
      setString(meta, "namespace", t.ns, a);
    }
    const std::string name = stringAt(body, {"metadata", "name"});
    const std::string uid = create(t.resource, parseJson(toJson(body)));
    if (uid.empty()) {
      return failure(409, "AlreadyExists", t.resource + " \"" + name + "\" already exists");
    }
    return reply(201, toJson(*get(t.resource, keyOf(body))));
  }
  if (m == "DELETE") {
    if (current == nullptr) {
      return failure(404, "NotFound", t.resource + " \"" + t.name + "\" not found");
    }
    const std::string wantUid = stringAt(body, {"preconditions", "uid"});
    if (!wantUid.empty() && wantUid != stringAt(*current, {"metadata", "uid"})) {
      return failure(409, "Conflict", "Precondition failed: UID in precondition: " + wantUid);
    }
    const Value* finalizers = path(*current, {"metadata", "finalizers"});
    const bool graceful = t.resource == "pods" ||
                          (finalizers != nullptr && finalizers->IsArray() && !finalizers->Empty());
    if (!graceful) {
      std::string json = toJson(*current);
      remove(t.resource, key);
      return reply(200, json);
    }
    Document next = parseJson(toJson(*current));
    auto& na = next.GetAllocator();
    if (!path(next, {"metadata", "deletionTimestamp"})) {
      setString(next["metadata"], "deletionTimestamp", meta::formatRfc3339(clock_.wallNow()), na);
      replace(t.resource, std::move(next));
    }
    return reply(200, toJson(*get(t.resource, key)));
  }

  // PUT, PATCH (merge, strategic merge, apply).
  const bool apply = m == "PATCH" && contentType.find("apply-patch") != std::string::npos;
  if (current == nullptr && !apply) {
    return failure(404, "NotFound", t.resource + " \"" + t.name + "\" not found");
  }
  if (current == nullptr) {
    auto& meta = member(body, "metadata", a);
    setString(meta, "name", t.name, a);
    if (!t.ns.empty()) {
      setString(meta, "namespace", t.ns, a);
    }
    if (t.subresource == "status") {
      return failure(404, "NotFound", t.resource + " \"" + t.name + "\" not found");
    }
    create(t.resource, parseJson(toJson(body)));
    return reply(201, toJson(*get(t.resource, key)));
  }
  if (m == "PUT") {
    const std::string rv = stringAt(body, {"metadata", "resourceVersion"});
    if (!rv.empty() && rv != stringAt(*current, {"metadata", "resourceVersion"})) {
      return failure(409, "Conflict",
                     "Operation cannot be fulfilled on " + t.resource + " \"" + t.name +
                         "\": the object has been modified; please apply your changes to the "
                         "latest version and try again");
    }
  }
  Document next = parseJson(toJson(*current));
  auto& na = next.GetAllocator();
  const bool statusOnly = t.subresource == "status";
  if (m == "PUT" || apply) {
    // The whole (sub)resource is the body's; what the server owns stays.
    if (statusOnly) {
      if (body.HasMember("status")) {
        setMember(next, "status", Value(body["status"], na), na);
      } else {
        next.RemoveMember("status");
      }
    } else {
      Document replaced(rapidjson::kObjectType);
      auto& ra = replaced.GetAllocator();
      for (auto it = body.MemberBegin(); it != body.MemberEnd(); ++it) {
        if (std::string_view(it->name.GetString()) != "status") {
          replaced.AddMember(Value(it->name, ra), Value(it->value, ra), ra);
        }
      }
      if (next.HasMember("status")) {
        replaced.AddMember("status", Value(next["status"], ra), ra);
      }
      auto& meta = member(replaced, "metadata", ra);
      for (const char* owned : {"uid", "creationTimestamp", "deletionTimestamp", "namespace",
                                "name", "generation", "resourceVersion"}) {
        meta.RemoveMember(owned);
        if (const Value* v = path(next, {"metadata", owned})) {
          meta.AddMember(Value(owned, ra), Value(*v, ra), ra);
        }
      }
      next.Swap(replaced);
    }
  } else {
    Document patched = parseJson(toJson(*current));
    auto& pa = patched.GetAllocator();
    mergePatch(patched, body, pa);
    if (statusOnly) {
      if (patched.HasMember("status")) {
        setMember(next, "status", Value(patched["status"], na), na);
      }
    } else {
      if (next.HasMember("status")) {
        setMember(patched, "status", Value(next["status"], pa), pa);
      }
      next.Swap(patched);
    }
  }
  if (toJson(next) == toJson(*current)) {
    return reply(200, toJson(*current));  // a no-op write keeps its resourceVersion
  }
  replace(t.resource, std::move(next));
  return reply(200, toJson(*get(t.resource, key)));
}

std::unique_ptr<kube::Transport> ApiServer::transport(Link& link) {
  return std::make_unique<ModelTransport>(*this, link);
}

cache::SharedInformerFactory::ListerWatcherMaker ApiServer::listerWatchers(Link& link) {
  auto add = [this](std::shared_ptr<Watcher> w, const std::string& rv) {
    const int64_t from = rv.empty() ? rv_ : std::stoll(rv);
    for (const auto& e : history_) {
      if (e.rv > from && e.resource == w->resource) {
        queue(*w, e);
      }
    }
    watchers_.push_back(std::move(w));
  };
  return [this, add, &link](const kube::Resource& resource, const std::string& ns,
                            const std::string& selector) {
    return std::unique_ptr<cache::ListerWatcher>(
        std::make_unique<ModelListerWatcher>(*this, add, resource.resource, ns, selector, link));
  };
}

}  // namespace egress::controller::model
