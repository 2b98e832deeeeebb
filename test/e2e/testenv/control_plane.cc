#include "test/e2e/testenv/control_plane.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace egress::testenv {

std::string sourceDir() {
  return EGRESS_SOURCE_DIR;
}

CommandResult runCommand(const std::vector<std::string>& argv,
                         const std::vector<std::string>& extraEnv) {
  CommandResult result;
  int pipeFds[2];
  if (pipe2(pipeFds, O_CLOEXEC) != 0) {
    result.output = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipeFds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipeFds[1], STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);

  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  std::vector<std::string> envStore;
  for (char** e = environ; *e != nullptr; ++e) {
    envStore.emplace_back(*e);
  }
  envStore.insert(envStore.end(), extraEnv.begin(), extraEnv.end());
  std::vector<char*> env;
  env.reserve(envStore.size() + 1);
  for (auto& e : envStore) {
    env.push_back(e.data());
  }
  env.push_back(nullptr);

  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  close(pipeFds[1]);
  if (rc != 0) {
    close(pipeFds[0]);
    result.output = "spawn " + argv[0] + ": " + std::strerror(rc);
    return result;
  }
  char buf[4096];
  for (;;) {
    const ssize_t n = read(pipeFds[0], buf, sizeof(buf));
    if (n > 0) {
      result.output.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(pipeFds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

namespace {

// Value of `KEY=value` in up.sh's output, or "".
std::string findAssignment(const std::string& output, const std::string& key) {
  std::istringstream in(output);
  std::string line;
  std::string value;
  while (std::getline(in, line)) {
    if (line.rfind(key + "=", 0) == 0) {
      value = line.substr(key.size() + 1);
    }
  }
  return value;
}

// The kubelet a control plane runs when its options do not say (ControlPlaneOptions::kubelet).
std::string defaultKubelet() {
  if (const char* fromEnv = std::getenv("EGRESS_TESTENV_KUBELET")) {
    return fromEnv;
  }
  return EGRESS_TESTENV_KUBELET_BINARY;
}

}  // namespace

std::unique_ptr<ControlPlane> ControlPlane::start(const ControlPlaneOptions& options,
                                                  std::string& error) {
  const std::string kubelet = options.kubelet ? *options.kubelet : defaultKubelet();
  std::vector<std::string> argv{sourceDir() + "/hack/testenv/up.sh", "--kubelet", kubelet};
  argv.insert(argv.end(),
              {"--nodes", std::to_string(options.nodes), "--owner-pid", std::to_string(getpid())});
  if (!options.advertiseAddress.empty()) {
    argv.insert(argv.end(), {"--advertise-address", options.advertiseAddress});
  }
  const auto up = runCommand(argv);
  if (!up.ok()) {
    error = "hack/testenv/up.sh failed (exit " + std::to_string(up.exitCode) + "):\n" + up.output;
    return nullptr;
  }
  const std::string dir = findAssignment(up.output, "TESTENV_DIR");
  const std::string server = findAssignment(up.output, "TESTENV_SERVER");
  int supervisor = -1;
  std::ifstream pidFile(dir + "/supervisor.pid");
  pidFile >> supervisor;
  if (dir.empty() || server.empty() || supervisor <= 0) {
    error = "hack/testenv/up.sh printed no run directory:\n" + up.output;
    return nullptr;
  }
  return std::unique_ptr<ControlPlane>(new ControlPlane(dir, server, supervisor, kubelet));
}

ControlPlane::ControlPlane(std::string dir, std::string server, int supervisorPid,
                           std::string kubelet)
    : dir_(std::move(dir)),
      server_(std::move(server)),
      supervisorPid_(supervisorPid),
      kubelet_(std::move(kubelet)) {}

ControlPlane::~ControlPlane() {
  stop();
}

void ControlPlane::stop() {
  if (!dir_.empty()) {
    runCommand({sourceDir() + "/hack/testenv/down.sh", dir_});
    dir_.clear();
  }
}

CommandResult ControlPlane::kubectl(const std::vector<std::string>& args) const {
  std::vector<std::string> argv{dir_ + "/bin/kubectl", "--kubeconfig", kubeconfig()};
  argv.insert(argv.end(), args.begin(), args.end());
  return runCommand(argv);
}

std::string ControlPlane::createNamespace(const std::string& ns) const {
  auto created = kubectl({"create", "namespace", ns});
  if (!created.ok()) {
    return created.output;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (kubectl({"-n", ns, "get", "configmap", "kube-root-ca.crt", "-o", "name"}).ok()) {
      return "";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return "kube-root-ca.crt did not appear in namespace " + ns + " within 30 s";
}

CommandResult ControlPlane::ctl(const std::vector<std::string>& args) const {
  std::vector<std::string> argv{sourceDir() + "/hack/testenv/ctl.sh", dir_};
  argv.insert(argv.end(), args.begin(), args.end());
  return runCommand(argv);
}

}  // namespace egress::testenv
