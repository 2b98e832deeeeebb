// File: reflector.h
//
// client-go's Reflector: keeps a ReflectorStore in step with the API server by listing
// (paginated, 500 per page, with the documented choice of resourceVersion) and then watching
// from the list's resourceVersion, forever.
//
// How a watch ends decides what comes next, as in client-go: the server's timeout and a broken
// connection (EOF, a reset, EOF inside a chunk, the idle timeout) are normal ends, and the
// reflector watches again at once from the last resourceVersion, without listing; a watch that
// ends within a second without a single event is "very short" and counts as an error. 429 and
// refused connections back off and watch again, still without listing. Only an error ends
// ListAndWatch: after the backoff it lists again -- from the last resourceVersion, then from ""
// (a quorum read) if that is gone (410) or too new. A continue token that expired falls back to
// one unpaginated list. Streaming lists (sendInitialEvents) are off by default as in client-go;
// when on, any failed streaming attempt lists instead, and a server that refuses the options is
// not asked again. Resyncs fire on their own timer.
//
// Lifetime: the Reflector's state is shared with its coroutines, which hold it until they
// finish, so the Reflector may be destroyed while the io_context runs (its destructor stops it).
// stop() cancels the LIST or watch request in flight at once (Asio per-operation cancellation)
// and every wait. The ListerWatcher, the store and the clock must outlive run()'s coroutine (the
// informer keeps them in the state its own coroutines hold). Time and randomness are injected.
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
  // Streaming lists (WatchList). Off by default, as in client-go; servers before 1.27 (our 1.20
  // test control plane among them) cannot serve them.
  bool useWatchList = false;
  BackoffConfig backoff;
};

struct ReflectorStats {
  int lists = 0;         // complete lists (Replace calls)
  int listRequests = 0;  // LIST requests, pages included
  int watches = 0;       // watch requests
  int backoffs = 0;      // waits between attempts
  // ListAndWatch attempts ended by 410 Gone or a too large resourceVersion; each is followed
  // by one relist (a broken watch connection is not: it watches again).
  int expired = 0;
  bool watchListSupported = true;
};

class Reflector {
 public:
  Reflector(ListerWatcher& lw, ReflectorStore& store, Clock& clock, ReflectorOptions options,
            std::function<double()> random);
  // Stops the reflector; its coroutines finish on their own, without touching it.
  ~Reflector();
  Reflector(const Reflector&) = delete;
  Reflector& operator=(const Reflector&) = delete;

  // Lists and watches until stop(), with the resync loop alongside; returns once both ended.
  net::awaitable<void> run();
  // Ends run() soon: cancels the request in flight, the watch and every wait.
  void stop();
  // True while run() or its resync loop has not finished.
  bool running() const;

  const std::string& lastSyncResourceVersion() const;
  const ReflectorStats& stats() const;

  struct Core;  // the state run() shares with its coroutines (reflector.cc)

 private:
  std::shared_ptr<Core> core_;
};

// 410 Gone or reason Expired: the resourceVersion is older than the server keeps.
bool isExpiredError(const kube::Error& e);
// "Too large resource version": the server has not caught up with it (cause
// ResourceVersionTooLarge, or a Timeout with that message on older servers).
bool isTooLargeResourceVersionError(const kube::Error& e);
// How client-go's StreamWatcher ends a watch quietly (io.EOF, io.ErrUnexpectedEOF, a probable
// EOF such as a reset, a timeout): here, every transport error of an established watch stream.
bool isWatchConnectionEnd(const kube::Error& e);

}  // namespace egress::cache
