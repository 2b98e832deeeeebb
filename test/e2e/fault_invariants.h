// File: fault_invariants.h
//
// What fault_e2e_test checks at the end of every case, from one fresh LIST of each kind (every
// namespace): the operator's caches agree with the API server (its /metrics gauges, its
// slices' sources and its status' selectedPods against the LISTed pods, policies and pool; a
// live gateway pod named, by uid, for every ledger entry, and the Deployments against the
// ledgers), no address is held by two policies, no policy lost an address it held before the
// fault, every policy is Ready again within a bound, the operators that should run still do,
// and the one that leads at the end neither writes nor reconciles in a loop once it has
// converged.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "test/e2e/operator_helpers.h"

namespace egress::e2e {

// Every policy of the cluster, by "namespace/name".
std::map<std::string, PolicyView> clusterPolicies();

struct InvariantBounds {
  std::string pool;                 // the pool whose gauges and status are compared
  std::chrono::seconds ready{120};  // every policy Ready again within this
  std::chrono::seconds quiet{10};   // the window measured for a hot loop
  double maxQuietReconciles = 10;   // reconciles allowed in that window
  double maxCaseReconciles = 0;     // > 0: reconciles allowed over the whole case
  // A leader renews its Lease with a PUT every retry period, which its write counter counts:
  // the renewals allowed per second (0 without leader election).
  double leaseRenewalsPerSecond = 0;
};

// Waits until `op` has gone `quiet` without a reconcile and without writes beyond its Lease
// renewals (`leaseRenewalsPerSecond`); false if it never does within `timeout`.
bool quiesce(const Operator& op, double leaseRenewalsPerSecond, std::chrono::seconds quiet,
             std::chrono::seconds timeout);

// What a case measured, for docs/reliability.md.
struct InvariantReport {
  double secondsToReady = -1;  // from the fault's end until every policy was Ready
  double caseReconciles = 0;   // the final leader's reconciles since `reconcilesBefore`
  double quietReconciles = 0;
  double quietWrites = 0;
  size_t policies = 0;
  size_t addresses = 0;
  std::string summary() const;
};

// Checks every invariant with gtest assertions. `before`: clusterPolicies() before the fault;
// `leader`: the operator that leads at the end (its caches and rates are checked); `alive`: every
// operator that must still run; `reconcilesBefore`: the leader's reconcile counter when the case
// began (0 for an operator started after the fault).
InvariantReport checkInvariants(const std::map<std::string, PolicyView>& before, Operator& leader,
                                const std::vector<Operator*>& alive, double reconcilesBefore,
                                std::chrono::steady_clock::time_point faultEnded,
                                const InvariantBounds& bounds);

}  // namespace egress::e2e
