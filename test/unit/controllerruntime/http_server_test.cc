// The HTTP server against real sockets on 127.0.0.1:0: routing, methods, every status code it
// sends, keep-alive, and the defences (head deadline, head size, idle timeout, connection cap).
// Timeouts are configured short; tests assert only that a connection was closed, never when.
#include "pkg/controllerruntime/http_server.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/testutil/run_sync.h"
#include "test/unit/controllerruntime/raw_client.h"

namespace egress::controllerruntime {
namespace {

namespace net = boost::asio;
using ::testing::HasSubstr;
using ::testing::Pair;
using testing::RawConnection;
using testing::RawResponse;
using ::testing::UnorderedElementsAre;
using testutil::runSync;

BindAddress loopbackAnyPort() {
  auto parsed = parseBindAddress("127.0.0.1:0");
  return **parsed;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override { startWith(HttpServerOptions{}); }

  void startWith(HttpServerOptions options) {
    server_ = std::make_unique<HttpServer>(ioc_.get_executor(), std::move(options));
    server_->handle("/hello", [this](const HttpRequest& request) {
      seen_.push_back(request);
      HttpResponse response;
      response.body = "hello, world\n";
      response.headers.emplace_back("X-Test", "1");
      return response;
    });
    server_->handleTree("/tree", [this](const HttpRequest& request) {
      seen_.push_back(request);
      HttpResponse response;
      response.body = "tree:" + request.subPath;
      return response;
    });
    server_->handle("/throws", [](const HttpRequest&) -> HttpResponse {
      throw std::runtime_error("handler bug");
    });
    auto started = server_->start(loopbackAnyPort());
    ASSERT_TRUE(started) << started.error();
    ASSERT_NE(server_->port(), 0);
  }

  net::ip::tcp::endpoint endpoint() const { return testing::loopback(server_->port()); }

  RawResponse exchange(const std::string& request) {
    return runSync(ioc_, testing::exchange(endpoint(), request));
  }

  // A connected client; its requests are answered by the server on the same io_context.
  std::unique_ptr<RawConnection> connect() {
    auto connection = std::make_unique<RawConnection>(ioc_.get_executor());
    EXPECT_TRUE(runSync(ioc_, connection->connect(endpoint())));
    return connection;
  }

  // Lets the server run its pending handlers (accept, reads of closed sockets).
  void settle() {
    for (int i = 0; i < 100; ++i) {
      ioc_.poll();
    }
  }

  net::io_context ioc_;
  std::unique_ptr<HttpServer> server_;
  std::vector<HttpRequest> seen_;
};

TEST_F(HttpServerTest, GetIsAnsweredAndTheConnectionKeptAlive) {
  auto c = connect();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(runSync(ioc_, c->send(testing::get("/hello"))));
    RawResponse r = runSync(ioc_, c->read());
    ASSERT_TRUE(r.received) << r.error;
    EXPECT_EQ(r.status, 200u);
    EXPECT_EQ(r.body, "hello, world\n");
    EXPECT_EQ(r.header("content-length"), "13");
    EXPECT_EQ(r.header("content-type"), "text/plain; charset=utf-8");
    EXPECT_EQ(r.header("x-test"), "1");
  }
  EXPECT_EQ(seen_.size(), 3u);
  EXPECT_EQ(server_->activeConnections(), 1u);
}

TEST_F(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  auto c = connect();
  ASSERT_TRUE(runSync(ioc_, c->send(testing::get("/hello") + testing::get("/tree/a"))));
  EXPECT_EQ(runSync(ioc_, c->read()).body, "hello, world\n");
  EXPECT_EQ(runSync(ioc_, c->read()).body, "tree:/a");
}

TEST_F(HttpServerTest, Http10ClosesAfterTheResponseUnlessKeepAliveIsAsked) {
  auto c = connect();
  ASSERT_TRUE(runSync(ioc_, c->send("GET /hello HTTP/1.0\r\n\r\n")));
  EXPECT_EQ(runSync(ioc_, c->read()).status, 200u);
  EXPECT_TRUE(runSync(ioc_, c->closedByServer()));

  auto k = connect();
  ASSERT_TRUE(runSync(ioc_, k->send("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")));
  EXPECT_EQ(runSync(ioc_, k->read()).status, 200u);
  ASSERT_TRUE(runSync(ioc_, k->send("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")));
  EXPECT_EQ(runSync(ioc_, k->read()).status, 200u);
}

TEST_F(HttpServerTest, ConnectionCloseIsHonoured) {
  auto c = connect();
  ASSERT_TRUE(runSync(ioc_, c->send(testing::request("GET", "/hello", "Connection: close\r\n"))));
  RawResponse r = runSync(ioc_, c->read());
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.header("connection"), "close");
  EXPECT_TRUE(runSync(ioc_, c->closedByServer()));
}

