// File: holder_moves.h
//
// With the agent (OperatorConfig spec.dataplane.agent): which ledger entries move off a stale
// holder. egw-agent on node N renews Lease egw-agent-N every 2 s; an agent that cannot renew
// withdraws what it holds (fencing), so a holder on a node whose agent Lease is stale carries
// no traffic, and its pod may never go away (a dead node's kubelet never confirms the delete).
// Such an entry moves, IP and all (never reallocated), to a gateway pod of the policy that holds
// no entry, whose containers are ready, that is not being deleted and whose node's agent Lease
// is fresh; oldest candidate first, entries in ledger order. Without such a pod it stays.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "pkg/apis/coordination/lease.h"
#include "pkg/apis/meta/time.h"
#include "pkg/controller/apis/egressgateway_policy.h"

namespace egress::controller {

// OperatorConfig spec.dataplane.agent (false for no OperatorConfig).
bool agentEnabled(const v1alpha1::OperatorConfig* config);

struct HolderMove {
  size_t entry = 0;  // index into the ledger
  std::string from;  // the stale holder
  std::string to;    // the pod taking the entry over
};

// `holders`: entryHolders() of the ledger (a pod name per entry, "" for none). `nodeFresh`: whether
// a node's agent Lease is fresh.
std::vector<HolderMove> staleHolderMoves(const EgressGatewayPolicyInfo& info,
                                         const std::vector<std::string>& holders,
                                         const std::function<bool(const std::string&)>& nodeFresh);

}  // namespace egress::controller
