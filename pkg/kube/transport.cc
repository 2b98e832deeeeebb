// The one translation unit with Beast, Asio SSL and coroutines for request/response and
// streaming HTTP (compile time on 2 cores: keep these templates here).
#include "pkg/kube/transport.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <deque>
#include <optional>
#include <type_traits>
#include <variant>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <openssl/x509v3.h>

#include "pkg/kube/gzip.h"
#include "pkg/kube/proxy.h"
#include <sys/socket.h>

namespace egress::kube {

namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

std::string HttpResponse::header(const std::string& lowerName) const {
  auto it = headers.find(lowerName);
  return it == headers.end() ? std::string() : it->second;
}

Result<ServerUrl> parseServerUrl(const std::string& server) {
  ServerUrl url;
  std::string rest;
  if (server.rfind("https://", 0) == 0) {
    rest = server.substr(8);
  } else if (server.rfind("http://", 0) == 0) {
    url.tls = false;
    rest = server.substr(7);
  } else {
    return Error::config("server \"" + server + "\": want an https:// or http:// URL");
  }
  const auto slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  if (slash != std::string::npos) {
    url.pathPrefix = rest.substr(slash);
    while (!url.pathPrefix.empty() && url.pathPrefix.back() == '/') {
      url.pathPrefix.pop_back();
    }
  }
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string::npos) {
      return Error::config("server \"" + server + "\": unterminated IPv6 address");
    }
    url.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') {
        return Error::config("server \"" + server + "\": junk after IPv6 address");
      }
      url.port = authority.substr(close + 2);
    }
  } else {
    const auto colon = authority.rfind(':');
    url.host = authority.substr(0, colon);
    if (colon != std::string::npos) {
      url.port = authority.substr(colon + 1);
    }
  }
  if (url.host.empty()) {
    return Error::config("server \"" + server + "\": no host");
  }
  if (url.port.empty()) {
    url.port = url.tls ? "443" : "80";
  }
  if (!std::all_of(url.port.begin(), url.port.end(),
                   [](unsigned char c) { return std::isdigit(c) != 0; })) {
    return Error::config("server \"" + server + "\": port \"" + url.port + "\" is not a number");
  }
  return url;
}

namespace {

constexpr auto kUseTuple = net::as_tuple(net::use_awaitable);

bool isIpLiteral(const std::string& host) {
  boost::system::error_code ec;
  net::ip::make_address(host, ec);
  return !ec;
}

Result<std::shared_ptr<ssl::context>> makeSslContext(const TransportConfig& c) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  boost::system::error_code ec;
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1,
                   ec);
  if (c.insecureSkipTlsVerify) {
    ctx->set_verify_mode(ssl::verify_none, ec);
  } else {
    ctx->set_verify_mode(ssl::verify_peer, ec);
    if (!c.caPem.empty()) {
      ctx->add_certificate_authority(net::buffer(c.caPem), ec);
      if (ec) {
        return Error::config("certificate authority: not a usable PEM certificate (" +
                             ec.message() + ")");
      }
    } else {
      ctx->set_default_verify_paths(ec);
    }
  }
  if (!c.clientCertPem.empty() || !c.clientKeyPem.empty()) {
    ctx->use_certificate_chain(net::buffer(c.clientCertPem), ec);
    if (ec) {
      return Error::config("client certificate: not a usable PEM certificate (" + ec.message() +
                           ")");
    }
    ctx->use_private_key(net::buffer(c.clientKeyPem), ssl::context::pem, ec);
    if (ec) {
      return Error::config("client key: not a usable PEM private key matching the certificate (" +
                           ec.message() + ")");
    }
  }
  return ctx;
}

// Errors that mean "the peer closed before answering": on a reused keep-alive connection they
// are what a stale connection looks like.
bool isClosedByPeer(const boost::system::error_code& ec) {
  return ec == http::error::end_of_stream || ec == http::error::partial_message ||
         ec == net::error::eof || ec == net::error::connection_reset ||
         ec == net::error::broken_pipe || ec == ssl::error::stream_truncated;
}

