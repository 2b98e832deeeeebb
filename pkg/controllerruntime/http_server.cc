#include "pkg/controllerruntime/http_server.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <unordered_map>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

namespace egress::controllerruntime {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

constexpr auto kUseTuple = net::as_tuple(net::use_awaitable);

// After an answer that ends a connection whose client may still be sending (an unread body, the
// rest of an oversized head), the server stops writing and reads what still comes for at most
// this long (and this much), so the kernel does not reset the connection and destroy the answer
// before the client has read it (Go's closeWriteAndWait does the same).
constexpr auto kLingerTime = std::chrono::milliseconds(500);
constexpr std::size_t kLingerBytes = 256 * 1024;

// The answer to a connection beyond maxConnections, written without waiting (it fits any socket
// send buffer) so refusing costs the event loop nothing.
const std::string& tooManyConnections() {
  static const std::string answer = [] {
    const std::string body = "503 Service Unavailable: too many connections\n";
    return "HTTP/1.1 503 Service Unavailable\r\n"
           "Content-Type: text/plain; charset=utf-8\r\n"
           "Content-Length: " +
           std::to_string(body.size()) +
           "\r\n"
           "Connection: close\r\n"
           "\r\n" +
           body;
  }();
  return answer;
}

struct Route {
  std::string path;
  bool tree = false;
  HttpHandler handler;
};

int hexDigit(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

// Percent-decoding (and '+' as a space in a query, as Go's url.QueryUnescape). False on a
// malformed escape.
bool unescape(std::string_view in, bool plusIsSpace, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '%') {
      const int hi = i + 2 < in.size() ? hexDigit(in[i + 1]) : -1;
      const int lo = i + 2 < in.size() ? hexDigit(in[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        return false;
      }
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (in[i] == '+' && plusIsSpace) {
      out.push_back(' ');
    } else {
      out.push_back(in[i]);
    }
  }
  return true;
}

// An origin-form target ("/path?query") into the request. False when it is not one or has a
// malformed escape. (Go ignores bad escapes in the query; a probe or scraper never sends one,
// so this server calls the request malformed instead of guessing.)
bool parseTarget(std::string_view target, HttpRequest& request) {
  if (target.empty() || target.front() != '/') {
    return false;
  }
  const auto mark = target.find('?');
  if (!unescape(target.substr(0, mark), false, request.path)) {
    return false;
  }
  if (mark == std::string_view::npos) {
    return true;
  }
  std::string_view rest = target.substr(mark + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (pair.empty()) {
      continue;
    }
    const auto eq = pair.find('=');
    std::string key;
    std::string value;
    if (!unescape(pair.substr(0, eq), true, key) ||
        (eq != std::string_view::npos && !unescape(pair.substr(eq + 1), true, value))) {
      return false;
    }
    request.query.emplace(std::move(key), std::move(value));
  }
  return true;
}

}  // namespace

HttpResponse httpError(unsigned status, const std::string& text) {
  HttpResponse response;
  response.status = status;
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  response.body = text + "\n";
  return response;
}

struct HttpServer::State {
  State(net::any_io_executor ex, HttpServerOptions opts)
      : executor(std::move(ex)), options(std::move(opts)), acceptor(executor) {}

  // Routing, methods and the handler's answer for a request whose head parsed.
  HttpResponse respond(const http::request<http::empty_body>& head) const {
    HttpRequest request;
    if ((head.version() != 10 && head.version() != 11) || !parseTarget(head.target(), request)) {
      return httpError(400, "400 Bad Request");
    }
    const Route* route = nullptr;
    for (const auto& r : routes) {
      if (request.path == r.path ||
          (r.tree && request.path.size() > r.path.size() && request.path.starts_with(r.path) &&
           request.path[r.path.size()] == '/')) {
        route = &r;
        break;
      }
    }
    if (route == nullptr) {
      return httpError(404, "404 page not found");
    }
    if (head.method() != http::verb::get && head.method() != http::verb::head) {
      HttpResponse refused = httpError(405, "Method Not Allowed");
      refused.headers.emplace_back("Allow", "GET, HEAD");
      return refused;
    }
    request.method = head.method();
    request.subPath = request.path.substr(route->path.size());
    try {
      return route->handler(request);
    } catch (const std::exception& e) {
      // A handler bug must not take the process (or the connection's coroutine) down.
      spdlog::error("{} server: handler for {} failed: {}", options.name, request.path, e.what());
    } catch (...) {
      spdlog::error("{} server: handler for {} failed", options.name, request.path);
    }
    return httpError(500, "500 Internal Server Error");
  }

