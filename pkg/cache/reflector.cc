#include "pkg/cache/reflector.h"

#include <optional>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <spdlog/spdlog.h>

#include "pkg/base/heap.h"
#include "pkg/base/notifier.h"
#include "pkg/cache/undecodable.h"
#include "pkg/cache/yield.h"

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

bool isWatchConnectionEnd(const kube::Error& e) {
  // A transport error on a stream that was already established is a read that failed: the
  // server or something between us closed or reset the connection (mid-chunk or not), or
  // nothing arrived within the idle timeout. client-go's StreamWatcher ends the watch quietly
  // on all of these (EOF, unexpected EOF, IsProbableEOF, IsTimeout) and the reflector watches
  // again from the last resourceVersion; a relist would cost a full LIST per informer after
  // every apiserver restart or load-balancer idle cut.
  return e.isTransport();
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

// One request of the reflector's, run as a coroutine of its own (so that it has a cancellation
// slot of its own): what it returned or threw, and a signal for its end.
template <class T>
struct PendingRequest {
  explicit PendingRequest(const net::any_io_executor& executor) : done(executor) {}
  std::optional<T> result;
  std::exception_ptr thrown;
  bool finished = false;
  Notifier done;
};

template <class T>
net::awaitable<void> storeInto(net::awaitable<T> op, std::shared_ptr<PendingRequest<T>> call) {
  call->result.emplace(co_await std::move(op));
}

}  // namespace

struct Reflector::Core {
  Core(ListerWatcher& lw, ReflectorStore& store, Clock& clock, ReflectorOptions options,
       std::function<double()> random)
      : lw(lw),
        store(store),
        clock(clock),
        options(std::move(options)),
        random(std::move(random)),
        backoff(this->options.backoff, this->random),
        backoffTimer(clock.makeTimer()),
        resyncTimer(clock.makeTimer()) {
    stats.watchListSupported = this->options.useWatchList;
  }

  void stop() {
    if (stopped) {
      return;
    }
    stopped = true;
    if (requestInFlight) {
      cancelRequest.emit(net::cancellation_type::terminal);
    }
    if (currentWatch != nullptr) {
      currentWatch->cancel();
    }
    backoffTimer->cancel();
    resyncTimer->cancel();
  }

  // Runs one LIST or watch request with stop() able to cancel it at once: the request runs as a
  // coroutine of its own whose cancellation slot is bound to cancelRequest, so a cancellation
  // reaches whatever the request is waiting for (Asio per-operation cancellation). Asio
  // dispatches the emitted signal on the executor: inline when stop() runs on the io_context,
  // else queued ahead of anything the request's end can wake, so this state is still alive
  // when it arrives. An Asio operation_aborted escaping the ListerWatcher counts as Cancelled.
  template <class T>
  net::awaitable<kube::Result<T>> request(net::awaitable<kube::Result<T>> op) {
    if (stopped) {
      co_return kube::Error::cancelled();
    }
    auto executor = co_await net::this_coro::executor;
    auto call = std::make_shared<PendingRequest<kube::Result<T>>>(executor);
    auto task = storeInto(std::move(op), call);
    requestInFlight = true;
    net::co_spawn(
        executor, std::move(task),
        net::bind_cancellation_slot(cancelRequest.slot(), [call](const std::exception_ptr& e) {
          call->thrown = e;
          call->finished = true;
          call->done.notify();
        }));
    while (!call->finished) {
      co_await call->done.wait();
    }
    requestInFlight = false;
    if (call->thrown) {
      try {
        std::rethrow_exception(call->thrown);
      } catch (const boost::system::system_error& e) {
        if (e.code() != net::error::operation_aborted) {
          throw;
        }
      }
    }
    if (!call->result) {
      co_return kube::Error::cancelled();
    }
    co_return std::move(*call->result);
  }

  net::awaitable<bool> backoffWait() {
    ++stats.backoffs;
    const auto delay = backoff.next(clock.now());
    const bool waited = co_await backoffTimer->waitUntil(clock.now() + delay);
    co_return waited && !stopped;
  }

  std::string relistResourceVersion() const {
    if (rvUnavailable) {
      return "";  // a quorum read: the last one we had is gone or too new
    }
    if (lastSyncRv.empty()) {
      return "0";  // first list: may be served from the watch cache
    }
    return lastSyncRv;
  }

