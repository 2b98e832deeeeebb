#include "test/e2e/testenv/environment.h"

#include <csignal>
#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/e2e/testenv/owned_control_plane.h"
#include <unistd.h>

namespace egress::testenv {
namespace {

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
    const std::string error = startOwnedControlPlane(options);
    ASSERT_EQ(error, "");
  }

  void TearDown() override { stopOwnedControlPlane(); }
};

}  // namespace
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
  egress::testenv::stopOnTerminatingSignals(cp->supervisorPid());
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
