// controller-runtime's probe semantics (pkg/healthz) through the health probe server on a real
// socket: the aggregate, ?verbose, ?exclude, sub-paths, ping, and the exact texts.
#include "pkg/controllerruntime/healthz.h"

#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pkg/controllerruntime/endpoints.h"
#include "test/testutil/run_sync.h"
#include "test/unit/controllerruntime/raw_client.h"

namespace egress::controllerruntime {
namespace {

namespace net = boost::asio;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::RawResponse;

CheckResult failure(const std::string& reason) {
  return unexpected(reason);
}

class HealthzTest : public ::testing::Test {
 protected:
  void start() {
    auto started = startHealthProbeServer(ioc_.get_executor(), "127.0.0.1:0", liveness_, readiness_,
                                          HttpServerOptions{});
    ASSERT_TRUE(started) << started.error();
    ASSERT_NE(*started, nullptr);
    server_ = std::move(*started);
  }

  RawResponse get(const std::string& target) {
    RawResponse r = testutil::runSync(
        ioc_, testing::exchange(testing::loopback(server_->port()), testing::get(target)));
    EXPECT_TRUE(r.received) << target << ": " << r.error;
    return r;
  }

  // Adds the checks "informers" (passing unless informersSynced_ is false) and "leader" (failing
  // unless leading_).
  void addReadinessChecks() {
    ASSERT_TRUE(readiness_.add("informers", [this]() -> CheckResult {
      return informersSynced_ ? CheckResult(Ok{}) : failure("caches not synced");
    }));
    ASSERT_TRUE(readiness_.add("leader", [this]() -> CheckResult {
      return leading_ ? CheckResult(Ok{}) : failure("not leading yet");
    }));
  }