// The Error for a failed network operation: Cancelled when our caller cancelled it (Asio
// per-operation cancellation completes the operation with operation_aborted), otherwise a
// Transport error that says what it was doing and what kind of failure it was.
Error failure(const boost::system::error_code& ec, const std::string& during) {
  if (ec == net::error::operation_aborted) {
    return Error::cancelled();
  }
  if (ec == beast::error::timeout) {
    return Error::transport("timed out " + during, Error::TransportFailure::Timeout);
  }
  if (ec == net::error::connection_refused) {
    return Error::transport(during + ": " + ec.message(),
                            Error::TransportFailure::ConnectionRefused);
  }
  return Error::transport(during + ": " + ec.message(),
                          isClosedByPeer(ec) ? Error::TransportFailure::ConnectionLost
                                             : Error::TransportFailure::Other);
}

// The three shapes a connection's byte stream takes: plain TCP; TLS (to the API server, or to
// an https:// proxy); TLS to the API server inside a tunnel through an https:// proxy. Asio's
// ssl::stream nests (Beast's ssl_stream does not: it lacks lowest_layer()), so TLS is Asio's.
using PlainStream = beast::tcp_stream;
using TlsStream = ssl::stream<PlainStream>;
using TlsInTlsStream = ssl::stream<TlsStream>;

template <class Stream>
constexpr bool kIsTls = !std::is_same_v<Stream, PlainStream>;

// One connection and everything read from it but not yet parsed. Every operation on it is
// written once, as a template over the stream type, and run through visit(). Holds the TLS
// context it was made with, so a context swap (client certificate rotation) never pulls it out
// from under a live connection.
class Connection {
 public:
  Connection(net::any_io_executor ex, std::shared_ptr<ssl::context> ctx, uint64_t generation)
      : generation(generation),
        ctx_(std::move(ctx)),
        stream_(std::in_place_type<PlainStream>, ex) {}

  template <class F>
  decltype(auto) visit(F&& f) {
    return std::visit(std::forward<F>(f), stream_);
  }
  beast::tcp_stream& lowest() {
    return visit([](auto& s) -> beast::tcp_stream& { return beast::get_lowest_layer(s); });
  }
  // Runs TLS over what the connection is now (TCP, or a TLS tunnel to a proxy) and returns the
  // new layer's SSL handle, to name the peer before the handshake.
  SSL* wrapInTls() {
    // Emplaced from a local: the streams can be moved but not move-assigned.
    if (auto* plain = std::get_if<PlainStream>(&stream_)) {
      PlainStream inner = std::move(*plain);
      return stream_.emplace<TlsStream>(std::move(inner), *ctx_).native_handle();
    }
    TlsStream inner = std::move(std::get<TlsStream>(stream_));
    return stream_.emplace<TlsInTlsStream>(std::move(inner), *ctx_).native_handle();
  }

  // An idle keep-alive connection has nothing to read. If the kernel already holds the peer's
  // FIN (0 bytes), a reset, or any bytes (a TLS close_notify), the server is done with it: using
  // it would lose a non-idempotent request we cannot retry. Go's transport learns the same from
  // its per-connection read loop; a non-blocking peek gives us that without a pending read.
  bool closedByPeerWhileIdle() {
    if (buffer.size() != 0) {
      return true;
    }
    char byte = 0;
    const ssize_t n = ::recv(lowest().socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
  }
  void close() {
    boost::system::error_code ec;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
    lowest().close();
  }
  // Asio sets SSL_MODE_RELEASE_BUFFERS, so OpenSSL frees a connection's 16 KiB record buffers
  // whenever they run empty and allocates them again for the next record. Right for pooled
  // connections that idle between requests; a stream reads record after record for as long as
  // it lives (a watch: one or two records per event), so it keeps them.
  void keepTlsBuffers() {
    visit([](auto& s) {
      using S = std::decay_t<decltype(s)>;
      if constexpr (kIsTls<S>) {
        SSL_clear_mode(s.native_handle(), SSL_MODE_RELEASE_BUFFERS);
      }
      if constexpr (std::is_same_v<S, TlsInTlsStream>) {
        SSL_clear_mode(s.next_layer().native_handle(), SSL_MODE_RELEASE_BUFFERS);
      }
    });
  }

  beast::flat_buffer buffer;
  const uint64_t generation;

 private:
  std::shared_ptr<ssl::context> ctx_;
  std::variant<PlainStream, TlsStream, TlsInTlsStream> stream_;
};

// The operations on a connection, once per stream type (see Connection::visit).
template <class Stream, class Body>
net::awaitable<boost::system::error_code> writeMessage(Stream& s, http::request<Body>& req) {
  auto [ec, n] = co_await http::async_write(s, req, kUseTuple);
  (void)n;
  co_return ec;
}

template <class Stream, class Parser>
net::awaitable<boost::system::error_code> readWhole(Stream& s, beast::flat_buffer& buf, Parser& p) {
  auto [ec, n] = co_await http::async_read(s, buf, p, kUseTuple);
  (void)n;
  co_return ec;
}

template <class Stream, class Parser>
net::awaitable<boost::system::error_code> readHeader(Stream& s, beast::flat_buffer& buf,
                                                     Parser& p) {
  auto [ec, n] = co_await http::async_read_header(s, buf, p, kUseTuple);
  (void)n;
  co_return ec;
}

template <class Stream>
net::awaitable<boost::system::error_code> handshake(Stream& s) {
  if constexpr (kIsTls<Stream>) {
    auto [ec] = co_await s.async_handshake(ssl::stream_base::client, kUseTuple);
    co_return ec;
  } else {
    co_return net::error::operation_not_supported;  // wrapInTls() always comes first
  }
}

// Names the peer for SNI (DNS names only, RFC 6066) and, unless verification is off, for
// OpenSSL's own check of the certificate's subjectAltNames, which NEVER_CHECK_SUBJECT keeps
// from falling back to the Common Name: Go refuses CN-only certificates since 1.15, and so do
// we (Asio's host_name_verification would accept them).
void nameThePeer(SSL* ssl, const std::string& name, bool verify) {
  const bool ip = isIpLiteral(name);
  if (!ip) {
    SSL_set_tlsext_host_name(ssl, name.c_str());
  }
  if (verify) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
    if (ip) {
      X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
    } else {
      X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
    }
  }
}

