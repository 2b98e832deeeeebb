// File: fake_api_server.h
//
// An in-process HTTP/1.1 server on 127.0.0.1:0 (plain or TLS) for the REST client's component
// tests. A handler scripts each response: status, headers, a body sent whole or as explicit
// chunks (to split watch events at chosen byte offsets), a stream left open, or a connection
// hung up without an answer. It runs on the test's io_context, next to the client.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

namespace egress::kube::testing {

struct FakeRequest {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string clientCertSubject;  // "" unless TLS with a client certificate
};

struct FakeResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // Non-empty: send Transfer-Encoding: chunked, one HTTP chunk per element.
  std::vector<std::string> chunks;
  bool keepStreamOpen = false;  // after the chunks, neither end the body nor close
  bool hangUp = false;          // close the connection without answering
  bool noAnswer = false;        // never answer; keep the connection until the client closes it
  bool close = false;           // answer with Connection: close
};

struct FakeTlsOptions {
  std::string certFile;
  std::string keyFile;
  std::string clientCaFile;  // non-empty: require a client certificate signed by it
};

class FakeApiServer {
 public:
  using Handler = std::function<FakeResponse(const FakeRequest&)>;

  FakeApiServer(boost::asio::io_context& ioc, Handler handler, const FakeTlsOptions* tls = nullptr);
  ~FakeApiServer();

  std::string url() const;
  unsigned short port() const { return port_; }
  const std::vector<FakeRequest>& requests() const { return state_->requests; }
  int connectionsAccepted() const { return state_->accepted; }
  // Connections the client closed (the server's read saw the end of the stream).
  int connectionsClosedByClient() const { return state_->closedByClient; }
  // Closes every connection that waits for its next request (the server's idle timeout):
  // the client's pooled connections go stale.
  void closeIdleConnections();
  // Closes every connection, including open streams.
  void closeAll();

  struct State {
    Handler handler;
    std::vector<FakeRequest> requests;
    int accepted = 0;
    int closedByClient = 0;
    std::vector<std::weak_ptr<boost::asio::ip::tcp::socket>> idle;
    std::vector<std::weak_ptr<boost::asio::ip::tcp::socket>> all;
    std::unique_ptr<boost::asio::ssl::context> tls;
    bool stopped = false;
  };

 private:
  std::shared_ptr<State> state_;
  std::shared_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
  unsigned short port_ = 0;
  bool tls_ = false;
};

}  // namespace egress::kube::testing
