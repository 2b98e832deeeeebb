// End-to-end smoke test of the whole test fixture: the real controller-manager, scheduler and
// test kubelet make a Deployment Available; a SIGINTed owner leaves no process behind.
#include <chrono>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/e2e/testenv/environment.h"
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace egress::testenv {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string uniqueName(const std::string& prefix) {
  std::random_device rd;
  return prefix + "-" + std::to_string(rd() % 100000);
}

TEST(Smoke, ApiserverIsReadyAndNodesAreSchedulable) {
  auto& cp = controlPlane();
  auto readyz = cp.kubectl({"get", "--raw", "/readyz"});
  ASSERT_TRUE(readyz.ok()) << readyz.output;
  EXPECT_EQ(readyz.output, "ok");

  const std::string nodeColumns =
      "jsonpath={range .items[*]}{.metadata.name} "
      "{.status.conditions[?(@.type==\"Ready\")].status} {.spec.taints}{\"\\n\"}{end}";
  auto nodes = cp.kubectl({"get", "nodes", "-o", nodeColumns});
  ASSERT_TRUE(nodes.ok()) << nodes.output;
  EXPECT_THAT(nodes.output, HasSubstr("egress-node-1 True \n"));
  EXPECT_THAT(nodes.output, HasSubstr("egress-node-2 True \n"));
}

TEST(Smoke, TokenKubeconfigAuthenticates) {
  auto& cp = controlPlane();
  auto out = runCommand({cp.dir() + "/bin/kubectl", "--kubeconfig", cp.tokenKubeconfig(), "auth",
                         "can-i", "create", "deployments"});
  ASSERT_TRUE(out.ok()) << out.output;
  EXPECT_THAT(out.output, StartsWith("yes"));
}

TEST(Smoke, DeploymentBecomesAvailable) {
  auto& cp = controlPlane();
  const std::string ns = uniqueName("smoke");
  ASSERT_EQ(cp.createNamespace(ns), "");
  auto create = cp.kubectl({"-n", ns, "create", "deployment", "web",
                            "--image=example.invalid/egress/pause:1", "--replicas=3"});
  ASSERT_TRUE(create.ok()) << create.output;

  auto wait = cp.kubectl(
      {"-n", ns, "wait", "--for=condition=Available", "deployment/web", "--timeout=180s"});
  ASSERT_TRUE(wait.ok()) << wait.output
                         << cp.kubectl({"-n", ns, "get", "all", "-o", "wide"}).output;

  auto available = cp.kubectl(
      {"-n", ns, "get", "deployment", "web", "-o", "jsonpath={.status.availableReplicas}"});
  EXPECT_EQ(available.output, "3");
  // The pods really ran on the fake nodes and got IPs from the nodes' ranges.
  const std::string podColumns =
      "jsonpath={range .items[*]}{.spec.nodeName} {.status.phase} {.status.podIP}{\"\\n\"}{end}";
  auto pods = cp.kubectl({"-n", ns, "get", "pods", "-o", podColumns});
  ASSERT_TRUE(pods.ok()) << pods.output;
  std::istringstream lines(pods.output);
  std::string node, phase, ip;
  int running = 0;
  while (lines >> node >> phase >> ip) {
    EXPECT_THAT(node, StartsWith("egress-node-"));
    EXPECT_EQ(phase, "Running");
    EXPECT_THAT(ip, StartsWith("10.244."));
    ++running;
  }
  EXPECT_EQ(running, 3);

  // Deleting the namespace finishes: the kubelet removes terminating pods.
  auto del = cp.kubectl({"delete", "namespace", ns, "--timeout=120s"});
  EXPECT_TRUE(del.ok()) << del.output;
}

// Pids of processes whose command line mentions `needle`.
std::vector<int> processesMentioning(const std::string& needle) {
  std::vector<int> pids;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) {
    return pids;
  }
  while (dirent* e = readdir(proc)) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0 || pid == getpid()) {
      continue;
    }
    std::ifstream f("/proc/" + std::string(e->d_name) + "/cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (cmdline.find(needle) != std::string::npos) {
      pids.push_back(pid);
    }
  }
  closedir(proc);
  return pids;
}

TEST(Teardown, SigintToOwnerStopsEveryComponent) {
  // A second control plane, owned by a child copy of this binary in hold mode.
  int out[2];
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  std::vector<std::string> envStore{"EGRESS_TESTENV_HOLD=1"};
  for (char** e = environ; *e != nullptr; ++e) {
    envStore.emplace_back(*e);
  }
  std::vector<char*> env;
  env.reserve(envStore.size() + 1);
  for (auto& e : envStore) {
    env.push_back(e.data());
  }
  env.push_back(nullptr);
  std::string self = "/proc/self/exe";
  char* argv[] = {self.data(), nullptr};
  pid_t child = -1;
  ASSERT_EQ(posix_spawn(&child, "/proc/self/exe", &actions, nullptr, argv, env.data()), 0);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);

  std::string printed;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
  while (printed.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, 1000) > 0) {
      char buf[512];
      const ssize_t n = read(out[0], buf, sizeof(buf));
      if (n <= 0) {
        break;
      }
      printed.append(buf, static_cast<size_t>(n));
    }
  }
  close(out[0]);
  ASSERT_THAT(printed, StartsWith("TESTENV_DIR=")) << "child printed: " << printed;
  const std::string dir = printed.substr(12, printed.find('\n') - 12);

  // etcd, apiserver, controller-manager, scheduler, kubelet (and its kubectl) are running.
  EXPECT_GE(processesMentioning(dir).size(), 5u);

  ASSERT_EQ(kill(child, SIGINT), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT);

  std::vector<int> left;
  struct stat st {};
  bool dirLeft = true;
  for (int i = 0; i < 300; ++i) {
    left = processesMentioning(dir);
    dirLeft = stat(dir.c_str(), &st) == 0;
    if (left.empty() && !dirLeft) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(left.empty()) << left.size() << " processes of " << dir << " remain";
  EXPECT_FALSE(dirLeft) << dir << " was not removed";
}

}  // namespace
}  // namespace egress::testenv
