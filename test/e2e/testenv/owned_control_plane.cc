#include "test/e2e/testenv/owned_control_plane.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "test/e2e/testenv/environment.h"
#include <unistd.h>

namespace egress::testenv {
namespace {

std::unique_ptr<ControlPlane> gControlPlane;
volatile sig_atomic_t gSupervisorPid = 0;

// Async-signal-safe.
void onTerminatingSignal(int sig) {
  if (gSupervisorPid > 0) {
    kill(gSupervisorPid, SIGTERM);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

void stopOnTerminatingSignals(int supervisorPid) {
  gSupervisorPid = supervisorPid;
  std::signal(SIGINT, onTerminatingSignal);
  std::signal(SIGTERM, onTerminatingSignal);
}

std::string startOwnedControlPlane(const ControlPlaneOptions& options) {
  std::string error;
  gControlPlane = ControlPlane::start(options, error);
  if (!gControlPlane) {
    return error.empty() ? "the control plane did not start" : error;
  }
  stopOnTerminatingSignals(gControlPlane->supervisorPid());
  return "";
}

void stopOwnedControlPlane() {
  gSupervisorPid = 0;
  gControlPlane.reset();
}

ControlPlane& controlPlane() {
  if (!gControlPlane) {
    std::fprintf(stderr, "controlPlane() used without a running control plane\n");
    std::abort();
  }
  return *gControlPlane;
}

}  // namespace egress::testenv