TEST_F(HttpServerTest, HeadSendsTheHeadersOfGetWithoutTheBody) {
  auto c = connect();
  ASSERT_TRUE(runSync(ioc_, c->send(testing::request("HEAD", "/hello", ""))));
  RawResponse head = runSync(ioc_, c->read(true));
  ASSERT_TRUE(head.received) << head.error;
  EXPECT_EQ(head.status, 200u);
  EXPECT_EQ(head.header("content-length"), "13");
  EXPECT_EQ(head.body, "");
  // Had the body been sent, it would now be read as the next response's status line.
  ASSERT_TRUE(runSync(ioc_, c->send(testing::get("/hello"))));
  RawResponse next = runSync(ioc_, c->read());
  ASSERT_TRUE(next.received) << next.error;
  EXPECT_EQ(next.body, "hello, world\n");
  ASSERT_EQ(seen_.size(), 2u);
  EXPECT_EQ(seen_[0].method, boost::beast::http::verb::head);
}

TEST_F(HttpServerTest, UnknownPathIs404) {
  for (const char* target : {"/", "/nope", "/hello/", "/hello/x", "/treetop", "/HELLO"}) {
    RawResponse r = exchange(testing::get(target));
    ASSERT_TRUE(r.received) << target << ": " << r.error;
    EXPECT_EQ(r.status, 404u) << target;
    EXPECT_EQ(r.body, "404 page not found\n") << target;
  }
  EXPECT_TRUE(seen_.empty());
}

TEST_F(HttpServerTest, MethodsOtherThanGetAndHeadAre405WithAllow) {
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE"}) {
    RawResponse r = exchange(testing::request(method, "/hello", ""));
    ASSERT_TRUE(r.received) << method << ": " << r.error;
    EXPECT_EQ(r.status, 405u) << method;
    EXPECT_EQ(r.header("allow"), "GET, HEAD") << method;
  }
  // An unknown path stays 404 whatever the method, as with Go's ServeMux.
  EXPECT_EQ(exchange(testing::request("POST", "/nope", "")).status, 404u);
  EXPECT_TRUE(seen_.empty());
}

TEST_F(HttpServerTest, MalformedRequestsAre400AndClosed) {
  const std::vector<std::string> bad = {
      "GARBAGE\r\n\r\n",
      "GET /hello HTTP/9.9\r\nHost: x\r\n\r\n",
      "GET /hello HTTP/1.1\r\nNo colon here\r\n\r\n",
      "GET hello HTTP/1.1\r\nHost: x\r\n\r\n",      // not origin-form
      "GET /hel%zzlo HTTP/1.1\r\nHost: x\r\n\r\n",  // bad percent-encoding
      "GET /hello?exclude=%G0 HTTP/1.1\r\nHost: x\r\n\r\n",
      "GET /hello HTTP/1.1\r\nContent-Length: nope\r\n\r\n",
  };
  for (const auto& request : bad) {
    auto c = connect();
    ASSERT_TRUE(runSync(ioc_, c->send(request)));
    RawResponse r = runSync(ioc_, c->read());
    ASSERT_TRUE(r.received) << request << ": " << r.error;
    EXPECT_EQ(r.status, 400u) << request;
    EXPECT_EQ(r.header("connection"), "close") << request;
    EXPECT_TRUE(runSync(ioc_, c->closedByServer())) << request;
  }
  EXPECT_TRUE(seen_.empty());
}

TEST_F(HttpServerTest, OversizedHeadIs431AndClosed) {
  auto c = connect();
  const std::string big = "X-Big: " + std::string(64 * 1024, 'a') + "\r\n";
  // The server may answer and close before it has read all of it; a failed write is fine.
  (void)runSync(ioc_, c->send(testing::request("GET", "/hello", big)));
  RawResponse r = runSync(ioc_, c->read());
  ASSERT_TRUE(r.received) << r.error;
  EXPECT_EQ(r.status, 431u);
  EXPECT_TRUE(runSync(ioc_, c->closedByServer()));
  EXPECT_TRUE(seen_.empty());
}

TEST_F(HttpServerTest, ARequestBodyIsNotReadTheConnectionIsClosedAfterTheAnswer) {
  auto get = connect();
  ASSERT_TRUE(runSync(
      ioc_, get->send(testing::request("GET", "/hello", "Content-Length: 5\r\n") + "abcde")));
  RawResponse r = runSync(ioc_, get->read());
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.header("connection"), "close");
  EXPECT_TRUE(runSync(ioc_, get->closedByServer()));
  // The unread body is never taken for a request of its own.
  EXPECT_EQ(get->pending(), "");

  auto post = connect();
  ASSERT_TRUE(runSync(
      ioc_, post->send(testing::request("POST", "/hello", "Transfer-Encoding: chunked\r\n") +
                       "5\r\nabcde\r\n0\r\n\r\n")));
  EXPECT_EQ(runSync(ioc_, post->read()).status, 405u);
  EXPECT_TRUE(runSync(ioc_, post->closedByServer()));
}