// What a failed handshake's certificate check said ("hostname mismatch", "unable to get local
// issuer certificate"), for the error message.
std::string verifyDetail(Connection& conn) {
  const long result = conn.visit([](auto& s) -> long {
    if constexpr (kIsTls<std::decay_t<decltype(s)>>) {
      return SSL_get_verify_result(s.native_handle());
    } else {
      return X509_V_OK;
    }
  });
  return result == X509_V_OK ? "" : std::string(": ") + X509_verify_cert_error_string(result);
}

// "HTTP/1.1 407 Proxy Authentication Required" → a sentence for a person who has to fix it.
std::string proxyRefusal(const ProxyUrl& proxy, const std::string& target, unsigned status,
                         std::string_view reason) {
  std::string msg = "proxy " + proxy.display() + " refused to tunnel to " + target + ": " +
                    std::to_string(status) + " " + std::string(reason);
  if (status == 407) {
    msg += proxy.username ? " (it refused the credentials in the proxy URL)"
                          : " (it wants credentials: http://user:password@host:port)";
  }
  return msg;
}

// Asks the proxy for a tunnel to `target` ("host:port") over the connection as it is now.
template <class Stream>
net::awaitable<Result<Ok>> openTunnel(Stream& s, beast::flat_buffer& buffer, const ProxyUrl& proxy,
                                      const std::string& target) {
  http::request<http::empty_body> req{http::verb::connect, target, 11};
  req.set(http::field::host, target);
  if (const auto auth = proxy.authorization(); !auth.empty()) {
    req.set(http::field::proxy_authorization, auth);
  }
  const std::string during = "asking proxy " + proxy.display() + " for a tunnel to " + target;
  if (auto ec = co_await writeMessage(s, req)) {
    co_return failure(ec, during);
  }
  // A 2xx answer to CONNECT has no body whatever its headers say; the tunnel starts after it.
  http::response_parser<http::empty_body> parser;
  parser.skip(true);
  if (auto ec = co_await readHeader(s, buffer, parser)) {
    co_return failure(ec, during);
  }
  const auto& res = parser.get();
  if (res.result_int() / 100 != 2) {
    co_return Error::transport(proxyRefusal(proxy, target, res.result_int(), res.reason()));
  }
  if (buffer.size() != 0) {
    co_return Error::transport("proxy " + proxy.display() +
                               " sent data before the tunnel was used");
  }
  co_return Ok{};
}

