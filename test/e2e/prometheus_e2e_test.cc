// The operator's /metrics scraped by a real Prometheus (Debian's 2.42, run by the test, scraping
// every second), queried through its HTTP API (/api/v1/query). First the client-go families alone
// (a RestClient against the real control plane, a named workqueue) and the process collector,
// served by pkg/controllerruntime's metrics server, with exact values. Then what an operator
// serves: a Manager with leader election runs a sample controller (annotating_controller.h) that
// reconciles ConfigMaps against the real control plane, and PromQL finds every family with the
// labels the operator gave it and those Prometheus adds (job, instance), and values that agree
// with what the controller did and with each other (the workqueue and the controller count the
// same reconciles; histogram_quantile works on both kinds of buckets). `promtool check metrics`
// lints the same exposition.
#include <atomic>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include "pkg/base/clock.h"
#include "pkg/controllerruntime/endpoints.h"
#include "pkg/controllerruntime/manager.h"
#include "pkg/controllerruntime/process_collector.h"
#include "pkg/kube/kubeconfig.h"
#include "pkg/kube/rest_client.h"
#include "pkg/workqueue/queue.h"
#include "test/e2e/annotating_controller.h"
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
        manager_.reset();
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

  // The value of a query that returns one sample; NaN (and a failure) otherwise.
  double valueOf(const std::string& promql) {
    auto samples = waitFor(promql);
    EXPECT_THAT(samples, SizeIs(1)) << promql;
    return samples.size() == 1 ? std::stod(samples[0].value) : std::nan("");
  }

  kube::RestConfig restConfig() {
    kube::KubeconfigOptions kubeconfig;
    kubeconfig.paths = {testenv::controlPlane().kubeconfig()};
    auto config = kube::loadKubeconfig(kubeconfig);
    EXPECT_TRUE(config) << config.error().message();
    return config ? *config : kube::RestConfig{};
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
  std::unique_ptr<Manager> manager_;
  std::thread loop_;
};

