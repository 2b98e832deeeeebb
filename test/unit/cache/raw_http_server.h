// File: raw_http_server.h
//
// A bare HTTP/1.1 server on 127.0.0.1:0 for the reflector's component tests. Each request is
// answered with bytes the test scripts, written exactly as given, so a response can stop in the
// middle of a chunk of the chunked encoding, or leave its connection open and silent (an idle
// watch). Runs on the test's io_context.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace egress::cache::testing {

class RawHttpServer {
 public:
  struct Reply {
    std::string bytes;  // status line, headers and body, as they go on the wire
    bool close = true;  // then close the connection; false: keep it open and say nothing more
  };
  // Called with the request line's target ("/api/v1/...?...").
  using Handler = std::function<Reply(const std::string& target)>;

  RawHttpServer(boost::asio::io_context& ioc, Handler handler);
  ~RawHttpServer();

  std::string url() const;
  const std::vector<std::string>& targets() const { return state_->targets; }

  struct State {
    Handler handler;
    std::vector<std::string> targets;
    std::vector<std::weak_ptr<boost::asio::ip::tcp::socket>> sockets;
  };

 private:
  std::shared_ptr<State> state_;
  std::shared_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
};

// "HTTP/1.1 200 OK" with a JSON body of that length, closing the connection.
std::string jsonResponse(const std::string& body);
// The head of a chunked 200 response (a watch).
std::string chunkedHead();
// One chunk of the chunked encoding.
std::string chunk(const std::string& data);

}  // namespace egress::cache::testing
