// File: environment.h
//
// The GoogleTest environment of every e2e test binary: one real control plane (see
// control_plane.h) started before the first test and stopped after the last. SIGINT and SIGTERM
// tear it down too. Tests reach it through controlPlane().
// EGRESS_TESTENV_NODES and EGRESS_TESTENV_ADVERTISE_ADDRESS (ControlPlaneOptions) shape it.
#pragma once

#include "test/e2e/testenv/control_plane.h"

namespace egress::testenv {

// The control plane of this test binary; valid inside tests.
ControlPlane& controlPlane();

}  // namespace egress::testenv
