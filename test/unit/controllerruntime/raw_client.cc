#include "test/unit/controllerruntime/raw_client.h"

#include <algorithm>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http.hpp>

namespace egress::controllerruntime::testing {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

constexpr auto kUseTuple = net::as_tuple(net::use_awaitable);

}  // namespace

RawConnection::RawConnection(const net::any_io_executor& executor) : stream_(executor) {}

net::awaitable<bool> RawConnection::connect(tcp::endpoint endpoint) {
  stream_.expires_after(kGuard);
  auto [ec] = co_await stream_.async_connect(endpoint, kUseTuple);
  co_return !ec;
}

net::awaitable<bool> RawConnection::send(std::string bytes) {
  stream_.expires_after(kGuard);
  auto [ec, n] = co_await net::async_write(stream_, net::buffer(bytes), kUseTuple);
  (void)n;
  co_return !ec;
}

net::awaitable<RawResponse> RawConnection::read(bool head) {
  RawResponse out;
  http::response_parser<http::string_body> parser;
  parser.skip(head);
  parser.body_limit(64 * 1024 * 1024);
  stream_.expires_after(kGuard);
  auto [ec, n] = co_await http::async_read(stream_, buffer_, parser, kUseTuple);
  (void)n;
  if (ec) {
    out.error = ec.message();
    co_return out;
  }
  const auto& res = parser.get();
  out.received = true;
  out.status = res.result_int();
  for (const auto& field : res) {
    std::string name(field.name_string());
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    out.headers[name] = std::string(field.value());
  }
  out.body = res.body();
  co_return out;
}

net::awaitable<bool> RawConnection::closedByServer() {
  pending_ += beast::buffers_to_string(buffer_.data());
  buffer_.consume(buffer_.size());
  stream_.expires_after(kGuard);
  for (;;) {
    char chunk[4096];
    auto [ec, n] = co_await stream_.async_read_some(net::buffer(chunk), kUseTuple);
    pending_.append(chunk, n);
    if (ec == beast::error::timeout) {
      co_return false;
    }
    if (ec) {
      co_return true;  // EOF or reset: closed either way
    }
  }
}

void RawConnection::close() {
  boost::system::error_code ignored;
  stream_.socket().close(ignored);
}

net::awaitable<RawResponse> exchange(tcp::endpoint endpoint, std::string request) {
  RawConnection connection(co_await net::this_coro::executor);
  if (!co_await connection.connect(endpoint)) {
    RawResponse failed;
    failed.error = "connect failed";
    co_return failed;
  }
  co_await connection.send(std::move(request));
  co_return co_await connection.read(false);
}

std::string get(const std::string& target) {
  return request("GET", target, "");
}

std::string request(const std::string& method, const std::string& target,
                    const std::string& extraHeaders) {
  return method + " " + target + " HTTP/1.1\r\nHost: test\r\n" + extraHeaders + "\r\n";
}

net::awaitable<bool> pause(std::chrono::milliseconds d) {
  net::steady_timer timer(co_await net::this_coro::executor);
  timer.expires_after(d);
  co_await timer.async_wait(kUseTuple);
  co_return true;
}

tcp::endpoint loopback(unsigned short port) {
  return {net::ip::make_address("127.0.0.1"), port};
}

}  // namespace egress::controllerruntime::testing
