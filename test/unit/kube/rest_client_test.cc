// Component tests of the REST client against an in-process server (fake_api_server.h): watch
// framing, retries, flow control, cancellation, stale connections, TLS verification and client
// certificates. Time (rate limiter, retry waits) runs on a FakeClock that the tests move to
// each deadline the client waits for, recording the waits.
#include "pkg/kube/rest_client.h"

#include <cerrno>
#include <fstream>
#include <optional>
#include <sstream>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "pkg/kube/user_agent.h"
#include "test/testutil/run_sync.h"
#include "test/testutil/scoped_env.h"
#include "test/testutil/temp_dir.h"
#include "test/unit/kube/connect_proxy.h"
#include "test/unit/kube/fake_api_server.h"
#include "test/unit/kube/gzip_testing.h"
#include <sys/utsname.h>
#include <zlib.h>

namespace egress::kube {
namespace {

using testing::FakeApiServer;
using testing::FakeRequest;
using testing::FakeResponse;
using testing::FakeTlsOptions;
using ::testing::HasSubstr;
using ::testing::Not;

const Resource kPods{"", "v1", "pods", true};
const Resource kDeployments{"apps", "v1", "deployments", true};

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string tlsFile(const std::string& name) {
  return std::string(EGRESS_TESTDATA_DIR) + "/tls/" + name;
}

using testutil::runSync;
using testutil::spawnInto;

std::string podEvent(const char* type, const std::string& name, const std::string& rv) {
  return std::string(R"({"type":")") + type +
         R"(","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":")" + name +
         R"(","namespace":"default","resourceVersion":")" + rv + R"("},"spec":{}}})" + "\n";
}

RestConfig plainConfig(const FakeApiServer& server) {
  RestConfig c;
  c.server = server.url();
  c.qps = -1;  // no client-side limit unless a test wants one
  return c;
}

FakeResponse okBody(std::string body) {
  FakeResponse r;
  r.body = std::move(body);
  return r;
}

FakeResponse statusResponse(int code, const std::string& reason, const std::string& message) {
  FakeResponse r;
  r.status = code;
  r.body = R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":")" + message +
           R"(","reason":")" + reason + R"(","code":)" + std::to_string(code) + "}";
  return r;
}

std::string metricsText(prometheus::Registry& registry) {
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

class RestClientTest : public ::testing::Test {
 protected:
  std::unique_ptr<RestClient> makeClient(const RestConfig& config,
                                         prometheus::Registry* metrics = nullptr) {
    auto client = RestClient::create(ioc_.get_executor(), config, metrics, options_);
    EXPECT_TRUE(client) << (client ? "" : client.error().message());
    return client ? std::move(*client) : nullptr;
  }

  // Runs `task` to completion. Whenever nothing but time can make progress, the FakeClock
  // jumps to the earliest deadline anyone waits for, and the wait is recorded in waits_.
  template <class T>
  T run(net::awaitable<T> task) {
    std::optional<T> result;
    spawnInto(ioc_, std::move(task), result);
    finish(result);
    return std::move(*result);
  }
  template <class T>
  void finish(std::optional<T>& result) {
    for (int idle = 0; !result;) {
      if (ioc_.stopped()) {
        ioc_.restart();
      }
      if (ioc_.poll() > 0) {
        continue;
      }
      if (auto next = clock_.nextDeadline()) {
        waits_.push_back(
            std::chrono::duration_cast<std::chrono::milliseconds>(*next - clock_.now()));
        clock_.setTime(*next);
        continue;
      }
      // Waiting for the network; a task that waits for nothing is a bug, not a slow machine.
      if (ioc_.run_one_for(std::chrono::seconds(1)) == 0 && ++idle > 60) {
        FAIL() << "the task made no progress for a minute";
      }
    }
  }
  // Runs the io_context until `done` holds (the server saw a request, ...).
  void runUntil(const std::function<bool()>& done) {
    for (int idle = 0; !done();) {
      if (ioc_.stopped()) {
        ioc_.restart();
      }
      if (ioc_.run_one_for(std::chrono::seconds(1)) == 0 && ++idle > 60) {
        FAIL() << "no progress for a minute";
      }
    }
  }

  // Reads every event of a watch until it ends (or fails).
  struct Drained {
    std::vector<std::string> lines;  // "TYPE name rv"
    std::optional<Error> error;
  };
  Drained drain(RestClient& client) {
    Drained out;
    auto watch = run(client.watch(kPods, "default", {}));
    if (!watch) {
      out.error = watch.error();
      return out;
    }
    for (;;) {
      auto ev = run((*watch)->next());
      if (!ev) {
        out.error = ev.error();
        return out;
      }
      if (!ev->has_value()) {
        return out;
      }
      const auto& meta = (**ev).object()["metadata"];
      out.lines.push_back(std::string(toString((**ev).type)) + " " + meta["name"].GetString() +
                          " " + meta["resourceVersion"].GetString());
    }
  }

  // Starts `task` with a cancellation slot of ours, runs until `inFlight` holds, then cancels it
  // (terminal, as the losing side of `a || b` is) and returns its result.
  template <class T>
  T cancelWhen(net::awaitable<T> task, const std::function<bool()>& inFlight) {
    net::cancellation_signal signal;
    std::optional<T> result;
    net::co_spawn(ioc_, testutil::storeResult(std::move(task), &result),
                  net::bind_cancellation_slot(signal.slot(), rethrowUnhandled));
    runUntil(inFlight);
    for (int i = 0; i < 20; ++i) {
      ioc_.poll();  // let the client settle into its wait
    }
    EXPECT_FALSE(result) << "the task was meant to be still waiting";
    signal.emit(net::cancellation_type::terminal);
    runUntil([&] { return result.has_value(); });
    return std::move(*result);
  }

  net::io_context ioc_;
  FakeClock clock_{ioc_.get_executor()};
  std::vector<std::chrono::milliseconds> waits_;
  RestClientOptions options_ = [this] {
    RestClientOptions o;
    o.clock = &clock_;
    o.random = [] { return 0.0; };  // no jitter unless a test wants some
    return o;
  }();
};

using Waits = std::vector<std::chrono::milliseconds>;
using std::chrono::milliseconds;

TEST_F(RestClientTest, WatchEventSplitAtEveryByteOffsetDecodesIdentically) {
  const std::string first = podEvent("ADDED", "web-0", "101");
  const std::string second = podEvent("MODIFIED", "web-0", "102");
  size_t split = 0;
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    FakeResponse r;
    // An empty chunk would end the body, so offset 0 and the full length send one chunk.
    if (split > 0) {
      r.chunks.push_back(first.substr(0, split));
    }
    r.chunks.push_back(first.substr(split) + second);
    return r;
  });
  auto client = makeClient(plainConfig(server));
  for (split = 0; split <= first.size(); ++split) {
    auto got = drain(*client);
    ASSERT_FALSE(got.error) << "split at " << split << ": " << got.error->message();
    ASSERT_EQ(got.lines, (std::vector<std::string>{"ADDED web-0 101", "MODIFIED web-0 102"}))
        << "split at " << split;
  }
  EXPECT_EQ(server.requests().size(), first.size() + 1);
  EXPECT_THAT(server.requests()[0].target, HasSubstr("/api/v1/namespaces/default/pods?watch=true"));
}

