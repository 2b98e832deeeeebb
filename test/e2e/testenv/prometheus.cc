#include "test/e2e/testenv/prometheus.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <rapidjson/document.h>

#include "test/e2e/testenv/control_plane.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace egress::testenv {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

constexpr auto kUseTuple = net::as_tuple(net::use_awaitable);
constexpr auto kStartTimeout = std::chrono::seconds(60);
constexpr auto kStopTimeout = std::chrono::seconds(10);

struct HttpAnswer {
  unsigned status = 0;  // 0: no answer
  std::string body;     // or why there was none
};

net::awaitable<void> fetch(unsigned short port, std::string target, HttpAnswer* out) {
  beast::tcp_stream stream(co_await net::this_coro::executor);
  stream.expires_after(std::chrono::seconds(10));
  const net::ip::tcp::endpoint endpoint(net::ip::make_address_v4("127.0.0.1"), port);
  auto [cec] = co_await stream.async_connect(endpoint, kUseTuple);
  if (cec) {
    out->body = "connect: " + cec.message();
    co_return;
  }
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, "127.0.0.1:" + std::to_string(port));
  auto [wec, wn] = co_await http::async_write(stream, req, kUseTuple);
  (void)wn;
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  auto [rec, rn] = co_await http::async_read(stream, buffer, res, kUseTuple);
  (void)rn;
  if (wec || rec) {
    out->body = "request: " + (wec ? wec : rec).message();
    co_return;
  }
  out->status = res.result_int();
  out->body = std::move(res.body());
}

// GET http://127.0.0.1:<port><target>, on an io_context of its own (the caller's may be busy
// running the server Prometheus scrapes, on another thread).
HttpAnswer httpGet(unsigned short port, const std::string& target) {
  net::io_context ioc;
  HttpAnswer answer;
  net::co_spawn(ioc, fetch(port, target, &answer), net::detached);
  ioc.run();
  return answer;
}

std::string urlEncode(const std::string& text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return out;
}

// A loopback port nobody listens on right now (Prometheus binds it a moment later; start()
// retries on the rare race).
unsigned short freePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  unsigned short port = 0;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  if (fd >= 0) {
    close(fd);
  }
  return port;
}