  net::io_context ioc_;
  HealthChecks liveness_;
  HealthChecks readiness_;
  std::unique_ptr<HttpServer> server_;
  bool informersSynced_ = true;
  bool leading_ = false;
};

TEST_F(HealthzTest, WithoutChecksBothEndpointsAnswerOkAndPing) {
  start();
  for (const char* endpoint : {"/healthz", "/readyz"}) {
    const std::string e = endpoint;
    RawResponse r = get(e);
    EXPECT_EQ(r.status, 200u) << e;
    EXPECT_EQ(r.body, "ok") << e;
    EXPECT_EQ(r.header("content-type"), "text/plain; charset=utf-8") << e;
    EXPECT_EQ(r.header("x-content-type-options"), "nosniff") << e;
    EXPECT_EQ(get(e + "/").body, "ok") << e;
    EXPECT_EQ(get(e + "?verbose").body, "[+]ping ok\nhealthz check passed\n") << e;
    RawResponse ping = get(e + "/ping");
    EXPECT_EQ(ping.status, 200u) << e;
    EXPECT_EQ(ping.body, "ok") << e;
    EXPECT_EQ(get(e + "/informers").status, 404u) << e;
  }
  EXPECT_EQ(get("/livez").status, 404u);
  EXPECT_EQ(get("/readyzz").status, 404u);
}

TEST_F(HealthzTest, AllChecksPassingIsOk) {
  leading_ = true;
  addReadinessChecks();
  start();
  RawResponse r = get("/readyz");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.body, "ok");
  RawResponse verbose = get("/readyz?verbose");
  EXPECT_EQ(verbose.status, 200u);
  EXPECT_EQ(verbose.body, "[+]informers ok\n[+]leader ok\nhealthz check passed\n");
  // With checks registered there is no implicit ping.
  EXPECT_EQ(get("/readyz/ping").status, 404u);
  // Liveness is a separate set.
  EXPECT_EQ(get("/healthz?verbose").body, "[+]ping ok\nhealthz check passed\n");
}

TEST_F(HealthzTest, AFailingCheckIs500WithTheReasonWithheld) {
  addReadinessChecks();
  start();
  RawResponse r = get("/readyz");
  EXPECT_EQ(r.status, 500u);
  EXPECT_EQ(r.body, "[+]informers ok\n[-]leader failed: reason withheld\nhealthz check failed\n");
  EXPECT_THAT(r.body, Not(HasSubstr("not leading")));
  EXPECT_EQ(r.header("content-type"), "text/plain; charset=utf-8");
  EXPECT_EQ(get("/readyz?verbose").body, r.body);
}

TEST_F(HealthzTest, ChecksRunAtEveryRequest) {
  addReadinessChecks();
  start();
  EXPECT_EQ(get("/readyz").status, 500u);
  leading_ = true;
  EXPECT_EQ(get("/readyz").status, 200u);
  informersSynced_ = false;
  RawResponse r = get("/readyz");
  EXPECT_EQ(r.status, 500u);
  EXPECT_EQ(r.body, "[-]informers failed: reason withheld\n[+]leader ok\nhealthz check failed\n");
}

TEST_F(HealthzTest, ExcludeSkipsAChecksAndReportsUnknownOnes) {
  addReadinessChecks();
  start();
  RawResponse excluded = get("/readyz?exclude=leader");
  EXPECT_EQ(excluded.status, 200u);
  EXPECT_EQ(excluded.body, "ok");
  EXPECT_EQ(get("/readyz?exclude=leader&verbose").body,
            "[+]informers ok\n[+]leader excluded: ok\nhealthz check passed\n");
  // An exclude that matches nothing is reported, in a stable (sorted) order.
  RawResponse unknown = get("/readyz?exclude=zeta&exclude=alpha");
  EXPECT_EQ(unknown.status, 500u);
  EXPECT_EQ(unknown.body,
            "[+]informers ok\n[-]leader failed: reason withheld\n"
            "warn: some health checks cannot be excluded: no matches for \"alpha\",\"zeta\"\n"
            "healthz check failed\n");
  EXPECT_EQ(get("/readyz?exclude=leader&exclude=informers&exclude=x%20y&verbose").body,
            "[+]informers excluded: ok\n[+]leader excluded: ok\n"
            "warn: some health checks cannot be excluded: no matches for \"x y\"\n"
            "healthz check passed\n");
}

TEST_F(HealthzTest, ASubPathRunsOneCheckAndShowsItsReason) {
  addReadinessChecks();
  start();
  RawResponse passing = get("/readyz/informers");
  EXPECT_EQ(passing.status, 200u);
  EXPECT_EQ(passing.body, "ok");
  RawResponse failing = get("/readyz/leader");
  EXPECT_EQ(failing.status, 500u);
  EXPECT_EQ(failing.body, "internal server error: not leading yet\n");
  EXPECT_EQ(failing.header("x-content-type-options"), "nosniff");
  RawResponse unknown = get("/readyz/nope");
  EXPECT_EQ(unknown.status, 404u);
  EXPECT_EQ(unknown.body, "404 page not found\n");
  EXPECT_EQ(get("/readyz/leader/x").status, 404u);
  // A trailing slash is cleaned away, as path.Clean does.
  EXPECT_EQ(get("/readyz/informers/").status, 200u);
  // Exclude applies to the aggregate only.
  EXPECT_EQ(get("/readyz/leader?exclude=leader").status, 500u);
}

TEST_F(HealthzTest, OnlyGetAndHeadAreServed) {
  start();
  RawResponse r =
      testutil::runSync(ioc_, testing::exchange(testing::loopback(server_->port()),
                                                testing::request("POST", "/readyz", "")));
  EXPECT_EQ(r.status, 405u);
}

TEST(HealthChecksTest, AddRefusesEmptySlashedAndDuplicateNames) {
  HealthChecks checks;
  auto ok = [] { return CheckResult(Ok{}); };
  EXPECT_TRUE(checks.add("informers", ok));
  auto duplicate = checks.add("informers", ok);
  ASSERT_FALSE(duplicate);
  EXPECT_THAT(duplicate.error(), HasSubstr("\"informers\""));
  EXPECT_FALSE(checks.add("", ok));
  EXPECT_FALSE(checks.add("a/b", ok));
  EXPECT_FALSE(checks.add("informers2", nullptr));
}

TEST(HealthProbeServerTest, ZeroDisablesAndABadAddressIsAnError) {
  net::io_context ioc;
  HealthChecks liveness;
  HealthChecks readiness;
  auto disabled = startHealthProbeServer(ioc.get_executor(), "0", liveness, readiness, {});
  ASSERT_TRUE(disabled) << disabled.error();
  EXPECT_EQ(*disabled, nullptr);
  auto bad = startHealthProbeServer(ioc.get_executor(), "8081", liveness, readiness, {});
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error(), HasSubstr("health probe"));
  EXPECT_THAT(bad.error(), HasSubstr("\"8081\""));
}

}  // namespace
}  // namespace egress::controllerruntime