TEST_F(RestClientTest, WatchDecodesAFourMegabyteObjectInOneEvent) {
  const std::string big(4 * 1024 * 1024, 'x');
  const std::string event = R"({"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":)"
                            R"("big","resourceVersion":"7"},"data":{"blob":")" +
                            big + "\"}}}\n";
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    FakeResponse r;
    r.chunks = {event};
    return r;
  });
  auto client = makeClient(plainConfig(server));
  auto watch = run(client->watch(kPods, "default", {}));
  ASSERT_TRUE(watch);
  auto ev = run((*watch)->next());
  ASSERT_TRUE(ev) << ev.error().message();
  ASSERT_TRUE(ev->has_value());
  EXPECT_EQ((**ev).object()["data"]["blob"].GetStringLength(), big.size());
}

TEST_F(RestClientTest, WatchErrorEventBecomesGoneAndBookmarksPassThrough) {
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    FakeResponse r;
    r.chunks = {
        R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"name":"","resourceVersion":"500"}}})"
        "\n" +
        std::string(R"({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1",)"
                    R"j("status":"Failure","message":"too old resource version: 1 (500)",)j"
                    R"("reason":"Expired","code":410}})") +
        "\n"};
    return r;
  });
  auto client = makeClient(plainConfig(server));
  auto got = drain(*client);
  EXPECT_EQ(got.lines, std::vector<std::string>{"BOOKMARK  500"});
  ASSERT_TRUE(got.error);
  EXPECT_TRUE(got.error->isGone());
  EXPECT_TRUE(got.error->isResourceExpired());
  EXPECT_THAT(got.error->message(), HasSubstr("too old resource version"));
}

TEST_F(RestClientTest, WatchCancelClosesTheConnectionPromptly) {
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    FakeResponse r;
    r.chunks = {podEvent("ADDED", "a", "1")};
    r.keepStreamOpen = true;
    return r;
  });
  auto client = makeClient(plainConfig(server));
  auto watch = run(client->watch(kPods, "default", {}));
  ASSERT_TRUE(watch);
  auto first = run((*watch)->next());
  ASSERT_TRUE(first && first->has_value());

  // A pending next() is woken by cancel() with Cancelled, not left hanging.
  std::optional<Result<std::optional<WatchEvent>>> pending;
  spawnInto(ioc_, (*watch)->next(), pending);
  for (int i = 0; i < 10; ++i) {
    ioc_.poll();
  }
  ASSERT_FALSE(pending) << "the stream is open, next() must wait";
  (*watch)->cancel();
  while (!pending) {
    ioc_.run_one();
  }
  ASSERT_FALSE(*pending);
  EXPECT_TRUE(pending->error().isCancelled());
}

TEST_F(RestClientTest, WatchEndsCleanlyWhenTheServerEndsTheBody) {
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    FakeResponse r;
    r.chunks = {podEvent("ADDED", "a", "1"), podEvent("DELETED", "a", "2")};
    return r;
  });
  auto client = makeClient(plainConfig(server));
  auto got = drain(*client);
  EXPECT_FALSE(got.error);
  EXPECT_EQ(got.lines, (std::vector<std::string>{"ADDED a 1", "DELETED a 2"}));
}

TEST_F(RestClientTest, WatchTruncatedInsideAnEventIsAnError) {
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    FakeResponse r;
    r.chunks = {podEvent("ADDED", "a", "1") + R"({"type":"ADDED","obj)"};
    return r;
  });
  auto client = makeClient(plainConfig(server));
  auto got = drain(*client);
  ASSERT_TRUE(got.error);
  EXPECT_THAT(got.error->message(), HasSubstr("ended inside an event"));
}

// --- Retries (client-go's checkWait) ----------------------------------------------------------

TEST_F(RestClientTest, TooManyRequestsWaitsOutRetryAfter) {
  int calls = 0;
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    if (++calls == 1) {
      auto r = statusResponse(429, "TooManyRequests", "slow down");
      r.headers = {{"Retry-After", "1"}};
      return r;
    }
    return okBody(R"({"kind":"Pod","metadata":{"name":"p"}})");
  });
  auto client = makeClient(plainConfig(server));
  auto pod = run(client->get(kPods, "default", "p"));
  ASSERT_TRUE(pod) << pod.error().message();
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(waits_, Waits{milliseconds(1000)});
}

// A 5xx without Retry-After goes back to the caller whatever the verb: a PUT or DELETE the server
// committed before failing must not be replayed into a 404 or 409.
TEST_F(RestClientTest, ServerErrorWithoutRetryAfterIsReturnedForEveryVerb) {
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    return statusResponse(500, "InternalError", "etcd hiccup");
  });
  auto client = makeClient(plainConfig(server));
  std::vector<Result<rapidjson::Document>> results;
  results.push_back(run(client->get(kPods, "default", "p")));
  results.push_back(run(client->list(kPods, "default", {})));
  results.push_back(run(client->update(kPods, "default", "p", "{}")));
  results.push_back(run(client->remove(kPods, "default", "p")));
  results.push_back(run(client->create(kPods, "default", "{}")));
  for (const auto& r : results) {
    ASSERT_FALSE(r);
    EXPECT_TRUE(r.error().isServerError());
    EXPECT_THAT(r.error().message(), HasSubstr("etcd hiccup"));
  }
  EXPECT_EQ(server.requests().size(), results.size()) << "each sent once";
  EXPECT_TRUE(waits_.empty());
}

// With Retry-After the server asks for the request again, so every verb is resent, after the
// wait stretched by the jitter (random() = 0.5 → 10% of 20%).
TEST_F(RestClientTest, RetryAfterIsHonouredForEveryVerbWithJitter) {
  options_.random = [] { return 0.5; };
  std::map<std::string, int> calls;
  FakeApiServer server(ioc_, [&](const FakeRequest& req) {
    if (++calls[req.method] == 1) {
      auto r = statusResponse(503, "ServiceUnavailable", "starting");
      r.headers = {{"Retry-After", "2"}};
      return r;
    }
    return okBody("{}");
  });
  auto client = makeClient(plainConfig(server));
  ASSERT_TRUE(run(client->create(kPods, "default", "{}")));
  ASSERT_TRUE(run(client->update(kPods, "default", "p", "{}")));
  ASSERT_TRUE(run(client->patch(kPods, "default", "p", PatchType::Json, "[]")));
  ASSERT_TRUE(run(client->remove(kPods, "default", "p")));
  EXPECT_EQ(calls,
            (std::map<std::string, int>{{"DELETE", 2}, {"PATCH", 2}, {"POST", 2}, {"PUT", 2}}));
  EXPECT_EQ(waits_, Waits(4, milliseconds(2200)));
}

TEST_F(RestClientTest, TooManyRequestsWithoutRetryAfterIsReturned) {
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    return statusResponse(429, "TooManyRequests", "slow down");
  });
  auto client = makeClient(plainConfig(server));
  auto r = run(client->get(kPods, "default", "p"));
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().isTooManyRequests());
  EXPECT_EQ(server.requests().size(), 1u);
}