  int64_t watchTimeoutSeconds() {
    const auto min = options.minWatchTimeout.count();
    return min + static_cast<int64_t>(random() * static_cast<double>(min));
  }

  void noteRvUnavailable(const kube::Error& e) {
    if (isExpiredError(e) || isTooLargeResourceVersionError(e)) {
      rvUnavailable = true;
    }
  }

  net::awaitable<kube::Result<Ok>> listAndWatch() {
    if (options.useWatchList && stats.watchListSupported) {
      auto streamed = co_await watchList();
      if (stopped) {
        co_return Ok{};
      }
      if (streamed) {
        // The same stream goes on with ordinary events.
        auto watch = std::move(*streamed);
        currentWatch = watch.get();
        auto watched = co_await handleWatch(*watch, clock.now());
        currentWatch = nullptr;
        if (!watched) {
          co_return watched.error();
        }
        co_return co_await watchLoop();
      }
      store.abortList();
      // client-go's fallbackToList: any failure of a streaming attempt lists instead, now;
      // making progress beats waiting for a feature the server may never offer.
      if (streamed.error().isCancelled()) {
        co_return streamed.error();
      }
      if (stats.watchListSupported) {
        spdlog::warn("reflector {}: streaming list failed ({}); listing instead", options.name,
                     streamed.error().message());
      }
    }
    auto listed = co_await list();
    if (!listed) {
      co_return listed.error();
    }
    co_return co_await watchLoop();
  }

  // One complete list, at resourceVersion `rv` then, if the server no longer has it (or not
  // yet), once more at once from "": client-go's list() with its expired-RV retry.
  net::awaitable<kube::Result<Ok>> list() {
    const std::string rv = relistResourceVersion();
    auto listed = co_await listAt(rv);
    if (!listed && !stopped && !rv.empty() &&
        (isExpiredError(listed.error()) || isTooLargeResourceVersionError(listed.error()))) {
      rvUnavailable = true;
      listed = co_await listAt(relistResourceVersion());
    }
    if (!listed && !stopped) {
      store.abortList();
    }
    co_return listed;
  }

  net::awaitable<kube::Result<Ok>> listAt(std::string rv) {
    kube::ListOptions opts;
    opts.resourceVersion = rv;
    // A list at a specific resourceVersion is served whole from the watch cache: no paging,
    // unless an earlier RV="0" list showed the cache is off (it came back paginated).
    const bool exactish = !rv.empty() && rv != "0";
    opts.limit = (exactish && !paginatedResult) ? 0 : options.pageSize;
    store.startList();
    bool paginated = false;
    std::string listRv;
    size_t decoded = 0;
    for (;;) {
      ++stats.listRequests;
      auto op = lw.list(opts);
      auto page = co_await request(std::move(op));
      if (stopped) {
        co_return kube::Error::cancelled();
      }
      if (!page) {
        if (!opts.continueToken.empty() && isExpiredError(page.error())) {
          // pager.FullListIfExpired: the continue token expired; list everything in one go.
          opts.continueToken.clear();
          opts.limit = 0;
          opts.resourceVersion = rv;
          store.startList();
          continue;
        }
        co_return page.error();
      }
      // Item by item as the page decodes them (list_page.h): client-go decodes a page whole,
      // which made a 10,000-pod LIST peak at 370 MiB here. A malformed item fails the list.
      for (;;) {
        auto item = page->next();
        if (!item) {
          co_return item.error();
        }
        if (!*item) {
          break;
        }
        store.listItem(**item);
        if (shouldYield(++decoded)) {
          co_await yieldNow();
          if (stopped) {
            co_return kube::Error::cancelled();
          }
        }
      }
      listRv = page->resourceVersion();
      if (page->continueToken().empty()) {
        break;
      }
      paginated = true;
      opts.continueToken = page->continueToken();
      // A continuation carries its own snapshot; resourceVersion is not allowed with it.
      opts.resourceVersion.clear();
    }
    if (rv == "0" && paginated) {
      paginatedResult = true;
    }
    co_await store.finishList(listRv);
    // The pages and the objects in full are gone now; hand their memory back (heap.h).
    base::releaseFreeHeap();
    if (stopped) {
      co_return kube::Error::cancelled();
    }
    rvUnavailable = false;
    lastSyncRv = listRv;
    ++stats.lists;
    co_return Ok{};
  }

