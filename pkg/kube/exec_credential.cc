#include "pkg/kube/exec_credential.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>
#include <variant>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "pkg/apis/meta/time.h"
#include "pkg/kube/base64.h"
#include "pkg/kube/config_util.h"
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

namespace egress::kube {
namespace {

constexpr size_t kMaxStdoutBytes = 4 << 20;
constexpr size_t kMaxStderrBytes = 64 << 10;
constexpr std::string_view kExecInfoEnv = "KUBERNETES_EXEC_INFO";

// Closes on scope exit; the child's ends must be closed in the parent before reading, or EOF
// never comes.
class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() { reset(); }
  int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

struct Pipe {
  FileDescriptor read;
  FileDescriptor write;
};

bool openPipe(Pipe& p) {
  int fds[2];
  // Close-on-exec, so neither end leaks into this or any other child; dup2 onto the child's
  // stdout/stderr clears the flag on the copies it needs.
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return false;
  }
  p.read.reset(fds[0]);
  p.write.reset(fds[1]);
  return ::fcntl(p.read.get(), F_SETFL, O_NONBLOCK) == 0;
}

struct ProcessOutput {
  std::string out;
  std::string err;
  int waitStatus = 0;
  bool timedOut = false;
  bool outTooLarge = false;
};

// The spawn resources, released however runProcess returns.
struct SpawnSetup {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

// Reads what is available without blocking; closes the descriptor at EOF. Bytes beyond `limit`
// are dropped and reported through `overflow`.
void drain(FileDescriptor& fd, std::string& into, size_t limit, bool& overflow) {
  char buf[16384];
  while (fd.get() >= 0) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n > 0) {
      const size_t room = limit > into.size() ? limit - into.size() : 0;
      into.append(buf, std::min(room, static_cast<size_t>(n)));
      if (static_cast<size_t>(n) > room) {
        overflow = true;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return;
    }
    fd.reset();  // EOF or a read error: either way nothing more will come
  }
}

void killGroup(pid_t pid) {
  // The child leads its own process group, so helpers it started die with it.
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
}

// Runs argv[0] (PATH lookup as execvp does) with `env`, stdin from /dev/null, and collects
// stdout and stderr until it exits or `timeout` passes (then the process group is killed).
// Returns an errno value if the process could not be started.
std::variant<ProcessOutput, int> runProcess(const std::vector<std::string>& argv,
                                            const std::vector<std::string>& env,
                                            std::chrono::milliseconds timeout) {
  Pipe out;
  Pipe err;
  if (!openPipe(out) || !openPipe(err)) {
    return errno;
  }
  SpawnSetup setup;
  posix_spawn_file_actions_addopen(&setup.actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&setup.actions, out.write.get(), 1);
  posix_spawn_file_actions_adddup2(&setup.actions, err.write.get(), 2);
  // Undo whatever signal setup the operator has (blocked SIGTERM for a signal thread, ignored
  // SIGPIPE): the plugin should start like it would from a shell.
  sigset_t all;
  sigset_t none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&setup.attr, &all);
  posix_spawnattr_setsigmask(&setup.attr, &none);
  posix_spawnattr_setpgroup(&setup.attr, 0);
  posix_spawnattr_setflags(&setup.attr,
                           POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);

  std::vector<char*> cargv;
  for (const auto& a : argv) {
    cargv.push_back(const_cast<char*>(a.c_str()));
  }
  cargv.push_back(nullptr);
  std::vector<char*> cenv;
  for (const auto& e : env) {
    cenv.push_back(const_cast<char*>(e.c_str()));
  }
  cenv.push_back(nullptr);

  pid_t pid = 0;
  const int rc =
      ::posix_spawnp(&pid, cargv[0], &setup.actions, &setup.attr, cargv.data(), cenv.data());
  if (rc != 0) {
    return rc;
  }
  out.write.reset();
  err.write.reset();

