#include "test/unit/kube/fake_api_server.h"

#include <algorithm>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace egress::kube::testing {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

namespace {

constexpr auto kUseTuple = net::as_tuple(net::use_awaitable);

// Waits until the client (or closeAll) closes the connection.
template <class Stream>
net::awaitable<void> parkUntilClosed(FakeApiServer::State& state, Stream& stream) {
  char c;
  auto [ec, n] = co_await stream.async_read_some(net::buffer(&c, 1), kUseTuple);
  (void)n;
  state.closedByClient += ec && !state.stopped ? 1 : 0;
}

// The server side of one connection, plain or TLS.
template <class Stream>
net::awaitable<void> serveRequests(std::shared_ptr<FakeApiServer::State> state, Stream& stream,
                                   std::shared_ptr<tcp::socket> sock, std::string clientSubject) {
  beast::flat_buffer buffer;
  for (;;) {
    state->idle.push_back(sock);
    http::request<http::string_body> req;
    auto [ec, n] = co_await http::async_read(stream, buffer, req, kUseTuple);
    (void)n;
    if (ec || state->stopped) {
      state->closedByClient += ec && !state->stopped ? 1 : 0;
      co_return;
    }
    FakeRequest fr;
    fr.method = std::string(req.method_string());
    fr.target = std::string(req.target());
    for (const auto& f : req) {
      std::string name(f.name_string());
      std::transform(name.begin(), name.end(), name.begin(), ::tolower);
      fr.headers[name] = std::string(f.value());
    }
    fr.body = req.body();
    fr.clientCertSubject = clientSubject;
    state->requests.push_back(fr);
    FakeResponse out = state->handler(fr);
    if (out.hangUp) {
      boost::system::error_code ignored;
      sock->close(ignored);
      co_return;
    }
    if (out.noAnswer) {
      co_await parkUntilClosed(*state, stream);
      co_return;
    }
    if (out.chunks.empty()) {
      http::response<http::string_body> res{static_cast<http::status>(out.status), 11};
      for (const auto& [k, v] : out.headers) {
        res.set(k, v);
      }
      res.body() = out.body;
      res.prepare_payload();
      res.keep_alive(!out.close && req.keep_alive());
      auto [wec, wn] = co_await http::async_write(stream, res, kUseTuple);
      (void)wn;
      if (wec || !res.keep_alive()) {
        boost::system::error_code ignored;
        sock->close(ignored);
        co_return;
      }
      continue;
    }
    http::response<http::empty_body> res{static_cast<http::status>(out.status), 11};
    for (const auto& [k, v] : out.headers) {
      res.set(k, v);
    }
    res.chunked(true);
    http::response_serializer<http::empty_body> sr{res};
    auto [hec, hn] = co_await http::async_write_header(stream, sr, kUseTuple);
    (void)hn;
    if (hec) {
      co_return;
    }
    for (const auto& chunk : out.chunks) {
      auto [cec, cn] =
          co_await net::async_write(stream, http::make_chunk(net::buffer(chunk)), kUseTuple);
      (void)cn;
      if (cec) {
        co_return;
      }
    }
    if (out.keepStreamOpen) {
      co_await parkUntilClosed(*state, stream);
      co_return;
    }
    auto [lec, ln] = co_await net::async_write(stream, http::make_chunk_last(), kUseTuple);
    (void)ln;
    if (lec) {
      co_return;
    }
  }
}

net::awaitable<void> servePlain(std::shared_ptr<FakeApiServer::State> state,
                                std::shared_ptr<tcp::socket> sock) {
  co_await serveRequests(state, *sock, sock, "");
}

net::awaitable<void> serveTls(std::shared_ptr<FakeApiServer::State> state,
                              std::shared_ptr<tcp::socket> sock) {
  ssl::stream<tcp::socket&> stream(*sock, *state->tls);
  auto [ec] = co_await stream.async_handshake(ssl::stream_base::server, kUseTuple);
  if (ec) {
    boost::system::error_code ignored;
    sock->close(ignored);
    co_return;
  }
  std::string subject;
  if (X509* peer = SSL_get_peer_certificate(stream.native_handle())) {
    char buf[256];
    X509_NAME_oneline(X509_get_subject_name(peer), buf, sizeof(buf));
    subject = buf;
    X509_free(peer);
  }
  co_await serveRequests(state, stream, sock, subject);
}

net::awaitable<void> acceptLoop(std::shared_ptr<FakeApiServer::State> state,
                                std::shared_ptr<tcp::acceptor> acceptor, bool tls) {
  for (;;) {
    auto sock = std::make_shared<tcp::socket>(acceptor->get_executor());
    auto [ec] = co_await acceptor->async_accept(*sock, kUseTuple);
    if (ec || state->stopped) {
      co_return;
    }
    ++state->accepted;
    state->all.push_back(sock);
    if (tls) {
      net::co_spawn(acceptor->get_executor(), serveTls(state, sock), net::detached);
    } else {
      net::co_spawn(acceptor->get_executor(), servePlain(state, sock), net::detached);
    }
  }
}

}  // namespace

FakeApiServer::FakeApiServer(net::io_context& ioc, Handler handler, const FakeTlsOptions* tls)
    : state_(std::make_shared<State>()),
      acceptor_(std::make_shared<tcp::acceptor>(
          ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0))),
      tls_(tls != nullptr) {
  state_->handler = std::move(handler);
  port_ = acceptor_->local_endpoint().port();
  if (tls != nullptr) {
    state_->tls = std::make_unique<ssl::context>(ssl::context::tls_server);
    state_->tls->use_certificate_chain_file(tls->certFile);
    state_->tls->use_private_key_file(tls->keyFile, ssl::context::pem);
    if (!tls->clientCaFile.empty()) {
      state_->tls->load_verify_file(tls->clientCaFile);
      state_->tls->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
    }
  }
  net::co_spawn(ioc, acceptLoop(state_, acceptor_, tls_), net::detached);
}

FakeApiServer::~FakeApiServer() {
  state_->stopped = true;
  boost::system::error_code ignored;
  acceptor_->close(ignored);
  closeAll();
}

std::string FakeApiServer::url() const {
  return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
}

void FakeApiServer::closeIdleConnections() {
  for (auto& weak : state_->idle) {
    if (auto sock = weak.lock()) {
      boost::system::error_code ignored;
      sock->shutdown(tcp::socket::shutdown_both, ignored);
      sock->close(ignored);
    }
  }
  state_->idle.clear();
}

void FakeApiServer::closeAll() {
  for (auto& weak : state_->all) {
    if (auto sock = weak.lock()) {
      boost::system::error_code ignored;
      sock->close(ignored);
    }
  }
}

}  // namespace egress::kube::testing
