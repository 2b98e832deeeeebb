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
// The allocator knows a policy by its uid: releaseFormerOwners() is the end of a policy that is
// gone, or was deleted and re-created under the same name (a new uid, which allocates afresh
// from the pool it names): the old one's addresses are freed once its pods are gone.
#pragma once

#include <map>
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

  // Frees what the allocator holds under the policy's name for any uid but the current
  // policy's (all of them if it is gone; none if it is undecodable: that one keeps
  // everything), once no pod labelled as the name's gateway, other than the current policy's
  // proven ones, is left and no live agent claims any of it; tells the pools. Returns whether
  // it freed anything.
  bool releaseFormerOwners(const EgressGatewayPolicyInfo& info);

  // Makes `info` see the egress-IP annotations this process wrote that the pod cache does not
  // show yet: the next reconcile must not free an address a pod was just given, nor give it to
  // another pod. A write is forgotten once the cached pod has the resourceVersion the patch
  // returned or a later one, or the pod is gone. Deliberate difference from client-go, which
  // treats resourceVersions as opaque: "later" compares them as the integers every etcd-backed
  // server sends (a version that is not one ends the memo, and the cache is believed).
  void useOwnPodWrites(EgressGatewayPolicyInfo& info);

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
  net::awaitable<Result<bool, std::string>> setEntry(const std::string& key, const core::Pod& pod,
                                                     const std::string& value);
  // Once per transition: nothing if `reported`, the IPAllocated reason the reconcile found,
  // already says it.
  void reportShortfall(const EgressGatewayPolicyInfo& info, const ipam::Assignment& assignment,
                       const std::string& reported);

  Context& ctx_;
  // What setEntry() wrote, per policy key, by pod uid: the resourceVersion the patch returned,
  // and the value.
  struct PodWrite {
    std::string written;
    std::string value;
  };
  std::map<std::string, std::map<std::string, PodWrite>> podWrites_;
};

// Brings the allocator's pool `name` in line with the cached IPAMPool (created, changed,
// deleted, or invalid). Both the IPAMPool controller and the IPPoolProcessor call it, so a policy
// reconciled before its new pool's own reconcile still sees the pool.
void syncPoolFromCache(Context& ctx, const std::string& name);

// The allocator's owner for the policy: its uid.
const std::string& ownerOf(const EgressGatewayPolicyInfo& info);

// The addresses in use: those the policy's gateway pods carry in their annotations, and those a
// live agent reports programmed.
std::set<ipam::Address> addressesInUse(const Context& ctx, const EgressGatewayPolicyInfo& info);

}  // namespace egress::controller
