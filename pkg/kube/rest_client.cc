#include "pkg/kube/rest_client.h"

#include <cctype>

#include <boost/asio/error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "pkg/kube/client_metrics.h"
#include "pkg/kube/gzip.h"
#include "pkg/kube/user_agent.h"

namespace egress::kube {
namespace {

// A watch's error body is a small Status; read no more than this, waiting this long per read.
constexpr size_t kMaxErrorBody = size_t{1} << 20;
constexpr std::chrono::seconds kErrorBodyIdle{30};
// A watch reads up to this much at a time.
constexpr size_t kWatchReadBytes = 64 * 1024;

bool isCancelled(const net::cancellation_state& state) {
  return state.cancelled() != net::cancellation_type::none;
}

// Once a coroutine's cancellation slot fired, Asio throws operation_aborted from its next
// co_await (this_coro::throw_if_cancelled). Our code returns at the first completion that sees
// the cancellation, but an operation that completed in the same tick as the cancellation can
// still meet that throw; it surfaces here as the Cancelled error our callers expect, with every
// connection the unwinding passed through closed by its destructor.
template <class T>
net::awaitable<Result<T>> cancellationAsError(net::awaitable<Result<T>> op) {
  try {
    co_return co_await std::move(op);
  } catch (const boost::system::system_error& e) {
    if (e.code() != net::error::operation_aborted) {
      throw;
    }
  }
  co_return Error::cancelled();
}

// Only a request that cannot change anything may be sent again on a new connection after a
// pooled one failed under it (Go's Request.isReplayable).
bool isReplayable(const std::string& method) {
  return method == "GET" || method == "HEAD";
}

// client-go's rest.Config defaults (DefaultQPS, DefaultBurst); a negative QPS turns the
// limiter off.
std::optional<TokenBucket> makeBucket(double qps, int burst) {
  if (qps < 0) {
    return std::nullopt;
  }
  return TokenBucket(qps == 0 ? 5.0 : qps, burst == 0 ? 10 : std::max(1, burst));
}

bool isUnreserved(unsigned char c) {
  return std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~';
}

std::string percentEscape(std::string_view s, bool pathSegment) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    // RFC 3986 sub-delims and ':' '@' are legal in a segment, as Go's url.PathEscape leaves them.
    const bool keep = isUnreserved(c) ||
                      (pathSegment && (c == ':' || c == '@' || c == '!' || c == '$' || c == '&' ||
                                       c == '\'' || c == '(' || c == ')' || c == '*' || c == '+' ||
                                       c == ',' || c == ';' || c == '='));
    if (keep) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  return out;
}

const char* contentTypeOf(PatchType t) {
  switch (t) {
    case PatchType::Merge:
      return "application/merge-patch+json";
    case PatchType::Json:
      return "application/json-patch+json";
    case PatchType::StrategicMerge:
      return "application/strategic-merge-patch+json";
    case PatchType::Apply:
      return "application/apply-patch+yaml";
  }
  return "application/json";
}

void addParam(std::string& query, const char* key, const std::string& value) {
  query += query.empty() ? '?' : '&';
  query += key;
  query += '=';
  query += escapeQueryValue(value);
}

std::string writeQuery(const WriteOptions& o, bool apply) {
  std::string q;
  if (!o.fieldManager.empty()) {
    addParam(q, "fieldManager", o.fieldManager);
  }
  if (apply && o.force) {
    addParam(q, "force", "true");
  }
  if (o.dryRun) {
    addParam(q, "dryRun", "All");
  }
  return q;
}

// An API error from a non-2xx response: the Status body if there is one, else the code.
Error apiError(const HttpResponse& res) {
  auto status = meta::parseStatus(res.body);
  meta::Status s;
  if (status) {
    s = std::move(*status);
  } else {
    s.code = res.status;
    // Keep a short piece of a non-Status body: it is often the only clue (a proxy's page).
    s.message = res.body.substr(0, 256);
  }
  Error err = Error::api(res.status, std::move(s));
  if (auto after = parseRetryAfter(res.header("retry-after"))) {
    err.setRetryAfter(*after);
  }
  return err;
}

}  // namespace

std::string escapePathSegment(std::string_view s) {
  return percentEscape(s, true);
}
std::string escapeQueryValue(std::string_view s) {
  return percentEscape(s, false);
}

