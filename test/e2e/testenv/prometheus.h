// File: prometheus.h
//
// A real Prometheus server for end-to-end tests: Debian's /usr/bin/prometheus (2.42), started by
// the test with a temporary config and storage directory on a free loopback port, scraping the
// targets it is given every second (one job, and more jobs whose targets may carry labels, as
// relabeled ones do), queried through its HTTP API (/api/v1/query), and stopped
// (its directory removed) when the object goes away. It dies with the thread that started it,
// even on SIGKILL. The machine's own prometheus service, if any, is never used or touched.
// It can load rule files too (evaluated every second), whose state rules() reads
// (/api/v1/rules). Beside it, the package's promtool lints an exposition the test scraped itself.
//
//   std::string error;
//   auto prom = Prometheus::start({.targets = {"127.0.0.1:" + std::to_string(port)}}, error);
//   ASSERT_TRUE(prom) << error;
//   auto up = prom->waitForSeries("up == 1", std::chrono::seconds(60), error);
//   auto body = scrapeMetrics(port, error);
//   auto lint = promtoolCheckMetrics(*body);   // lint.exitCode: 0 clean, 3 lint findings only
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace egress::testenv {

// A target of a further scrape job, with labels Prometheus adds to every series of it, as a
// relabeling does (the chart's PodMonitor gives each agent's series its `node`).
struct PrometheusTarget {
  std::string address;  // host:port
  std::map<std::string, std::string> labels = {};
};

struct PrometheusJob {
  std::string name;
  std::vector<PrometheusTarget> targets;
};

struct PrometheusOptions {
  // host:port of each target; Prometheus scrapes http://<target>/metrics.
  std::vector<std::string> targets;
  std::string job = "egress-operator";
  std::string binary = "/usr/bin/prometheus";
  // Paths of rule files for prometheus.yml's rule_files.
  std::vector<std::string> ruleFiles = {};
  // Scrape jobs beside `job`, each target with its own labels.
  std::vector<PrometheusJob> moreJobs = {};
};

// One element of an instant vector.
struct PromSample {
  std::map<std::string, std::string> labels;  // with __name__ when the query keeps it
  std::string value;                          // as Prometheus writes it: "1", "0.25", "NaN"

  std::string label(const std::string& name) const {
    auto it = labels.find(name);
    return it == labels.end() ? "" : it->second;
  }
};

// One alert of an alerting rule, as /api/v1/rules reports it.
struct PromAlert {
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::string state;  // pending | firing
};

// One rule of a loaded rule file, as /api/v1/rules reports it.
struct PromRule {
  std::string group;
  std::string name;       // the alert's name, or the recorded series'
  std::string type;       // alerting | recording
  std::string query;      // the expression, as Prometheus re-printed it
  std::string health;     // ok | err | unknown (not evaluated yet)
  std::string lastError;  // why the last evaluation failed
  std::string state;      // alerting rules: inactive | pending | firing
  std::vector<PromAlert> alerts;
};

class Prometheus {
 public:
  // Starts Prometheus and waits (up to a minute) until it reports ready. Returns nullptr and
  // fills `error` (with Prometheus's log) on failure.
  static std::unique_ptr<Prometheus> start(const PrometheusOptions& options, std::string& error);

  ~Prometheus();
  Prometheus(const Prometheus&) = delete;
  Prometheus& operator=(const Prometheus&) = delete;

  // http://127.0.0.1:<port>
  std::string url() const;
  // An instant query at the current time; nullopt (and `error`) if Prometheus refuses it.
  std::optional<std::vector<PromSample>> query(const std::string& promql, std::string& error) const;
  // Every rule of every loaded rule file; nullopt (and `error`) if Prometheus does not answer.
  std::optional<std::vector<PromRule>> rules(std::string& error) const;
  // Repeats the query until it returns at least one sample; empty (and `error`) on timeout.
  std::vector<PromSample> waitForSeries(const std::string& promql, std::chrono::seconds timeout,
                                        std::string& error) const;
  // What Prometheus has logged so far.
  std::string log() const;

 private:
  Prometheus(std::string dir, unsigned short port, pid_t pid);
  void stop();

  std::string dir_;
  unsigned short port_;
  pid_t pid_;
};

// GET http://127.0.0.1:<port>/metrics, as a scraper asks: the body, or nullopt and `error`.
std::optional<std::string> scrapeMetrics(unsigned short port, std::string& error);

// What `promtool check metrics` says about an exposition.
struct PromtoolReport {
  bool ran = false;   // false: promtool is not installed (output says so)
  int exitCode = -1;  // 0 clean; 3 lint findings only; 1 the exposition could not be parsed
  std::string output;
};
PromtoolReport promtoolCheckMetrics(const std::string& exposition,
                                    const std::string& promtool = "/usr/bin/promtool");

}  // namespace egress::testenv
