// File: ippool_processor.h
//
// IPPoolProcessor: the first step of a policy's reconcile. It owns the policy's egress IPs:
//   1. validates the spec (validate() plus what the operator itself needs); an invalid policy
//      keeps what it holds and gets nothing new (the status says why, an event names the field);
//   2. resolves the pool (the ledger's, else the spec's, else the OperatorConfig's default),
//      refusing new allocations when the pool's namespaceSelector does not admit the policy's
//      namespace or the spec names another pool than the ledger's;
//   3. asks the allocator for `replicas` entries, and writes the resulting ledger to the
//      policy's status (an update of the status subresource carrying the resourceVersion: a
//      compare-and-swap; a conflict requeues) BEFORE any gateway pod is told an address, and
//      only then lets the allocator free what the policy no longer lists;
//   4. hands each gateway pod one ledger entry through its egress-IP annotation: a pod keeps
//      the entry it has; a new pod takes an entry no live pod (terminating ones included) holds;
//      a pod whose entry was released loses its annotation. With the agent (OperatorConfig
//      spec.dataplane.agent), an entry whose holder's node has no live agent (by when this
//      process saw its last renewal, confirmed by a read of the Lease from the API server)
//      first moves to a gateway pod on a node whose agent is live (holder_moves.h), with an
//      Event.
// An address leaves the policy only once no gateway pod of it carries the address any more.
// forget() is the end of a deleted policy: its addresses are freed once its pods are gone.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "pkg/controller/context.h"
#include "pkg/controller/egressgateway/policy_processor.h"

namespace egress::controller {

class IPPoolProcessor : public PolicyProcessor {
 public:
  explicit IPPoolProcessor(Context& ctx) : ctx_(ctx) {}

  const std::string& name() const override;
  net::awaitable<controllerruntime::ReconcileResult> process(
      EgressGatewayPolicyInfo& info) override;

  // The policy is gone (not undecodable: that one keeps everything): frees its addresses if no
  // gateway pod of it is left, and tells the pools. Returns whether it freed them.
  bool forget(const EgressGatewayPolicyInfo& info);

 private:
  ipam::AssignRequest request(const EgressGatewayPolicyInfo& info) const;
  net::awaitable<controllerruntime::ReconcileResult> writeLedger(EgressGatewayPolicyInfo& info);
  net::awaitable<controllerruntime::ReconcileResult> annotatePods(EgressGatewayPolicyInfo& info);
  // With the agent: staleHolderMoves (holder_moves.h), each with an Event; updates `holders`
  // and adds the pods it wrote to `written`.
  net::awaitable<controllerruntime::ReconcileResult> moveStaleHolders(
      const EgressGatewayPolicyInfo& info, std::vector<std::string>& holders,
      std::set<std::string>& written);
  // Whether node `node`'s agent Lease, read from the API server, shows a renewal this process
  // has not seen (its watch lags): then it is live again and must keep what it holds.
  net::awaitable<Result<bool, std::string>> renewedSinceSeen(const std::string& node);
  // Sets (value "" removes) a gateway pod's egress-IP annotation; false if the pod is gone.
  net::awaitable<Result<bool, std::string>> setEntry(const std::string& ns, const std::string& pod,
                                                     const std::string& value);
  void reportShortfall(const EgressGatewayPolicyInfo& info, const ipam::Assignment& assignment);

  Context& ctx_;
};

// Brings the allocator's pool `name` in line with the cached IPAMPool (created, changed,
// deleted, or invalid). Both the IPAMPool controller and the IPPoolProcessor call it, so a policy
// reconciled before its new pool's own reconcile still sees the pool.
void syncPoolFromCache(Context& ctx, const std::string& name);

// The addresses in use: those the policy's gateway pods carry in their annotations, and those a
// live agent reports programmed.
std::set<ipam::Address> addressesInUse(const Context& ctx, const EgressGatewayPolicyInfo& info);

}  // namespace egress::controller
