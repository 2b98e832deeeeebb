// File: holder_moves.h
//
// Which gateway pod holds each ledger entry, as the IPPoolProcessor decides it (the policy's
// status records the choice, and the data-plane view follows the status):
//   - newHolders: an entry without a holder goes to a pod of the policy that holds none, is
//     scheduled (the view names a holder's node; naming it before would cost one more status
//     write when the node is set) and is not being deleted, oldest first, entries in ledger
//     order. A holder being deleted keeps its
//     entry until it is gone (the view names no holder for it meanwhile), unless its node's
//     agent goes stale first;
//   - staleHolderMoves, with the agent (OperatorConfig spec.dataplane.agent): which entries
//     move off a stale holder. egw-agent on node N renews Lease egw-agent-N every 2 s; an agent
//     that cannot renew withdraws what it holds (fencing), so a holder on a node whose agent
//     Lease is stale carries no traffic, and its pod may never go away (a dead node's kubelet
//     never confirms the delete). Such an entry moves, IP and all (never reallocated), to a
//     gateway pod of the policy that holds no entry, whose containers are ready, that is not
//     being deleted and whose node's agent Lease is fresh; oldest candidate first, entries in
//     ledger order. Without such a pod it stays.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "pkg/apis/coordination/lease.h"
#include "pkg/apis/meta/time.h"
#include "pkg/controller/apis/egressgateway_policy.h"
#include "pkg/ipam/allocator.h"

namespace egress::controller {

// OperatorConfig spec.dataplane.agent (false for no OperatorConfig).
bool agentEnabled(const v1alpha1::OperatorConfig* config);

// The one order gateway pods are chosen in: older first (creationTimestamp, then name), so the
// pod that has waited longest, or held longest, wins.
bool olderPod(const EgressPodInfo& a, const EgressPodInfo& b);

struct HolderMove {
  size_t entry = 0;  // index into the ledger
  std::string from;  // the holder it leaves ("" for none)
  std::string to;    // the pod taking the entry over
  // The agents moved it (reportedHolderMoves), the ledger follows; else the operator moves it.
  bool reported = false;
};

// `holders`: a pod name per ledger entry, "" for none.
std::vector<HolderMove> newHolders(const EgressGatewayPolicyInfo& info,
                                   const std::vector<std::string>& holders);

// With the agent: the entries the agents moved themselves. The agents move an address among
// its policy's gateway nodes when its holder dies, through an API outage too (pkg/agent
// peer_quorum.h); the ledger follows what they hold, never the other way round. An entry whose
// every address exactly one live agent reports holding (`reported`: address -> live nodes, as
// Agents::claims gives it), on another node than its holder pod's, moves to the policy's
// gateway pod on that node: one that holds an entry already if there is one, else the oldest
// that is not being deleted. Without such a pod it stays.
std::vector<HolderMove> reportedHolderMoves(
    const EgressGatewayPolicyInfo& info, const std::vector<ipam::Entry>& ledger,
    const std::vector<std::string>& holders,
    const std::map<ipam::Address, std::set<std::string>>& reported);

// `holders`: entryHolders() of the ledger (a pod name per entry, "" for none). `nodeFresh`: whether
// a node's agent Lease is fresh.
std::vector<HolderMove> staleHolderMoves(const EgressGatewayPolicyInfo& info,
                                         const std::vector<std::string>& holders,
                                         const std::function<bool(const std::string&)>& nodeFresh);

}  // namespace egress::controller