std::string resourcePath(const Resource& r, const std::string& ns, const std::string& name,
                         const std::string& subresource) {
  std::string path = r.group.empty() ? "/api/" + r.version : "/apis/" + r.group + "/" + r.version;
  if (r.namespaced && !ns.empty()) {
    path += "/namespaces/" + escapePathSegment(ns);
  }
  path += "/" + r.resource;
  if (!name.empty()) {
    path += "/" + escapePathSegment(name);
  }
  if (!subresource.empty()) {
    path += "/" + subresource;
  }
  return path;
}

std::string listQuery(const ListOptions& o, bool watch) {
  std::string q;
  if (watch) {
    addParam(q, "watch", "true");
  }
  if (!o.labelSelector.empty()) {
    addParam(q, "labelSelector", o.labelSelector);
  }
  if (!o.fieldSelector.empty()) {
    addParam(q, "fieldSelector", o.fieldSelector);
  }
  if (o.limit > 0) {
    addParam(q, "limit", std::to_string(o.limit));
  }
  if (!o.continueToken.empty()) {
    addParam(q, "continue", o.continueToken);
  }
  if (!o.resourceVersion.empty()) {
    addParam(q, "resourceVersion", o.resourceVersion);
  }
  if (!o.resourceVersionMatch.empty()) {
    addParam(q, "resourceVersionMatch", o.resourceVersionMatch);
  }
  if (o.timeoutSeconds > 0) {
    addParam(q, "timeoutSeconds", std::to_string(o.timeoutSeconds));
  }
  if (o.allowWatchBookmarks) {
    addParam(q, "allowWatchBookmarks", "true");
  }
  if (o.sendInitialEvents) {
    addParam(q, "sendInitialEvents", "true");
  }
  return q;
}

WatchStream::WatchStream(std::unique_ptr<ResponseStream> stream,
                         std::chrono::milliseconds idleTimeout)
    : stream_(std::move(stream)), idleTimeout_(idleTimeout) {}

net::awaitable<Result<std::optional<WatchEvent>>> WatchStream::next() {
  // cancellationAsError's rule, written inline: one coroutine frame per event instead of three
  // (Asio recycles only two per thread, so every frame past them is a malloc per event).
  try {
    for (;;) {
      // Events are decoded one at a time, as they are asked for: the previous one is usually
      // gone by then, and its memory goes to this one (watch_decoder.h).
      auto event = decoder_.next();
      if (!event) {
        stream_->close();
        co_return event.error();
      }
      if (*event) {
        if ((*event)->type == WatchEventType::Error) {
          co_return (*event)->toError();
        }
        co_return std::move(*event);
      }
      if (ended_) {
        if (auto done = decoder_.finish(); !done) {
          co_return done.error();
        }
        co_return std::optional<WatchEvent>();
      }
      char* into = decoder_.prepare(kWatchReadBytes);
      auto n = co_await stream_->readSome(into, kWatchReadBytes, idleTimeout_);
      if (isCancelled(co_await net::this_coro::cancellation_state)) {
        stream_->close();
        co_return Error::cancelled();
      }
      if (!n) {
        co_return n.error();
      }
      decoder_.commit(*n);
      ended_ = *n == 0;
    }
  } catch (const boost::system::system_error& e) {
    if (e.code() != net::error::operation_aborted) {
      throw;
    }
  }
  co_return Error::cancelled();
}

void WatchStream::cancel() {
  stream_->close();
}

Result<std::unique_ptr<RestClient>> RestClient::create(net::any_io_executor executor,
                                                       const RestConfig& config,
                                                       prometheus::Registry* metrics,
                                                       RestClientOptions options) {
  TransportConfig tc;
  tc.server = config.server;
  tc.caPem = config.caPem;
  tc.insecureSkipTlsVerify = config.insecureSkipTlsVerify;
  tc.tlsServerName = config.tlsServerName;
  tc.clientCertPem = config.clientCertPem;
  tc.clientKeyPem = config.clientKeyPem;
  tc.proxyUrl = config.proxyUrl;
  tc.disableCompression = config.disableCompression;
  auto transport = makeTransport(executor, tc, options.transport);
  if (!transport) {
    return transport.error();
  }
  return std::make_unique<RestClient>(std::move(executor), config, std::move(*transport), metrics,
                                      std::move(options));
}

