// File: rest_client.h
//
// The REST client: every verb of the Kubernetes API for any resource (group, version,
// resource, namespaced or not, subresource), as coroutines on one io_context. It adds what
// client-go's rest.Request adds around the transport: correct escaping of paths and queries,
// a User-Agent, credentials (refreshed once after a 401), the client-side token bucket (not for
// opening watches, as client-go), client-go's retry policy (retry_policy.h: 429/5xx only with
// Retry-After, GETs after a lost connection), metav1.Status decoding into kube::Error, and
// client-go's rest_client_* metrics. Requests and watches share one request path.
//
// Cancellation: a call whose coroutine is cancelled through Asio per-operation cancellation
// (the losing side of `a || b`, a bound cancellation slot) completes with a Cancelled error at
// once, and the connection it was using is closed, never pooled.
//
//   auto client = RestClient::create(ioc.get_executor(), config, &registry);
//   auto pod = co_await (*client)->get(kPods, "default", "web-0");
//   if (!pod) spdlog::warn("{}", pod.error().message());
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <rapidjson/document.h>

#include "pkg/base/clock.h"
#include "pkg/base/token_bucket.h"
#include "pkg/kube/errors.h"
#include "pkg/kube/list_page.h"
#include "pkg/kube/rest_config.h"
#include "pkg/kube/retry_policy.h"
#include "pkg/kube/transport.h"
#include "pkg/kube/watch_decoder.h"

namespace prometheus {
class Registry;
}

namespace egress::kube {

class ClientMetrics;

// Which collection a request addresses.
struct Resource {
  std::string group;  // "" for the core group
  std::string version;
  std::string resource;  // plural, lower case: "pods", "deployments"
  bool namespaced = true;
};

struct ListOptions {
  std::string labelSelector;
  std::string fieldSelector;
  int64_t limit = 0;
  std::string continueToken;
  std::string resourceVersion;
  std::string resourceVersionMatch;  // "", "Exact", "NotOlderThan"
  int64_t timeoutSeconds = 0;        // watches: the server ends the watch after this
  bool allowWatchBookmarks = false;
  bool sendInitialEvents = false;  // streaming list (servers >= 1.27 with WatchList)
};

struct WriteOptions {
  std::string fieldManager;
  bool force = false;  // server-side apply: take ownership of conflicting fields
  bool dryRun = false;
};

enum class PatchType { Merge, Json, StrategicMerge, Apply };

struct DeleteOptions {
  std::optional<std::string> preconditionUid;
  std::optional<std::string> preconditionResourceVersion;
  std::string propagationPolicy;  // "", "Foreground", "Background", "Orphan"
  std::optional<int64_t> gracePeriodSeconds;
};

// A watch in progress (client-go's watch.Interface). next() yields events in order; nullopt
// when the server ended the watch cleanly (timeoutSeconds reached); an error for a broken
// stream or an ERROR event (410 Gone). A next() whose coroutine is cancelled through Asio
// per-operation cancellation yields Cancelled and closes the stream. An event stays valid for as
// long as the caller keeps it (watch_decoder.h).
class Watch {
 public:
  virtual ~Watch() = default;
  virtual net::awaitable<Result<std::optional<WatchEvent>>> next() = 0;
  // Ends the watch now and closes its connection; a pending next() yields Cancelled.
  virtual void cancel() = 0;
};

// The Watch of a real HTTP response stream.
class WatchStream : public Watch {
 public:
  WatchStream(std::unique_ptr<ResponseStream> stream, std::chrono::milliseconds idleTimeout);
  net::awaitable<Result<std::optional<WatchEvent>>> next() override;
  void cancel() override;

 private:
  std::unique_ptr<ResponseStream> stream_;
  std::chrono::milliseconds idleTimeout_;
  WatchDecoder decoder_;
  bool ended_ = false;
};

struct RestClientOptions {
  TransportOptions transport;
  // Time for the client-side rate limiter and retry waits; null = a RealClock on the executor.
  // Tests pass a FakeClock. Must outlive the client.
  Clock* clock = nullptr;
  // Retries of one request (retry_policy.h); the defaults are client-go's, plus our cap and
  // jitter.
  int maxRetries = 10;
  std::chrono::seconds maxRetryWait{60};
  double retryJitter = 0.2;
  std::function<double()> random;  // uniform in [0, 1), for the jitter; empty = a real one
};

class RestClient {
 public:
  // Builds the transport from the config (TLS material, server URL). metrics may be null.
  static Result<std::unique_ptr<RestClient>> create(net::any_io_executor executor,
                                                    const RestConfig& config,
                                                    prometheus::Registry* metrics,
                                                    RestClientOptions options = {});
  // With a transport of the caller's (tests).
  RestClient(net::any_io_executor executor, const RestConfig& config,
             std::unique_ptr<Transport> transport, prometheus::Registry* metrics,
             RestClientOptions options = {});
  ~RestClient();

  // From now on every request but a GET (reads, lists, watches) fails at once with
  // Error::fenced(why), before it is sent, retries included: a deposed leader's work still in
  // flight must not write after a successor may have begun (the Manager fences on losing its
  // lease to another holder). A request already sent is not recalled. There is no unfencing:
  // the process exits.
  void fenceWrites(std::string why);
  bool writesFenced() const { return fenced_.has_value(); }