  ProcessOutput result;
  bool errOverflow = false;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid || (w < 0 && errno == ECHILD)) {
      // Exited (ECHILD: someone set SIGCHLD to SIG_IGN and the kernel reaped it; judge the
      // output alone). Whatever it wrote is in the pipes; a grandchild that inherited them may
      // keep them open, so take what is there rather than waiting for EOF.
      result.waitStatus = w == pid ? status : 0;
      drain(out.read, result.out, kMaxStdoutBytes, result.outTooLarge);
      drain(err.read, result.err, kMaxStderrBytes, errOverflow);
      break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline || result.outTooLarge) {
      killGroup(pid);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      result.timedOut = !result.outTooLarge;
      result.waitStatus = status;
      break;
    }
    const auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    // Wake up now and then even without output, to notice an exit with the pipes still open.
    const int waitMs = static_cast<int>(std::clamp<int64_t>(remaining.count(), 1, 50));
    pollfd fds[2];
    nfds_t n = 0;
    for (int fd : {out.read.get(), err.read.get()}) {
      if (fd >= 0) {
        fds[n++] = pollfd{fd, POLLIN, 0};
      }
    }
    if (n == 0) {
      // Both pipes closed but the process is still running: wait for the exit.
      const timespec pause{0, static_cast<long>(std::min(waitMs, 10)) * 1'000'000};
      ::nanosleep(&pause, nullptr);
      continue;
    }
    if (::poll(fds, n, waitMs) > 0) {
      drain(out.read, result.out, kMaxStdoutBytes, result.outTooLarge);
      drain(err.read, result.err, kMaxStderrBytes, errOverflow);
    }
  }
  return result;
}

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

std::string describeExit(int waitStatus) {
  if (WIFEXITED(waitStatus)) {
    return "exit status " + std::to_string(WEXITSTATUS(waitStatus));
  }
  if (WIFSIGNALED(waitStatus)) {
    return "killed by signal " + std::to_string(WTERMSIG(waitStatus));
  }
  return "wait status " + std::to_string(waitStatus);
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

ExecCredentialProvider::ExecCredentialProvider(ExecConfig config, ExecClusterInfo cluster,
                                               ExecOptions options)
    : config_(std::move(config)), cluster_(std::move(cluster)), options_(std::move(options)) {}

Result<std::shared_ptr<ExecCredentialProvider>> ExecCredentialProvider::create(
    ExecConfig config, ExecClusterInfo cluster, ExecOptions options) {
  if (auto valid = validateExecConfig(config); !valid) {
    return valid.error();
  }
  if (!options.clock) {
    options.clock = &std::chrono::system_clock::now;
  }
  return std::shared_ptr<ExecCredentialProvider>(
      new ExecCredentialProvider(std::move(config), std::move(cluster), std::move(options)));
}

Result<ExecCredentialStatus> ExecCredentialProvider::runPlugin() const {
  const std::string who = "exec plugin " + inQuotes(config_.command);
  std::vector<std::string> argv{config_.command};
  argv.insert(argv.end(), config_.args.begin(), config_.args.end());
  const auto env = pluginEnvironment(config_, execCredentialRequest(config_, cluster_));
  auto ran = runProcess(argv, env, options_.timeout);
  if (const int* errnum = std::get_if<int>(&ran)) {
    std::string msg = *errnum == ENOENT && config_.command.find('/') == std::string::npos
                          ? who + ": executable not found in PATH"
                          : who + ": cannot run: " + std::strerror(*errnum);
    if (*errnum == ENOENT && !config_.installHint.empty()) {
      msg += "\n" + trimSpace(config_.installHint);
    }
    return Error::config(msg);
  }
  const auto& out = std::get<ProcessOutput>(ran);
  const std::string stderrText = trimSpace(out.err);
  const std::string stderrSuffix = stderrText.empty() ? "" : "; stderr: " + stderrText;
  if (out.timedOut) {
    return Error::config(who + ": timed out after " + std::to_string(options_.timeout.count()) +
                         "ms and was killed" + stderrSuffix);
  }
  if (out.outTooLarge) {
    return Error::config(who + ": wrote more than " + std::to_string(kMaxStdoutBytes) +
                         " bytes to stdout" + stderrSuffix);
  }
  if (!WIFEXITED(out.waitStatus) || WEXITSTATUS(out.waitStatus) != 0) {
    return Error::config(who + " failed: " + describeExit(out.waitStatus) + stderrSuffix);
  }
  std::string why;
  auto parsed = parseExecCredentialStatus(out.out, config_.apiVersion, why);
  if (!parsed) {
    return Error::config(who + ": " + why + stderrSuffix);
  }
  return std::move(*parsed);
}

net::awaitable<Result<Credentials>> ExecCredentialProvider::credentials() {
  co_return [this]() -> Result<Credentials> {
    std::lock_guard lock(mu_);
    if (cached_ && (!expiration_ || options_.clock() < *expiration_)) {
      return *cached_;
    }
    cached_.reset();
    auto status = runPlugin();
    if (!status) {
      return status.error();
    }
    cached_ = Credentials{status->token, status->clientCertPem, status->clientKeyPem};
    expiration_ = status->expiration;
    return *cached_;
  }();
}

void ExecCredentialProvider::invalidate(const Credentials&) {
  std::lock_guard lock(mu_);
  cached_.reset();
  expiration_.reset();
}

}  // namespace egress::kube
