// The fault proxy's modes on loopback: bytes through, a partition that holds them and lets them
// go, resets of old and new connections, and TLS-terminated 429/503 answers.
#include "test/e2e/testenv/fault_proxy.h"

#include <atomic>
#include <cerrno>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include "test/testutil/temp_dir.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace egress::testenv {
namespace {

std::string tlsFile(const std::string& name) {
  return std::string(EGRESS_TESTDATA_DIR) + "/tls/" + name;
}

// An upstream that echoes every byte back, one thread per connection.
class EchoServer {
 public:
  EchoServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    const bool listening = ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
                           ::listen(fd_, 16) == 0 &&
                           ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
    EXPECT_TRUE(listening) << "the echo server cannot listen";
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0) {
          continue;
        }
        const int c = ::accept(fd_, nullptr, nullptr);
        workers_.emplace_back([this, c] {
          char buf[4096];
          while (!stop_) {
            pollfd q{c, POLLIN, 0};
            if (::poll(&q, 1, 50) <= 0) {
              continue;
            }
            const ssize_t n = ::recv(c, buf, sizeof buf, 0);
            if (n <= 0 || ::send(c, buf, static_cast<size_t>(n), MSG_NOSIGNAL) != n) {
              break;
            }
          }
          ::close(c);
        });
      }
    });
  }
  ~EchoServer() {
    stop_ = true;
    thread_.join();
    for (auto& w : workers_) {
      w.join();
    }
    ::close(fd_);
  }
  int port() const { return port_; }

 private:
  int fd_;
  int port_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<std::thread> workers_;
};

int connectTo(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  return fd;
}

// What the next read on `fd` gives within `ms`: the bytes, "<eof>", "<reset>" or "<nothing>".
std::string readWithin(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, ms) <= 0) {
    return "<nothing>";
  }
  char buf[4096];
  const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  if (n < 0) {
    return errno == ECONNRESET ? "<reset>" : "<error>";
  }
  return n == 0 ? "<eof>" : std::string(buf, static_cast<size_t>(n));
}

void sendAll(int fd, const std::string& s) {
  ASSERT_EQ(::send(fd, s.data(), s.size(), MSG_NOSIGNAL), static_cast<ssize_t>(s.size()));
}

class FaultProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    proxy_ = FaultProxy::start({echo_.port(), tlsFile("server.crt"), tlsFile("server.key")}, error);
    ASSERT_TRUE(proxy_) << error;
  }

  // A connection through the proxy that has carried bytes both ways.
  int establishedConnection() {
    const int fd = connectTo(proxy_->port());
    sendAll(fd, "a");
    EXPECT_EQ(readWithin(fd, 10000), "a");
    return fd;
  }

  EchoServer echo_;
  std::unique_ptr<FaultProxy> proxy_;
};

TEST_F(FaultProxyTest, PassThroughCarriesBytesBothWays) {
  const int fd = connectTo(proxy_->port());
  sendAll(fd, "hello");
  EXPECT_EQ(readWithin(fd, 10000), "hello");
  EXPECT_EQ(proxy_->accepted(), 1);
  ::close(fd);
}

TEST_F(FaultProxyTest, BlackholeHoldsExistingBytesUntilItHealsAndNeverAnswersNewConnections) {
  const int old = establishedConnection();
  proxy_->setMode(FaultMode::Blackhole);
  sendAll(old, "held");
  const int fresh = connectTo(proxy_->port());  // accepted: the SYN is answered
  sendAll(fresh, "lost");
  EXPECT_EQ(readWithin(old, 500), "<nothing>");
  EXPECT_EQ(readWithin(fresh, 500), "<nothing>");
  proxy_->setMode(FaultMode::PassThrough);
  // The held bytes arrive once the partition heals; the connection made during it is dead.
  EXPECT_EQ(readWithin(old, 10000), "held");
  EXPECT_EQ(readWithin(fresh, 10000), "<reset>");
  ::close(old);
  ::close(fresh);
}

