#include "test/e2e/testenv/fault_proxy.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace egress::testenv {

namespace {

constexpr int kPollMs = 50;

// Closes `fd` with a TCP RST instead of a FIN.
void closeWithReset(int fd) {
  if (fd < 0) {
    return;
  }
  linger l{};
  l.l_onoff = 1;
  l.l_linger = 0;
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::close(fd);
}

void closeFd(int fd) {
  if (fd >= 0) {
    ::close(fd);
  }
}

// POLLIN on `fd` within kPollMs.
bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, kPollMs) > 0;
}

// The status line's text and the Status object's reason of an injected answer.
std::pair<std::string, std::string> describe(int status) {
  switch (status) {
    case 429:
      return {"Too Many Requests", "TooManyRequests"};
    case 503:
      return {"Service Unavailable", "ServiceUnavailable"};
    case 500:
      return {"Internal Server Error", "InternalError"};
    default:
      return {"Fault", "Unknown"};
  }
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return s;
}

// The length of one whole HTTP request at the start of `buf` (headers and a Content-Length or
// chunked body), or 0 if more bytes are needed.
size_t requestLength(const std::string& buf) {
  const auto end = buf.find("\r\n\r\n");
  if (end == std::string::npos) {
    return 0;
  }
  const std::string head = lower(buf.substr(0, end));
  const size_t bodyStart = end + 4;
  if (head.find("transfer-encoding: chunked") != std::string::npos) {
    const auto last = buf.find("\r\n0\r\n\r\n", bodyStart - 2);
    return last == std::string::npos ? 0 : last + 7;
  }
  size_t length = 0;
  if (const auto at = head.find("content-length:"); at != std::string::npos) {
    length = std::stoul(head.substr(at + 15));
  }
  return buf.size() >= bodyStart + length ? bodyStart + length : 0;
}

}  // namespace

struct FaultProxy::Connection {
  int client = -1;
  int upstream = -1;
  uint64_t generation = 0;
};

std::unique_ptr<FaultProxy> FaultProxy::start(const FaultProxyOptions& options,
                                              std::string& error) {
  std::unique_ptr<FaultProxy> p(new FaultProxy(options));
  p->listenFd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (p->listenFd_ < 0 || ::bind(p->listenFd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::listen(p->listenFd_, 128) != 0 ||
      ::getsockname(p->listenFd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    error = std::string("fault proxy: cannot listen: ") + std::strerror(errno);
    return nullptr;
  }
  p->port_ = ntohs(addr.sin_port);
  if (!options.certFile.empty()) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == nullptr || SSL_CTX_use_certificate_chain_file(ctx, options.certFile.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, options.keyFile.c_str(), SSL_FILETYPE_PEM) != 1) {
      SSL_CTX_free(ctx);
      error = "fault proxy: cannot load " + options.certFile + " / " + options.keyFile;
      return nullptr;
    }
    p->sslContext_ = ctx;
  }
  FaultProxy* self = p.get();
  self->spawn([self] { self->acceptLoop(); });
  return p;
}

FaultProxy::FaultProxy(FaultProxyOptions options) : options_(std::move(options)) {}

FaultProxy::~FaultProxy() {
  stop_ = true;
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return live_ == 0; });
  closeFd(listenFd_);
  SSL_CTX_free(static_cast<SSL_CTX*>(sslContext_));
}

template <typename Body>
void FaultProxy::spawn(Body body) {
  {
    std::lock_guard lock(mutex_);
    ++live_;
  }
  std::thread([this, body = std::move(body)] {
    body();
    std::lock_guard lock(mutex_);
    if (--live_ == 0) {
      idle_.notify_all();
    }
  }).detach();
}

void FaultProxy::setMode(FaultMode mode) {
  if (mode == FaultMode::Reset || mode == FaultMode::HttpError) {
    ++generation_;  // the connections made before end now
  }
  mode_ = mode;
}

void FaultProxy::setHttpFault(const HttpFault& fault) {
  httpStatus_ = fault.status;
  retryAfter_ = fault.retryAfterSeconds;
}

int FaultProxy::open() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(std::count_if(connections_.begin(), connections_.end(),
                                        [](const auto& w) { return !w.expired(); }));
}

std::string FaultProxy::writeKubeconfig(const std::string& from, const std::string& server,
                                        const std::string& to) const {
  std::ifstream in(from);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  size_t replaced = 0;
  for (auto at = text.find(server); at != std::string::npos; at = text.find(server, at)) {
    text.replace(at, server.size(), url());
    at += url().size();
    ++replaced;
  }
  if (replaced == 0) {
    return "fault proxy: " + from + " does not name " + server;
  }
  std::ofstream out(to);
  out << text;
  return out ? "" : "fault proxy: cannot write " + to;
}