TEST_F(HttpServerTest, TreeRoutesPassTheSubPathAndTheDecodedQuery) {
  RawResponse r = exchange(testing::get("/tree/a%20b/c?verbose&exclude=x&exclude=y%2Fz&q=a+b"));
  ASSERT_TRUE(r.received) << r.error;
  EXPECT_EQ(r.body, "tree:/a b/c");
  ASSERT_EQ(seen_.size(), 1u);
  EXPECT_EQ(seen_[0].path, "/tree/a b/c");
  EXPECT_EQ(seen_[0].subPath, "/a b/c");
  EXPECT_TRUE(seen_[0].hasQuery("verbose"));
  EXPECT_FALSE(seen_[0].hasQuery("nope"));
  EXPECT_THAT(seen_[0].query, UnorderedElementsAre(Pair("verbose", ""), Pair("exclude", "x"),
                                                   Pair("exclude", "y/z"), Pair("q", "a b")));
  EXPECT_EQ(exchange(testing::get("/tree")).body, "tree:");
  EXPECT_EQ(exchange(testing::get("/tree/")).body, "tree:/");
}

TEST_F(HttpServerTest, AHandlerThatThrowsIsA500AndTheServerGoesOn) {
  RawResponse r = exchange(testing::get("/throws"));
  ASSERT_TRUE(r.received) << r.error;
  EXPECT_EQ(r.status, 500u);
  EXPECT_EQ(exchange(testing::get("/hello")).status, 200u);
}

// Slowloris: a client that sends its request head one byte at a time must be cut off by the
// head deadline however steadily it sends, and meanwhile everyone else is served.
TEST_F(HttpServerTest, ATricklingClientIsCutOffByTheHeadDeadline) {
  HttpServerOptions options;
  options.readHeaderTimeout = std::chrono::milliseconds(300);
  startWith(options);
  auto slow = connect();
  // A head that never ends, well under the size limit: only the deadline can stop it.
  const std::string head = "GET /hello HTTP/1.1\r\nX-Slow: " + std::string(2000, 'a');
  bool cut = false;
  for (char byte : head) {
    if (!runSync(ioc_, slow->send(std::string(1, byte)))) {
      cut = true;
      break;
    }
    // The event loop is not held up by the trickling client.
    EXPECT_EQ(exchange(testing::get("/hello")).status, 200u);
    runSync(ioc_, testing::pause(std::chrono::milliseconds(20)));
  }
  EXPECT_TRUE(cut) << "the whole head was trickled in without being cut off";
  EXPECT_TRUE(runSync(ioc_, slow->closedByServer()));
  EXPECT_EQ(slow->pending(), "");  // closed without an answer
}

TEST_F(HttpServerTest, AnIdleKeptAliveConnectionIsClosed) {
  HttpServerOptions options;
  options.idleTimeout = std::chrono::milliseconds(100);
  startWith(options);
  auto c = connect();
  ASSERT_TRUE(runSync(ioc_, c->send(testing::get("/hello"))));
  EXPECT_EQ(runSync(ioc_, c->read()).status, 200u);
  EXPECT_TRUE(runSync(ioc_, c->closedByServer()));
  EXPECT_EQ(c->pending(), "");
}

// At the cap, a new connection takes the place of one that idles between kept-alive requests
// (its client just reconnects), so idle scrapers cannot lock the kubelet's probes out.
TEST_F(HttpServerTest, AtTheCapAnIdleConnectionMakesRoom) {
  HttpServerOptions options;
  options.maxConnections = 2;
  startWith(options);
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 2; ++i) {
    idle.push_back(connect());
    ASSERT_TRUE(runSync(ioc_, idle.back()->send(testing::get("/hello"))));
    ASSERT_EQ(runSync(ioc_, idle.back()->read()).status, 200u);
  }
  ASSERT_EQ(server_->activeConnections(), 2u);
  EXPECT_EQ(exchange(testing::get("/hello")).status, 200u);
  // The oldest idle connection was the one closed.
  EXPECT_TRUE(runSync(ioc_, idle.front()->closedByServer()));
  EXPECT_EQ(idle.front()->pending(), "");
  ASSERT_TRUE(runSync(ioc_, idle.back()->send(testing::get("/hello"))));
  EXPECT_EQ(runSync(ioc_, idle.back()->read()).status, 200u);
}

