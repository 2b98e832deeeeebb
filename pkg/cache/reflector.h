// File: reflector.h
//
// client-go's Reflector: keeps a ReflectorStore in step with the API server by listing
// (paginated, 500 per page, with the documented choice of resourceVersion) and then watching
// from the list's resourceVersion, forever. It re-watches at once after a clean watch end,
// backs off without relisting on 429 and refused connections, relists after 410 Gone, falls
// back to a full list when a continue token expires and to a quorum read ("") when the
// resourceVersion is too old or too new, and fires resyncs on a timer. Streaming lists
// (sendInitialEvents) are tried first and given up, once, on servers that refuse them.
//
// Runs as coroutines on one io_context; time and randomness are injected (tests drive them).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "pkg/base/clock.h"
#include "pkg/cache/backoff.h"
#include "pkg/cache/lister_watcher.h"
#include "pkg/cache/reflector_store.h"

namespace egress::cache {

inline constexpr const char* kInitialEventsAnnotation = "k8s.io/initial-events-end";

struct ReflectorOptions {
  std::string name;  // for logs
  int64_t pageSize = 500;
  // Watches ask the server to end them after a random time in [min, 2·min).
  std::chrono::seconds minWatchTimeout{300};
  std::chrono::milliseconds resyncPeriod{0};  // 0 = never
  // Asked before each resync; null = always resync.
  std::function<bool()> shouldResync;
  bool useWatchList = true;
  BackoffConfig backoff;
};

struct ReflectorStats {
  int lists = 0;         // complete lists (Replace calls)
  int listRequests = 0;  // LIST requests, pages included
  int watches = 0;       // watch requests
  int backoffs = 0;      // waits between attempts
  bool watchListSupported = true;
};

class Reflector {
 public:
  Reflector(ListerWatcher& lw, ReflectorStore& store, Clock& clock, ReflectorOptions options,
            std::function<double()> random);
  ~Reflector();

  // Lists and watches until stop(). Starts the resync loop too.
  net::awaitable<void> run();
  // Ends run() soon: cancels the watch and any wait. run() finishes at its next suspension.
  void stop();
  bool running() const { return running_ > 0; }

  const std::string& lastSyncResourceVersion() const { return lastSyncRv_; }
  const ReflectorStats& stats() const { return stats_; }

 private:
  enum class Outcome { Ok, Unsupported };

  net::awaitable<kube::Result<Ok>> listAndWatch();
  net::awaitable<kube::Result<Ok>> list();
  net::awaitable<kube::Result<Outcome>> watchList();
  net::awaitable<kube::Result<Ok>> watchLoop();
  net::awaitable<kube::Result<Ok>> handleWatch(kube::Watch& watch);
  // Static with an explicit pointer: spawned (not awaited) member coroutines lost `this` under
  // g++ 12 here.
  static net::awaitable<void> resyncLoop(Reflector* self);
  net::awaitable<bool> backoffWait();
  std::string relistResourceVersion() const;
  int64_t watchTimeoutSeconds();
  void dispatch(const kube::WatchEvent& event);

  ListerWatcher& lw_;
  ReflectorStore& store_;
  Clock& clock_;
  ReflectorOptions options_;
  std::function<double()> random_;
  Backoff backoff_;
  std::unique_ptr<Timer> backoffTimer_;
  std::unique_ptr<Timer> resyncTimer_;
  kube::Watch* currentWatch_ = nullptr;
  std::string lastSyncRv_;
  bool rvUnavailable_ = false;
  bool paginatedResult_ = false;
  bool stopped_ = false;
  int running_ = 0;
  ReflectorStats stats_;
};

// 410 Gone or reason Expired: the resourceVersion is older than the server keeps.
bool isExpiredError(const kube::Error& e);
// "Too large resource version": the server has not caught up with it (cause
// ResourceVersionTooLarge, or a Timeout with that message on older servers).
bool isTooLargeResourceVersionError(const kube::Error& e);

}  // namespace egress::cache