  // A streaming list: the watch that delivered the initial events up to the bookmark, ready to
  // go on with ordinary events; an error for any failure before that.
  net::awaitable<kube::Result<std::unique_ptr<kube::Watch>>> watchList() {
    kube::ListOptions opts;
    opts.resourceVersion = rvUnavailable ? "" : lastSyncRv;
    opts.sendInitialEvents = true;
    opts.resourceVersionMatch = "NotOlderThan";
    opts.allowWatchBookmarks = true;
    opts.timeoutSeconds = watchTimeoutSeconds();
    ++stats.watches;
    auto op = lw.watch(opts);
    auto watch = co_await request(std::move(op));
    if (!watch) {
      if (meansWatchListUnsupported(watch.error())) {
        spdlog::info("reflector {}: the server has no streaming lists; using LIST", options.name);
        stats.watchListSupported = false;
      }
      noteRvUnavailable(watch.error());
      co_return watch.error();
    }
    std::unique_ptr<kube::Watch> stream = std::move(*watch);
    currentWatch = stream.get();
    store.startList();
    bool sawEvent = false;
    size_t received = 0;
    for (;;) {
      auto next = co_await stream->next();
      if (stopped) {
        currentWatch = nullptr;
        co_return kube::Error::cancelled();
      }
      if (!next) {
        currentWatch = nullptr;
        if (!sawEvent && meansWatchListUnsupported(next.error())) {
          spdlog::info("reflector {}: the server has no streaming lists; using LIST", options.name);
          stats.watchListSupported = false;
        }
        noteRvUnavailable(next.error());
        co_return next.error();
      }
      if (!next->has_value()) {
        currentWatch = nullptr;
        co_return kube::Error::decode("streaming list ended before its initial events did");
      }
      sawEvent = true;
      const auto& event = **next;
      if (event.type == kube::WatchEventType::Added) {
        store.listItem(event.object());
        if (shouldYield(++received)) {
          co_await yieldNow();
        }
      } else if (event.type == kube::WatchEventType::Bookmark &&
                 isInitialEventsEnd(event.object())) {
        const std::string rv = rawResourceVersion(event.object());
        co_await store.finishList(rv);
        base::releaseFreeHeap();
        currentWatch = nullptr;
        if (stopped) {
          co_return kube::Error::cancelled();
        }
        rvUnavailable = false;
        lastSyncRv = rv;
        ++stats.lists;
        co_return std::move(stream);
      }
    }
  }