// Connections still sending their request head are not evicted: one more is refused at once.
TEST_F(HttpServerTest, ConnectionsBeyondTheCapAre503AndClosed) {
  HttpServerOptions options;
  options.maxConnections = 2;
  startWith(options);
  std::vector<std::unique_ptr<RawConnection>> busy;
  for (int i = 0; i < 2; ++i) {
    busy.push_back(connect());
    ASSERT_TRUE(runSync(ioc_, busy.back()->send("GET /hello HTTP/1.1\r\n")));
  }
  settle();
  ASSERT_EQ(server_->activeConnections(), 2u);

  auto extra = connect();
  RawResponse refused = runSync(ioc_, extra->read());
  ASSERT_TRUE(refused.received) << refused.error;
  EXPECT_EQ(refused.status, 503u);
  EXPECT_EQ(refused.body, "503 Service Unavailable: too many connections\n");
  EXPECT_TRUE(runSync(ioc_, extra->closedByServer()));
  EXPECT_EQ(extra->pending(), "");

  // The busy ones are served when their heads complete; a slot frees when one goes away.
  ASSERT_TRUE(runSync(ioc_, busy.back()->send("Host: x\r\n\r\n")));
  EXPECT_EQ(runSync(ioc_, busy.back()->read()).status, 200u);
  busy.front()->close();
  bool served = false;
  for (int attempt = 0; attempt < 100 && !served; ++attempt) {
    settle();
    served = exchange(testing::get("/hello")).status == 200u;
  }
  EXPECT_TRUE(served);
}

TEST_F(HttpServerTest, StopClosesTheListenerAndEveryConnection) {
  auto c = connect();
  ASSERT_TRUE(runSync(ioc_, c->send(testing::get("/hello"))));
  ASSERT_EQ(runSync(ioc_, c->read()).status, 200u);
  const unsigned short port = server_->port();
  server_->stop();
  EXPECT_TRUE(runSync(ioc_, c->closedByServer()));
  RawConnection late(ioc_.get_executor());
  EXPECT_FALSE(runSync(ioc_, late.connect(testing::loopback(port))));
  server_->stop();  // idempotent
  server_.reset();
  settle();
}

TEST(HttpServerStartTest, APortInUseIsAnErrorNamingTheServerAndTheAddress) {
  net::io_context ioc;
  HttpServer first(ioc.get_executor(), {});
  ASSERT_TRUE(first.start(loopbackAnyPort()));
  const std::string taken = "127.0.0.1:" + std::to_string(first.port());
  HttpServerOptions options;
  options.name = "health probe";
  HttpServer second(ioc.get_executor(), options);
  auto started = second.start(**parseBindAddress(taken));
  ASSERT_FALSE(started);
  EXPECT_THAT(started.error(), HasSubstr("health probe server"));
  EXPECT_THAT(started.error(), HasSubstr("\"" + taken + "\""));
  EXPECT_THAT(started.error(), HasSubstr("in use"));
}

TEST(HttpServerStartTest, AnAddressTheMachineLacksIsAnError) {
  net::io_context ioc;
  HttpServer server(ioc.get_executor(), {});
  // 192.0.2.0/24 is TEST-NET-1: never assigned to a host.
  auto started = server.start(**parseBindAddress("192.0.2.1:0"));
  ASSERT_FALSE(started);
  EXPECT_THAT(started.error(), HasSubstr("192.0.2.1:0"));
}

TEST(HttpServerStartTest, TheWildcardAddressServesIPv4AndIPv6) {
  net::io_context ioc;
  HttpServer server(ioc.get_executor(), {});
  server.handle("/hello", [](const HttpRequest&) { return HttpResponse{}; });
  ASSERT_TRUE(server.start(**parseBindAddress(":0")));
  EXPECT_EQ(
      runSync(ioc, testing::exchange(testing::loopback(server.port()), testing::get("/hello")))
          .status,
      200u);
  // The IPv6 half where the machine has IPv6 loopback (any Linux with IPv6 enabled).
  net::ip::tcp::acceptor probe(ioc);
  boost::system::error_code noIpv6;
  probe.open(net::ip::tcp::v6(), noIpv6);
  if (!noIpv6) {
    probe.bind({net::ip::make_address("::1"), 0}, noIpv6);
  }
  if (!noIpv6) {
    const net::ip::tcp::endpoint v6(net::ip::make_address("::1"), server.port());
    EXPECT_EQ(runSync(ioc, testing::exchange(v6, testing::get("/hello"))).status, 200u);
  }
}

}  // namespace
}  // namespace egress::controllerruntime
