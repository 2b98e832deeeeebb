#include "test/unit/kube/connect_proxy.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace egress::kube::testing {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

namespace {

constexpr auto kUseTuple = net::as_tuple(net::use_awaitable);

void closeBoth(tcp::socket& a, tcp::socket& b) {
  boost::system::error_code ignored;
  a.close(ignored);
  b.close(ignored);
}

// Copies bytes from `from` to `to` until either side fails or ends, then closes both sockets.
// Everything is held by shared_ptr: the other direction may still have an operation pending on
// the same streams.
template <class From, class To>
net::awaitable<void> pipe(std::shared_ptr<From> from, std::shared_ptr<To> to,
                          std::shared_ptr<tcp::socket> a, std::shared_ptr<tcp::socket> b) {
  std::vector<char> buf(16 * 1024);
  for (;;) {
    auto [rec, n] = co_await from->async_read_some(net::buffer(buf), kUseTuple);
    if (rec) {
      break;
    }
    auto [wec, wn] = co_await net::async_write(*to, net::buffer(buf.data(), n), kUseTuple);
    (void)wn;
    if (wec) {
      break;
    }
  }
  closeBoth(*a, *b);
}

template <class Stream>
net::awaitable<void> serve(std::shared_ptr<ConnectProxy::State> state,
                           std::shared_ptr<Stream> client,
                           std::shared_ptr<tcp::socket> clientSocket) {
  beast::flat_buffer buffer;
  http::request<http::empty_body> req;
  auto [ec, n] = co_await http::async_read(*client, buffer, req, kUseTuple);
  (void)n;
  if (ec || state->stopped) {
    co_return;
  }
  ProxyConnect connect;
  connect.target = std::string(req.target());
  if (auto it = req.find(http::field::proxy_authorization); it != req.end()) {
    connect.proxyAuthorization = std::string(it->value());
  }
  state->connects.push_back(connect);
  const int status = req.method() != http::verb::connect ? 405
                     : state->policy                     ? state->policy(connect)
                                                         : 200;
  if (status != 200) {
    http::response<http::string_body> res{static_cast<http::status>(status), 11};
    if (status == 407) {
      res.set(http::field::proxy_authenticate, "Basic realm=\"test\"");
    }
    res.body() = "no tunnel for you";
    res.prepare_payload();
    res.keep_alive(false);
    co_await http::async_write(*client, res, kUseTuple);
    boost::system::error_code ignored;
    clientSocket->close(ignored);
    co_return;
  }
  auto upstream = std::make_shared<tcp::socket>(clientSocket->get_executor());
  state->sockets.push_back(upstream);
  auto [cec] = co_await upstream->async_connect(
      tcp::endpoint(net::ip::make_address("127.0.0.1"), state->upstreamPort), kUseTuple);
  if (cec) {
    boost::system::error_code ignored;
    clientSocket->close(ignored);
    co_return;
  }
  static const std::string kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";
  co_await net::async_write(*client, net::buffer(kEstablished), kUseTuple);
  if (buffer.size() > 0) {
    co_await net::async_write(*upstream, buffer.data(), kUseTuple);
  }
  net::co_spawn(clientSocket->get_executor(), pipe(upstream, client, clientSocket, upstream),
                net::detached);
  co_await pipe(client, upstream, clientSocket, upstream);
}

net::awaitable<void> servePlain(std::shared_ptr<ConnectProxy::State> state,
                                std::shared_ptr<tcp::socket> sock) {
  co_await serve(state, sock, sock);
}

// The TLS stream refers to the socket, so it holds the socket's shared_ptr beside it.
struct TlsClient {
  TlsClient(std::shared_ptr<tcp::socket> s, ssl::context& ctx)
      : sock(std::move(s)), stream(*sock, ctx) {}
  template <class Buffers, class Token>
  auto async_read_some(const Buffers& b, Token&& t) {
    return stream.async_read_some(b, std::forward<Token>(t));
  }
  template <class Buffers, class Token>
  auto async_write_some(const Buffers& b, Token&& t) {
    return stream.async_write_some(b, std::forward<Token>(t));
  }
  using executor_type = tcp::socket::executor_type;
  executor_type get_executor() { return sock->get_executor(); }

  std::shared_ptr<tcp::socket> sock;
  ssl::stream<tcp::socket&> stream;
};

net::awaitable<void> serveTls(std::shared_ptr<ConnectProxy::State> state,
                              std::shared_ptr<tcp::socket> sock) {
  auto client = std::make_shared<TlsClient>(sock, *state->tls);
  auto [ec] = co_await client->stream.async_handshake(ssl::stream_base::server, kUseTuple);
  if (ec) {
    boost::system::error_code ignored;
    sock->close(ignored);
    co_return;
  }
  co_await serve(state, client, sock);
}

net::awaitable<void> acceptLoop(std::shared_ptr<ConnectProxy::State> state,
                                std::shared_ptr<tcp::acceptor> acceptor, bool tls) {
  for (;;) {
    auto sock = std::make_shared<tcp::socket>(acceptor->get_executor());
    auto [ec] = co_await acceptor->async_accept(*sock, kUseTuple);
    if (ec || state->stopped) {
      co_return;
    }
    state->sockets.push_back(sock);
    if (tls) {
      net::co_spawn(acceptor->get_executor(), serveTls(state, sock), net::detached);
    } else {
      net::co_spawn(acceptor->get_executor(), servePlain(state, sock), net::detached);
    }
  }
}

}  // namespace

ConnectProxy::ConnectProxy(net::io_context& ioc, unsigned short upstreamPort, Policy policy,
                           const std::pair<std::string, std::string>* tls)
    : state_(std::make_shared<State>()),
      acceptor_(std::make_shared<tcp::acceptor>(
          ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0))),
      tls_(tls != nullptr) {
  state_->policy = std::move(policy);
  state_->upstreamPort = upstreamPort;
  if (tls != nullptr) {
    state_->tls = std::make_unique<ssl::context>(ssl::context::tls_server);
    state_->tls->use_certificate_chain_file(tls->first);
    state_->tls->use_private_key_file(tls->second, ssl::context::pem);
  }
  net::co_spawn(ioc, acceptLoop(state_, acceptor_, tls_), net::detached);
}

ConnectProxy::~ConnectProxy() {
  state_->stopped = true;
  boost::system::error_code ignored;
  acceptor_->close(ignored);
  for (auto& weak : state_->sockets) {
    if (auto sock = weak.lock()) {
      sock->close(ignored);
    }
  }
}

std::string ConnectProxy::url() const {
  return std::string(tls_ ? "https" : "http") +
         "://127.0.0.1:" + std::to_string(acceptor_->local_endpoint().port());
}

}  // namespace egress::kube::testing