  net::awaitable<kube::Result<Ok>> watchLoop() {
    while (!stopped) {
      kube::ListOptions opts;
      opts.resourceVersion = lastSyncRv;
      opts.timeoutSeconds = watchTimeoutSeconds();
      opts.allowWatchBookmarks = true;
      ++stats.watches;
      // The clock starts before the request, as client-go's: some proxies send the headers only
      // with the first event.
      const auto start = clock.now();
      auto op = lw.watch(opts);
      auto watch = co_await request(std::move(op));
      if (stopped) {
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
      currentWatch = watch->get();
      auto watched = co_await handleWatch(**watch, start);
      currentWatch = nullptr;
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
      // A normal end (the server's timeout, a broken connection): watch again at once.
    }
    co_return Ok{};
  }

  // Ok for a normal end of the watch, an error for anything that must end ListAndWatch.
  net::awaitable<kube::Result<Ok>> handleWatch(kube::Watch& watch, Clock::TimePoint start) {
    size_t events = 0;
    for (;;) {
      auto next = co_await watch.next();
      if (stopped) {
        co_return Ok{};
      }
      const bool ended = next ? !next->has_value() : isWatchConnectionEnd(next.error());
      if (!next && !ended) {
        co_return next.error();
      }
      if (ended) {
        if (events == 0 && clock.now() - start < std::chrono::seconds(1)) {
          co_return kube::Error::transport("very short watch: ended within 1s with no events");
        }
        if (!next) {
          spdlog::debug("reflector {}: watch ended ({}); watching again", options.name,
                        next.error().message());
        }
        co_return Ok{};
      }
      dispatch(**next);
      // A burst of events decoded from one read arrives without any real suspension.
      if (shouldYield(++events)) {
        co_await yieldNow();
        if (stopped) {
          co_return Ok{};
        }
      }
    }
  }

  void dispatch(const kube::WatchEvent& event) {
    const auto& obj = event.object();
    switch (event.type) {
      case kube::WatchEventType::Added:
        store.addJson(obj);
        break;
      case kube::WatchEventType::Modified:
        store.updateJson(obj);
        break;
      case kube::WatchEventType::Deleted:
        store.removeJson(obj);
        break;
      case kube::WatchEventType::Bookmark:
        store.bookmark(rawResourceVersion(obj));
        break;
      case kube::WatchEventType::Error:
        return;  // WatchStream turns these into errors before they get here
    }
    // Advances even when the object did not decode: the store keeps it as undecodable.
    if (auto rv = rawResourceVersion(obj); !rv.empty()) {
      lastSyncRv = std::move(rv);
    }
  }

  ListerWatcher& lw;
  ReflectorStore& store;
  Clock& clock;
  ReflectorOptions options;
  std::function<double()> random;
  Backoff backoff;
  std::unique_ptr<Timer> backoffTimer;
  std::unique_ptr<Timer> resyncTimer;
  // The LIST or watch request in flight (request()); stop() emits it.
  net::cancellation_signal cancelRequest;
  bool requestInFlight = false;
  kube::Watch* currentWatch = nullptr;
  std::unique_ptr<Notifier> resyncDone;
  bool resyncRunning = false;
  std::string lastSyncRv;
  bool rvUnavailable = false;
  bool paginatedResult = false;
  bool stopped = false;
  int running = 0;
  ReflectorStats stats;
};

namespace {

using Core = Reflector::Core;

net::awaitable<void> resyncLoop(std::shared_ptr<Core> self) {
  while (!self->stopped) {
    const auto deadline = self->clock.now() + self->options.resyncPeriod;
    if (!co_await self->resyncTimer->waitUntil(deadline) || self->stopped) {
      break;
    }
    if (!self->options.shouldResync || self->options.shouldResync()) {
      self->store.resync();
    }
  }
  self->resyncRunning = false;
  self->resyncDone->notify();
}

net::awaitable<void> runLoop(std::shared_ptr<Core> self) {
  ++self->running;
  auto executor = co_await net::this_coro::executor;
  if (self->options.resyncPeriod.count() > 0 && !self->stopped) {
    self->resyncDone = std::make_unique<Notifier>(executor);
    self->resyncRunning = true;
    // Named locals: g++ 12 miscompiles a co_await inside co_spawn's argument list.
    auto loop = resyncLoop(self);
    net::co_spawn(executor, std::move(loop), rethrowUnhandled);
  }
  while (!self->stopped) {
    auto result = co_await self->listAndWatch();
    if (self->stopped) {
      break;
    }
    if (!result) {
      const auto& err = result.error();
      if (isExpiredError(err) || isTooLargeResourceVersionError(err)) {
        ++self->stats.expired;
        spdlog::debug("reflector {}: {} (relisting)", self->options.name, err.message());
      } else {
        spdlog::warn("reflector {}: {}", self->options.name, err.message());
      }
    }
    // Every ListAndWatch return is followed by the backoff (client-go's wait.BackoffUntil).
    if (!co_await self->backoffWait()) {
      break;
    }
  }
  // run() ends only with everything it started: the resync loop touches the store too.
  while (self->resyncRunning) {
    co_await self->resyncDone->wait();
  }
  --self->running;
}

}  // namespace

Reflector::Reflector(ListerWatcher& lw, ReflectorStore& store, Clock& clock,
                     ReflectorOptions options, std::function<double()> random)
    : core_(std::make_shared<Core>(lw, store, clock, std::move(options), std::move(random))) {}

Reflector::~Reflector() {
  core_->stop();
}

net::awaitable<void> Reflector::run() {
  // Not a coroutine itself: the frame of runLoop owns the state, whatever becomes of `this`.
  return runLoop(core_);
}

void Reflector::stop() {
  core_->stop();
}

bool Reflector::running() const {
  return core_->running > 0;
}

const std::string& Reflector::lastSyncResourceVersion() const {
  return core_->lastSyncRv;
}

const ReflectorStats& Reflector::stats() const {
  return core_->stats;
}

}  // namespace egress::cache