void FaultProxy::acceptLoop() {
  while (!stop_) {
    if (!readable(listenFd_)) {
      continue;
    }
    const int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      continue;
    }
    ++accepted_;
    auto c = std::make_shared<Connection>();
    c->client = fd;
    c->generation = generation_;
    {
      std::lock_guard lock(mutex_);
      std::erase_if(connections_, [](const auto& w) { return w.expired(); });
      connections_.push_back(c);
    }
    spawn([this, c] { serve(*c); });
  }
}

void FaultProxy::serve(Connection& c) {
  switch (mode_.load()) {
    case FaultMode::Reset:
      ++resets_;
      closeWithReset(c.client);
      return;
    case FaultMode::Blackhole:
      discard(c);
      return;
    case FaultMode::HttpError:
      answerHttp(c);
      return;
    case FaultMode::PassThrough:
      break;
  }
  c.upstream = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(options_.upstreamPort));
  if (c.upstream < 0 || ::connect(c.upstream, reinterpret_cast<sockaddr*>(&addr), sizeof addr)) {
    // The API server is down: the client sees what it would see, a refused connection.
    ++resets_;
    closeWithReset(c.client);
    closeFd(c.upstream);
    return;
  }
  pump(c);
}

// Copies bytes both ways until either side closes; pauses while the mode is Blackhole and ends
// with a reset when a mode that ends old connections starts.
void FaultProxy::pump(Connection& c) {
  char buf[64 * 1024];
  // Writes all of `n` bytes to `fd`; false if the peer went away or the proxy stops.
  auto writeAll = [&](int fd, const char* data, ssize_t n) {
    while (n > 0 && !stop_) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, kPollMs) <= 0) {
        continue;
      }
      const ssize_t w = ::send(fd, data, static_cast<size_t>(n), MSG_NOSIGNAL);
      if (w <= 0) {
        return false;
      }
      data += w;
      n -= w;
    }
    return n == 0;
  };
  while (!stop_) {
    const FaultMode mode = mode_;
    if (mode == FaultMode::Reset || generation_ != c.generation) {
      ++resets_;
      closeWithReset(c.client);
      closeWithReset(c.upstream);
      return;
    }
    if (mode == FaultMode::Blackhole) {
      std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
      continue;
    }
    pollfd p[2] = {{c.client, POLLIN, 0}, {c.upstream, POLLIN, 0}};
    if (::poll(p, 2, kPollMs) <= 0) {
      continue;
    }
    bool open = true;
    for (int i = 0; i < 2 && open; ++i) {
      if ((p[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
        continue;
      }
      const ssize_t n = ::recv(p[i].fd, buf, sizeof buf, 0);
      open = n > 0 && writeAll(p[1 - i].fd, buf, n);
    }
    if (!open) {
      break;
    }
  }
  closeFd(c.client);
  closeFd(c.upstream);
}

// A partition for a connection made during it: read, never answer; reset once it heals.
void FaultProxy::discard(Connection& c) {
  char buf[16 * 1024];
  while (!stop_ && mode_ == FaultMode::Blackhole) {
    if (readable(c.client) && ::recv(c.client, buf, sizeof buf, 0) <= 0) {
      closeFd(c.client);
      return;
    }
  }
  ++resets_;
  closeWithReset(c.client);
}

// TLS terminated here, every request answered with the configured status until the mode ends.
void FaultProxy::answerHttp(Connection& c) {
  if (sslContext_ == nullptr) {
    closeWithReset(c.client);
    return;
  }
  timeval timeout{5, 0};  // a handshake or a record that never completes ends the connection
  ::setsockopt(c.client, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(c.client, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  SSL* ssl = SSL_new(static_cast<SSL_CTX*>(sslContext_));
  SSL_set_fd(ssl, c.client);
  std::string buf;
  bool ok = SSL_accept(ssl) == 1;
  while (ok && !stop_ && mode_ == FaultMode::HttpError) {
    if (const size_t n = requestLength(buf); n > 0) {
      buf.erase(0, n);
      const int status = httpStatus_;
      const int retryAfter = retryAfter_;
      const auto [text, reason] = describe(status);
      const std::string body =
          R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"injected by the test's fault proxy","reason":")" +
          reason + R"(","code":)" + std::to_string(status) + "}";
      std::string response =
          "HTTP/1.1 " + std::to_string(status) + " " + text +
          "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
          "\r\n";
      if (retryAfter >= 0) {
        response += "Retry-After: " + std::to_string(retryAfter) + "\r\n";
      }
      response += "\r\n" + body;
      ++faultsAnswered_;  // before the answer, so a client that has it sees it counted
      ok = SSL_write(ssl, response.data(), static_cast<int>(response.size())) > 0;
      continue;
    }
    if (SSL_pending(ssl) == 0 && !readable(c.client)) {
      continue;
    }
    char chunk[16 * 1024];
    const int n = SSL_read(ssl, chunk, sizeof chunk);
    ok = n > 0;
    if (ok) {
      buf.append(chunk, static_cast<size_t>(n));
    }
  }
  SSL_free(ssl);
  closeWithReset(c.client);
}

}  // namespace egress::testenv