// A huge Retry-After waits the cap (60 s), not a day and not an overflowed negative; values
// that are not whole seconds are no Retry-After at all.
TEST_F(RestClientTest, RetryAfterIsCappedAndUnusableValuesAreNotRetried) {
  std::string retryAfter;
  int calls = 0;
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    if (++calls == 1) {
      auto r = statusResponse(429, "TooManyRequests", "slow down");
      r.headers = {{"Retry-After", retryAfter}};
      return r;
    }
    return okBody("{}");
  });
  auto client = makeClient(plainConfig(server));
  for (const char* huge : {"99999999999999999999999", "9223372036854775807", "86400"}) {
    retryAfter = huge;
    calls = 0;
    waits_.clear();
    ASSERT_TRUE(run(client->get(kPods, "default", "p"))) << huge;
    EXPECT_EQ(calls, 2) << huge;
    EXPECT_EQ(waits_, Waits{milliseconds(60'000)}) << huge;
  }
  for (const char* unusable : {"-3", "soon", "1.5", "+2", "Wed, 21 Oct 2015 07:28:00 GMT"}) {
    retryAfter = unusable;
    calls = 0;
    waits_.clear();
    auto r = run(client->get(kPods, "default", "p"));
    ASSERT_FALSE(r) << unusable;
    EXPECT_TRUE(r.error().isTooManyRequests()) << unusable;
    EXPECT_EQ(calls, 1) << unusable;
    EXPECT_TRUE(waits_.empty()) << unusable;
  }
}

TEST_F(RestClientTest, RetriesStopAfterTen) {
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    auto r = statusResponse(503, "ServiceUnavailable", "down");
    r.headers = {{"Retry-After", "0"}};
    return r;
  });
  auto client = makeClient(plainConfig(server));
  auto get = run(client->get(kPods, "default", "p"));
  ASSERT_FALSE(get);
  EXPECT_EQ(get.error().reason(), "ServiceUnavailable");
  EXPECT_EQ(server.requests().size(), 11u);  // the first try and maxRetries (10) retries
  auto post = run(client->create(kPods, "default", "{}"));
  ASSERT_FALSE(post);
  EXPECT_EQ(server.requests().size(), 22u);
}

// client-go retries a GET whose connection was reset or closed before the answer (an apiserver
// shutting down) as if told "Retry-After: 1"; a POST may have been acted on and is not resent.
TEST_F(RestClientTest, GetIsRetriedAfterTheServerHungUpOnAFreshConnection) {
  int calls = 0;
  FakeApiServer server(ioc_, [&](const FakeRequest& req) {
    FakeResponse r = okBody("{}");
    r.hangUp = ++calls == 1 || req.method == "POST";
    return r;
  });
  auto client = makeClient(plainConfig(server));
  auto get = run(client->get(kPods, "default", "p"));
  ASSERT_TRUE(get) << get.error().message();
  EXPECT_EQ(server.requests().size(), 2u);
  EXPECT_EQ(server.connectionsAccepted(), 2);
  EXPECT_EQ(waits_, Waits{milliseconds(1000)});

  auto post = run(client->create(kPods, "default", "{}"));
  ASSERT_FALSE(post);
  EXPECT_TRUE(post.error().isTransport());
  EXPECT_TRUE(post.error().isConnectionLost());
  EXPECT_EQ(server.requests().size(), 3u);
}

// Opening a watch goes through the same policy as every other request.
TEST_F(RestClientTest, WatchSharesTheRetryPolicy) {
  std::vector<FakeResponse> script;
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    FakeResponse r = script.front();
    script.erase(script.begin());
    return r;
  });
  auto unavailable = statusResponse(503, "ServiceUnavailable", "starting");
  unavailable.headers = {{"Retry-After", "1"}};
  FakeResponse stream;
  stream.chunks = {podEvent("ADDED", "a", "1")};
  script = {unavailable, stream};
  auto client = makeClient(plainConfig(server));
  auto got = drain(*client);
  EXPECT_FALSE(got.error) << got.error->message();
  EXPECT_EQ(got.lines, std::vector<std::string>{"ADDED a 1"});
  EXPECT_EQ(waits_, Waits{milliseconds(1000)});

  script = {unavailable, statusResponse(500, "InternalError", "etcd hiccup")};
  auto failed = run(client->watch(kPods, "default", {}));
  ASSERT_FALSE(failed);
  EXPECT_TRUE(failed.error().isServerError());
  EXPECT_EQ(server.requests().size(), 4u);
}

TEST_F(RestClientTest, StaleKeepAliveConnectionIsRetriedOnceOnANewOne) {
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    FakeResponse r;
    r.body = R"({"kind":"Pod","metadata":{"name":"p"}})";
    return r;
  });
  auto client = makeClient(plainConfig(server));
  ASSERT_TRUE(run(client->get(kPods, "default", "p")));
  ASSERT_TRUE(run(client->get(kPods, "default", "p")));
  EXPECT_EQ(server.connectionsAccepted(), 1) << "the second GET reuses the pooled connection";

  server.closeIdleConnections();
  for (int i = 0; i < 10; ++i) {
    ioc_.poll();
  }
  auto third = run(client->get(kPods, "default", "p"));
  ASSERT_TRUE(third) << third.error().message();
  EXPECT_EQ(server.connectionsAccepted(), 2);
  EXPECT_EQ(server.requests().size(), 3u);
}

// The server closed the pooled connection while it sat idle (its idle timeout, a restart): the
// client sees the FIN before writing and sends even a POST on a fresh connection.
TEST_F(RestClientTest, ConnectionClosedWhileIdleIsNotUsedForPost) {
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    FakeResponse r;
    r.status = 201;
    r.body = R"({"kind":"Pod","metadata":{"name":"p"}})";
    return r;
  });
  auto client = makeClient(plainConfig(server));
  ASSERT_TRUE(run(client->create(kPods, "default", "{}")));
  server.closeIdleConnections();
  for (int i = 0; i < 10; ++i) {
    ioc_.poll();
  }
  auto second = run(client->create(kPods, "default", "{}"));
  ASSERT_TRUE(second) << second.error().message();
  EXPECT_EQ(server.connectionsAccepted(), 2);
  EXPECT_EQ(server.requests().size(), 2u);
}

// The server took the POST and hung up without answering: it may have acted on it, so the
// client reports the failure instead of sending it again.
TEST_F(RestClientTest, PostTheServerHungUpOnIsNotRetried) {
  int calls = 0;
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    FakeResponse r;
    r.status = 201;
    r.body = R"({"kind":"Pod","metadata":{"name":"p"}})";
    r.hangUp = ++calls == 2;
    return r;
  });
  auto client = makeClient(plainConfig(server));
  ASSERT_TRUE(run(client->create(kPods, "default", "{}")));
  auto second = run(client->create(kPods, "default", "{}"));
  ASSERT_FALSE(second);
  EXPECT_TRUE(second.error().isTransport());
  EXPECT_EQ(server.requests().size(), 2u);
  EXPECT_EQ(server.connectionsAccepted(), 1) << "sent once, on the pooled connection";
}

// A server that answers every request with 200 and "{}".
FakeResponse answerEmptyObject(const FakeRequest&) {
  FakeResponse r;
  r.body = "{}";
  return r;
}