// fork + exec with stdout and stderr to `logPath`, killed when the calling thread ends.
pid_t spawn(const std::vector<std::string>& argv, const std::string& logPath, std::string& error) {
  std::vector<char*> args;
  for (const auto& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  const int logFd = open(logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (logFd < 0) {
    error = "open " + logPath + ": " + std::strerror(errno);
    return -1;
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) {
      _exit(127);
    }
    const int devNull = open("/dev/null", O_RDONLY);
    dup2(devNull, STDIN_FILENO);
    dup2(logFd, STDOUT_FILENO);
    dup2(logFd, STDERR_FILENO);
    execv(args[0], args.data());
    _exit(127);
  }
  close(logFd);
  if (pid < 0) {
    error = std::string("fork: ") + std::strerror(errno);
  }
  return pid;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool exited(pid_t pid) {
  int status = 0;
  return waitpid(pid, &status, WNOHANG) == pid;
}

std::string scrapeConfig(const PrometheusOptions& options) {
  std::string targets;
  for (const auto& t : options.targets) {
    targets += (targets.empty() ? "\"" : ", \"") + t + "\"";
  }
  std::string rules;
  for (const auto& f : options.ruleFiles) {
    rules += (rules.empty() ? "rule_files:\n" : "") + std::string("  - \"") + f + "\"\n";
  }
  // One static config per target, for its labels. The values are the tests' own names, which
  // need no escaping in a double-quoted YAML string.
  std::string moreJobs;
  for (const auto& job : options.moreJobs) {
    moreJobs += "  - job_name: \"" + job.name + "\"\n    static_configs:\n";
    for (const auto& t : job.targets) {
      moreJobs += "      - targets: [\"" + t.address + "\"]\n        labels: {";
      std::string labels;
      for (const auto& [name, value] : t.labels) {
        labels += (labels.empty() ? "" : ", ") + name + ": \"" + value + "\"";
      }
      moreJobs += labels + "}\n";
    }
  }
  return "global:\n"
         "  scrape_interval: 1s\n"
         "  scrape_timeout: 1s\n"
         "  evaluation_interval: 1s\n"
         "scrape_configs:\n"
         "  - job_name: \"" +
         options.job +
         "\"\n"
         "    static_configs:\n"
         "      - targets: [" +
         targets + "]\n" + moreJobs + rules;
}

}  // namespace

std::unique_ptr<Prometheus> Prometheus::start(const PrometheusOptions& options,
                                              std::string& error) {
  if (access(options.binary.c_str(), X_OK) != 0) {
    error =
        options.binary + " is not installed (hack/install-deps.sh installs Debian's prometheus)";
    return nullptr;
  }
  std::string dir = (std::filesystem::temp_directory_path() / "prometheus_e2e.XXXXXX").string();
  if (mkdtemp(dir.data()) == nullptr) {
    error = std::string("mkdtemp: ") + std::strerror(errno);
    return nullptr;
  }
  std::ofstream(dir + "/prometheus.yml") << scrapeConfig(options);
  for (int attempt = 0; attempt < 3; ++attempt) {
    const unsigned short port = freePort();
    const pid_t pid = spawn({options.binary, "--config.file=" + dir + "/prometheus.yml",
                             "--storage.tsdb.path=" + dir + "/data",
                             "--web.listen-address=127.0.0.1:" + std::to_string(port)},
                            dir + "/prometheus.log", error);
    if (pid < 0) {
      break;
    }
    // From here the object owns the process and the directory, whatever happens.
    std::unique_ptr<Prometheus> prom(new Prometheus(dir, port, pid));
    const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (httpGet(port, "/-/ready").status == 200) {
        return prom;
      }
      if (exited(pid)) {
        prom->pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    error = "prometheus did not become ready on port " + std::to_string(port) + "; its log:\n" +
            prom->log();
    if (error.find("address already in use") == std::string::npos) {
      return nullptr;
    }
    prom->dir_.clear();  // keep the directory for the next attempt
  }
  std::filesystem::remove_all(dir);
  return nullptr;
}

Prometheus::Prometheus(std::string dir, unsigned short port, pid_t pid)
    : dir_(std::move(dir)), port_(port), pid_(pid) {}

Prometheus::~Prometheus() {
  stop();
}

void Prometheus::stop() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + kStopTimeout;
    while (!exited(pid_)) {
      if (std::chrono::steady_clock::now() >= deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    pid_ = -1;
  }
  if (!dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    dir_.clear();
  }
}

std::string Prometheus::url() const {
  return "http://127.0.0.1:" + std::to_string(port_);
}

std::string Prometheus::log() const {
  return readFile(dir_ + "/prometheus.log");
}

std::optional<std::vector<PromSample>> Prometheus::query(const std::string& promql,
                                                         std::string& error) const {
  const HttpAnswer answer = httpGet(port_, "/api/v1/query?query=" + urlEncode(promql));
  if (answer.status == 0) {
    error = answer.body;
    return std::nullopt;
  }
  rapidjson::Document doc;
  doc.Parse(answer.body.c_str());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("status") ||
      doc["status"] != "success" || !doc.HasMember("data") || !doc["data"].IsObject() ||
      !doc["data"].HasMember("result") || !doc["data"]["result"].IsArray()) {
    error = "query " + promql + ": HTTP " + std::to_string(answer.status) + ": " + answer.body;
    return std::nullopt;
  }
  if (doc["data"]["resultType"] != "vector") {
    error = "query " + promql + " is not an instant vector: " + answer.body;
    return std::nullopt;
  }
  std::vector<PromSample> samples;
  for (const auto& item : doc["data"]["result"].GetArray()) {
    PromSample sample;
    for (const auto& label : item["metric"].GetObject()) {
      sample.labels[label.name.GetString()] = label.value.GetString();
    }
    const auto& value = item["value"];
    if (value.IsArray() && value.Size() == 2 && value[1].IsString()) {
      sample.value = value[1].GetString();
    }
    samples.push_back(std::move(sample));
  }
  return samples;
}

namespace {

std::map<std::string, std::string> stringMap(const rapidjson::Value& object, const char* name) {
  std::map<std::string, std::string> out;
  if (object.HasMember(name) && object[name].IsObject()) {
    for (const auto& m : object[name].GetObject()) {
      out[m.name.GetString()] = m.value.IsString() ? m.value.GetString() : "";
    }
  }
  return out;
}

std::string stringMember(const rapidjson::Value& object, const char* name) {
  return object.HasMember(name) && object[name].IsString() ? object[name].GetString() : "";
}

}  // namespace

std::optional<std::vector<PromRule>> Prometheus::rules(std::string& error) const {
  const HttpAnswer answer = httpGet(port_, "/api/v1/rules");
  rapidjson::Document doc;
  doc.Parse(answer.body.c_str());
  if (answer.status != 200 || doc.HasParseError() || !doc.IsObject() ||
      stringMember(doc, "status") != "success" || !doc.HasMember("data") ||
      !doc["data"].IsObject() || !doc["data"].HasMember("groups") ||
      !doc["data"]["groups"].IsArray()) {
    error = "GET /api/v1/rules: HTTP " + std::to_string(answer.status) + ": " + answer.body;
    return std::nullopt;
  }
  std::vector<PromRule> out;
  for (const auto& group : doc["data"]["groups"].GetArray()) {
    if (!group.IsObject() || !group.HasMember("rules") || !group["rules"].IsArray()) {
      continue;
    }
    for (const auto& r : group["rules"].GetArray()) {
      PromRule rule;
      rule.group = stringMember(group, "name");
      rule.name = stringMember(r, "name");
      rule.type = stringMember(r, "type");
      rule.query = stringMember(r, "query");
      rule.health = stringMember(r, "health");
      rule.lastError = stringMember(r, "lastError");
      rule.state = stringMember(r, "state");
      if (r.HasMember("alerts") && r["alerts"].IsArray()) {
        for (const auto& a : r["alerts"].GetArray()) {
          rule.alerts.push_back(
              {stringMap(a, "labels"), stringMap(a, "annotations"), stringMember(a, "state")});
        }
      }
      out.push_back(std::move(rule));
    }
  }
  return out;
}

std::vector<PromSample> Prometheus::waitForSeries(const std::string& promql,
                                                  std::chrono::seconds timeout,
                                                  std::string& error) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string lastError;
  for (;;) {
    auto samples = query(promql, lastError);
    if (samples && !samples->empty()) {
      return std::move(*samples);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      error = "no series for " + promql + " within " + std::to_string(timeout.count()) + " s" +
              (lastError.empty() ? "" : " (" + lastError + ")");
      return {};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

std::optional<std::string> scrapeMetrics(unsigned short port, std::string& error) {
  HttpAnswer answer = httpGet(port, "/metrics");
  if (answer.status != 200) {
    error = "GET /metrics: " +
            (answer.status == 0 ? answer.body : "HTTP " + std::to_string(answer.status));
    return std::nullopt;
  }
  return std::move(answer.body);
}

PromtoolReport promtoolCheckMetrics(const std::string& exposition, const std::string& promtool) {
  PromtoolReport report;
  if (access(promtool.c_str(), X_OK) != 0) {
    report.output = promtool + " is not installed (Debian's prometheus package has it)";
    return report;
  }
  std::string path = (std::filesystem::temp_directory_path() / "promtool_input.XXXXXX").string();
  const int fd = mkstemp(path.data());
  if (fd < 0) {
    report.output = std::string("mkstemp: ") + std::strerror(errno);
    return report;
  }
  close(fd);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << exposition;
  // promtool reads the exposition from stdin; runCommand gives children /dev/null there.
  const CommandResult result =
      runCommand({"/bin/sh", "-c", "exec \"$0\" check metrics < \"$1\"", promtool, path});
  std::filesystem::remove(path);
  report.ran = true;
  report.exitCode = result.exitCode;
  report.output = result.output;
  return report;
}

}  // namespace egress::testenv
