// The operator's /metrics scraped by a real Prometheus: the client-go families (a RestClient
// against the real control plane, a named workqueue) and the process collector, in one
// registry, served by pkg/controllerruntime's metrics server; Prometheus (Debian's 2.42, run by
// the test) scrapes it every second and PromQL through its HTTP API returns every series with
// the labels the operator gave it and those Prometheus adds (job, instance).
#include <memory>
#include <string>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include "pkg/base/clock.h"
#include "pkg/controllerruntime/endpoints.h"
#include "pkg/controllerruntime/process_collector.h"
#include "pkg/kube/kubeconfig.h"
#include "pkg/kube/rest_client.h"
#include "pkg/workqueue/queue.h"
#include "test/e2e/testenv/environment.h"
#include "test/e2e/testenv/prometheus.h"
#include "test/testutil/run_sync.h"

namespace egress::controllerruntime {
namespace {

namespace net = boost::asio;
using testenv::PromSample;
using ::testing::Contains;
using ::testing::SizeIs;

constexpr auto kScrapeWait = std::chrono::seconds(60);
constexpr const char* kJob = "egress-operator";
constexpr const char* kQueueName = "prometheus-e2e";

class PrometheusE2E : public ::testing::Test {
 protected:
  // The io_context runs on its own thread once the server is up, so the test thread can block
  // on Prometheus while the server answers its scrapes.
  void runLoopInBackground() {
    loop_ = std::thread([this] { ioc_.run(); });
  }

  void TearDown() override {
    prometheus_.reset();
    if (loop_.joinable()) {
      // Everything left on the io_context (server, queue) is torn down on its own thread.
      net::post(ioc_, [this] {
        server_.reset();
        queue_.reset();
        client_.reset();
        work_.reset();
        ioc_.stop();
      });
      loop_.join();
    }
  }

  std::vector<PromSample> waitFor(const std::string& promql) {
    std::string error;
    auto samples = prometheus_->waitForSeries(promql, kScrapeWait, error);
    EXPECT_FALSE(samples.empty()) << error << "\nPrometheus log:\n" << prometheus_->log();
    return samples;
  }

  net::io_context ioc_;
  std::unique_ptr<net::executor_work_guard<net::io_context::executor_type>> work_ =
      std::make_unique<net::executor_work_guard<net::io_context::executor_type>>(
          ioc_.get_executor());
  RealClock clock_{ioc_.get_executor()};
  prometheus::Registry registry_;
  ProcessCollector process_;
  std::unique_ptr<kube::RestClient> client_;
  std::unique_ptr<workqueue::Queue<std::string>> queue_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<testenv::Prometheus> prometheus_;
  std::thread loop_;
};

TEST_F(PrometheusE2E, ScrapesRestClientWorkqueueAndProcessMetrics) {
  // rest_client_*: a few requests against the real API server.
  kube::KubeconfigOptions kubeconfig;
  kubeconfig.paths = {testenv::controlPlane().kubeconfig()};
  auto config = kube::loadKubeconfig(kubeconfig);
  ASSERT_TRUE(config) << config.error().message();
  auto client = kube::RestClient::create(ioc_.get_executor(), *config, &registry_);
  ASSERT_TRUE(client) << client.error().message();
  client_ = std::move(*client);
  const kube::Resource namespaces{"", "v1", "namespaces", false};
  for (int i = 0; i < 3; ++i) {
    auto got = testutil::runSync(ioc_, client_->get(namespaces, "", "default"));
    ASSERT_TRUE(got) << got.error().message();
  }
  auto missing = testutil::runSync(ioc_, client_->get(namespaces, "", "no-such-namespace"));
  ASSERT_FALSE(missing);

  // workqueue_*: two distinct items, one added twice (deduplicated: two adds).
  workqueue::QueueConfig<std::string> queueConfig{.name = kQueueName,
                                                  .clock = clock_,
                                                  .executor = ioc_.get_executor(),
                                                  .registry = &registry_,
                                                  .limiter = nullptr};
  queue_ = std::make_unique<workqueue::Queue<std::string>>(queueConfig);
  ASSERT_EQ(queue_->metricsError(), "");
  queue_->add("a");
  queue_->add("b");
  queue_->add("a");

  auto server = startMetricsServer(ioc_.get_executor(), "127.0.0.1:0", {&registry_, &process_},
                                   HttpServerOptions{});
  ASSERT_TRUE(server) << server.error();
  server_ = std::move(*server);
  const std::string target = "127.0.0.1:" + std::to_string(server_->port());
  runLoopInBackground();

  std::string error;
  prometheus_ = testenv::Prometheus::start({.targets = {target}, .job = kJob}, error);
  ASSERT_NE(prometheus_, nullptr) << error;

  // The scrape succeeded: Prometheus parsed the whole body.
  auto up = waitFor("up{job=\"egress-operator\"} == 1");
  ASSERT_THAT(up, SizeIs(1));
  EXPECT_EQ(up[0].label("instance"), target);

  const std::string apiHost = config->server.substr(config->server.find("://") + 3);
  auto requests = waitFor("rest_client_requests_total{job=\"egress-operator\"}");
  auto series = [&](const std::string& code) {
    for (const auto& s : requests) {
      if (s.label("code") == code) {
        return s;
      }
    }
    return PromSample{};
  };
  EXPECT_EQ(series("200").value, "3");
  EXPECT_EQ(series("200").label("method"), "GET");
  EXPECT_EQ(series("200").label("host"), apiHost);
  EXPECT_EQ(series("200").label("instance"), target);
  EXPECT_EQ(series("404").value, "1");

  auto duration = waitFor("rest_client_request_duration_seconds_count{verb=\"GET\"}");
  EXPECT_EQ(duration[0].value, "4");
  EXPECT_EQ(duration[0].label("host"), apiHost);

  auto adds = waitFor(std::string("workqueue_adds_total{name=\"") + kQueueName + "\"}");
  ASSERT_THAT(adds, SizeIs(1));
  EXPECT_EQ(adds[0].value, "2");
  EXPECT_EQ(adds[0].label("job"), kJob);
  auto depth = waitFor(std::string("workqueue_depth{name=\"") + kQueueName + "\"}");
  EXPECT_EQ(depth[0].value, "2");

  auto rss = waitFor("process_resident_memory_bytes{job=\"egress-operator\"} > 1000000");
  ASSERT_THAT(rss, SizeIs(1));
  EXPECT_EQ(rss[0].label("instance"), target);
  auto cpu = waitFor("process_cpu_seconds_total{job=\"egress-operator\"}");
  ASSERT_THAT(cpu, SizeIs(1));
  EXPECT_GT(std::stod(cpu[0].value), 0);
  // As a counter it has a rate (two scrapes in the window).
  waitFor("rate(process_cpu_seconds_total{job=\"egress-operator\"}[10s]) >= 0");
  waitFor("process_open_fds > 0 and process_max_fds > 0 and process_start_time_seconds > 0");

  // No family Prometheus could not take: every family the server sent has series there.
  auto names = waitFor("count by (__name__) ({job=\"egress-operator\"})");
  std::vector<std::string> families;
  for (const auto& s : names) {
    families.push_back(s.label("__name__"));
  }
  for (const char* name :
       {"rest_client_rate_limiter_duration_seconds_bucket",
        "workqueue_queue_duration_seconds_bucket", "workqueue_longest_running_processor_seconds",
        "process_virtual_memory_bytes", "process_network_receive_bytes_total"}) {
    EXPECT_THAT(families, Contains(name));
  }
}

}  // namespace
}  // namespace egress::controllerruntime