TEST_F(RestClientTest, VerbsBuildTheRightRequests) {
  FakeApiServer server(ioc_, answerEmptyObject);
  auto client = makeClient(plainConfig(server));
  ListOptions list;
  list.labelSelector = "app in (a,b),!legacy";
  list.limit = 500;
  list.continueToken = "tok/+=";
  list.resourceVersion = "0";
  ASSERT_TRUE(run(client->list(kPods, "ns-1", list)));
  ASSERT_TRUE(run(client->apply(kDeployments, "ns-1", "egw-a", "{}",
                                {"egress-gateway-operator", true, false})));
  ASSERT_TRUE(runSync(
      ioc_, client->patch(kDeployments, "ns-1", "egw-a", PatchType::Merge, "{}", {}, "status")));
  DeleteOptions del;
  del.preconditionUid = "u-1";
  del.propagationPolicy = "Foreground";
  ASSERT_TRUE(run(client->remove(kDeployments, "ns-1", "egw a", del)));
  ASSERT_TRUE(run(client->update(kDeployments, "ns-1", "egw-a", "{}", {}, "scale")));

  const auto& reqs = server.requests();
  ASSERT_EQ(reqs.size(), 5u);
  EXPECT_EQ(reqs[0].method, "GET");
  EXPECT_EQ(reqs[0].target,
            "/api/v1/namespaces/ns-1/pods?labelSelector=app%20in%20%28a%2Cb%29%2C%21legacy"
            "&limit=500&continue=tok%2F%2B%3D&resourceVersion=0");
  EXPECT_EQ(reqs[1].method, "PATCH");
  EXPECT_EQ(reqs[1].target,
            "/apis/apps/v1/namespaces/ns-1/deployments/egw-a?fieldManager=egress-gateway-operator"
            "&force=true");
  EXPECT_EQ(reqs[1].headers.at("content-type"), "application/apply-patch+yaml");
  EXPECT_EQ(reqs[2].target, "/apis/apps/v1/namespaces/ns-1/deployments/egw-a/status");
  EXPECT_EQ(reqs[2].headers.at("content-type"), "application/merge-patch+json");
  EXPECT_EQ(reqs[3].method, "DELETE");
  EXPECT_EQ(reqs[3].target, "/apis/apps/v1/namespaces/ns-1/deployments/egw%20a");
  EXPECT_THAT(reqs[3].body, HasSubstr(R"("preconditions":{"uid":"u-1"})"));
  EXPECT_THAT(reqs[3].body, HasSubstr(R"("propagationPolicy":"Foreground")"));
  EXPECT_EQ(reqs[4].method, "PUT");
  EXPECT_EQ(reqs[4].target, "/apis/apps/v1/namespaces/ns-1/deployments/egw-a/scale");
}

// Fenced: every verb but GET fails before it is sent, and nothing retries it; reads go on.
TEST_F(RestClientTest, FencedWritesAreRefusedBeforeTheyAreSent) {
  FakeApiServer server(ioc_, answerEmptyObject);
  auto client = makeClient(plainConfig(server));
  ASSERT_TRUE(run(client->create(kDeployments, "ns-1", "{}")));
  client->fenceWrites("leadership lost to b");
  EXPECT_TRUE(client->writesFenced());
  auto created = run(client->create(kDeployments, "ns-1", "{}"));
  ASSERT_FALSE(created);
  EXPECT_TRUE(created.error().isFenced());
  EXPECT_EQ(created.error().message(), "writes fenced: leadership lost to b");
  EXPECT_FALSE(run(client->apply(kDeployments, "ns-1", "egw-a", "{}",
                                 {"egress-gateway-operator", true, false})));
  EXPECT_FALSE(run(client->remove(kDeployments, "ns-1", "egw-a", DeleteOptions{})));
  EXPECT_FALSE(run(client->update(kDeployments, "ns-1", "egw-a", "{}", {}, "status")));
  ASSERT_TRUE(run(client->list(kPods, "ns-1", ListOptions{})));
  const auto& reqs = server.requests();
  ASSERT_EQ(reqs.size(), 2u) << "a fenced write reached the server";
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[1].method, "GET");
}

TEST_F(RestClientTest, ApplyWithoutFieldManagerIsRefusedLocally) {
  FakeApiServer server(ioc_, [&](const FakeRequest&) { return FakeResponse{}; });
  auto client = makeClient(plainConfig(server));
  auto r = run(client->apply(kDeployments, "ns", "x", "{}", {}));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("field manager"));
  EXPECT_TRUE(server.requests().empty());
}

class CountingAuth : public AuthProvider {
 public:
  net::awaitable<Result<Credentials>> credentials() override {
    Credentials c;
    c.bearerToken = "token-" + std::to_string(generation);
    co_return c;
  }
  void invalidate(const Credentials&) override { ++generation; }
  int generation = 1;
};

TEST_F(RestClientTest, UnauthorizedRefreshesCredentialsOnce) {
  FakeApiServer server(ioc_, [&](const FakeRequest& req) {
    FakeResponse r;
    if (req.headers.at("authorization") != "Bearer token-2") {
      r.status = 401;
      r.body = R"({"kind":"Status","reason":"Unauthorized","message":"Unauthorized","code":401})";
    } else {
      r.body = "{}";
    }
    return r;
  });
  auto config = plainConfig(server);
  auto auth = std::make_shared<CountingAuth>();
  config.auth = auth;
  auto client = makeClient(config);
  auto ok = run(client->get(kPods, "default", "p"));
  ASSERT_TRUE(ok) << ok.error().message();
  EXPECT_EQ(server.requests().size(), 2u);

  // A token that stays wrong is reported, after one refresh, as Unauthorized.
  auth->generation = 5;
  auto bad = run(client->get(kPods, "default", "p"));
  ASSERT_FALSE(bad);
  EXPECT_TRUE(bad.error().isUnauthorized());
  EXPECT_EQ(server.requests().size(), 4u);
}

TEST_F(RestClientTest, ClientSideRateLimitSpacesRequests) {
  FakeApiServer server(ioc_, [&](const FakeRequest&) { return okBody("{}"); });
  auto config = plainConfig(server);
  config.qps = 20;
  config.burst = 1;
  prometheus::Registry registry;
  auto client = makeClient(config, &registry);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(run(client->get(kPods, "default", "p")));
  }
  EXPECT_EQ(waits_, Waits(4, milliseconds(50))) << "burst 1 at 20 qps";

  const auto text = metricsText(registry);
  EXPECT_THAT(text, HasSubstr("rest_client_requests_total{code=\"200\",host=\"127.0.0.1:" +
                              std::to_string(server.port()) + "\",method=\"GET\"} 5"));
  EXPECT_THAT(text, HasSubstr("rest_client_request_duration_seconds_count{host="));
  EXPECT_THAT(text, HasSubstr("rest_client_rate_limiter_duration_seconds_bucket{host="));
}

// client-go's rest.Config: QPS 0 and burst 0 mean its defaults (5 and 10), not "unlimited".
TEST_F(RestClientTest, QpsAndBurstZeroMeanClientGoDefaults) {
  FakeApiServer server(ioc_, [&](const FakeRequest&) { return okBody("{}"); });
  auto config = plainConfig(server);
  config.qps = 0;
  config.burst = 0;
  auto client = makeClient(config);
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(run(client->get(kPods, "default", "p")));
  }
  EXPECT_TRUE(waits_.empty()) << "a burst of 10";
  ASSERT_TRUE(run(client->get(kPods, "default", "p")));
  ASSERT_TRUE(run(client->get(kPods, "default", "p")));
  EXPECT_EQ(waits_, Waits(2, milliseconds(200))) << "then 5 per second";
}

TEST_F(RestClientTest, NegativeQpsTurnsTheLimiterOff) {
  FakeApiServer server(ioc_, [&](const FakeRequest&) { return okBody("{}"); });
  auto config = plainConfig(server);
  config.qps = -1;
  config.burst = 0;
  auto client = makeClient(config);
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(run(client->get(kPods, "default", "p")));
  }
  EXPECT_TRUE(waits_.empty());
}

// client-go reports a watch under its HTTP verb (GET) and does not charge opening it to the QPS
// bucket ("We specifically don't want to rate limit watches").
TEST_F(RestClientTest, WatchIsAGetInTheMetricsAndIsNotRateLimited) {
  FakeApiServer server(ioc_, [&](const FakeRequest& req) {
    if (req.target.find("watch=true") == std::string::npos) {
      return okBody("{}");
    }
    FakeResponse r;
    r.chunks = {podEvent("ADDED", "a", "1")};
    return r;
  });
  auto config = plainConfig(server);
  config.qps = 1;
  config.burst = 1;
  prometheus::Registry registry;
  auto client = makeClient(config, &registry);
  ASSERT_TRUE(run(client->get(kPods, "default", "p")));  // spends the only token
  auto got = drain(*client);
  EXPECT_FALSE(got.error);
  EXPECT_TRUE(waits_.empty()) << "opening the watch waited for the rate limiter";

  const auto text = metricsText(registry);
  EXPECT_THAT(text, HasSubstr("rest_client_requests_total{code=\"200\",host=\"127.0.0.1:" +
                              std::to_string(server.port()) + "\",method=\"GET\"} 2"));
  EXPECT_THAT(text, Not(HasSubstr("WATCH")));
  EXPECT_THAT(text, HasSubstr("rest_client_rate_limiter_duration_seconds_count{host=\"127.0.0.1:" +
                              std::to_string(server.port()) + "\",verb=\"GET\"} 1"));
}

