// File: ippool_processor.h
//
// IPPoolProcessor: the first step of a policy's reconcile. It owns the policy's egress IPs:
//   1. validates the spec (validate() plus what the operator itself needs); an invalid policy
//      keeps what it holds and gets nothing new (the status says why, an event names the field);
//   2. resolves the pool (the ledger's, else the spec's, else the OperatorConfig's default),
//      refusing new allocations when the pool's namespaceSelector does not admit the policy's
//      namespace or the spec names another pool than the ledger's;
//   3. asks the allocator for `replicas` entries, and names the gateway pod that holds each
//      (holder_moves.h: a pod keeps the entry it has; a new pod takes an entry nobody holds or
//      whose holder is being deleted; with the agent (OperatorConfig spec.dataplane.agent), an
//      entry whose holder's node has no live agent (by when this process saw its last renewal,
//      confirmed by a read of the Lease from the API server) moves to a gateway pod on a node
//      whose agent is live, with an Event);
//   4. writes both to the policy's status (an update of the status subresource carrying the
//      resourceVersion: a compare-and-swap; a conflict requeues) BEFORE the data-plane view
//      names any of it, and only then lets the allocator free what the policy no longer lists.
// The status is the holder record: only the operator writes it, and the pod is named by uid.
// An address leaves the policy only once no published slice (as cached, or as this process
// last wrote it) names it and no live agent reports it programmed.
// The allocator knows a policy by its uid: releaseFormerOwners() is the end of a policy that is
// gone, or was deleted and re-created under the same name (a new uid, which allocates afresh
// from the pool it names): the old one's addresses are freed once no view of it is published
// and no live agent answers for them.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "pkg/controller/apis/egressgateway_policy.h"
#include "pkg/controller/context.h"
#include "pkg/controller/egressgateway/holder_moves.h"
#include "pkg/controller/egressgateway/status_processor.h"
#include "pkg/controllerruntime/reconcile_result.h"

namespace egress::controller {

class IPPoolProcessor {
 public:
  explicit IPPoolProcessor(Context& ctx) : ctx_(ctx) {}

  // Its result (not done: the reconcile stops with it) and what it decided.
  struct Outcome {
    controllerruntime::ReconcileResult result = controllerruntime::ReconcileResult::done();
    LedgerPlan plan;
  };

  const std::string& name() const;
  // Decides the ledger and its holders and writes them through `writer` (the reconcile's first
  // status write, when they differ from what the status records).
  net::awaitable<Outcome> process(const EgressGatewayPolicyInfo& info, PolicyWriter& writer);

  // Frees what the allocator holds under the policy's name for any uid but the current
  // policy's (all of them if it is gone; none if it is undecodable: that one keeps
  // everything), once no slice of that uid is cached and no live agent claims any of it; tells
  // the pools. Returns whether it freed anything.
  bool releaseFormerOwners(const EgressGatewayPolicyInfo& info);

 private:
  ipam::AssignRequest request(const EgressGatewayPolicyInfo& info) const;
  // Who holds each entry of `ledger`: the holders `found` (the status) names, moved off stale
  // holders first (`moved`, with the agent), then new holders for the entries without one
  // (`given`).
  net::awaitable<Result<std::vector<std::string>, std::string>> chooseHolders(
      const EgressGatewayPolicyInfo& info, const std::vector<ipam::Entry>& ledger,
      const v1alpha1::EgressGatewayPolicyStatus& found, std::vector<HolderMove>& moved,
      std::vector<HolderMove>& given);
  // Whether node `node`'s agent Lease, read from the API server, shows a renewal this process
  // has not seen (its watch lags): then it is live again and must keep what it holds.
  net::awaitable<Result<bool, std::string>> renewedSinceSeen(const std::string& node);
  // Once per transition: nothing if `reported`, the IPAllocated reason the reconcile found,
  // already says it.
  void reportShortfall(const EgressGatewayPolicyInfo& info, const ipam::Assignment& assignment,
                       const std::string& reported);

  Context& ctx_;
};

// The allocator's owner for the policy: its uid.
const std::string& ownerOf(const EgressGatewayPolicyInfo& info);

// The addresses in use when the policy's ledger becomes `ledger`: those its published view
// names (info.deployment.slices and info.viewInFlight), those a live agent reports programmed,
// and those of its own the view dropped while a live agent may still answer for them from an
// older read (the withdrawal is recorded here, at the slices' version its reflector has reached:
// what the agents must report having observed before the address is free; agents.h).
std::set<ipam::Address> addressesInUse(Context& ctx, const EgressGatewayPolicyInfo& info,
                                       const std::vector<ipam::Entry>& ledger);

// Whether the allocator holds, for owner `uid`, an address beyond its ledger: a release that
// waits for the view, the pods or an agent to let go of it.
bool releaseWaits(const Context& ctx, const std::string& uid);

// A status write of a policy that got no assignment this reconcile (its spec is invalid) just
// succeeded: a compare-and-swap, so `written`'s ledger is what the API server holds. What the
// allocator took for the policy beyond that ledger (a ledger write that failed before the spec
// turned invalid) goes back to its pool, unless in use; nothing else would return it, since an
// invalid policy is not assigned again until its spec is fixed.
void returnUnwritten(Context& ctx, const EgressGatewayPolicyInfo& info,
                     const v1alpha1::EgressGatewayPolicy& written);

}  // namespace egress::controller
