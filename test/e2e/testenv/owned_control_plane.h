// File: owned_control_plane.h
//
// The one control plane a process owns (a test binary's, through environment.cc, or egw-demo's),
// reached through controlPlane() (environment.h). SIGINT and SIGTERM stop it at once: the
// handler asks its supervisor to stop everything, then the process dies of the same signal (the
// supervisor would notice the owner's death on its own, a little later).
#pragma once

#include <string>

#include "test/e2e/testenv/control_plane.h"

namespace egress::testenv {

// Starts it and installs the signal handlers; "" or what went wrong.
std::string startOwnedControlPlane(const ControlPlaneOptions& options);
// Stops it (its destructor tears everything down); nothing when none runs.
void stopOwnedControlPlane();
// Installs the handlers for a control plane started otherwise (its supervisor's pid).
void stopOnTerminatingSignals(int supervisorPid);

}  // namespace egress::testenv