RestClient::RestClient(net::any_io_executor executor, const RestConfig& config,
                       std::unique_ptr<Transport> transport, prometheus::Registry* metrics,
                       RestClientOptions options)
    : executor_(std::move(executor)),
      ownClock_(options.clock != nullptr ? nullptr : std::make_unique<RealClock>(executor_)),
      clock_(options.clock != nullptr ? options.clock : ownClock_.get()),
      config_(config),
      transport_(std::move(transport)),
      metrics_(metrics != nullptr ? std::make_unique<ClientMetrics>(*metrics) : nullptr),
      options_(std::move(options)),
      retryPolicy_(RetryOptions{options_.maxRetries, options_.maxRetryWait, options_.retryJitter,
                                options_.random}),
      bucket_(makeBucket(config.qps, config.burst)),
      userAgent_(config.userAgent.empty() ? defaultUserAgent() : config.userAgent),
      activeClientCert_(config.clientCertPem) {}

RestClient::~RestClient() = default;

void RestClient::fenceWrites(std::string why) {
  if (!fenced_) {
    fenced_ = std::move(why);
  }
}

net::awaitable<Result<Ok>> RestClient::waitForToken(const std::string& verb) {
  if (!bucket_) {
    co_return Ok{};
  }
  const auto start = clock_->now();
  const auto wait = bucket_->reserve(start);
  if (wait > TokenBucket::Duration::zero()) {
    if (!co_await clock_->sleepFor(wait)) {
      co_return Error::cancelled();
    }
  }
  if (metrics_) {
    metrics_->observeRateLimiter(verb, transport_->hostLabel(),
                                 std::chrono::duration<double>(clock_->now() - start).count());
  }
  co_return Ok{};
}

net::awaitable<Result<Credentials>> RestClient::addCredentials(HttpRequest& request) {
  if (!config_.auth) {
    co_return Credentials{};
  }
  auto creds = co_await config_.auth->credentials();
  if (!creds) {
    co_return creds.error();
  }
  if (!creds->bearerToken.empty()) {
    // The providers check their tokens; this covers any other AuthProvider too.
    if (auto valid = checkBearerToken(creds->bearerToken); !valid) {
      co_return valid.error();
    }
    request.headers.emplace_back("Authorization", "Bearer " + creds->bearerToken);
  }
  // A static certificate wins over a plugin's (client-go); otherwise follow the plugin's.
  if (config_.clientCertPem.empty() && !creds->clientCertPem.empty() &&
      creds->clientCertPem != activeClientCert_) {
    if (auto set = transport_->setClientCertificate(creds->clientCertPem, creds->clientKeyPem);
        !set) {
      co_return set.error();
    }
    activeClientCert_ = creds->clientCertPem;
  }
  co_return std::move(*creds);
}

bool RestClient::retryAfterUnauthorized(const Credentials& used, bool& alreadyRefreshed) {
  if (!config_.auth || alreadyRefreshed) {
    return false;
  }
  // Rotated token or expired plugin credential: refresh once, as client-go's exec authenticator
  // does on 401. The provider drops its cache only if `used` is still what it holds.
  config_.auth->invalidate(used);
  alreadyRefreshed = true;
  return true;
}

net::awaitable<Result<RestClient::Reply>> RestClient::attempt(const Call& call,
                                                              HttpRequest request) {
  Reply reply;
  if (!call.watch) {
    auto res = co_await transport_->roundTrip(std::move(request), isReplayable(call.method));
    if (!res) {
      co_return res.error();
    }
    reply.response = std::move(*res);
    if (call.keepCompressed && (reply.response.status < 200 || reply.response.status >= 300) &&
        reply.response.header("content-encoding") == "gzip") {
      // An error's Status is read like any other; a body that does not decompress is dropped,
      // and the error is described by its status code alone.
      auto plain = gunzip(reply.response.body, kMaxErrorBody);
      reply.response.body = plain ? std::move(*plain) : std::string();
      reply.response.headers.erase("content-encoding");
    }
    co_return reply;
  }
  auto stream = co_await transport_->openStream(std::move(request));
  if (!stream) {
    co_return stream.error();
  }
  reply.response.status = (*stream)->status();
  reply.response.headers = (*stream)->headers();
  if (reply.response.status == 200) {
    reply.stream = std::move(*stream);
    co_return reply;
  }
  // An error status: read the (small) body for its Status.
  std::vector<char> buf(16 * 1024);
  while (reply.response.body.size() < kMaxErrorBody) {
    auto n = co_await (*stream)->readSome(buf.data(), buf.size(), kErrorBodyIdle);
    if (!n || *n == 0) {
      break;
    }
    reply.response.body.append(buf.data(), *n);
  }
  (*stream)->close();
  co_return reply;
}

