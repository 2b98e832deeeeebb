// File: raw_client.h
//
// A raw HTTP/1.1 client for the server's tests: it writes exactly the bytes a test gives it (so
// malformed, oversized and trickled requests can be sent), parses what comes back with Beast,
// and tells whether the server closed the connection. Coroutines on the test's io_context, next
// to the server; every wait is capped by a generous guard so a broken server fails the test
// instead of hanging it (the guard is a safety net, never the thing a test asserts).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>

namespace egress::controllerruntime::testing {

namespace net = boost::asio;

// What a test may wait for at most before calling the server broken.
inline constexpr std::chrono::seconds kGuard{30};

struct RawResponse {
  bool received = false;  // a whole response was parsed
  std::string error;      // why not
  unsigned status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;

  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

class RawConnection {
 public:
  explicit RawConnection(const net::any_io_executor& executor);

  net::awaitable<bool> connect(net::ip::tcp::endpoint endpoint);
  // False when the server has closed or reset the connection.
  net::awaitable<bool> send(std::string bytes);
  // One response; for a response to HEAD pass head = true (no body follows its Content-Length).
  net::awaitable<RawResponse> read(bool head);
  net::awaitable<RawResponse> read() { return read(false); }
  // Reads until the server closes the connection: true if it did (EOF or reset) before the guard.
  // Bytes that arrive meanwhile are kept in pending().
  net::awaitable<bool> closedByServer();
  const std::string& pending() const { return pending_; }
  void close();

 private:
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::string pending_;
};

// Connects, sends `request`, reads one response.
net::awaitable<RawResponse> exchange(net::ip::tcp::endpoint endpoint, std::string request);

// A GET request for `target`, and any request with extra header lines ("Name: value\r\n" each).
std::string get(const std::string& target);
std::string request(const std::string& method, const std::string& target,
                    const std::string& extraHeaders);

// Waits `d` on the io_context (the server runs meanwhile); returns true.
net::awaitable<bool> pause(std::chrono::milliseconds d);

// 127.0.0.1:port.
net::ip::tcp::endpoint loopback(unsigned short port);

}  // namespace egress::controllerruntime::testing
