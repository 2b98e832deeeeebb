// /metrics through the metrics server on a real socket: the text format and its Content-Type,
// every collectable in one answer, the client-go families as the operator registers them, and
// Prometheus's own linter (promtool check metrics) passing on the body.
#include "pkg/controllerruntime/metrics_handler.h"

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include <boost/asio/io_context.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <prometheus/registry.h>

#include "pkg/controllerruntime/endpoints.h"
#include "pkg/controllerruntime/process_collector.h"
#include "pkg/kube/client_metrics.h"
#include "pkg/workqueue/metrics.h"
#include "test/testutil/run_sync.h"
#include "test/testutil/temp_dir.h"
#include "test/unit/controllerruntime/raw_client.h"
#include <sys/wait.h>

namespace egress::controllerruntime {
namespace {

namespace net = boost::asio;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::RawResponse;

class ThrowingCollectable : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    throw std::runtime_error("collector broke");
  }
};

class MetricsServerTest : public ::testing::Test {
 protected:
  void start(std::vector<const prometheus::Collectable*> collectables) {
    auto started = startMetricsServer(ioc_.get_executor(), "127.0.0.1:0", std::move(collectables),
                                      HttpServerOptions{});
    ASSERT_TRUE(started) << started.error();
    ASSERT_NE(*started, nullptr);
    server_ = std::move(*started);
  }

  RawResponse get(const std::string& target) {
    return testutil::runSync(
        ioc_, testing::exchange(testing::loopback(server_->port()), testing::get(target)));
  }

  net::io_context ioc_;
  prometheus::Registry registry_;
  ProcessCollector process_;
  std::unique_ptr<HttpServer> server_;
};

// `promtool check metrics` on `body`: its exit code and what it said.
std::pair<int, std::string> promtoolCheck(const std::string& body) {
  testutil::TempDir dir("metrics_handler_test");
  const std::string file = dir.write("metrics.txt", body);
  const std::string command = "promtool check metrics < " + file + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    return {-1, "popen failed"};
  }
  std::string output;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe)) {
    output.append(buf, n);
  }
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

TEST_F(MetricsServerTest, ServesEveryCollectableInTheTextFormat) {
  prometheus::BuildCounter()
      .Name("egress_test_events_total")
      .Help("Events seen by the test.")
      .Register(registry_)
      .Add({{"kind", "a"}})
      .Increment(3);
  start({&registry_, &process_});
  RawResponse r = get("/metrics");
  ASSERT_TRUE(r.received) << r.error;
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_THAT(r.body, HasSubstr("# HELP egress_test_events_total Events seen by the test.\n"
                                "# TYPE egress_test_events_total counter\n"
                                "egress_test_events_total{kind=\"a\"} 3\n"));
  EXPECT_THAT(r.body, HasSubstr("# TYPE process_resident_memory_bytes gauge\n"));
  EXPECT_THAT(r.body, HasSubstr("# TYPE process_cpu_seconds_total counter\n"));
  EXPECT_EQ(get("/metrics/").status, 404u);
  EXPECT_EQ(get("/").status, 404u);
}

TEST_F(MetricsServerTest, ValuesAreCollectedAtEveryScrape) {
  auto& counter = prometheus::BuildCounter()
                      .Name("egress_test_scrapes_total")
                      .Help("Incremented between scrapes.")
                      .Register(registry_)
                      .Add({});
  start({&registry_});
  EXPECT_THAT(get("/metrics").body, HasSubstr("egress_test_scrapes_total 0\n"));
  counter.Increment();
  EXPECT_THAT(get("/metrics").body, HasSubstr("egress_test_scrapes_total 1\n"));
}

TEST_F(MetricsServerTest, TheOperatorsFamiliesPassPromtool) {
  kube::ClientMetrics client(registry_);
  client.observeRequest("200", "GET", "10.0.0.1:6443", 0.02);
  client.observeRequest("<error>", "POST", "10.0.0.1:6443", 1.5);
  client.observeRateLimiter("GET", "10.0.0.1:6443", 0.001);
  std::string error;
  auto queue = workqueue::QueueMetrics::create(&registry_, "egressgateway", true, &error);
  ASSERT_NE(queue, nullptr) << error;
  queue->add();
  queue->get(0.5);
  queue->done(0.25);
  queue->retry();
  start({&registry_, &process_});
  RawResponse r = get("/metrics");
  ASSERT_EQ(r.status, 200u);
  EXPECT_THAT(r.body, HasSubstr("rest_client_requests_total{"));
  EXPECT_THAT(r.body, HasSubstr("workqueue_adds_total{name=\"egressgateway\"} 1\n"));
  auto [exitCode, output] = promtoolCheck(r.body);
  EXPECT_EQ(exitCode, 0) << output;
  EXPECT_EQ(output, "");
}

// The linter can fail: a counter without _total and without help is reported.
TEST_F(MetricsServerTest, PromtoolReportsWhatItDislikes) {
  prometheus::BuildCounter().Name("egress_test_events").Register(registry_).Add({});
  start({&registry_});
  auto [exitCode, output] = promtoolCheck(get("/metrics").body);
  EXPECT_NE(exitCode, 0);
  EXPECT_THAT(output, HasSubstr("egress_test_events"));
}

TEST_F(MetricsServerTest, ACollectableThatThrowsIsA500) {
  ThrowingCollectable broken;
  start({&registry_, &broken});
  RawResponse r = get("/metrics");
  EXPECT_EQ(r.status, 500u);
  EXPECT_THAT(r.body, HasSubstr("collector broke"));
  EXPECT_THAT(r.body, Not(HasSubstr("# TYPE")));
}

TEST(MetricsServerStartTest, ZeroDisablesAndABadAddressIsAnError) {
  net::io_context ioc;
  auto disabled = startMetricsServer(ioc.get_executor(), "0", {}, {});
  ASSERT_TRUE(disabled) << disabled.error();
  EXPECT_EQ(*disabled, nullptr);
  auto bad = startMetricsServer(ioc.get_executor(), "localhost", {}, {});
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error(), HasSubstr("metrics"));
  EXPECT_THAT(bad.error(), HasSubstr("\"localhost\""));
}

}  // namespace
}  // namespace egress::controllerruntime