TEST_F(FaultProxyTest, ResetEndsExistingAndNewConnectionsWithARst) {
  const int old = establishedConnection();
  proxy_->setMode(FaultMode::Reset);
  EXPECT_EQ(readWithin(old, 10000), "<reset>");
  const int fresh = connectTo(proxy_->port());
  EXPECT_EQ(readWithin(fresh, 10000), "<reset>");
  EXPECT_GE(proxy_->resets(), 2);
  proxy_->setMode(FaultMode::PassThrough);
  const int again = connectTo(proxy_->port());
  sendAll(again, "back");
  EXPECT_EQ(readWithin(again, 10000), "back");
  ::close(old);
  ::close(fresh);
  ::close(again);
}

// A TLS client that trusts the test CA: each request's raw response head and body.
class TlsClient {
 public:
  explicit TlsClient(int port) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_load_verify_locations(ctx_, tlsFile("ca.crt").c_str(), nullptr);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    fd_ = connectTo(port);
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    SSL_set1_host(ssl_, "127.0.0.1");
    connected_ = SSL_connect(ssl_) == 1;
  }
  ~TlsClient() {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
    ::close(fd_);
  }
  bool connected() const { return connected_; }
  std::string request(const std::string& raw) {
    SSL_write(ssl_, raw.data(), static_cast<int>(raw.size()));
    std::string got;
    char buf[4096];
    // The proxy's answers carry a Content-Length; read until the body is complete.
    while (true) {
      const auto end = got.find("\r\n\r\n");
      if (end != std::string::npos) {
        const auto at = got.find("Content-Length: ");
        if (at != std::string::npos && got.size() >= end + 4 + std::stoul(got.substr(at + 16))) {
          return got;
        }
      }
      const int n = SSL_read(ssl_, buf, sizeof buf);
      if (n <= 0) {
        return got + "<closed>";
      }
      got.append(buf, static_cast<size_t>(n));
    }
  }

 private:
  SSL_CTX* ctx_;
  SSL* ssl_;
  int fd_;
  bool connected_ = false;
};

TEST_F(FaultProxyTest, HttpErrorTerminatesTlsAndAnswersEveryRequestWithTheStatus) {
  const int old = establishedConnection();
  proxy_->setHttpFault({429, 3});
  proxy_->setMode(FaultMode::HttpError);
  EXPECT_EQ(readWithin(old, 10000), "<reset>") << "a pass-through connection survived";

  TlsClient client(proxy_->port());
  ASSERT_TRUE(client.connected()) << "the proxy's certificate did not verify";
  const std::string get = "GET /api/v1/pods HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  const std::string first = client.request(get);
  EXPECT_EQ(first.rfind("HTTP/1.1 429 Too Many Requests\r\n", 0), 0u) << first;
  EXPECT_NE(first.find("Retry-After: 3\r\n"), std::string::npos) << first;
  EXPECT_NE(first.find(R"("reason":"TooManyRequests","code":429)"), std::string::npos) << first;
  // Keep-alive, a request with a body, and a 503 without Retry-After.
  proxy_->setHttpFault({503, -1});
  const std::string second =
      client.request("PUT /api/v1/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}");
  EXPECT_EQ(second.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << second;
  EXPECT_EQ(second.find("Retry-After"), std::string::npos) << second;
  EXPECT_EQ(proxy_->faultsAnswered(), 2);
  ::close(old);
}

TEST_F(FaultProxyTest, WritesAKubeconfigThatNamesTheProxy) {
  testutil::TempDir tmp;
  std::ofstream(tmp.path() + "/in")
      << "clusters:\n- cluster:\n    server: https://127.0.0.1:6443\n";
  ASSERT_EQ(
      proxy_->writeKubeconfig(tmp.path() + "/in", "https://127.0.0.1:6443", tmp.path() + "/out"),
      "");
  std::ifstream in(tmp.path() + "/out");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("server: " + proxy_->url() + "\n"), std::string::npos) << text;
  EXPECT_NE(proxy_->writeKubeconfig(tmp.path() + "/in", "https://nowhere", tmp.path() + "/x"), "");
}

}  // namespace
}  // namespace egress::testenv