  // The coroutines take every argument explicitly: g++ 12 destroys a default argument's
  // temporary twice when the call sits in a co_await. The inline overloads below supply the
  // defaults from ordinary (non-coroutine) functions instead.
  net::awaitable<Result<rapidjson::Document>> get(Resource r, std::string ns, std::string name,
                                                  std::string subresource);
  // One page; loop on metadata.continue for the rest.
  net::awaitable<Result<rapidjson::Document>> list(Resource r, std::string ns, ListOptions opts);
  // The same page, decoded item by item as it is read (list_page.h): the body is kept as it
  // arrived, gzip-compressed unless compression is disabled, and never decoded whole.
  net::awaitable<Result<ListPage>> listPage(Resource r, std::string ns, ListOptions opts);
  net::awaitable<Result<rapidjson::Document>> create(Resource r, std::string ns, std::string body,
                                                     WriteOptions opts);
  // PUT: replaces the object (or a subresource such as "status" or "scale").
  net::awaitable<Result<rapidjson::Document>> update(Resource r, std::string ns, std::string name,
                                                     std::string body, WriteOptions opts,
                                                     std::string subresource);
  net::awaitable<Result<rapidjson::Document>> patch(Resource r, std::string ns, std::string name,
                                                    PatchType type, std::string body,
                                                    WriteOptions opts, std::string subresource);
  // Server-side apply; fieldManager is required by the server.
  net::awaitable<Result<rapidjson::Document>> apply(Resource r, std::string ns, std::string name,
                                                    std::string body, WriteOptions opts,
                                                    std::string subresource);
  net::awaitable<Result<rapidjson::Document>> remove(Resource r, std::string ns, std::string name,
                                                     DeleteOptions opts);
  net::awaitable<Result<std::unique_ptr<WatchStream>>> watch(Resource r, std::string ns,
                                                             ListOptions opts);
  // Any path (e.g. "/readyz", "/version"); the body is returned unparsed.
  net::awaitable<Result<HttpResponse>> raw(std::string method, std::string target,
                                           std::string body);

  // Defaults: no subresource, no write options, no delete options, no body.
  net::awaitable<Result<rapidjson::Document>> get(Resource r, std::string ns, std::string name) {
    return get(std::move(r), std::move(ns), std::move(name), std::string());
  }
  net::awaitable<Result<rapidjson::Document>> create(Resource r, std::string ns, std::string body) {
    return create(std::move(r), std::move(ns), std::move(body), WriteOptions());
  }
  net::awaitable<Result<rapidjson::Document>> update(Resource r, std::string ns, std::string name,
                                                     std::string body) {
    return update(std::move(r), std::move(ns), std::move(name), std::move(body), WriteOptions(),
                  std::string());
  }
  net::awaitable<Result<rapidjson::Document>> patch(Resource r, std::string ns, std::string name,
                                                    PatchType type, std::string body) {
    return patch(std::move(r), std::move(ns), std::move(name), type, std::move(body),
                 WriteOptions(), std::string());
  }
  net::awaitable<Result<rapidjson::Document>> apply(Resource r, std::string ns, std::string name,
                                                    std::string body, WriteOptions opts) {
    return apply(std::move(r), std::move(ns), std::move(name), std::move(body), std::move(opts),
                 std::string());
  }
  net::awaitable<Result<rapidjson::Document>> remove(Resource r, std::string ns, std::string name) {
    return remove(std::move(r), std::move(ns), std::move(name), DeleteOptions());
  }
  net::awaitable<Result<HttpResponse>> raw(std::string method, std::string target) {
    return raw(std::move(method), std::move(target), std::string());
  }

  const RestConfig& config() const { return config_; }
  const std::string& userAgent() const { return userAgent_; }

 private:
  struct Call {
    std::string method;
    std::string target;
    std::string body;
    std::string contentType;
    bool watch = false;  // open a stream instead of reading a whole response
    // Ask for gzip here and leave a 2xx body compressed (the transport then keeps out of it).
    bool keepCompressed = false;
  };
  // What a successful call returns: the response (a 2xx; its body unless a watch), and a
  // watch's open stream.
  struct Reply {
    HttpResponse response;
    std::unique_ptr<ResponseStream> stream;
  };
  // The one request path of every verb and of watches: rate limit, credentials, one attempt,
  // metrics, 401 refresh, retries. Cancellation (even mid-way) becomes a Cancelled error.
  net::awaitable<Result<Reply>> execute(Call call);
  net::awaitable<Result<Reply>> executeUnguarded(Call call);
  // One attempt: a whole response, or a watch's stream (with an error status, its body read).
  net::awaitable<Result<Reply>> attempt(const Call& call, HttpRequest request);
  net::awaitable<Result<HttpResponse>> send(Call call);
  net::awaitable<Result<rapidjson::Document>> sendJson(Call call);
  net::awaitable<Result<Ok>> waitForToken(const std::string& verb);
  // The credential handling, in two places only. addCredentials attaches the current
  // credentials to a request and returns what it attached; retryAfterUnauthorized decides, after
  // a 401 to a request made with `used`, whether to refresh and send it once more.
  net::awaitable<Result<Credentials>> addCredentials(HttpRequest& request);
  bool retryAfterUnauthorized(const Credentials& used, bool& alreadyRefreshed);

  net::any_io_executor executor_;
  std::unique_ptr<Clock> ownClock_;
  Clock* clock_;
  RestConfig config_;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<ClientMetrics> metrics_;
  RestClientOptions options_;
  RetryPolicy retryPolicy_;
  // Empty when client-side rate limiting is off (a negative QPS).
  std::optional<TokenBucket> bucket_;
  std::string userAgent_;
  std::optional<std::string> fenced_;
  std::string activeClientCert_;
};

// Escapes one path segment (a name, a namespace) and a query value.
std::string escapePathSegment(std::string_view s);
std::string escapeQueryValue(std::string_view s);
// "/api/v1/namespaces/ns/pods/name/status" and friends.
std::string resourcePath(const Resource& r, const std::string& ns, const std::string& name,
                         const std::string& subresource);
std::string listQuery(const ListOptions& o, bool watch);

}  // namespace egress::kube