http::request<http::string_body> toBeast(const HttpRequest& r, const std::string& prefix,
                                         const std::string& hostHeader) {
  http::request<http::string_body> req;
  req.method_string(r.method);
  req.target(prefix + r.target);
  req.version(11);
  req.set(http::field::host, hostHeader);
  for (const auto& [k, v] : r.headers) {
    req.set(k, v);
  }
  if (!r.body.empty() || r.method == "POST" || r.method == "PUT" || r.method == "PATCH") {
    req.body() = r.body;
    req.prepare_payload();
  }
  req.keep_alive(true);
  return req;
}

template <class Fields>
std::map<std::string, std::string> lowerHeaders(const Fields& fields) {
  std::map<std::string, std::string> out;
  for (const auto& f : fields) {
    std::string name(f.name_string());
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    out[name] = std::string(f.value());
  }
  return out;
}

bool hasHeader(const HttpRequest& r, std::string_view lowerName) {
  return std::any_of(r.headers.begin(), r.headers.end(), [&](const auto& h) {
    return std::equal(h.first.begin(), h.first.end(), lowerName.begin(), lowerName.end(),
                      [](char a, char b) { return std::tolower(a) == b; });
  });
}

class BeastResponseStream : public ResponseStream {
 public:
  BeastResponseStream(std::unique_ptr<Connection> conn,
                      std::unique_ptr<http::response_parser<http::buffer_body>> parser)
      : conn_(std::move(conn)),
        parser_(std::move(parser)),
        status_(static_cast<int>(parser_->get().result_int())),
        headers_(lowerHeaders(parser_->get().base())) {}

  ~BeastResponseStream() override { close(); }

  int status() const override { return status_; }
  const std::map<std::string, std::string>& headers() const override { return headers_; }

  net::awaitable<Result<size_t>> readSome(char* buf, size_t size,
                                          std::chrono::milliseconds idleTimeout) override {
    for (;;) {
      if (closed_) {
        co_return Error::cancelled();
      }
      if (parser_->is_done()) {
        co_return size_t{0};
      }
      // Beast's buffer_body: point it at the caller's buffer before every read (beast#2841).
      parser_->get().body().data = buf;
      parser_->get().body().size = size;
      conn_->lowest().expires_after(idleTimeout);
      // Asio's awaitable for the read itself, the same type for every stream: no coroutine
      // frame of ours per read (a watch event takes several reads, framing included).
      auto op = conn_->visit(
          [&](auto& s) { return http::async_read_some(s, conn_->buffer, *parser_, kUseTuple); });
      auto [ec, n] = co_await std::move(op);
      (void)n;
      if (closed_) {
        co_return Error::cancelled();
      }
      if (ec == http::error::need_buffer) {
        ec = {};
      }
      const size_t got = size - parser_->get().body().size;
      if (ec) {
        close();
        co_return failure(ec, "reading the response stream");
      }
      if (got > 0) {
        co_return got;
      }
      // Only framing (a chunk header) was read; go on until body bytes or the end arrive.
    }
  }

  void close() override {
    if (!closed_) {
      closed_ = true;
      conn_->close();
    }
  }

 private:
  std::unique_ptr<Connection> conn_;
  std::unique_ptr<http::response_parser<http::buffer_body>> parser_;
  int status_;
  std::map<std::string, std::string> headers_;
  bool closed_ = false;
};

class BeastTransport : public Transport {
 public:
  BeastTransport(net::any_io_executor ex, TransportConfig config, ServerUrl url,
                 std::optional<ProxyUrl> proxy, TransportOptions options,
                 std::shared_ptr<ssl::context> ctx)
      : executor_(std::move(ex)),
        config_(std::move(config)),
        url_(std::move(url)),
        proxy_(std::move(proxy)),
        options_(options),
        ctx_(std::move(ctx)),
        verifyName_(config_.tlsServerName.empty() ? url_.host : config_.tlsServerName),
        hostLabel_((url_.host.find(':') != std::string::npos ? "[" + url_.host + "]" : url_.host) +
                   ":" + url_.port) {}

  const std::string& hostLabel() const override { return hostLabel_; }

  Result<Ok> setClientCertificate(const std::string& certPem, const std::string& keyPem) override {
    if (!url_.tls) {
      return Error::config("client certificates need an https:// server");
    }
    TransportConfig next = config_;
    next.clientCertPem = certPem;
    next.clientKeyPem = keyPem;
    auto ctx = makeSslContext(next);
    if (!ctx) {
      return ctx.error();
    }
    config_ = std::move(next);
    ctx_ = std::move(*ctx);
    ++generation_;
    idle_.clear();
    return Ok{};
  }