// Go's GOARCH spelling of this machine, from uname rather than from the client's own table.
std::string goArch() {
  utsname u{};
  uname(&u);
  std::string machine = u.machine;
  if (machine == "x86_64") {
    return "amd64";
  }
  if (machine == "aarch64") {
    return "arm64";
  }
  return machine;
}

TEST_F(RestClientTest, DefaultUserAgentIsClientGosFormatForThisBuild) {
  FakeApiServer server(ioc_, [&](const FakeRequest&) { return okBody("{}"); });
  auto client = makeClient(plainConfig(server));
  ASSERT_TRUE(run(client->get(kPods, "default", "p")));
  const std::string commit = EGRESS_GIT_COMMIT;
  EXPECT_EQ(server.requests()[0].headers.at("user-agent"),
            std::string(program_invocation_short_name) + "/v" + EGRESS_PROJECT_VERSION +
                " (linux/" + goArch() + ") kubernetes/" +
                (commit.empty() ? "unknown" : commit.substr(0, 7)));

  auto config = plainConfig(server);
  config.userAgent = "my-controller/1.0";
  auto named = makeClient(config);
  ASSERT_TRUE(run(named->get(kPods, "default", "p")));
  EXPECT_EQ(server.requests()[1].headers.at("user-agent"), "my-controller/1.0");
}

// --- Cancellation (Asio per-operation cancellation) -------------------------------------------

// The request is on the wire and the answer never comes: cancelling ends the call at once with
// Cancelled, and the connection is closed rather than pooled (a late answer would otherwise be
// read as the next request's).
TEST_F(RestClientTest, CancelledListCompletesAndClosesItsConnection) {
  int calls = 0;
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    FakeResponse r = okBody(R"({"kind":"PodList","items":[]})");
    r.noAnswer = ++calls == 1;
    return r;
  });
  auto client = makeClient(plainConfig(server));
  auto list =
      cancelWhen(client->list(kPods, "default", {}), [&] { return server.requests().size() == 1; });
  ASSERT_FALSE(list);
  EXPECT_TRUE(list.error().isCancelled()) << list.error().message();
  runUntil([&] { return server.connectionsClosedByClient() == 1; });

  auto again = run(client->list(kPods, "default", {}));
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ(server.connectionsAccepted(), 2) << "the cancelled connection was not reused";
}

TEST_F(RestClientTest, CancelledWatchOpenAndWatchNextComplete) {
  bool answer = false;
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    FakeResponse r;
    r.chunks = {podEvent("ADDED", "a", "1")};
    r.keepStreamOpen = true;
    r.noAnswer = !answer;
    return r;
  });
  auto client = makeClient(plainConfig(server));
  auto open = cancelWhen(client->watch(kPods, "default", {}),
                         [&] { return server.requests().size() == 1; });
  ASSERT_FALSE(open);
  EXPECT_TRUE(open.error().isCancelled()) << open.error().message();
  runUntil([&] { return server.connectionsClosedByClient() == 1; });

  answer = true;
  auto watch = run(client->watch(kPods, "default", {}));
  ASSERT_TRUE(watch) << watch.error().message();
  auto first = run((*watch)->next());
  ASSERT_TRUE(first && first->has_value());
  auto next = cancelWhen((*watch)->next(), [] { return true; });
  ASSERT_FALSE(next);
  EXPECT_TRUE(next.error().isCancelled()) << next.error().message();
  runUntil([&] { return server.connectionsClosedByClient() == 2; });
}

// Waiting for a rate-limiter token or for a Retry-After is cancellable too.
TEST_F(RestClientTest, CancelledWhileWaitingToSendOrToRetry) {
  FakeApiServer server(ioc_, [&](const FakeRequest& req) {
    if (req.method == "POST") {
      auto r = statusResponse(503, "ServiceUnavailable", "starting");
      r.headers = {{"Retry-After", "30"}};
      return r;
    }
    return okBody("{}");
  });
  auto config = plainConfig(server);
  config.qps = 1;
  config.burst = 1;
  auto client = makeClient(config);
  ASSERT_TRUE(run(client->get(kPods, "default", "p")));
  auto throttled =
      cancelWhen(client->get(kPods, "default", "p"), [&] { return clock_.waiters() == 1; });
  ASSERT_FALSE(throttled);
  EXPECT_TRUE(throttled.error().isCancelled());
  EXPECT_EQ(server.requests().size(), 1u);

  clock_.advance(std::chrono::seconds(10));  // tokens again
  auto retrying = cancelWhen(client->create(kPods, "default", "{}"), [&] {
    return clock_.waiters() == 1 && server.requests().size() == 2;
  });
  ASSERT_FALSE(retrying);
  EXPECT_TRUE(retrying.error().isCancelled());
  EXPECT_EQ(server.requests().size(), 2u);
}

// The way an informer stops a request: `co_await (request || stopped)`.
TEST_F(RestClientTest, TheLosingSideOfAnOrIsCancelled) {
  using namespace net::experimental::awaitable_operators;
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    FakeResponse r;
    r.noAnswer = true;
    return r;
  });
  auto client = makeClient(plainConfig(server));
  net::steady_timer stop(ioc_, net::steady_timer::time_point::max());
  auto stopped = [](net::steady_timer* t) -> net::awaitable<void> {
    auto [ec] = co_await t->async_wait(net::as_tuple(net::use_awaitable));
    (void)ec;
  };
  auto race = [](RestClient* c, net::awaitable<void> stop) -> net::awaitable<size_t> {
    ListOptions opts;
    auto list = c->list(kPods, "default", opts);
    auto winner = co_await (std::move(list) || std::move(stop));
    co_return winner.index();
  };
  std::optional<size_t> winner;
  spawnInto(ioc_, race(client.get(), stopped(&stop)), winner);
  runUntil([&] { return server.requests().size() == 1; });
  stop.cancel();
  runUntil([&] { return winner.has_value(); });
  EXPECT_EQ(*winner, 1u);
  runUntil([&] { return server.connectionsClosedByClient() == 1; });
}

TEST_F(RestClientTest, NotFoundCarriesTheServerStatus) {
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    FakeResponse r;
    r.status = 404;
    r.body =
        R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"p\" not found","reason":"NotFound","details":{"name":"p","kind":"pods"},"code":404})";
    return r;
  });
  auto client = makeClient(plainConfig(server));
  auto r = run(client->get(kPods, "default", "p"));
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().isNotFound());
  EXPECT_EQ(r.error().status().name, "p");
  EXPECT_EQ(server.requests().size(), 1u) << "4xx is never retried";
}

// --- Compression ------------------------------------------------------------------------------

using testing::gzipped;

FakeResponse podList(const FakeRequest& req, int pods) {
  std::string json = R"({"kind":"PodList","metadata":{"resourceVersion":"9"},"items":[)";
  for (int i = 0; i < pods; ++i) {
    json += (i ? "," : "") + std::string(R"({"metadata":{"name":"pod-)") + std::to_string(i) +
            R"(","namespace":"default"}})";
  }
  json += "]}";
  FakeResponse r;
  auto accept = req.headers.find("accept-encoding");
  if (accept != req.headers.end() && accept->second.find("gzip") != std::string::npos) {
    r.headers = {{"Content-Encoding", "gzip"}};
    r.body = gzipped(json);
  } else {
    r.body = json;
  }
  return r;
}

