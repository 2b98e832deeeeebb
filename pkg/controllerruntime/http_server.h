// File: http_server.h
//
// The operator's own small HTTP/1.1 server (Boost.Beast), behind /metrics and the health probes.
// It answers GET and HEAD from handlers that compute their answer at once, in memory, and it is
// built so that no client can hurt the process that serves it:
//   - it runs as coroutines on the operator's one io_context, and a handler is a plain function
//     called on that thread: a slow or stuck client only ever parks its own coroutine;
//   - the request head must arrive within readHeaderTimeout of the connection (or, on a kept-alive
//     connection, of its first byte), however slowly it trickles in (slowloris), and must fit in
//     headerLimit bytes (431 otherwise); a kept-alive connection may idle for idleTimeout; a
//     response must be taken within writeTimeout;
//   - at most maxConnections are served at once; one more takes the place of the connection
//     idling longest between kept-alive requests, and only when every connection is busy with a
//     request is it answered 503 and closed at once;
//   - a request body is never read: the response is sent and the connection closed.
// Everything else is answered as Go's net/http would: 400 for a malformed request, 404 for an
// unknown path, 405 (with Allow) for a method other than GET or HEAD.
//
//   HttpServer server(ioc.get_executor(), {.name = "metrics"});
//   server.handle("/metrics", metricsHandler({&registry, &processCollector}));
//   if (auto started = server.start(*address); !started) { ...started.error()... }
//   server.port();   // the bound port (useful with port 0)
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/verb.hpp>

#include "pkg/base/result.h"
#include "pkg/controllerruntime/bind_address.h"

namespace egress::controllerruntime {

struct HttpRequest {
  boost::beast::http::verb method = boost::beast::http::verb::get;  // GET or HEAD
  // The percent-decoded path, and what follows the route it matched: "" for an exact match,
  // "/informers" for /readyz/informers under the tree route "/readyz" (Go's StripPrefix).
  std::string path;
  std::string subPath;
  // The decoded query, in order; a key may repeat (?exclude=a&exclude=b).
  std::multimap<std::string, std::string> query;

  bool hasQuery(const std::string& key) const { return query.contains(key); }
};

struct HttpResponse {
  unsigned status = 200;
  std::string contentType = "text/plain; charset=utf-8";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// An error answer as Go's http.Error writes it: the text and a newline, text/plain, nosniff.
HttpResponse httpError(unsigned status, const std::string& text);

struct HttpServerOptions {
  // Names the server in error messages: "metrics", "health probe".
  std::string name = "http";
  // controller-runtime's server defaults (internal/httpserver) where it has one.
  std::chrono::milliseconds readHeaderTimeout{std::chrono::seconds(32)};
  std::chrono::milliseconds idleTimeout{std::chrono::seconds(90)};
  std::chrono::milliseconds writeTimeout{std::chrono::seconds(30)};
  // Probes and scrapers send a few hundred bytes; Go's 1 MiB default only invites abuse.
  std::uint32_t headerLimit = 16 * 1024;
  std::size_t maxConnections = 64;
};

class HttpServer {
 public:
  HttpServer(boost::asio::any_io_executor executor, HttpServerOptions options);
  // Stops the server.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Serves exactly `path`.
  void handle(const std::string& path, HttpHandler handler);
  // Serves `path` and every path below it ("/readyz", "/readyz/", "/readyz/informers").
  void handleTree(const std::string& path, HttpHandler handler);

  // Binds (a port in use or an address the machine lacks is an error naming the server and
  // the address) and starts accepting connections.
  Result<Ok, std::string> start(const BindAddress& address);
  // Closes the listener and every connection. Idempotent.
  void stop();

  // The bound endpoint and port, once started.
  boost::asio::ip::tcp::endpoint endpoint() const;
  unsigned short port() const { return endpoint().port(); }
  // Connections being served right now.
  std::size_t activeConnections() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace egress::controllerruntime
