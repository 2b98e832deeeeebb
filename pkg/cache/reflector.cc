#include "pkg/cache/reflector.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <spdlog/spdlog.h>

namespace egress::cache {

bool isExpiredError(const kube::Error& e) {
  return e.isGone() || e.isResourceExpired();
}

bool isTooLargeResourceVersionError(const kube::Error& e) {
  for (const auto& cause : e.status().causes) {
    if (cause.reason == "ResourceVersionTooLarge") {
      return true;
    }
  }
  return e.isTimeout() &&
         e.status().message.find("Too large resource version") != std::string::npos;
}

namespace {

bool isConnectionRefused(const kube::Error& e) {
  return e.isTransport() && e.message().find("refused") != std::string::npos;
}

// Servers without streaming lists reject its options (1.20: resourceVersionMatch is forbidden
// for watch) or do not know them.
bool meansWatchListUnsupported(const kube::Error& e) {
  return e.isInvalid() || e.isBadRequest() || e.httpCode() == 422;
}

std::string resourceVersionOf(const rapidjson::Value& obj) {
  auto meta = obj.FindMember("metadata");
  if (meta == obj.MemberEnd() || !meta->value.IsObject()) {
    return {};
  }
  auto rv = meta->value.FindMember("resourceVersion");
  return rv != meta->value.MemberEnd() && rv->value.IsString() ? rv->value.GetString() : "";
}

bool isInitialEventsEnd(const rapidjson::Value& obj) {
  auto meta = obj.FindMember("metadata");
  if (meta == obj.MemberEnd() || !meta->value.IsObject()) {
    return false;
  }
  auto ann = meta->value.FindMember("annotations");
  if (ann == meta->value.MemberEnd() || !ann->value.IsObject()) {
    return false;
  }
  auto v = ann->value.FindMember(kInitialEventsAnnotation);
  return v != ann->value.MemberEnd() && v->value.IsString() &&
         std::string_view(v->value.GetString()) == "true";
}

}  // namespace

Reflector::Reflector(ListerWatcher& lw, ReflectorStore& store, Clock& clock,
                     ReflectorOptions options, std::function<double()> random)
    : lw_(lw),
      store_(store),
      clock_(clock),
      options_(std::move(options)),
      random_(std::move(random)),
      backoff_(options_.backoff, random_),
      backoffTimer_(clock.makeTimer()),
      resyncTimer_(clock.makeTimer()) {
  stats_.watchListSupported = options_.useWatchList;
}

Reflector::~Reflector() = default;

void Reflector::stop() {
  stopped_ = true;
  if (currentWatch_ != nullptr) {
    currentWatch_->cancel();
  }
  backoffTimer_->cancel();
  resyncTimer_->cancel();
}

net::awaitable<void> Reflector::run() {
  ++running_;
  if (options_.resyncPeriod.count() > 0) {
    ++running_;
    // Named locals: g++ 12 miscompiles a co_await inside co_spawn's argument list (the new
    // coroutine's `this` comes out garbage).
    auto executor = co_await net::this_coro::executor;
    auto loop = resyncLoop(this);
    net::co_spawn(executor, std::move(loop), rethrowUnhandled);
  }
  while (!stopped_) {
    auto result = co_await listAndWatch();
    if (stopped_) {
      break;
    }
    if (!result) {
      const auto& err = result.error();
      if (isExpiredError(err)) {
        spdlog::debug("reflector {}: {} (relisting)", options_.name, err.message());
      } else {
        spdlog::warn("reflector {}: {}", options_.name, err.message());
      }
    }
    // Every ListAndWatch return is followed by the backoff (client-go's wait.BackoffUntil).
    if (!co_await backoffWait()) {
      break;
    }
  }
  --running_;
}

net::awaitable<bool> Reflector::backoffWait() {
  ++stats_.backoffs;
  const auto delay = backoff_.next(clock_.now());
  const bool waited = co_await backoffTimer_->waitUntil(clock_.now() + delay);
  co_return waited && !stopped_;
}

std::string Reflector::relistResourceVersion() const {
  if (rvUnavailable_) {
    return "";  // a quorum read: the last one we had is gone or too new
  }
  if (lastSyncRv_.empty()) {
    return "0";  // first list: may be served from the watch cache
  }
  return lastSyncRv_;
}

int64_t Reflector::watchTimeoutSeconds() {
  const auto min = options_.minWatchTimeout.count();
  return min + static_cast<int64_t>(random_() * static_cast<double>(min));
}

net::awaitable<kube::Result<Ok>> Reflector::listAndWatch() {
  if (options_.useWatchList && stats_.watchListSupported) {
    auto streamed = co_await watchList();
    if (!streamed) {
      co_return streamed.error();
    }
    if (*streamed == Outcome::Ok) {
      co_return co_await watchLoop();
    }
    spdlog::info("reflector {}: the server has no streaming lists; using LIST", options_.name);
    stats_.watchListSupported = false;
  }
  auto listed = co_await list();
  if (!listed) {
    co_return listed.error();
  }
  co_return co_await watchLoop();
}

net::awaitable<kube::Result<Ok>> Reflector::list() {
  for (int attempt = 0;; ++attempt) {
    const std::string rv = relistResourceVersion();
    kube::ListOptions opts;
    opts.resourceVersion = rv;
    // A list at a specific resourceVersion is served whole from the watch cache: no paging,
    // unless an earlier RV="0" list showed the cache is off (it came back paginated).
    const bool exactish = !rv.empty() && rv != "0";
    opts.limit = (exactish && !paginatedResult_) ? 0 : options_.pageSize;
    store_.startList();
    bool paginated = false;
    std::string listRv;
    bool retryFromEmpty = false;
    for (;;) {
      ++stats_.listRequests;
      auto page = co_await lw_.list(opts);
      if (stopped_) {
        co_return Ok{};
      }
      if (!page) {
        const auto& err = page.error();
        if (!opts.continueToken.empty() && isExpiredError(err)) {
          // pager.FullListIfExpired: the continue token expired; list everything in one go.
          opts.continueToken.clear();
          opts.limit = 0;
          opts.resourceVersion = rv;
          store_.startList();
          continue;
        }
        if ((isExpiredError(err) || isTooLargeResourceVersionError(err)) && !rv.empty()) {
          rvUnavailable_ = true;
          retryFromEmpty = true;
          break;
        }
        co_return page.error();
      }
      const auto& doc = *page;
      if (auto items = doc.FindMember("items");
          items != doc.MemberEnd() && items->value.IsArray()) {
        for (const auto& item : items->value.GetArray()) {
          store_.listItem(item);
        }
      }
      std::string cont;
      if (auto meta = doc.FindMember("metadata");
          meta != doc.MemberEnd() && meta->value.IsObject()) {
        if (auto r = meta->value.FindMember("resourceVersion");
            r != meta->value.MemberEnd() && r->value.IsString()) {
          listRv = r->value.GetString();
        }
        if (auto c = meta->value.FindMember("continue");
            c != meta->value.MemberEnd() && c->value.IsString()) {
          cont = c->value.GetString();
        }
      }
      if (cont.empty()) {
        break;
      }
      paginated = true;
      opts.continueToken = cont;
      // A continuation carries its own snapshot; resourceVersion is not allowed with it.
      opts.resourceVersion.clear();
    }
    if (retryFromEmpty) {
      if (attempt > 0) {
        co_return kube::Error::decode("relist from \"\" failed");
      }
      continue;  // immediately, with RV "" (item 7)
    }
    if (rv == "0" && paginated) {
      paginatedResult_ = true;
    }
    rvUnavailable_ = false;
    store_.finishList(listRv);
    lastSyncRv_ = listRv;
    ++stats_.lists;
    co_return Ok{};
  }
}

net::awaitable<kube::Result<Reflector::Outcome>> Reflector::watchList() {
  kube::ListOptions opts;
  opts.resourceVersion = rvUnavailable_ ? "" : lastSyncRv_;
  opts.sendInitialEvents = true;
  opts.resourceVersionMatch = "NotOlderThan";
  opts.allowWatchBookmarks = true;
  opts.timeoutSeconds = watchTimeoutSeconds();
  ++stats_.watches;
  auto watch = co_await lw_.watch(opts);
  if (!watch) {
    if (meansWatchListUnsupported(watch.error())) {
      co_return Outcome::Unsupported;
    }
    if (isExpiredError(watch.error()) || isTooLargeResourceVersionError(watch.error())) {
      rvUnavailable_ = true;
    }
    co_return watch.error();
  }
  currentWatch_ = watch->get();
  store_.startList();
  bool sawEvent = false;
  for (;;) {
    auto next = co_await (*watch)->next();
    if (stopped_) {
      currentWatch_ = nullptr;
      co_return Outcome::Ok;
    }
    if (!next) {
      currentWatch_ = nullptr;
      if (!sawEvent && meansWatchListUnsupported(next.error())) {
        co_return Outcome::Unsupported;
      }
      if (isExpiredError(next.error()) || isTooLargeResourceVersionError(next.error())) {
        rvUnavailable_ = true;
      }
      co_return next.error();
    }
    if (!next->has_value()) {
      currentWatch_ = nullptr;
      co_return kube::Error::decode("streaming list ended before its initial events did");
    }
    sawEvent = true;
    const auto& event = **next;
    if (event.type == kube::WatchEventType::Added) {
      store_.listItem(event.object());
    } else if (event.type == kube::WatchEventType::Bookmark && isInitialEventsEnd(event.object())) {
      const std::string rv = resourceVersionOf(event.object());
      rvUnavailable_ = false;
      store_.finishList(rv);
      lastSyncRv_ = rv;
      ++stats_.lists;
      break;
    }
  }
  // The same stream goes on with ordinary events.
  auto watched = co_await handleWatch(**watch);
  currentWatch_ = nullptr;
  if (!watched) {
    co_return watched.error();
  }
  co_return Outcome::Ok;
}

net::awaitable<kube::Result<Ok>> Reflector::watchLoop() {
  while (!stopped_) {
    kube::ListOptions opts;
    opts.resourceVersion = lastSyncRv_;
    opts.timeoutSeconds = watchTimeoutSeconds();
    opts.allowWatchBookmarks = true;
    ++stats_.watches;
    auto watch = co_await lw_.watch(opts);
    if (stopped_) {
      break;
    }
    if (!watch) {
      const auto& err = watch.error();
      if (isConnectionRefused(err) || err.isTooManyRequests()) {
        // The server is restarting or shedding load: wait, then watch again, no relist.
        if (!co_await backoffWait()) {
          break;
        }
        continue;
      }
      co_return watch.error();
    }
    currentWatch_ = watch->get();
    auto watched = co_await handleWatch(**watch);
    currentWatch_ = nullptr;
    if (!watched) {
      if (watched.error().isTooManyRequests()) {
        if (!co_await backoffWait()) {
          break;
        }
        continue;
      }
      // 410 during the watch: relist from the last RV we saw, not from "" (item 14).
      co_return watched.error();
    }
    // A clean end (timeoutSeconds): watch again at once from the last RV.
  }
  co_return Ok{};
}

net::awaitable<kube::Result<Ok>> Reflector::handleWatch(kube::Watch& watch) {
  const auto start = clock_.now();
  int events = 0;
  for (;;) {
    auto next = co_await watch.next();
    if (stopped_) {
      co_return Ok{};
    }
    if (!next) {
      co_return next.error();
    }
    if (!next->has_value()) {
      if (events == 0 && clock_.now() - start < std::chrono::seconds(1)) {
        co_return kube::Error::transport("very short watch: closed within 1s with no events");
      }
      co_return Ok{};
    }
    ++events;
    dispatch(**next);
  }
}

void Reflector::dispatch(const kube::WatchEvent& event) {
  const auto& obj = event.object();
  switch (event.type) {
    case kube::WatchEventType::Added:
      store_.addJson(obj);
      break;
    case kube::WatchEventType::Modified:
      store_.updateJson(obj);
      break;
    case kube::WatchEventType::Deleted:
      store_.removeJson(obj);
      break;
    case kube::WatchEventType::Bookmark:
      store_.bookmark(resourceVersionOf(obj));
      break;
    case kube::WatchEventType::Error:
      return;  // WatchStream turns these into errors before they get here
  }
  if (auto rv = resourceVersionOf(obj); !rv.empty()) {
    lastSyncRv_ = rv;
  }
}

net::awaitable<void> Reflector::resyncLoop(Reflector* self) {
  while (!self->stopped_) {
    const auto deadline = self->clock_.now() + self->options_.resyncPeriod;
    if (!co_await self->resyncTimer_->waitUntil(deadline) || self->stopped_) {
      break;
    }
    if (!self->options_.shouldResync || self->options_.shouldResync()) {
      self->store_.resync();
    }
  }
  --self->running_;
}

RestListerWatcher::RestListerWatcher(kube::RestClient& client, kube::Resource resource,
                                     std::string ns, std::string labelSelector,
                                     std::string fieldSelector)
    : client_(client),
      resource_(std::move(resource)),
      ns_(std::move(ns)),
      labelSelector_(std::move(labelSelector)),
      fieldSelector_(std::move(fieldSelector)) {}

net::awaitable<kube::Result<rapidjson::Document>> RestListerWatcher::list(
    kube::ListOptions options) {
  options.labelSelector = labelSelector_;
  options.fieldSelector = fieldSelector_;
  co_return co_await client_.list(resource_, ns_, std::move(options));
}

net::awaitable<kube::Result<std::unique_ptr<kube::Watch>>> RestListerWatcher::watch(
    kube::ListOptions options) {
  options.labelSelector = labelSelector_;
  options.fieldSelector = fieldSelector_;
  auto w = co_await client_.watch(resource_, ns_, std::move(options));
  if (!w) {
    co_return w.error();
  }
  co_return std::unique_ptr<kube::Watch>(std::move(*w));
}

std::string RestListerWatcher::describe() const {
  return resource_.resource + (ns_.empty() ? "" : " in " + ns_);
}

}  // namespace egress::cache