TEST_F(RestClientTest, ListAsksForGzipAndDecompressesIt) {
  FakeApiServer server(ioc_, [&](const FakeRequest& req) { return podList(req, 2000); });
  // The default, as client-go's: ask for gzip.
  auto client = makeClient(plainConfig(server));
  auto list = run(client->list(kPods, "default", {}));
  ASSERT_TRUE(list) << list.error().message();
  ASSERT_EQ((*list)["items"].Size(), 2000u);
  EXPECT_STREQ((*list)["items"][1999]["metadata"]["name"].GetString(), "pod-1999");
  EXPECT_EQ(server.requests()[0].headers.at("accept-encoding"), "gzip");
  auto raw = run(client->raw("GET", "/api/v1/namespaces/default/pods"));
  ASSERT_TRUE(raw);
  EXPECT_TRUE(raw->decompressed);
  EXPECT_EQ(raw->header("content-encoding"), "");

  // DisableCompression: no Accept-Encoding, the body arrives as it is.
  auto plainConfigNoGzip = plainConfig(server);
  plainConfigNoGzip.disableCompression = true;
  auto uncompressed = makeClient(plainConfigNoGzip);
  auto plain = run(uncompressed->list(kPods, "default", {}));
  ASSERT_TRUE(plain) << plain.error().message();
  EXPECT_EQ((*plain)["items"].Size(), 2000u);
  EXPECT_EQ(server.requests()[2].headers.count("accept-encoding"), 0u);
}

TEST_F(RestClientTest, CorruptGzipBodyIsAClearError) {
  const std::string whole = gzipped(R"({"kind":"PodList","items":[]})");
  std::string body;
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    FakeResponse r;
    r.headers = {{"Content-Encoding", "gzip"}};
    r.body = body;
    return r;
  });
  auto config = plainConfig(server);
  config.disableCompression = false;
  auto client = makeClient(config);
  for (const std::string& corrupt :
       {std::string("not gzip at all"), whole.substr(0, whole.size() / 2), whole + "trailing"}) {
    body = corrupt;
    auto r = run(client->list(kPods, "default", {}));
    ASSERT_FALSE(r) << corrupt.size();
    EXPECT_EQ(r.error().kind(), Error::Kind::Decode) << r.error().message();
    EXPECT_THAT(r.error().message(), HasSubstr("gzip")) << corrupt.size();
  }
  body = whole;
  ASSERT_TRUE(run(client->list(kPods, "default", {})));
}

// Every item of a page, through ListPage.
std::vector<std::string> itemNames(ListPage& page) {
  std::vector<std::string> names;
  for (;;) {
    auto item = page.next();
    if (!item) {
      ADD_FAILURE() << item.error().message();
      return names;
    }
    if (!*item) {
      return names;
    }
    names.emplace_back((**item)["metadata"]["name"].GetString());
  }
}

TEST_F(RestClientTest, ListPageKeepsTheBodyCompressedAndDecodesItItemByItem) {
  FakeApiServer server(ioc_, [&](const FakeRequest& req) { return podList(req, 2000); });
  auto client = makeClient(plainConfig(server));
  auto page = run(client->listPage(kPods, "default", {}));
  ASSERT_TRUE(page) << page.error().message();
  EXPECT_EQ(server.requests()[0].headers.at("accept-encoding"), "gzip");
  FakeRequest askedForGzip;
  askedForGzip.headers["accept-encoding"] = "gzip";
  EXPECT_EQ(page->bodyBytes(), podList(askedForGzip, 2000).body.size())
      << "the page holds the body as it arrived, compressed";
  auto names = itemNames(*page);
  ASSERT_EQ(names.size(), 2000u);
  EXPECT_EQ(names[0], "pod-0");
  EXPECT_EQ(names[1999], "pod-1999");
  EXPECT_EQ(page->resourceVersion(), "9");
  EXPECT_EQ(page->continueToken(), "");

  // DisableCompression: no Accept-Encoding; the plain body decodes the same way.
  auto noGzip = plainConfig(server);
  noGzip.disableCompression = true;
  auto uncompressed = makeClient(noGzip);
  auto plain = run(uncompressed->listPage(kPods, "default", {}));
  ASSERT_TRUE(plain) << plain.error().message();
  EXPECT_EQ(server.requests()[1].headers.count("accept-encoding"), 0u);
  EXPECT_EQ(plain->bodyBytes(), podList(FakeRequest(), 2000).body.size());
  EXPECT_EQ(itemNames(*plain).size(), 2000u);
}

TEST_F(RestClientTest, ListPageReadsAGzippedErrorStatusAndReportsACorruptBody) {
  const std::string status =
      R"json({"kind":"Status","apiVersion":"v1","status":"Failure",)json"
      R"json("message":"too old resource version: 5 (9)","reason":"Expired","code":410})json";
  int code = 410;
  std::string body = gzipped(status);
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    FakeResponse r;
    r.status = code;
    r.headers = {{"Content-Encoding", "gzip"}};
    r.body = body;
    return r;
  });
  auto client = makeClient(plainConfig(server));
  auto expired = run(client->listPage(kPods, "default", {}));
  ASSERT_FALSE(expired);
  EXPECT_TRUE(expired.error().isResourceExpired()) << expired.error().message();
  EXPECT_THAT(expired.error().message(), HasSubstr("too old resource version"));

  // A 2xx body that is cut short fails at the item it breaks, as a gzip error.
  code = 200;
  const std::string whole = gzipped(podList(FakeRequest{}, 50).body);
  body = whole.substr(0, whole.size() / 2);
  auto page = run(client->listPage(kPods, "default", {}));
  ASSERT_TRUE(page) << page.error().message();
  Result<std::optional<rapidjson::Document>> item = std::optional<rapidjson::Document>();
  size_t decoded = 0;
  while ((item = page->next()) && *item) {
    ++decoded;
  }
  ASSERT_FALSE(item);
  EXPECT_LT(decoded, 50u);
  EXPECT_EQ(item.error().kind(), Error::Kind::Decode);
  EXPECT_THAT(item.error().message(), HasSubstr("gzip"));
}

// --- TLS -------------------------------------------------------------------------------------

class RestClientTlsTest : public RestClientTest {
 protected:
  static FakeResponse ok(const FakeRequest& req) {
    FakeResponse r;
    r.body = R"({"kind":"Status","status":"Success","message":")" + req.clientCertSubject + "\"}";
    return r;
  }
  RestConfig tlsConfig(const FakeApiServer& server, const std::string& caFile) {
    RestConfig c;
    c.server = server.url();
    c.caPem = readFile(tlsFile(caFile));
    c.qps = 0;
    return c;
  }
};

TEST_F(RestClientTlsTest, VerifiesTheServerAgainstTheConfiguredCa) {
  FakeTlsOptions tls{tlsFile("server.crt"), tlsFile("server.key"), ""};
  FakeApiServer server(ioc_, ok, &tls);
  auto client = makeClient(tlsConfig(server, "ca.crt"));
  auto r = run(client->raw("GET", "/version"));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->status, 200);
}

TEST_F(RestClientTlsTest, RejectsAServerSignedByAnotherCa) {
  FakeTlsOptions tls{tlsFile("server.crt"), tlsFile("server.key"), ""};
  FakeApiServer server(ioc_, ok, &tls);
  auto client = makeClient(tlsConfig(server, "other-ca.crt"));
  auto r = run(client->raw("GET", "/version"));
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().isTransport());
  EXPECT_THAT(r.error().message(), HasSubstr("TLS handshake"));
  EXPECT_TRUE(server.requests().empty());
}

