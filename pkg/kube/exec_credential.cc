#include "pkg/kube/exec_credential.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <variant>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <spdlog/spdlog.h>

#include "pkg/apis/meta/time.h"
#include "pkg/kube/base64.h"
#include "pkg/kube/child_process.h"
#include "pkg/kube/config_util.h"

extern char** environ;

namespace egress::kube {
namespace {

constexpr size_t kMaxStdoutBytes = 4 << 20;
constexpr size_t kMaxStderrBytes = 64 << 10;
constexpr std::string_view kExecInfoEnv = "KUBERNETES_EXEC_INFO";

// Our environment, plus the kubeconfig's env entries and KUBERNETES_EXEC_INFO replacing any
// variables of the same name (a later kubeconfig entry wins over an earlier one, as with Go's
// exec.Cmd).
std::vector<std::string> pluginEnvironment(const ExecConfig& config, const std::string& info) {
  std::vector<std::pair<std::string, std::string>> overrides;
  const auto set = [&](const std::string& name, const std::string& value) {
    auto it = std::find_if(overrides.begin(), overrides.end(),
                           [&](const auto& o) { return o.first == name; });
    if (it != overrides.end()) {
      it->second = value;
    } else {
      overrides.emplace_back(name, value);
    }
  };
  for (const auto& e : config.env) {
    set(e.name, e.value);
  }
  set(std::string(kExecInfoEnv), info);
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    if (std::none_of(overrides.begin(), overrides.end(),
                     [&](const auto& o) { return o.first == name; })) {
      env.emplace_back(entry);
    }
  }
  for (const auto& [name, value] : overrides) {
    env.push_back(name + "=" + value);
  }
  return env;
}

}  // namespace

Result<Ok> validateExecConfig(const ExecConfig& config) {
  if (config.command.empty()) {
    return Error::config("exec plugin: command is required");
  }
  const std::string who = "exec plugin " + inQuotes(config.command) + ": ";
  if (config.apiVersion != kExecApiVersionV1 && config.apiVersion != kExecApiVersionV1Beta1) {
    return Error::config(who + "apiVersion " + inQuotes(config.apiVersion) +
                         " is not supported (use " + std::string(kExecApiVersionV1) + " or " +
                         std::string(kExecApiVersionV1Beta1) + ")");
  }
  for (const auto& e : config.env) {
    if (e.name.empty() || e.name.find('=') != std::string::npos) {
      return Error::config(who + "env name " + inQuotes(e.name) + " is not valid");
    }
  }
  if (config.interactiveMode == "Always") {
    return Error::config(who +
                         "interactiveMode Always needs a terminal, which the operator "
                         "never has; use Never or IfAvailable");
  }
  if (!config.interactiveMode.empty() && config.interactiveMode != "Never" &&
      config.interactiveMode != "IfAvailable") {
    return Error::config(who + "interactiveMode " + inQuotes(config.interactiveMode) +
                         " is not one of Never, IfAvailable, Always");
  }
  return Ok{};
}

