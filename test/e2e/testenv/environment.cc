#include "test/e2e/testenv/environment.h"

#include <csignal>
#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

namespace egress::testenv {
namespace {

std::unique_ptr<ControlPlane> gControlPlane;
volatile sig_atomic_t gSupervisorPid = 0;

// Async-signal-safe: ask the supervisor to stop everything, then die of the same signal. The
// supervisor also notices our exit on its own; this only makes teardown immediate.
void onTerminatingSignal(int sig) {
  if (gSupervisorPid > 0) {
    kill(gSupervisorPid, SIGTERM);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

class ControlPlaneEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    ControlPlaneOptions options;
    if (const char* nodes = std::getenv("EGRESS_TESTENV_NODES")) {
      options.nodes = std::atoi(nodes);
    }
    if (const char* address = std::getenv("EGRESS_TESTENV_ADVERTISE_ADDRESS")) {
      options.advertiseAddress = address;
    }
    std::string error;
    gControlPlane = ControlPlane::start(options, error);
    ASSERT_NE(gControlPlane, nullptr) << error;
    gSupervisorPid = gControlPlane->supervisorPid();
    std::signal(SIGINT, onTerminatingSignal);
    std::signal(SIGTERM, onTerminatingSignal);
  }

  void TearDown() override {
    gSupervisorPid = 0;
    gControlPlane.reset();
  }
};

}  // namespace

ControlPlane& controlPlane() {
  if (!gControlPlane) {
    std::fprintf(stderr, "controlPlane() used without a running control plane\n");
    std::abort();
  }
  return *gControlPlane;
}

}  // namespace egress::testenv

namespace {

// EGRESS_TESTENV_HOLD=1: start a control plane, print its run directory, and wait for a signal
// without running any test. The teardown test uses this to SIGINT a real owner process.
int holdControlPlane() {
  std::string error;
  auto cp = egress::testenv::ControlPlane::start({}, error);
  if (!cp) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  egress::testenv::gSupervisorPid = cp->supervisorPid();
  std::signal(SIGINT, egress::testenv::onTerminatingSignal);
  std::signal(SIGTERM, egress::testenv::onTerminatingSignal);
  std::printf("TESTENV_DIR=%s\n", cp->dir().c_str());
  std::fflush(stdout);
  for (;;) {
    pause();
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (const char* hold = std::getenv("EGRESS_TESTENV_HOLD"); hold && std::string(hold) == "1") {
    return holdControlPlane();
  }
  ::testing::InitGoogleMock(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new egress::testenv::ControlPlaneEnvironment());
  return RUN_ALL_TESTS();
}
