// File: transport.h
//
// HTTP/1.1 to one API server, the seam between the REST client and the network. The Beast
// implementation (makeTransport) speaks TLS through OpenSSL with CA verification and a hostname
// or IP check against the certificate's subjectAltNames only (never its Common Name, as Go since
// 1.15), SNI, client certificates, an HTTP CONNECT tunnel through a proxy (proxy.h; TLS to an
// https:// proxy, then TLS to the server inside it), transparent gzip decompression of whole
// responses when compression is enabled (as Go's transport), a keep-alive pool of idle connections
// with a cap, connect and request timeouts, and one retry of a GET that met a stale pooled
// connection. Streams (watches) get a connection of their own that is closed, never pooled, when
// the stream ends, fails or is cancelled. An operation cancelled through Asio per-operation
// cancellation fails with a Cancelled error and closes its connection.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "pkg/kube/errors.h"

namespace egress::kube {

namespace net = boost::asio;

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // path and query, already escaped: "/api/v1/pods?limit=500"
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  // The body arrived gzip-compressed and was decompressed (Go's Response.Uncompressed).
  bool decompressed = false;

  // The header's value, or "" (name in lower case).
  std::string header(const std::string& lowerName) const;
};

// The body of a response read piece by piece (a watch).
class ResponseStream {
 public:
  virtual ~ResponseStream() = default;
  virtual int status() const = 0;
  virtual const std::map<std::string, std::string>& headers() const = 0;
  // Reads the next bytes of the body into buf. 0 means the body ended cleanly. Fails with a
  // Transport error if nothing arrives within idleTimeout, or Cancelled after close().
  virtual net::awaitable<Result<size_t>> readSome(char* buf, size_t size,
                                                  std::chrono::milliseconds idleTimeout) = 0;
  // Closes the connection now; a pending readSome completes with a Cancelled error.
  virtual void close() = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Sends a request and reads the whole response. `replayable` (GET, HEAD) allows the one retry
  // on a new connection when a pooled one turns out stale (the request may have reached the
  // server). Unless compression is disabled or the request names its own
  // Accept-Encoding, asks for gzip and returns the body decompressed.
  virtual net::awaitable<Result<HttpResponse>> roundTrip(HttpRequest request, bool replayable) = 0;
  // Sends a request and returns once the response header arrived; the body is streamed.
  virtual net::awaitable<Result<std::unique_ptr<ResponseStream>>> openStream(
      HttpRequest request) = 0;
  // Use this client certificate from now on (exec plugins rotate them); idle connections made
  // with the old one are dropped.
  virtual Result<Ok> setClientCertificate(const std::string& certPem,
                                          const std::string& keyPem) = 0;
  // "host:port" of the server, for metrics labels.
  virtual const std::string& hostLabel() const = 0;
};

struct TransportConfig {
  std::string server;  // "https://host:port[/prefix]" or "http://..."
  std::string caPem;   // "" = the system's default roots
  bool insecureSkipTlsVerify = false;
  std::string tlsServerName;  // verify and send SNI for this name instead of the host
  std::string clientCertPem;
  std::string clientKeyPem;
  std::string proxyUrl;             // "" = from the environment (proxy.h)
  bool disableCompression = false;  // see RestConfig::disableCompression
};

struct TransportOptions {
  std::chrono::milliseconds connectTimeout{30'000};
  std::chrono::milliseconds requestTimeout{60'000};
  size_t maxIdleConnections = 25;  // client-go's MaxIdleConnsPerHost
  size_t maxResponseBytes = size_t{1} << 30;
};

// The server URL split up; the path prefix is prepended to every request target.
struct ServerUrl {
  bool tls = true;
  std::string host;  // without brackets for IPv6
  std::string port;
  std::string pathPrefix;  // "" or "/prefix"
};
Result<ServerUrl> parseServerUrl(const std::string& server);

Result<std::unique_ptr<Transport>> makeTransport(net::any_io_executor executor,
                                                 const TransportConfig& config,
                                                 const TransportOptions& options = {});

}  // namespace egress::kube