TEST_F(RestClientTlsTest, RejectsACertificateForAnotherHost) {
  // Signed by the trusted CA, but for other.example: only our own hostname/IP check stops it.
  FakeTlsOptions tls{tlsFile("wrong-host.crt"), tlsFile("wrong-host.key"), ""};
  FakeApiServer server(ioc_, ok, &tls);
  auto client = makeClient(tlsConfig(server, "ca.crt"));
  auto r = run(client->raw("GET", "/version"));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("verifying \"127.0.0.1\""));
  EXPECT_TRUE(server.requests().empty());

  // tls-server-name makes the same certificate acceptable, as kubectl does.
  auto config = tlsConfig(server, "ca.crt");
  config.tlsServerName = "other.example";
  auto named = makeClient(config);
  auto r2 = run(named->raw("GET", "/version"));
  ASSERT_TRUE(r2) << r2.error().message();
}

TEST_F(RestClientTlsTest, InsecureSkipVerifyAcceptsAnyServer) {
  FakeTlsOptions tls{tlsFile("wrong-host.crt"), tlsFile("wrong-host.key"), ""};
  FakeApiServer server(ioc_, ok, &tls);
  auto config = tlsConfig(server, "other-ca.crt");
  config.caPem.clear();
  config.insecureSkipTlsVerify = true;
  auto client = makeClient(config);
  ASSERT_TRUE(run(client->raw("GET", "/version")));
}

TEST_F(RestClientTlsTest, ClientCertificateAuthenticates) {
  FakeTlsOptions tls{tlsFile("server.crt"), tlsFile("server.key"), tlsFile("ca.crt")};
  FakeApiServer server(ioc_, ok, &tls);

  auto anonymous = makeClient(tlsConfig(server, "ca.crt"));
  auto refused = run(anonymous->raw("GET", "/version"));
  ASSERT_FALSE(refused);
  EXPECT_TRUE(refused.error().isTransport());

  auto config = tlsConfig(server, "ca.crt");
  config.clientCertPem = readFile(tlsFile("client.crt"));
  config.clientKeyPem = readFile(tlsFile("client.key"));
  auto client = makeClient(config);
  auto r = run(client->raw("GET", "/version"));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_THAT(r->body, HasSubstr("CN=egress-test-client"));
}

// Go (since 1.15) and so client-go ignore a certificate's Common Name: a name must be in a DNS or
// IP subjectAltName. The certificates are made here with the openssl command.
TEST_F(RestClientTlsTest, RefusesACertificateNamedOnlyInItsCommonName) {
  testutil::TempDir dir("cn_only");
  const auto makeCert = [&](const std::string& name, const std::string& extra) {
    const std::string cmd =
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost" + extra +
        " -keyout " + dir.path() + "/" + name + ".key -out " + dir.path() + "/" + name +
        ".crt 2>/dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return FakeTlsOptions{dir.path() + "/" + name + ".crt", dir.path() + "/" + name + ".key", ""};
  };
  const auto getWith = [&](const FakeTlsOptions& tls) {
    FakeApiServer server(ioc_, ok, &tls);
    RestConfig config;
    config.server = server.url();
    config.caPem = readFile(tls.certFile);  // self-signed: its own CA
    config.tlsServerName = "localhost";
    config.qps = -1;
    auto client = makeClient(config);
    auto r = run(client->raw("GET", "/version"));
    return std::make_pair(std::move(r), server.requests().size());
  };

  auto [cnOnly, cnOnlyRequests] = getWith(makeCert("cn-only", ""));
  ASSERT_FALSE(cnOnly);
  EXPECT_THAT(cnOnly.error().message(), HasSubstr("verifying \"localhost\""));
  EXPECT_THAT(cnOnly.error().message(), HasSubstr("hostname mismatch"));
  EXPECT_EQ(cnOnlyRequests, 0u);

  // The same certificate with the name also in a DNS SAN is fine.
  auto [san, sanRequests] = getWith(makeCert("san", " -addext subjectAltName=DNS:localhost"));
  ASSERT_TRUE(san) << san.error().message();
  EXPECT_EQ(sanRequests, 1u);
}

// --- Proxies ----------------------------------------------------------------------------------

class RestClientProxyTest : public RestClientTlsTest {
 protected:
  FakeTlsOptions serverTls_{tlsFile("server.crt"), tlsFile("server.key"), ""};
  std::pair<std::string, std::string> proxyTls_{tlsFile("server.crt"), tlsFile("server.key")};
};

