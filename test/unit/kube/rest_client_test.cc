// Component tests of the REST client against an in-process server (fake_api_server.h): watch
// framing, retries, flow control, stale connections, TLS verification and client certificates.
#include "pkg/kube/rest_client.h"

#include <fstream>
#include <optional>
#include <sstream>

#include <boost/asio/io_context.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "test/testutil/run_sync.h"
#include "test/unit/kube/fake_api_server.h"

namespace egress::kube {
namespace {

using testing::FakeApiServer;
using testing::FakeRequest;
using testing::FakeResponse;
using testing::FakeTlsOptions;
using ::testing::HasSubstr;

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
  c.qps = 0;  // no client-side limit unless a test wants one
  return c;
}

class RestClientTest : public ::testing::Test {
 protected:
  std::unique_ptr<RestClient> makeClient(const RestConfig& config,
                                         prometheus::Registry* metrics = nullptr) {
    RestClientOptions options;
    options.retryBackoffBase = std::chrono::milliseconds(1);
    auto client = RestClient::create(ioc_.get_executor(), config, metrics, options);
    EXPECT_TRUE(client) << (client ? "" : client.error().message());
    return client ? std::move(*client) : nullptr;
  }

  // Reads every event of a watch until it ends (or fails).
  struct Drained {
    std::vector<std::string> lines;  // "TYPE name rv"
    std::optional<Error> error;
  };
  Drained drain(RestClient& client) {
    Drained out;
    auto watch = runSync(ioc_, client.watch(kPods, "default", {}));
    if (!watch) {
      out.error = watch.error();
      return out;
    }
    for (;;) {
      auto ev = runSync(ioc_, (*watch)->next());
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

  net::io_context ioc_;
};

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
  auto watch = runSync(ioc_, client->watch(kPods, "default", {}));
  ASSERT_TRUE(watch);
  auto ev = runSync(ioc_, (*watch)->next());
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
  auto watch = runSync(ioc_, client->watch(kPods, "default", {}));
  ASSERT_TRUE(watch);
  auto first = runSync(ioc_, (*watch)->next());
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

TEST_F(RestClientTest, TooManyRequestsWaitsOutRetryAfter) {
  int calls = 0;
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    FakeResponse r;
    if (++calls == 1) {
      r.status = 429;
      r.headers = {{"Retry-After", "1"}};
      r.body = R"({"kind":"Status","reason":"TooManyRequests","code":429})";
    } else {
      r.body = R"({"kind":"Pod","metadata":{"name":"p"}})";
    }
    return r;
  });
  auto client = makeClient(plainConfig(server));
  const auto start = std::chrono::steady_clock::now();
  auto pod = runSync(ioc_, client->get(kPods, "default", "p"));
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(pod) << pod.error().message();
  EXPECT_EQ(calls, 2);
  // A lower bound only: the client may not come back before the server asked it to.
  EXPECT_GE(waited, std::chrono::milliseconds(990));
}

TEST_F(RestClientTest, ServerErrorIsRetriedForGetButNotForPost) {
  int calls = 0;
  FakeApiServer server(ioc_, [&](const FakeRequest& req) {
    FakeResponse r;
    ++calls;
    if (req.method == "POST" || calls == 1) {
      r.status = 500;
      r.body = R"({"kind":"Status","reason":"InternalError","message":"etcd hiccup","code":500})";
    } else {
      r.body = R"({"kind":"Pod","metadata":{"name":"p"}})";
    }
    return r;
  });
  auto client = makeClient(plainConfig(server));
  auto pod = runSync(ioc_, client->get(kPods, "default", "p"));
  ASSERT_TRUE(pod) << pod.error().message();
  EXPECT_EQ(calls, 2);

  calls = 0;
  auto created = runSync(ioc_, client->create(kPods, "default", R"({"kind":"Pod"})"));
  ASSERT_FALSE(created);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(created.error().isServerError());
  EXPECT_THAT(created.error().message(), HasSubstr("etcd hiccup"));
}

TEST_F(RestClientTest, PersistentServerErrorsStopAfterTheRetryBudget) {
  int calls = 0;
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    ++calls;
    FakeResponse r;
    r.status = 503;
    return r;
  });
  auto client = makeClient(plainConfig(server));
  auto pod = runSync(ioc_, client->get(kPods, "default", "p"));
  ASSERT_FALSE(pod);
  EXPECT_EQ(calls, 11);  // the first try and maxRetries (10) retries
  EXPECT_EQ(pod.error().reason(), "ServiceUnavailable");
}