TEST_F(PrometheusE2E, ScrapesRestClientWorkqueueAndProcessMetrics) {
  // rest_client_*: a few requests against the real API server.
  const kube::RestConfig config = restConfig();
  ASSERT_FALSE(HasFailure());
  auto client = kube::RestClient::create(ioc_.get_executor(), config, &registry_);
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

  const std::string apiHost = config.server.substr(config.server.find("://") + 3);
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
  // Above 0 eventually, not at the first scrape: /proc counts CPU time in ticks of 10 ms, and
  // this process (the API server does the heavy work) once showed 0 at 7 s in a CI run.
  auto cpu = waitFor("process_cpu_seconds_total{job=\"egress-operator\"} > 0");
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

// What a Go operator's dashboards read, from a Manager (leader election on) running a controller
// that reconciles real objects: kObjects ConfigMaps are annotated, one fails kFailures times
// first, one takes kSlow (so that in-flight work is scraped), plus the namespace's
// kube-root-ca.crt, which the controller annotates too.
TEST_F(PrometheusE2E, ScrapesAControllerRunByTheManager) {
  constexpr int kObjects = 12;
  constexpr int kWatched = kObjects + 1;  // and kube-root-ca.crt
  constexpr int kFailures = 2;
  constexpr auto kSlow = std::chrono::seconds(5);
  const std::string q = "{job=\"egress-operator\",controller=\"annotate\"}";
  const std::string wq = "{job=\"egress-operator\",name=\"annotate\"}";
  std::random_device rd;
  const std::string ns = "prometheus-e2e-" + std::to_string(rd() % 1000000);
  ASSERT_EQ(testenv::controlPlane().createNamespace(ns), "");

  ManagerOptions options;
  options.kubeconfig = testenv::controlPlane().kubeconfig();
  options.metricsBindAddress = "127.0.0.1:0";
  options.healthProbeBindAddress = "0";
  options.leaderElect = true;
  options.leaderElectionId = "prometheus-e2e";
  options.leaderElectionNamespace = ns;
  ManagerDeps deps;
  deps.handleSignals = false;
  deps.identity = "prometheus-e2e-0";
  auto manager = Manager::create(ioc_.get_executor(), options, std::move(deps));
  ASSERT_TRUE(manager) << manager.error();
  manager_ = std::move(*manager);
  Manager& m = *manager_;
  e2e::AnnotatingControllerOptions sample;
  sample.namespace_ = ns;
  sample.value = "prometheus-e2e";
  sample.slow = {{"slow", kSlow}};
  sample.failing = "fail-me";
  sample.failures = kFailures;
  m.add(std::make_unique<e2e::AnnotatingController>(
      Controller::Options{"annotate", 2, m.clock(), ioc_.get_executor(), &m.registry()}, m.client(),
      std::move(sample)));
  std::atomic<int> exitCode{-1};
  net::co_spawn(ioc_, m.run(), [&exitCode](const std::exception_ptr& e, int code) {
    if (e) {
      std::rethrow_exception(e);
    }
    exitCode = code;
  });
  // Until it leads (its metrics server is up before that), on this thread; then in the
  // background, while this thread asks Prometheus.
  const auto leadDeadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!m.isLeader() && exitCode < 0 && std::chrono::steady_clock::now() < leadDeadline) {
    ioc_.run_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(m.isLeader()) << "the Manager did not lead within 120 s";
  ASSERT_NE(m.metricsServer(), nullptr);
  const unsigned short port = m.metricsServer()->port();
  const std::string target = "127.0.0.1:" + std::to_string(port);
  runLoopInBackground();

  std::string error;
  prometheus_ = testenv::Prometheus::start({.targets = {target}, .job = kJob}, error);
  ASSERT_NE(prometheus_, nullptr) << error;
  ASSERT_THAT(waitFor("up{job=\"egress-operator\"} == 1"), SizeIs(1));

  // The objects, made once Prometheus scrapes, through a client of this thread's own.
  {
    net::io_context setup;
    auto client = kube::RestClient::create(setup.get_executor(), restConfig(), nullptr);
    ASSERT_TRUE(client) << client.error().message();
    const kube::Resource configMaps{"", "v1", "configmaps", true};
    for (int i = 0; i < kObjects; ++i) {
      const std::string name = i == 0 ? "slow" : (i == 1 ? "fail-me" : "cm-" + std::to_string(i));
      const std::string body =
          R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name + R"("}})";
      auto created = testutil::runSync(setup, (*client)->create(configMaps, ns, body));
      ASSERT_TRUE(created) << created.error().message();
    }
  }

  // Settled: every object reconciled (one write and the reconcile its update event causes),
  // nothing queued, running or unfinished.
  const std::string settled = "controller_runtime_reconcile_total" + q.substr(0, q.size() - 1) +
                              ",result=\"success\"} >= " + std::to_string(2 * kWatched) +
                              " and on() controller_runtime_active_workers" + q +
                              " == 0 and on() workqueue_depth" + wq +
                              " == 0 and on() workqueue_unfinished_work_seconds" + wq + " == 0";
  ASSERT_THAT(waitFor(settled), SizeIs(1));

  // controller_runtime_reconcile_total: every result label, with this controller's label and
  // Prometheus's target labels.
  std::map<std::string, double> results;
  for (const auto& series : waitFor("controller_runtime_reconcile_total" + q)) {
    EXPECT_EQ(series.label("instance"), target);
    results[series.label("result")] = std::stod(series.value);
  }
  EXPECT_GE(results["success"], 2 * kWatched);
  EXPECT_EQ(results["error"], kFailures);
  EXPECT_EQ(results.count("requeue"), 1u);
  EXPECT_EQ(results["requeue"], 0);
  EXPECT_EQ(results.count("requeue_after"), 1u);
  EXPECT_EQ(results["requeue_after"], 0);
  const double reconciles =
      results["success"] + results["error"] + results["requeue"] + results["requeue_after"];
  EXPECT_EQ(valueOf("controller_runtime_reconcile_errors_total" + q), kFailures);
  EXPECT_EQ(valueOf("controller_runtime_reconcile_panics_total" + q), 0);
  EXPECT_EQ(valueOf("controller_runtime_max_concurrent_reconciles" + q), 2);
  EXPECT_EQ(valueOf("controller_runtime_active_workers" + q), 0);
  // Scraped while the slow reconcile ran (it spans several scrapes).
  const double busiest = valueOf("max_over_time(controller_runtime_active_workers" + q + "[10m])");
  EXPECT_GE(busiest, 1);
  EXPECT_LE(busiest, 2);

  // The reconcile time histogram: one observation per reconcile, controller-runtime's 40
  // buckets, and quantiles: the slowest reconcile waited kSlow, most took far less.
  EXPECT_EQ(valueOf("controller_runtime_reconcile_time_seconds_count" + q), reconciles);
  EXPECT_THAT(waitFor("controller_runtime_reconcile_time_seconds_bucket" + q), SizeIs(41));
  const std::string timeBuckets =
      "sum by (le) (controller_runtime_reconcile_time_seconds_bucket" + q + ")";
  const double slowest = valueOf("histogram_quantile(1, " + timeBuckets + ")");
  const double median = valueOf("histogram_quantile(0.5, " + timeBuckets + ")");
  EXPECT_GE(slowest, std::chrono::duration<double>(kSlow).count());
  EXPECT_LE(slowest, 60);
  EXPECT_GT(median, 0);
  EXPECT_LT(median, slowest);

  // The workqueue family, named after the controller: it counts the same reconciles.
  EXPECT_EQ(valueOf("workqueue_adds_total" + wq), reconciles);
  EXPECT_EQ(valueOf("workqueue_depth" + wq), 0);
  EXPECT_EQ(valueOf("workqueue_retries_total" + wq), kFailures);
  EXPECT_EQ(valueOf("workqueue_queue_duration_seconds_count" + wq), reconciles);
  EXPECT_EQ(valueOf("workqueue_work_duration_seconds_count" + wq), reconciles);
  EXPECT_THAT(waitFor("workqueue_work_duration_seconds_bucket" + wq.substr(0, wq.size() - 1) +
                      ",le=\"9.999999999999999e-06\"}"),
              SizeIs(1));
  const double workSlowest = valueOf(
      "histogram_quantile(1, sum by (le) (workqueue_work_duration_seconds_bucket" + wq + "))");
  EXPECT_GE(workSlowest, std::chrono::duration<double>(kSlow).count());
  EXPECT_EQ(valueOf("workqueue_unfinished_work_seconds" + wq), 0);
  EXPECT_EQ(valueOf("workqueue_longest_running_processor_seconds" + wq), 0);
  const double longest =
      valueOf("max_over_time(workqueue_longest_running_processor_seconds" + wq + "[10m])");
  const double unfinished =
      valueOf("max_over_time(workqueue_unfinished_work_seconds" + wq + "[10m])");
  EXPECT_GT(longest, 0);
  EXPECT_LE(longest, workSlowest);
  EXPECT_GE(unfinished, longest);

  // Leader election, the Manager's REST client (one PATCH per object), the process collector.
  EXPECT_EQ(
      valueOf("leader_election_master_status{job=\"egress-operator\",name=\"prometheus-e2e\"}"), 1);
  EXPECT_EQ(valueOf("sum(rest_client_requests_total{job=\"egress-operator\",method=\"PATCH\","
                    "code=\"200\"})"),
            kWatched);
  waitFor("rest_client_requests_total{job=\"egress-operator\",method=\"PUT\",code=\"200\"}");
  waitFor("rest_client_request_duration_seconds_bucket{job=\"egress-operator\",verb=\"PATCH\"}");
  EXPECT_GT(valueOf("process_resident_memory_bytes{job=\"egress-operator\"}"), 1e6);
  EXPECT_GT(valueOf("process_cpu_seconds_total{job=\"egress-operator\"}"), 0);
  waitFor("process_open_fds > 0 and process_max_fds > 0 and process_start_time_seconds > 0");
  std::printf(
      "[prometheus-e2e] %.0f reconciles (%.0f success, %.0f error); reconcile time: median "
      "%.4f s, slowest bucket %.1f s; longest running processor seen %.3f s, unfinished work "
      "%.3f s; busiest %.0f of 2 workers\n",
      reconciles, results["success"], results["error"], median, slowest, longest, unfinished,
      busiest);

  // promtool parses the same exposition without errors; lint findings are reported.
  auto body = testenv::scrapeMetrics(port, error);
  ASSERT_TRUE(body) << error;
  const auto lint = testenv::promtoolCheckMetrics(*body);
  if (!lint.ran) {
    std::printf("[prometheus-e2e] promtool not run: %s\n", lint.output.c_str());
  } else {
    EXPECT_TRUE(lint.exitCode == 0 || lint.exitCode == 3)
        << "promtool check metrics: exit " << lint.exitCode << "\n"
        << lint.output;
    EXPECT_EQ(lint.output.find("error while linting"), std::string::npos) << lint.output;
    std::printf("[prometheus-e2e] promtool check metrics: exit %d, %zu bytes scraped\n%s",
                lint.exitCode, body->size(), lint.output.c_str());
  }

  net::post(ioc_, [&m] { m.requestShutdown(); });
  const auto stopDeadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (exitCode < 0 && std::chrono::steady_clock::now() < stopDeadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(exitCode, kExitOk);
}

}  // namespace
}  // namespace egress::controllerruntime