TEST_F(RestClientProxyTest, ProxyUrlTunnelsThroughAnHttpProxy) {
  FakeApiServer server(ioc_, ok, &serverTls_);
  testing::ConnectProxy proxy(ioc_, server.port());
  auto config = tlsConfig(server, "ca.crt");
  config.proxyUrl = proxy.url();
  auto client = makeClient(config);
  ASSERT_TRUE(run(client->raw("GET", "/version")));
  ASSERT_TRUE(run(client->raw("GET", "/version")));
  ASSERT_EQ(proxy.connects().size(), 1u) << "one tunnel, kept alive and pooled";
  EXPECT_EQ(proxy.connects()[0].target, "127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(proxy.connects()[0].proxyAuthorization, "");
  EXPECT_EQ(server.requests().size(), 2u);

  // A watch takes the pooled tunnel for itself; the next request needs a new one.
  auto watch = run(client->watch(kPods, "default", {}));
  ASSERT_TRUE(watch) << watch.error().message();
  ASSERT_TRUE(run(client->raw("GET", "/version")));
  EXPECT_EQ(proxy.connects().size(), 2u);
}

TEST_F(RestClientProxyTest, ProxyCredentialsComeFromTheUrl) {
  FakeApiServer server(ioc_, ok, &serverTls_);
  testing::ConnectProxy proxy(ioc_, server.port());
  auto config = tlsConfig(server, "ca.crt");
  config.proxyUrl = "http://user:p%40ss@" + proxy.url().substr(std::string("http://").size());
  auto client = makeClient(config);
  ASSERT_TRUE(run(client->raw("GET", "/version")));
  ASSERT_EQ(proxy.connects().size(), 1u);
  EXPECT_EQ(proxy.connects()[0].proxyAuthorization, "Basic dXNlcjpwQHNz");  // user:p@ss
}

TEST_F(RestClientProxyTest, ARefusingProxyIsAClearError) {
  FakeApiServer server(ioc_, ok, &serverTls_);
  int status = 407;
  testing::ConnectProxy proxy(ioc_, server.port(),
                              [&](const testing::ProxyConnect&) { return status; });
  auto config = tlsConfig(server, "ca.crt");
  config.proxyUrl = "http://user:secret@" + proxy.url().substr(std::string("http://").size());
  auto client = makeClient(config);
  auto refused = run(client->raw("GET", "/version"));
  ASSERT_FALSE(refused);
  EXPECT_TRUE(refused.error().isTransport());
  EXPECT_THAT(refused.error().message(), HasSubstr("proxy " + proxy.url()));
  EXPECT_THAT(refused.error().message(), HasSubstr("407 Proxy Authentication Required"));
  EXPECT_THAT(refused.error().message(), Not(HasSubstr("secret")));

  status = 403;
  auto forbidden = run(client->raw("GET", "/version"));
  ASSERT_FALSE(forbidden);
  EXPECT_THAT(forbidden.error().message(), HasSubstr("403 Forbidden"));
  EXPECT_TRUE(server.requests().empty());
}

// TLS to the proxy, CONNECT inside it, then TLS to the API server inside the tunnel.
TEST_F(RestClientProxyTest, HttpsProxyCarriesTlsInsideTls) {
  FakeApiServer server(ioc_, ok, &serverTls_);
  testing::ConnectProxy proxy(ioc_, server.port(), {}, &proxyTls_);
  auto config = tlsConfig(server, "ca.crt");
  config.proxyUrl = proxy.url();
  ASSERT_THAT(config.proxyUrl, ::testing::StartsWith("https://"));
  auto client = makeClient(config);
  auto r = run(client->raw("GET", "/version"));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(proxy.connects().size(), 1u);

  // And a plain http:// API server behind an https:// proxy.
  FakeApiServer plain(ioc_, ok);
  testing::ConnectProxy proxyToPlain(ioc_, plain.port(), {}, &proxyTls_);
  auto plainConfig = tlsConfig(plain, "ca.crt");
  plainConfig.proxyUrl = proxyToPlain.url();
  auto plainClient = makeClient(plainConfig);
  auto r2 = run(plainClient->raw("GET", "/version"));
  ASSERT_TRUE(r2) << r2.error().message();
  EXPECT_EQ(proxyToPlain.connects().size(), 1u);
}

// HTTPS_PROXY and NO_PROXY, read when the client is made. The server is addressed as
// 192.0.2.1 (TEST-NET-1, routed nowhere): only the proxy, which tunnels every CONNECT to the fake
// server, can reach it.
TEST_F(RestClientProxyTest, EnvironmentProxyAndNoProxy) {
  FakeApiServer server(ioc_, ok, &serverTls_);
  testing::ConnectProxy proxy(ioc_, server.port());
  const std::string port = std::to_string(server.port());
  options_.transport.connectTimeout = std::chrono::milliseconds(200);
  auto config = tlsConfig(server, "ca.crt");
  config.server = "https://192.0.2.1:" + port;
  config.tlsServerName = "localhost";
  {
    testutil::ScopedEnv httpsProxy("HTTPS_PROXY", proxy.url().c_str());
    testutil::ScopedEnv noProxy("NO_PROXY", "other.example");
    auto client = makeClient(config);
    auto r = run(client->raw("GET", "/version"));
    ASSERT_TRUE(r) << r.error().message();
    ASSERT_EQ(proxy.connects().size(), 1u);
    EXPECT_EQ(proxy.connects()[0].target, "192.0.2.1:" + port);
  }
  {
    testutil::ScopedEnv httpsProxy("HTTPS_PROXY", proxy.url().c_str());
    testutil::ScopedEnv noProxy("NO_PROXY", "example.com,192.0.2.0/24");
    auto client = makeClient(config);
    auto r = run(client->raw("GET", "/version"));
    ASSERT_FALSE(r) << "went direct to an address nothing answers on";
    EXPECT_TRUE(r.error().isTransport());
    EXPECT_EQ(proxy.connects().size(), 1u);
  }
  {
    // Loopback never goes through a proxy (Go's rule).
    testutil::ScopedEnv httpsProxy("HTTPS_PROXY", proxy.url().c_str());
    auto client = makeClient(tlsConfig(server, "ca.crt"));
    ASSERT_TRUE(run(client->raw("GET", "/version")));
    EXPECT_EQ(proxy.connects().size(), 1u);
  }
}

TEST_F(RestClientProxyTest, AnUnsupportedProxyUrlIsAConfigError) {
  RestConfig config;
  config.server = "https://127.0.0.1:1";
  config.proxyUrl = "socks5://127.0.0.1:1080";
  auto client = RestClient::create(ioc_.get_executor(), config, nullptr);
  ASSERT_FALSE(client);
  EXPECT_THAT(client.error().message(), HasSubstr("socks5"));
}

TEST_F(RestClientTlsTest, ACorruptCaIsAConfigError) {
  RestConfig config;
  config.server = "https://127.0.0.1:1";
  config.caPem = "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n";
  auto client = RestClient::create(ioc_.get_executor(), config, nullptr);
  ASSERT_FALSE(client);
  EXPECT_THAT(client.error().message(), HasSubstr("certificate authority"));
}

TEST(RestPaths, EscapingAndParsing) {
  EXPECT_EQ(resourcePath({"", "v1", "namespaces", false}, "ignored", "kube-system", "status"),
            "/api/v1/namespaces/kube-system/status");
  EXPECT_EQ(resourcePath({"coordination.k8s.io", "v1", "leases", true}, "ns", "a/b", ""),
            "/apis/coordination.k8s.io/v1/namespaces/ns/leases/a%2Fb");
  EXPECT_EQ(escapeQueryValue("a=b&c d"), "a%3Db%26c%20d");
  EXPECT_EQ(parseRetryAfter("3"), std::chrono::seconds(3));
  EXPECT_EQ(parseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT"), std::nullopt);
  auto url = parseServerUrl("https://[::1]:6443/prefix/");
  ASSERT_TRUE(url);
  EXPECT_EQ(url->host, "::1");
  EXPECT_EQ(url->port, "6443");
  EXPECT_EQ(url->pathPrefix, "/prefix");
  EXPECT_FALSE(parseServerUrl("ftp://x"));
  EXPECT_FALSE(parseServerUrl("https://host:abc"));
  EXPECT_EQ(parseServerUrl("http://host")->port, "80");
}

TEST(RetryPolicy, WaitsOnlyWhenAskedOrForALostGet) {
  RetryPolicy policy(RetryOptions{10, std::chrono::seconds(60), 0.2, [] { return 1.0; }});
  EXPECT_EQ(policy.afterResponse(0, 503, "2"), milliseconds(2400));
  EXPECT_EQ(policy.afterResponse(0, 429, "0"), milliseconds(0));
  EXPECT_EQ(policy.afterResponse(0, 500, "55"), milliseconds(60'000)) << "capped after jitter";
  EXPECT_EQ(policy.afterResponse(0, 503, ""), std::nullopt);
  EXPECT_EQ(policy.afterResponse(0, 409, "1"), std::nullopt) << "only 429 and 5xx";
  EXPECT_EQ(policy.afterResponse(9, 503, "1"), milliseconds(1200));
  EXPECT_EQ(policy.afterResponse(10, 503, "1"), std::nullopt) << "ten retries at most";

  const auto lost = Error::transport("reset", Error::TransportFailure::ConnectionLost);
  EXPECT_EQ(policy.afterFailure(0, "GET", lost), milliseconds(1200));
  EXPECT_EQ(policy.afterFailure(0, "PUT", lost), std::nullopt);
  EXPECT_EQ(policy.afterFailure(0, "GET", Error::transport("x509: unknown authority")),
            std::nullopt);
  EXPECT_EQ(policy.afterFailure(10, "GET", lost), std::nullopt);

  EXPECT_EQ(parseRetryAfter("120"), std::chrono::seconds(120));
  EXPECT_EQ(parseRetryAfter("99999999999999999999999999"), std::chrono::seconds(1'000'000'000));
  EXPECT_EQ(parseRetryAfter("-1"), std::nullopt);
  EXPECT_EQ(parseRetryAfter(" 1"), std::nullopt);
}

TEST(UserAgent, ClientGoFormat) {
  EXPECT_EQ(buildUserAgent("kubectl", "v1.20.0-rc.1+abc", "linux", "arm64", "0123456789abcdef"),
            "kubectl/v1.20.0 (linux/arm64) kubernetes/0123456");
  EXPECT_EQ(buildUserAgent("", "", "linux", "amd64", ""),
            "unknown/unknown (linux/amd64) kubernetes/unknown");
}

}  // namespace
}  // namespace egress::kube