TEST_F(RestClientTest, StaleKeepAliveConnectionIsRetriedOnceOnANewOne) {
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    FakeResponse r;
    r.body = R"({"kind":"Pod","metadata":{"name":"p"}})";
    return r;
  });
  auto client = makeClient(plainConfig(server));
  ASSERT_TRUE(runSync(ioc_, client->get(kPods, "default", "p")));
  ASSERT_TRUE(runSync(ioc_, client->get(kPods, "default", "p")));
  EXPECT_EQ(server.connectionsAccepted(), 1) << "the second GET reuses the pooled connection";

  server.closeIdleConnections();
  for (int i = 0; i < 10; ++i) {
    ioc_.poll();
  }
  auto third = runSync(ioc_, client->get(kPods, "default", "p"));
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
  ASSERT_TRUE(runSync(ioc_, client->create(kPods, "default", "{}")));
  server.closeIdleConnections();
  for (int i = 0; i < 10; ++i) {
    ioc_.poll();
  }
  auto second = runSync(ioc_, client->create(kPods, "default", "{}"));
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
  ASSERT_TRUE(runSync(ioc_, client->create(kPods, "default", "{}")));
  auto second = runSync(ioc_, client->create(kPods, "default", "{}"));
  ASSERT_FALSE(second);
  EXPECT_TRUE(second.error().isTransport());
  EXPECT_EQ(server.requests().size(), 2u);
  EXPECT_EQ(server.connectionsAccepted(), 1) << "sent once, on the pooled connection";
}

TEST_F(RestClientTest, VerbsBuildTheRightRequests) {
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    FakeResponse r;
    r.body = "{}";
    return r;
  });
  auto client = makeClient(plainConfig(server));
  ListOptions list;
  list.labelSelector = "app in (a,b),!legacy";
  list.limit = 500;
  list.continueToken = "tok/+=";
  list.resourceVersion = "0";
  ASSERT_TRUE(runSync(ioc_, client->list(kPods, "ns-1", list)));
  ASSERT_TRUE(runSync(ioc_, client->apply(kDeployments, "ns-1", "egw-a", "{}",
                                          {"egress-gateway-operator", true, false})));
  ASSERT_TRUE(runSync(
      ioc_, client->patch(kDeployments, "ns-1", "egw-a", PatchType::Merge, "{}", {}, "status")));
  DeleteOptions del;
  del.preconditionUid = "u-1";
  del.propagationPolicy = "Foreground";
  ASSERT_TRUE(runSync(ioc_, client->remove(kDeployments, "ns-1", "egw a", del)));
  ASSERT_TRUE(runSync(ioc_, client->update(kDeployments, "ns-1", "egw-a", "{}", {}, "scale")));

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
  EXPECT_THAT(reqs[0].headers.at("user-agent"), HasSubstr("egress-operator"));
}

TEST_F(RestClientTest, ApplyWithoutFieldManagerIsRefusedLocally) {
  FakeApiServer server(ioc_, [&](const FakeRequest&) { return FakeResponse{}; });
  auto client = makeClient(plainConfig(server));
  auto r = runSync(ioc_, client->apply(kDeployments, "ns", "x", "{}", {}));
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
  auto ok = runSync(ioc_, client->get(kPods, "default", "p"));
  ASSERT_TRUE(ok) << ok.error().message();
  EXPECT_EQ(server.requests().size(), 2u);

  // A token that stays wrong is reported, after one refresh, as Unauthorized.
  auth->generation = 5;
  auto bad = runSync(ioc_, client->get(kPods, "default", "p"));
  ASSERT_FALSE(bad);
  EXPECT_TRUE(bad.error().isUnauthorized());
  EXPECT_EQ(server.requests().size(), 4u);
}