net::awaitable<Result<RestClient::Reply>> RestClient::execute(Call call) {
  auto op = executeUnguarded(std::move(call));
  co_return co_await cancellationAsError(std::move(op));
}

net::awaitable<Result<RestClient::Reply>> RestClient::executeUnguarded(Call call) {
  bool refreshedCredentials = false;
  int retries = 0;
  for (bool first = true;; first = false) {
    // client-go does not rate limit opening a watch ("We specifically don't want to rate limit
    // watches"); its retries, like every retry, take a token (withRetry.Before).
    if (!call.watch || !first) {
      if (auto token = co_await waitForToken(call.method); !token) {
        co_return token.error();
      }
    }
    HttpRequest request;
    request.method = call.method;
    request.target = call.target;
    request.body = call.body;
    request.headers.emplace_back("User-Agent", userAgent_);
    request.headers.emplace_back("Accept", "application/json");
    if (!call.contentType.empty()) {
      request.headers.emplace_back("Content-Type", call.contentType);
    }
    if (call.keepCompressed && !config_.disableCompression) {
      request.headers.emplace_back("Accept-Encoding", "gzip");
    }
    auto used = co_await addCredentials(request);
    if (!used) {
      co_return used.error();
    }
    // Checked last before the send (the token and credential waits above may span the fence).
    if (fenced_ && call.method != "GET") {
      co_return Error::fenced(*fenced_);
    }
    const auto start = std::chrono::steady_clock::now();
    auto reply = co_await attempt(call, std::move(request));
    if (isCancelled(co_await net::this_coro::cancellation_state)) {
      co_return Error::cancelled();
    }
    if (metrics_) {
      // Every attempt counts, under the request's own verb (a watch is a GET), as client-go's
      // updateRequestResultMetric.
      metrics_->observeRequest(
          reply ? std::to_string(reply->response.status) : "<error>", call.method,
          transport_->hostLabel(),
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::optional<std::chrono::milliseconds> wait;
    if (!reply) {
      if (reply.error().isCancelled()) {
        co_return reply.error();
      }
      wait = retryPolicy_.afterFailure(retries, call.method, reply.error());
      if (!wait) {
        co_return reply.error();
      }
    } else {
      const int status = reply->response.status;
      if (call.watch ? status == 200 : status >= 200 && status < 300) {
        co_return reply;
      }
      Error err = apiError(reply->response);
      if (err.isUnauthorized() && retryAfterUnauthorized(*used, refreshedCredentials)) {
        continue;
      }
      wait = retryPolicy_.afterResponse(retries, status, reply->response.header("retry-after"));
      if (!wait) {
        co_return err;
      }
    }
    ++retries;
    if (!co_await clock_->sleepFor(*wait)) {
      co_return Error::cancelled();
    }
  }
}

net::awaitable<Result<HttpResponse>> RestClient::send(Call call) {
  auto reply = co_await execute(std::move(call));
  if (!reply) {
    co_return reply.error();
  }
  co_return std::move(reply->response);
}

net::awaitable<Result<rapidjson::Document>> RestClient::sendJson(Call call) {
  auto res = co_await send(std::move(call));
  if (!res) {
    co_return res.error();
  }
  rapidjson::Document doc;
  if (res->body.empty()) {
    doc.SetObject();
    co_return doc;
  }
  doc.Parse<rapidjson::kParseIterativeFlag>(res->body.data(), res->body.size());
  if (doc.HasParseError()) {
    co_return Error::decode("response body is not JSON (" + std::to_string(res->body.size()) +
                            " bytes, error at byte " + std::to_string(doc.GetErrorOffset()) + ")");
  }
  co_return doc;
}

// Every coroutine below builds its Call as a named local: g++ 12 destroys a braced temporary
// in a co_await operand twice (free(): invalid pointer).
net::awaitable<Result<rapidjson::Document>> RestClient::get(Resource r, std::string ns,
                                                            std::string name,
                                                            std::string subresource) {
  Call call{"GET", resourcePath(r, ns, name, subresource), "", ""};
  co_return co_await sendJson(std::move(call));
}

net::awaitable<Result<rapidjson::Document>> RestClient::list(Resource r, std::string ns,
                                                             ListOptions opts) {
  Call call{"GET", resourcePath(r, ns, "", "") + listQuery(opts, false), "", ""};
  co_return co_await sendJson(std::move(call));
}

net::awaitable<Result<ListPage>> RestClient::listPage(Resource r, std::string ns,
                                                      ListOptions opts) {
  Call call{"GET", resourcePath(r, ns, "", "") + listQuery(opts, false), "", ""};
  call.keepCompressed = true;
  auto res = co_await send(std::move(call));
  if (!res) {
    co_return res.error();
  }
  const bool gzip = res->header("content-encoding") == "gzip";
  co_return ListPage(std::move(res->body), gzip, options_.transport.maxResponseBytes);
}

net::awaitable<Result<rapidjson::Document>> RestClient::create(Resource r, std::string ns,
                                                               std::string body,
                                                               WriteOptions opts) {
  Call call{"POST", resourcePath(r, ns, "", "") + writeQuery(opts, false), std::move(body),
            "application/json"};
  co_return co_await sendJson(std::move(call));
}

net::awaitable<Result<rapidjson::Document>> RestClient::update(Resource r, std::string ns,
                                                               std::string name, std::string body,
                                                               WriteOptions opts,
                                                               std::string subresource) {
  Call call{"PUT", resourcePath(r, ns, name, subresource) + writeQuery(opts, false),
            std::move(body), "application/json"};
  co_return co_await sendJson(std::move(call));
}

net::awaitable<Result<rapidjson::Document>> RestClient::patch(Resource r, std::string ns,
                                                              std::string name, PatchType type,
                                                              std::string body, WriteOptions opts,
                                                              std::string subresource) {
  Call call{"PATCH",
            resourcePath(r, ns, name, subresource) + writeQuery(opts, type == PatchType::Apply),
            std::move(body), contentTypeOf(type)};
  co_return co_await sendJson(std::move(call));
}

net::awaitable<Result<rapidjson::Document>> RestClient::apply(Resource r, std::string ns,
                                                              std::string name, std::string body,
                                                              WriteOptions opts,
                                                              std::string subresource) {
  if (opts.fieldManager.empty()) {
    co_return Error::config("server-side apply needs a field manager");
  }
  co_return co_await patch(std::move(r), std::move(ns), std::move(name), PatchType::Apply,
                           std::move(body), std::move(opts), std::move(subresource));
}

net::awaitable<Result<rapidjson::Document>> RestClient::remove(Resource r, std::string ns,
                                                               std::string name,
                                                               DeleteOptions opts) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("apiVersion");
  w.String("v1");
  w.Key("kind");
  w.String("DeleteOptions");
  if (opts.preconditionUid || opts.preconditionResourceVersion) {
    w.Key("preconditions");
    w.StartObject();
    if (opts.preconditionUid) {
      w.Key("uid");
      w.String(opts.preconditionUid->c_str());
    }
    if (opts.preconditionResourceVersion) {
      w.Key("resourceVersion");
      w.String(opts.preconditionResourceVersion->c_str());
    }
    w.EndObject();
  }
  if (!opts.propagationPolicy.empty()) {
    w.Key("propagationPolicy");
    w.String(opts.propagationPolicy.c_str());
  }
  if (opts.gracePeriodSeconds) {
    w.Key("gracePeriodSeconds");
    w.Int64(*opts.gracePeriodSeconds);
  }
  w.EndObject();
  Call call{"DELETE", resourcePath(r, ns, name, ""), buf.GetString(), "application/json"};
  co_return co_await sendJson(std::move(call));
}

net::awaitable<Result<HttpResponse>> RestClient::raw(std::string method, std::string target,
                                                     std::string body) {
  Call call{std::move(method), std::move(target), std::move(body), "application/json"};
  co_return co_await send(std::move(call));
}

net::awaitable<Result<std::unique_ptr<WatchStream>>> RestClient::watch(Resource r, std::string ns,
                                                                       ListOptions opts) {
  Call call{"GET", resourcePath(r, ns, "", "") + listQuery(opts, true), "", "", true};
  auto reply = co_await execute(std::move(call));
  if (!reply) {
    co_return reply.error();
  }
  // The server closes a watch after timeoutSeconds; a silent connection for much longer than
  // that is dead (network partition), which a server-side timeout alone never detects.
  const auto idle = opts.timeoutSeconds > 0 ? std::chrono::seconds(opts.timeoutSeconds + 30)
                                            : std::chrono::seconds(65 * 60);
  co_return std::make_unique<WatchStream>(std::move(reply->stream), idle);
}

}  // namespace egress::kube
