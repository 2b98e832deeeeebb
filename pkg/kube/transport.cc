// The one translation unit with Beast, Asio SSL and coroutines for request/response and
// streaming HTTP (compile time on 2 cores: keep these templates here).
#include "pkg/kube/transport.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <deque>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

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

// One connection, plain or TLS. Holds the TLS context it was made with, so a context swap
// (client certificate rotation) never pulls it out from under a live connection.
struct Connection {
  explicit Connection(net::any_io_executor ex) : plain(std::make_unique<beast::tcp_stream>(ex)) {}
  Connection(net::any_io_executor ex, std::shared_ptr<ssl::context> c)
      : ctx(std::move(c)), tls(std::make_unique<beast::ssl_stream<beast::tcp_stream>>(ex, *ctx)) {}

  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *plain; }

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

  std::shared_ptr<ssl::context> ctx;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> tls;
  std::unique_ptr<beast::tcp_stream> plain;
  beast::flat_buffer buffer;
  uint64_t generation = 0;
};

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

template <class Stream>
net::awaitable<boost::system::error_code> writeRequest(Stream& s,
                                                       http::request<http::string_body>& req) {
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

template <class Stream, class Parser>
net::awaitable<boost::system::error_code> readSomeBody(Stream& s, beast::flat_buffer& buf,
                                                       Parser& p) {
  auto [ec, n] = co_await http::async_read_some(s, buf, p, kUseTuple);
  (void)n;
  co_return ec;
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
      boost::system::error_code ec;
      if (conn_->tls) {
        ec = co_await readSomeBody(*conn_->tls, conn_->buffer, *parser_);
      } else {
        ec = co_await readSomeBody(*conn_->plain, conn_->buffer, *parser_);
      }
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
                 TransportOptions options, std::shared_ptr<ssl::context> ctx)
      : executor_(std::move(ex)),
        config_(std::move(config)),
        url_(std::move(url)),
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

  net::awaitable<Result<HttpResponse>> roundTrip(HttpRequest request, bool idempotent) override {
    auto req = toBeast(request, url_.pathPrefix, hostLabel_);
    for (int attempt = 0;; ++attempt) {
      auto sent = co_await send(req);
      if (!sent) {
        co_return sent.error();
      }
      auto conn = std::move(sent->conn);
      const bool reused = sent->reused;
      boost::system::error_code ec = sent->ec;
      http::response_parser<http::string_body> parser;
      parser.body_limit(options_.maxResponseBytes);
      if (!ec) {
        if (conn->tls) {
          ec = co_await readWhole(*conn->tls, conn->buffer, parser);
        } else {
          ec = co_await readWhole(*conn->plain, conn->buffer, parser);
        }
      }
      if (ec) {
        conn->close();
        if (reused && idempotent && attempt == 0 && !parser.got_some() && isClosedByPeer(ec)) {
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
      const bool reused = sent->reused;
      boost::system::error_code ec = sent->ec;
      auto parser = std::make_unique<http::response_parser<http::buffer_body>>();
      parser->body_limit(boost::none);  // a watch body never ends on its own
      if (!ec) {
        if (conn->tls) {
          ec = co_await readHeader(*conn->tls, conn->buffer, *parser);
        } else {
          ec = co_await readHeader(*conn->plain, conn->buffer, *parser);
        }
      }
      if (ec) {
        conn->close();
        if (reused && attempt == 0 && !parser->got_some() && isClosedByPeer(ec)) {
          continue;
        }
        co_return failure(ec, "opening stream " + hostLabel_ + request.target);
      }
      conn->lowest().expires_never();
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
    if (sent.conn->tls) {
      sent.ec = co_await writeRequest(*sent.conn->tls, req);
    } else {
      sent.ec = co_await writeRequest(*sent.conn->plain, req);
    }
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

  net::awaitable<Result<std::unique_ptr<Connection>>> connect() {
    tcp::resolver resolver(executor_);
    auto [rec, endpoints] = co_await resolver.async_resolve(url_.host, url_.port, kUseTuple);
    if (rec) {
      co_return failure(rec, "resolving " + url_.host);
    }
    auto conn = url_.tls ? std::make_unique<Connection>(executor_, ctx_)
                         : std::make_unique<Connection>(executor_);
    conn->generation = generation_;
    conn->lowest().expires_after(options_.connectTimeout);
    auto [cec, ep] = co_await conn->lowest().async_connect(endpoints, kUseTuple);
    (void)ep;
    if (cec) {
      co_return failure(cec, "connecting to " + hostLabel_);
    }
    if (conn->tls) {
      // SNI carries DNS names only (RFC 6066); an IP server is verified against IP SANs.
      if (!isIpLiteral(verifyName_)) {
        SSL_set_tlsext_host_name(conn->tls->native_handle(), verifyName_.c_str());
      }
      if (!config_.insecureSkipTlsVerify) {
        conn->tls->set_verify_callback(ssl::host_name_verification(verifyName_));
      }
      auto [hec] = co_await conn->tls->async_handshake(ssl::stream_base::client, kUseTuple);
      if (hec) {
        co_return failure(
            hec, "TLS handshake with " + hostLabel_ + " (verifying \"" + verifyName_ + "\")");
      }
    }
    conn->lowest().expires_never();
    co_return conn;
  }

  net::any_io_executor executor_;
  TransportConfig config_;
  ServerUrl url_;
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
  std::shared_ptr<ssl::context> ctx;
  if (url->tls) {
    auto made = makeSslContext(config);
    if (!made) {
      return made.error();
    }
    ctx = std::move(*made);
  }
  return std::unique_ptr<Transport>(
      std::make_unique<BeastTransport>(std::move(executor), config, *url, options, ctx));
}

}  // namespace egress::kube
