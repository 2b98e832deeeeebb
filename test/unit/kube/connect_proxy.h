// File: connect_proxy.h
//
// A small HTTP CONNECT proxy for the transport's component tests, on 127.0.0.1:0, plain or TLS
// (an https:// proxy). It records every CONNECT (target and Proxy-Authorization), answers as
// the test's policy says (200, 407, 403, ...), and after a 200 connects to one upstream port on
// 127.0.0.1, whatever host the client asked for, and copies bytes both ways. So a client can be
// pointed at "https://kube.test:443" that no resolver knows: only the proxy ever connects.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

namespace egress::kube::testing {

struct ProxyConnect {
  std::string target;              // "host:port" of the CONNECT request
  std::string proxyAuthorization;  // "" if none was sent
};

class ConnectProxy {
 public:
  // Returns the status to answer a CONNECT with; empty = always 200.
  using Policy = std::function<int(const ProxyConnect&)>;

  // tls: certificate and key files for an https:// proxy; null = plain http://.
  ConnectProxy(boost::asio::io_context& ioc, unsigned short upstreamPort, Policy policy = {},
               const std::pair<std::string, std::string>* tls = nullptr);
  ~ConnectProxy();

  std::string url() const;
  const std::vector<ProxyConnect>& connects() const { return state_->connects; }

  struct State {
    Policy policy;
    unsigned short upstreamPort = 0;
    std::vector<ProxyConnect> connects;
    std::unique_ptr<boost::asio::ssl::context> tls;
    std::vector<std::weak_ptr<boost::asio::ip::tcp::socket>> sockets;
    bool stopped = false;
  };

 private:
  std::shared_ptr<State> state_;
  std::shared_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
  bool tls_ = false;
};

}  // namespace egress::kube::testing