std::string execCredentialRequest(const ExecConfig& config, const ExecClusterInfo& cluster) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("apiVersion");
  w.String(config.apiVersion);
  w.Key("kind");
  w.String("ExecCredential");
  w.Key("spec");
  w.StartObject();
  w.Key("interactive");
  w.Bool(false);
  if (config.provideClusterInfo) {
    // Field names and omitempty as in clientauthentication/v1.Cluster.
    w.Key("cluster");
    w.StartObject();
    w.Key("server");
    w.String(cluster.server);
    if (!cluster.tlsServerName.empty()) {
      w.Key("tls-server-name");
      w.String(cluster.tlsServerName);
    }
    if (cluster.insecureSkipTlsVerify) {
      w.Key("insecure-skip-tls-verify");
      w.Bool(true);
    }
    if (!cluster.caPem.empty()) {
      w.Key("certificate-authority-data");
      w.String(base64Encode(cluster.caPem));
    }
    if (!cluster.configJson.empty()) {
      w.Key("config");
      w.RawValue(cluster.configJson.data(), cluster.configJson.size(), rapidjson::kObjectType);
    }
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

// The ExecCredential in `json`, or nullopt with the reason in `why`.
static std::optional<ExecCredentialStatus> parseExecCredentialStatus(std::string_view json,
                                                                     std::string_view apiVersion,
                                                                     std::string& why) {
  const auto fail = [&](std::string reason) -> std::optional<ExecCredentialStatus> {
    why = std::move(reason);
    return std::nullopt;
  };
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(json.data(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return fail("output is not a JSON ExecCredential object");
  }
  const auto str = [](const rapidjson::Value& obj, const char* key) -> std::optional<std::string> {
    auto it = obj.FindMember(key);
    if (it == obj.MemberEnd() || it->value.IsNull()) {
      return std::string();
    }
    if (!it->value.IsString()) {
      return std::nullopt;
    }
    return std::string(it->value.GetString(), it->value.GetStringLength());
  };
  const auto kind = str(doc, "kind");
  if (!kind || *kind != "ExecCredential") {
    return fail("output has kind " + inQuotes(kind.value_or("?")) + ", want ExecCredential");
  }
  const auto version = str(doc, "apiVersion");
  if (!version || *version != apiVersion) {
    return fail("configured to use apiVersion " + std::string(apiVersion) +
                ", but the plugin returned apiVersion " + inQuotes(version.value_or("?")));
  }
  auto statusIt = doc.FindMember("status");
  if (statusIt == doc.MemberEnd() || !statusIt->value.IsObject()) {
    return fail("output has no status object");
  }
  const rapidjson::Value& status = statusIt->value;
  ExecCredentialStatus result;
  const auto token = str(status, "token");
  const auto cert = str(status, "clientCertificateData");
  const auto key = str(status, "clientKeyData");
  const auto expiry = str(status, "expirationTimestamp");
  if (!token || !cert || !key || !expiry) {
    return fail(
        "status fields token, clientCertificateData, clientKeyData and "
        "expirationTimestamp must be strings");
  }
  if (cert->empty() != key->empty()) {
    return fail("status has only one of clientCertificateData and clientKeyData");
  }
  if (token->empty() && cert->empty()) {
    return fail("status has neither a token nor clientCertificateData/clientKeyData");
  }
  if (!expiry->empty()) {
    result.expiration = meta::parseRfc3339(*expiry);
    if (!result.expiration) {
      return fail("status.expirationTimestamp " + inQuotes(*expiry) + " is not an RFC 3339 time");
    }
  }
  result.token = *token;
  result.clientCertPem = *cert;
  result.clientKeyPem = *key;
  return result;
}

Result<ExecCredentialStatus> parseExecCredential(std::string_view json,
                                                 std::string_view apiVersion) {
  std::string why;
  auto status = parseExecCredentialStatus(json, apiVersion, why);
  if (!status) {
    return Error::config(why);
  }
  return std::move(*status);
}

namespace {

// A caller waiting for a run, resumed on its own executor.
struct RunWaiter {
  net::any_io_executor executor;
  net::any_completion_handler<void()> handler;
};

}  // namespace

// One plugin run and the callers waiting for it. Guarded by State::mu.
struct ExecCredentialProvider::PluginRun {
  std::optional<Result<Credentials>> result;
  std::vector<RunWaiter> waiters;
};

// Everything a run needs, shared with the run so it may outlive the provider (the RestClient
// can be destroyed while a plugin is still running).
struct ExecCredentialProvider::State {
  State(ExecConfig c, ExecClusterInfo cl, ExecOptions o)
      : config(std::move(c)), cluster(std::move(cl)), options(std::move(o)) {}
  const ExecConfig config;
  const ExecClusterInfo cluster;
  const ExecOptions options;

  std::mutex mu;  // guards everything below
  std::optional<Credentials> cached;
  std::optional<std::chrono::system_clock::time_point> expiration;
  // The last run's error, returned without running the plugin again until retryAt.
  std::optional<Error> failure;
  std::chrono::system_clock::time_point failedAt;
  std::chrono::system_clock::time_point retryAt;
  std::chrono::seconds backoff{0};
  std::shared_ptr<PluginRun> inflight;
};

namespace {

using State = ExecCredentialProvider::State;
using PluginRun = ExecCredentialProvider::PluginRun;

void completeWaiters(std::vector<RunWaiter> waiters) {
  for (auto& waiter : waiters) {
    net::post(waiter.executor,
              [handler = std::move(waiter.handler)]() mutable { std::move(handler)(); });
  }
}

// Completes when `run` has a result; the handler is registered under the lock that also guards
// the result, so a run that finishes meanwhile cannot be missed.
template <class CompletionToken>
auto waitForRun(std::shared_ptr<State> state, std::shared_ptr<PluginRun> run,
                CompletionToken&& token) {
  return net::async_initiate<CompletionToken, void()>(
      [](auto handler, const std::shared_ptr<State>& s, const std::shared_ptr<PluginRun>& r) {
        net::any_io_executor executor = net::get_associated_executor(handler);
        RunWaiter waiter{std::move(executor), std::move(handler)};
        std::unique_lock lock(s->mu);
        if (!r->result) {
          r->waiters.push_back(std::move(waiter));
          return;
        }
        lock.unlock();
        std::vector<RunWaiter> now;
        now.push_back(std::move(waiter));
        completeWaiters(std::move(now));
      },
      token, std::move(state), std::move(run));
}

// Publishes a run's outcome: caches it, schedules the retry of a failure, wakes the waiters. If
// the run's coroutine is destroyed first (its io_context went away, or it threw), the waiters
// get an error instead of waiting forever.
class RunOutcome {
 public:
  RunOutcome(std::shared_ptr<State> state, std::shared_ptr<PluginRun> run)
      : state_(std::move(state)), run_(std::move(run)) {}
  RunOutcome(const RunOutcome&) = delete;
  RunOutcome& operator=(const RunOutcome&) = delete;
  ~RunOutcome() {
    if (run_) {
      publish(Error::config("exec plugin " + inQuotes(state_->config.command) +
                            ": the run was abandoned before it finished"));
    }
  }

  void publish(Result<ExecCredentialStatus> status) {
    State& s = *state_;
    std::vector<RunWaiter> waiters;
    {
      std::lock_guard lock(s.mu);
      if (status) {
        s.cached = Credentials{status->token, status->clientCertPem, status->clientKeyPem};
        s.expiration = status->expiration;
        s.failure.reset();
        s.backoff = std::chrono::seconds(0);
        run_->result = *s.cached;
      } else {
        // Exponential and capped, so a hanging or broken plugin is not run for every request,
        // and a fixed one is picked up within kMaxBackoff.
        s.backoff = s.backoff.count() == 0
                        ? ExecCredentialProvider::kInitialBackoff
                        : std::min(s.backoff * 2, ExecCredentialProvider::kMaxBackoff);
        s.failure = status.error();
        s.failedAt = s.options.clock();
        s.retryAt = s.failedAt + s.backoff;
        run_->result = status.error();
      }
      s.inflight.reset();
      waiters.swap(run_->waiters);
    }
    run_.reset();
    completeWaiters(std::move(waiters));
  }

 private:
  std::shared_ptr<State> state_;
  std::shared_ptr<PluginRun> run_;
};

Result<ExecCredentialStatus> interpret(const State& s, std::variant<ChildProcessResult, int> ran) {
  const std::string who = "exec plugin " + inQuotes(s.config.command);
  if (const int* errnum = std::get_if<int>(&ran)) {
    std::string msg = *errnum == ENOENT && s.config.command.find('/') == std::string::npos
                          ? who + ": executable not found in PATH"
                          : who + ": cannot run: " + std::strerror(*errnum);
    if (*errnum == ENOENT && !s.config.installHint.empty()) {
      msg += "\n" + trimSpace(s.config.installHint);
    }
    return Error::config(msg);
  }
  const auto& out = std::get<ChildProcessResult>(ran);
  // client-go hands the plugin our stderr. Ours carries the log (maybe JSON lines), so the
  // plugin's goes there as one log entry per run instead, and not into every error message.
  const std::string stderrText = trimSpace(out.err);
  if (!stderrText.empty()) {
    spdlog::warn("{} wrote to stderr: {}", who, stderrText);
  }
  const std::string seeLog = stderrText.empty() ? "" : " (its stderr is in the log)";
  if (out.timedOut) {
    return Error::config(who + ": timed out after " + std::to_string(s.options.timeout.count()) +
                         "ms and was killed" + seeLog);
  }
  if (out.outTooLarge) {
    return Error::config(who + ": wrote more than " + std::to_string(kMaxStdoutBytes) +
                         " bytes to stdout" + seeLog);
  }
  // An unknown status (someone else reaped it) is judged by its output alone.
  if (out.waitStatus && (!WIFEXITED(*out.waitStatus) || WEXITSTATUS(*out.waitStatus) != 0)) {
    return Error::config(who + " failed: " + describeWaitStatus(*out.waitStatus) + seeLog);
  }
  std::string why;
  auto parsed = parseExecCredentialStatus(out.out, s.config.apiVersion, why);
  if (!parsed) {
    return Error::config(who + ": " + why + seeLog);
  }
  if (auto valid = checkBearerToken(parsed->token); !valid) {
    return Error::config(who + ": status.token: " + configDetail(valid.error()));
  }
  return std::move(*parsed);
}

// Spawned once per run on a strand of the first caller's executor; owns nothing but shared
// state, so it may outlive the provider.
net::awaitable<void> runPlugin(std::shared_ptr<State> state, std::shared_ptr<PluginRun> run) {
  RunOutcome outcome(state, std::move(run));
  ChildProcessOptions options;
  options.argv.push_back(state->config.command);
  options.argv.insert(options.argv.end(), state->config.args.begin(), state->config.args.end());
  options.env =
      pluginEnvironment(state->config, execCredentialRequest(state->config, state->cluster));
  options.timeout = state->options.timeout;
  options.maxStdoutBytes = kMaxStdoutBytes;
  options.maxStderrBytes = kMaxStderrBytes;
  auto ran = co_await runChildProcess(std::move(options));
  outcome.publish(interpret(*state, std::move(ran)));
}

net::awaitable<Result<Credentials>> awaitCredentials(std::shared_ptr<State> s) {
  std::shared_ptr<PluginRun> run;
  std::optional<Result<Credentials>> immediate;
  bool start = false;
  {
    std::lock_guard lock(s->mu);
    const auto now = s->options.clock();
    if (s->cached && (!s->expiration || now < *s->expiration)) {
      immediate = *s->cached;
    } else if (!s->inflight && s->failure && now >= s->failedAt && now < s->retryAt) {
      immediate = *s->failure;  // a clock stepped back counts as due
    } else {
      if (!s->inflight) {
        s->inflight = std::make_shared<PluginRun>();
        start = true;
      }
      run = s->inflight;
    }
  }
  if (immediate) {
    co_return std::move(*immediate);
  }
  if (start) {
    const auto executor = co_await net::this_coro::executor;
    net::co_spawn(net::make_strand(executor), runPlugin(s, run), net::detached);
  }
  co_await waitForRun(s, run, net::use_awaitable);
  std::lock_guard lock(s->mu);
  co_return *run->result;
}

}  // namespace

ExecCredentialProvider::ExecCredentialProvider(std::shared_ptr<State> state)
    : state_(std::move(state)) {}

ExecCredentialProvider::~ExecCredentialProvider() = default;

Result<std::shared_ptr<ExecCredentialProvider>> ExecCredentialProvider::create(
    ExecConfig config, ExecClusterInfo cluster, ExecOptions options) {
  if (auto valid = validateExecConfig(config); !valid) {
    return valid.error();
  }
  if (!options.clock) {
    options.clock = &std::chrono::system_clock::now;
  }
  return std::shared_ptr<ExecCredentialProvider>(new ExecCredentialProvider(
      std::make_shared<State>(std::move(config), std::move(cluster), std::move(options))));
}

const ExecConfig& ExecCredentialProvider::config() const {
  return state_->config;
}

net::awaitable<Result<Credentials>> ExecCredentialProvider::credentials() {
  // The work happens in a free function on shared state: a member coroutine can lose `this`
  // under g++ 12, and the run must not depend on the provider staying alive.
  std::shared_ptr<State> state = state_;
  co_return co_await awaitCredentials(std::move(state));
}

void ExecCredentialProvider::invalidate(const Credentials& used) {
  std::lock_guard lock(state_->mu);
  // Only if nobody refreshed since `used` was handed out (client-go's maybeRefreshCreds).
  if (state_->cached && *state_->cached == used) {
    state_->cached.reset();
    state_->expiration.reset();
  }
}

}  // namespace egress::kube