  net::awaitable<Result<HttpResponse>> roundTrip(HttpRequest request, bool replayable) override {
    // Go's transport: ask for gzip unless told not to or the caller chose an encoding itself,
    // and then (only then) decompress.
    const bool gzip = !config_.disableCompression && !hasHeader(request, "accept-encoding");
    if (gzip) {
      request.headers.emplace_back("Accept-Encoding", "gzip");
    }
    auto req = toBeast(request, url_.pathPrefix, hostLabel_);
    for (int attempt = 0;; ++attempt) {
      auto sent = co_await send(req);
      if (!sent) {
        co_return sent.error();
      }
      auto conn = std::move(sent->conn);
      boost::system::error_code ec = sent->ec;
      http::response_parser<http::string_body> parser;
      parser.body_limit(options_.maxResponseBytes);
      if (!ec) {
        auto op = conn->visit([&](auto& s) { return readWhole(s, conn->buffer, parser); });
        ec = co_await std::move(op);
      }
      if (ec) {
        conn->close();
        if (sent->reused && replayable && attempt == 0 && !parser.got_some() &&
            isClosedByPeer(ec)) {
          continue;  // a stale keep-alive connection: the server never saw the request
        }
        co_return failure(ec, "sending " + request.method + " " + hostLabel_ + request.target);
      }
      conn->lowest().expires_never();
      auto& res = parser.get();
      HttpResponse out;
      out.status = static_cast<int>(res.result_int());
      out.headers = lowerHeaders(res.base());
      out.body = std::move(res.body());
      if (res.keep_alive()) {
        putIdle(std::move(conn));
      } else {
        conn->close();
      }
      if (gzip && out.header("content-encoding") == "gzip" && !out.body.empty()) {
        auto plain = gunzip(out.body, options_.maxResponseBytes);
        if (!plain) {
          co_return plain.error();
        }
        out.body = std::move(*plain);
        out.decompressed = true;
        out.headers.erase("content-encoding");
        out.headers.erase("content-length");
      }
      co_return out;
    }
  }

  net::awaitable<Result<std::unique_ptr<ResponseStream>>> openStream(HttpRequest request) override {
    auto req = toBeast(request, url_.pathPrefix, hostLabel_);
    for (int attempt = 0;; ++attempt) {
      auto sent = co_await send(req);
      if (!sent) {
        co_return sent.error();
      }
      auto conn = std::move(sent->conn);
      boost::system::error_code ec = sent->ec;
      auto parser = std::make_unique<http::response_parser<http::buffer_body>>();
      parser->body_limit(boost::none);  // a watch body never ends on its own
      if (!ec) {
        auto op = conn->visit([&](auto& s) { return readHeader(s, conn->buffer, *parser); });
        ec = co_await std::move(op);
      }
      if (ec) {
        conn->close();
        if (sent->reused && attempt == 0 && !parser->got_some() && isClosedByPeer(ec)) {
          continue;
        }
        co_return failure(ec, "opening stream " + hostLabel_ + request.target);
      }
      conn->lowest().expires_never();
      conn->keepTlsBuffers();
      co_return std::unique_ptr<ResponseStream>(
          std::make_unique<BeastResponseStream>(std::move(conn), std::move(parser)));
    }
  }

 private:
  struct Sent {
    std::unique_ptr<Connection> conn;
    bool reused = false;
    boost::system::error_code ec;  // of the write
  };

  // Takes a pooled connection (or makes one) and writes the request on it. Fails only if no
  // connection could be made; a failed write is reported in Sent::ec for the caller's retry.
  net::awaitable<Result<Sent>> send(http::request<http::string_body>& req) {
    Sent sent;
    sent.conn = takeIdle();
    sent.reused = sent.conn != nullptr;
    if (!sent.conn) {
      auto fresh = co_await connect();
      if (!fresh) {
        co_return fresh.error();
      }
      sent.conn = std::move(*fresh);
    }
    sent.conn->lowest().expires_after(options_.requestTimeout);
    auto op = sent.conn->visit([&](auto& s) { return writeMessage(s, req); });
    sent.ec = co_await std::move(op);
    co_return sent;
  }