TEST_F(RestClientTest, ClientSideRateLimitSpacesRequests) {
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    FakeResponse r;
    r.body = "{}";
    return r;
  });
  auto config = plainConfig(server);
  config.qps = 20;
  config.burst = 1;
  prometheus::Registry registry;
  auto client = makeClient(config, &registry);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(runSync(ioc_, client->get(kPods, "default", "p")));
  }
  // Burst 1 at 20 qps: four waits of 50 ms at least (a lower bound, never an upper one).
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(195));

  const auto text = prometheus::TextSerializer().Serialize(registry.Collect());
  EXPECT_THAT(text, HasSubstr("rest_client_requests_total{code=\"200\",host=\"127.0.0.1:" +
                              std::to_string(server.port()) + "\",method=\"GET\"} 5"));
  EXPECT_THAT(text, HasSubstr("rest_client_request_duration_seconds_count{host="));
  EXPECT_THAT(text, HasSubstr("rest_client_rate_limiter_duration_seconds_bucket{host="));
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
  auto r = runSync(ioc_, client->get(kPods, "default", "p"));
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().isNotFound());
  EXPECT_EQ(r.error().status().name, "p");
  EXPECT_EQ(server.requests().size(), 1u) << "4xx is never retried";
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
  auto r = runSync(ioc_, client->raw("GET", "/version"));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->status, 200);
}

TEST_F(RestClientTlsTest, RejectsAServerSignedByAnotherCa) {
  FakeTlsOptions tls{tlsFile("server.crt"), tlsFile("server.key"), ""};
  FakeApiServer server(ioc_, ok, &tls);
  auto client = makeClient(tlsConfig(server, "other-ca.crt"));
  auto r = runSync(ioc_, client->raw("GET", "/version"));
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
  auto r = runSync(ioc_, client->raw("GET", "/version"));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("verifying \"127.0.0.1\""));
  EXPECT_TRUE(server.requests().empty());

  // tls-server-name makes the same certificate acceptable, as kubectl does.
  auto config = tlsConfig(server, "ca.crt");
  config.tlsServerName = "other.example";
  auto named = makeClient(config);
  auto r2 = runSync(ioc_, named->raw("GET", "/version"));
  ASSERT_TRUE(r2) << r2.error().message();
}

TEST_F(RestClientTlsTest, InsecureSkipVerifyAcceptsAnyServer) {
  FakeTlsOptions tls{tlsFile("wrong-host.crt"), tlsFile("wrong-host.key"), ""};
  FakeApiServer server(ioc_, ok, &tls);
  auto config = tlsConfig(server, "other-ca.crt");
  config.caPem.clear();
  config.insecureSkipTlsVerify = true;
  auto client = makeClient(config);
  ASSERT_TRUE(runSync(ioc_, client->raw("GET", "/version")));
}

TEST_F(RestClientTlsTest, ClientCertificateAuthenticates) {
  FakeTlsOptions tls{tlsFile("server.crt"), tlsFile("server.key"), tlsFile("ca.crt")};
  FakeApiServer server(ioc_, ok, &tls);

  auto anonymous = makeClient(tlsConfig(server, "ca.crt"));
  auto refused = runSync(ioc_, anonymous->raw("GET", "/version"));
  ASSERT_FALSE(refused);
  EXPECT_TRUE(refused.error().isTransport());

  auto config = tlsConfig(server, "ca.crt");
  config.clientCertPem = readFile(tlsFile("client.crt"));
  config.clientKeyPem = readFile(tlsFile("client.key"));
  auto client = makeClient(config);
  auto r = runSync(ioc_, client->raw("GET", "/version"));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_THAT(r->body, HasSubstr("CN=egress-test-client"));
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

}  // namespace
}  // namespace egress::kube