  net::any_io_executor executor;
  HttpServerOptions options;
  std::vector<Route> routes;
  tcp::acceptor acceptor;
  // The connections being served, and since when each has idled between requests (nullopt:
  // busy with one); each coroutine removes its own before it ends.
  std::unordered_map<beast::tcp_stream*, std::optional<std::chrono::steady_clock::time_point>>
      connections;
  bool stopped = false;
};

namespace {

using State = HttpServer::State;

// Stops writing, reads (and drops) what the client still sends for a short while, closes.
net::awaitable<void> lingerAndClose(beast::tcp_stream& stream) {
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  stream.expires_after(kLingerTime);
  std::size_t drained = 0;
  char sink[4096];
  while (drained < kLingerBytes) {
    auto [ec, n] = co_await stream.async_read_some(net::buffer(sink), kUseTuple);
    if (ec) {
      break;
    }
    drained += n;
  }
  stream.close();
}

net::awaitable<void> writeResponse(State& state, beast::tcp_stream& stream, HttpResponse response,
                                   bool head, unsigned version, bool keepAlive,
                                   boost::system::error_code& ec) {
  http::response<http::string_body> res{static_cast<http::status>(response.status), version};
  res.set(http::field::content_type, response.contentType);
  for (const auto& [name, value] : response.headers) {
    res.insert(name, value);
  }
  // HEAD: the length the body of a GET would have, and no body.
  res.content_length(response.body.size());
  if (!head) {
    res.body() = std::move(response.body);
  }
  res.keep_alive(keepAlive);
  stream.expires_after(state.options.writeTimeout);
  auto [wec, n] = co_await http::async_write(stream, res, kUseTuple);
  (void)n;
  ec = wec;
}

// Whether a failed head read deserves an answer, and which one: 431 for a head over the limit,
// 400 for a malformed one; nothing (0) for a timeout, a hang-up or a socket error.
unsigned statusForReadError(const boost::system::error_code& ec) {
  if (ec == http::error::header_limit) {
    return 431;
  }
  if (ec.category() == http::make_error_code(http::error::end_of_stream).category() &&
      ec != http::error::end_of_stream && ec != http::error::partial_message) {
    return 400;
  }
  return 0;
}

net::awaitable<void> serveConnection(std::shared_ptr<State> state,
                                     std::shared_ptr<beast::tcp_stream> stream) {
  // However the coroutine ends (even destroyed unfinished with the io_context), stop() must no
  // longer see this stream.
  struct Forget {
    State& state;
    beast::tcp_stream* stream;
    ~Forget() { state.connections.erase(stream); }
  } forget{*state, stream.get()};
  const HttpServerOptions& options = state->options;
  beast::flat_buffer buffer;
  bool linger = false;
  for (bool first = true; !state->stopped; first = false) {
    if (!first && buffer.size() == 0) {
      // Kept alive: wait for the next request's first byte; its head deadline starts there.
      stream->expires_after(options.idleTimeout);
      state->connections[stream.get()] = std::chrono::steady_clock::now();
      auto [ec, n] = co_await stream->async_read_some(buffer.prepare(4096), kUseTuple);
      if (ec || state->stopped) {
        break;
      }
      buffer.commit(n);
      state->connections[stream.get()].reset();
    }
    http::request_parser<http::empty_body> parser;
    parser.header_limit(options.headerLimit);
    // One deadline for the whole head: a client trickling bytes cannot extend it.
    stream->expires_after(options.readHeaderTimeout);
    auto [ec, n] = co_await http::async_read_header(*stream, buffer, parser, kUseTuple);
    (void)n;
    if (state->stopped) {
      break;
    }
    if (ec) {
      if (const unsigned status = statusForReadError(ec); status != 0) {
        HttpResponse error = httpError(
            status, status == 431 ? "431 Request Header Fields Too Large" : "400 Bad Request");
        boost::system::error_code ignored;
        co_await writeResponse(*state, *stream, std::move(error), false, 11, false, ignored);
        linger = true;
      }
      break;
    }
    const auto& head = parser.get();
    HttpResponse response = state->respond(head);
    // A body is never read, so the connection cannot carry another request after it; nor is
    // a client that sent a malformed request trusted with another.
    const bool keepAlive = head.keep_alive() && parser.is_done() && response.status != 400;
    boost::system::error_code wec;
    const unsigned version = head.version() == 10 ? 10 : 11;
    co_await writeResponse(*state, *stream, std::move(response), head.method() == http::verb::head,
                           version, keepAlive, wec);
    if (wec || !keepAlive) {
      linger = !wec;
      break;
    }
  }
  if (linger && !state->stopped) {
    co_await lingerAndClose(*stream);
  }
  stream->close();
}

// Closes the connection that has idled longest between kept-alive requests (its client loses
// nothing: it reconnects), so that clients that keep connections open cannot lock others out.
// False if every connection is busy with a request.
bool evictIdle(State& state) {
  beast::tcp_stream* oldest = nullptr;
  std::chrono::steady_clock::time_point since;
  for (const auto& [stream, idleSince] : state.connections) {
    if (idleSince && (oldest == nullptr || *idleSince < since)) {
      oldest = stream;
      since = *idleSince;
    }
  }
  if (oldest == nullptr) {
    return false;
  }
  // Its coroutine wakes with an error and removes it; until then it is no longer idle.
  state.connections[oldest].reset();
  oldest->close();
  return true;
}

// Answers 503 and closes, without waiting for anything.
void refuse(tcp::socket& socket) {
  boost::system::error_code ignored;
  socket.non_blocking(true, ignored);
  // What already arrived is read first: closing with unread data would reset the connection
  // and could destroy the answer before the client reads it.
  char sink[4096];
  while (socket.read_some(net::buffer(sink), ignored) > 0) {
  }
  socket.write_some(net::buffer(tooManyConnections()), ignored);
  socket.shutdown(tcp::socket::shutdown_send, ignored);
  socket.close(ignored);
}

net::awaitable<void> acceptConnections(std::shared_ptr<State> state) {
  // Accept errors (out of file descriptors, mostly) are retried after a growing pause, as Go's
  // http.Server does, instead of spinning.
  auto pause = std::chrono::milliseconds(5);
  net::steady_timer backoff(state->executor);
  while (!state->stopped) {
    tcp::socket socket(state->executor);
    auto [ec] = co_await state->acceptor.async_accept(socket, kUseTuple);
    if (state->stopped) {
      break;
    }
    if (ec) {
      spdlog::warn("{} server: accept failed: {}; retrying in {} ms", state->options.name,
                   ec.message(), pause.count());
      backoff.expires_after(pause);
      co_await backoff.async_wait(kUseTuple);
      pause = std::min(pause * 2, std::chrono::milliseconds(1000));
      continue;
    }
    pause = std::chrono::milliseconds(5);
    if (state->connections.size() >= state->options.maxConnections && !evictIdle(*state)) {
      refuse(socket);
      continue;
    }
    auto stream = std::make_shared<beast::tcp_stream>(std::move(socket));
    state->connections.emplace(stream.get(), std::nullopt);
    net::co_spawn(state->executor, serveConnection(state, std::move(stream)), net::detached);
  }
}

}  // namespace

HttpServer::HttpServer(net::any_io_executor executor, HttpServerOptions options)
    : state_(std::make_shared<State>(std::move(executor), std::move(options))) {}

HttpServer::~HttpServer() {
  stop();
}

void HttpServer::handle(const std::string& path, HttpHandler handler) {
  state_->routes.push_back({path, false, std::move(handler)});
}

void HttpServer::handleTree(const std::string& path, HttpHandler handler) {
  state_->routes.push_back({path, true, std::move(handler)});
}

Result<Ok, std::string> HttpServer::start(const BindAddress& address) {
  auto fail = [&](const boost::system::error_code& ec) -> Result<Ok, std::string> {
    boost::system::error_code ignored;
    state_->acceptor.close(ignored);
    return state_->options.name + " server: cannot listen on \"" + address.text +
           "\": " + ec.message();
  };
  boost::system::error_code ec;
  tcp::endpoint endpoint;
  if (address.host) {
    endpoint = tcp::endpoint(*address.host, address.port);
    state_->acceptor.open(endpoint.protocol(), ec);
  } else {
    // Every interface: one IPv6 socket that also takes IPv4 (as Go listens for ":port"), or
    // IPv4 alone on a machine without IPv6.
    endpoint = tcp::endpoint(tcp::v6(), address.port);
    state_->acceptor.open(tcp::v6(), ec);
    if (!ec) {
      state_->acceptor.set_option(net::ip::v6_only(false), ec);
    }
    if (ec) {
      boost::system::error_code ignored;
      state_->acceptor.close(ignored);
      endpoint = tcp::endpoint(tcp::v4(), address.port);
      state_->acceptor.open(tcp::v4(), ec);
    }
  }
  if (ec) {
    return fail(ec);
  }
  // As Go does: a restarted operator can rebind while old connections sit in TIME_WAIT.
  state_->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) {
    state_->acceptor.bind(endpoint, ec);
  }
  if (!ec) {
    state_->acceptor.listen(net::socket_base::max_listen_connections, ec);
  }
  if (ec) {
    return fail(ec);
  }
  net::co_spawn(state_->executor, acceptConnections(state_), net::detached);
  return Ok{};
}

void HttpServer::stop() {
  if (state_->stopped) {
    return;
  }
  state_->stopped = true;
  boost::system::error_code ignored;
  state_->acceptor.close(ignored);
  // Each coroutine wakes with an error, sees `stopped` and removes itself.
  for (const auto& connection : state_->connections) {
    connection.first->close();
  }
}

tcp::endpoint HttpServer::endpoint() const {
  boost::system::error_code ignored;
  return state_->acceptor.local_endpoint(ignored);
}

std::size_t HttpServer::activeConnections() const {
  return state_->connections.size();
}

}  // namespace egress::controllerruntime
