#include "test/unit/cache/raw_http_server.h"

#include <cstdio>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

namespace egress::cache::testing {

namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

constexpr auto kUseTuple = net::as_tuple(net::use_awaitable);

net::awaitable<void> serve(std::shared_ptr<RawHttpServer::State> state,
                           std::shared_ptr<tcp::socket> sock) {
  std::string buffer;
  for (;;) {
    auto [ec, n] =
        co_await net::async_read_until(*sock, net::dynamic_buffer(buffer), "\r\n\r\n", kUseTuple);
    if (ec) {
      co_return;
    }
    const std::string head = buffer.substr(0, n);
    buffer.erase(0, n);
    // "GET /target HTTP/1.1"
    const auto first = head.find(' ');
    const auto second = head.find(' ', first + 1);
    const std::string target = head.substr(first + 1, second - first - 1);
    state->targets.push_back(target);
    const RawHttpServer::Reply reply = state->handler(target);
    auto [wec, wn] = co_await net::async_write(*sock, net::buffer(reply.bytes), kUseTuple);
    (void)wn;
    if (wec || reply.close) {
      boost::system::error_code ignored;
      sock->shutdown(tcp::socket::shutdown_both, ignored);
      sock->close(ignored);
      co_return;
    }
    // Silent until the client goes away.
    char c;
    co_await sock->async_read_some(net::buffer(&c, 1), kUseTuple);
    co_return;
  }
}

net::awaitable<void> acceptLoop(std::shared_ptr<RawHttpServer::State> state,
                                std::shared_ptr<tcp::acceptor> acceptor) {
  for (;;) {
    auto sock = std::make_shared<tcp::socket>(acceptor->get_executor());
    auto [ec] = co_await acceptor->async_accept(*sock, kUseTuple);
    if (ec) {
      co_return;
    }
    state->sockets.push_back(sock);
    net::co_spawn(acceptor->get_executor(), serve(state, sock), net::detached);
  }
}

}  // namespace

RawHttpServer::RawHttpServer(net::io_context& ioc, Handler handler)
    : state_(std::make_shared<State>()),
      acceptor_(std::make_shared<tcp::acceptor>(
          ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0))) {
  state_->handler = std::move(handler);
  net::co_spawn(ioc, acceptLoop(state_, acceptor_), net::detached);
}

RawHttpServer::~RawHttpServer() {
  boost::system::error_code ignored;
  acceptor_->close(ignored);
  for (auto& weak : state_->sockets) {
    if (auto sock = weak.lock()) {
      sock->close(ignored);
    }
  }
}

std::string RawHttpServer::url() const {
  return "http://127.0.0.1:" + std::to_string(acceptor_->local_endpoint().port());
}

std::string jsonResponse(const std::string& body) {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
         "Content-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string chunkedHead() {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
}

std::string chunk(const std::string& data) {
  char size[32];
  std::snprintf(size, sizeof(size), "%zx", data.size());
  return std::string(size) + "\r\n" + data + "\r\n";
}

}  // namespace egress::cache::testing