  std::unique_ptr<Connection> takeIdle() {
    while (!idle_.empty()) {
      auto conn = std::move(idle_.back());
      idle_.pop_back();
      if (conn->generation == generation_ && conn->lowest().socket().is_open() &&
          !conn->closedByPeerWhileIdle()) {
        return conn;
      }
    }
    return nullptr;
  }

  void putIdle(std::unique_ptr<Connection> conn) {
    if (conn->generation != generation_) {
      conn->close();
      return;
    }
    if (idle_.size() >= options_.maxIdleConnections) {
      idle_.front()->close();
      idle_.pop_front();
    }
    idle_.push_back(std::move(conn));
  }

  // TLS over whatever the connection is now, verifying `name`.
  net::awaitable<Result<Ok>> startTls(Connection& conn, const std::string& name,
                                      const std::string& peer) {
    nameThePeer(conn.wrapInTls(), name, !config_.insecureSkipTlsVerify);
    auto op = conn.visit([](auto& s) { return handshake(s); });
    if (auto ec = co_await std::move(op)) {
      auto err = failure(ec, "TLS handshake with " + peer + " (verifying \"" + name + "\")");
      if (err.isTransport()) {
        err = Error::transport(err.message() + verifyDetail(conn), err.transportFailure());
      }
      co_return err;
    }
    co_return Ok{};
  }

  // A connection to the server, directly or through a tunnel, with TLS as the URLs say.
  net::awaitable<Result<std::unique_ptr<Connection>>> connect() {
    const std::string& host = proxy_ ? proxy_->host : url_.host;
    const std::string& port = proxy_ ? proxy_->port : url_.port;
    const std::string peer = proxy_ ? "proxy " + proxy_->display() : hostLabel_;
    tcp::resolver resolver(executor_);
    auto [rec, endpoints] = co_await resolver.async_resolve(host, port, kUseTuple);
    if (rec) {
      co_return failure(rec, "resolving " + host);
    }
    auto conn = std::make_unique<Connection>(executor_, ctx_, generation_);
    conn->lowest().expires_after(options_.connectTimeout);
    auto [cec, ep] = co_await conn->lowest().async_connect(endpoints, kUseTuple);
    (void)ep;
    if (cec) {
      co_return failure(cec, "connecting to " + peer);
    }
    if (proxy_) {
      if (proxy_->tls) {
        if (auto tls = co_await startTls(*conn, proxy_->host, peer); !tls) {
          co_return tls.error();
        }
      }
      auto op =
          conn->visit([&](auto& s) { return openTunnel(s, conn->buffer, *proxy_, hostLabel_); });
      if (auto tunnel = co_await std::move(op); !tunnel) {
        co_return tunnel.error();
      }
    }
    if (url_.tls) {
      if (auto tls = co_await startTls(*conn, verifyName_, hostLabel_); !tls) {
        co_return tls.error();
      }
    }
    conn->lowest().expires_never();
    co_return conn;
  }

  net::any_io_executor executor_;
  TransportConfig config_;
  ServerUrl url_;
  std::optional<ProxyUrl> proxy_;
  TransportOptions options_;
  std::shared_ptr<ssl::context> ctx_;
  std::string verifyName_;
  std::string hostLabel_;
  uint64_t generation_ = 0;
  std::deque<std::unique_ptr<Connection>> idle_;
};

}  // namespace

Result<std::unique_ptr<Transport>> makeTransport(net::any_io_executor executor,
                                                 const TransportConfig& config,
                                                 const TransportOptions& options) {
  auto url = parseServerUrl(config.server);
  if (!url) {
    return url.error();
  }
  // The environment is read once per client, as Go reads it once per process.
  auto proxy =
      proxyFor(url->tls, url->host, url->port, config.proxyUrl, ProxyEnvironment::fromProcess());
  if (!proxy) {
    return proxy.error();
  }
  std::shared_ptr<ssl::context> ctx;
  if (url->tls || (*proxy && (*proxy)->tls)) {
    // Go's transport checks an https:// proxy with the same TLS settings as the server.
    auto made = makeSslContext(config);
    if (!made) {
      return made.error();
    }
    ctx = std::move(*made);
  }
  return std::unique_ptr<Transport>(std::make_unique<BeastTransport>(
      std::move(executor), config, *url, std::move(*proxy), options, ctx));
}

}  // namespace egress::kube
