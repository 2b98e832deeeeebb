// File: controller.h
//
// The egressgateway subcontroller: reconciles EgressGatewayPolicies. A key's reconcile gathers
// the policy's info view from the shared cache (cache.h), brings it up to date with this
// process's own writes the cache has yet to show, and from then on only reads it: it runs the
// IPPoolProcessor, the DeploymentProcessor and the StatusProcessor over it in order, handing
// each what the ones before it decided (the ledger plan, the apply's failure, the policy as last
// written); the StatusProcessor also runs after a failed apply, to report it; a policy that is gone
// has its EgressPolicySlices deleted at once (the data plane stops using its addresses;
// cluster-scoped, they cannot be owned by it) and its addresses freed once no live agent answers
// for them (the garbage collector deletes its Deployment and PodDisruptionBudget through their
// owner references). What it watches, and which policies an event queues:
//   EgressGatewayPolicy   the policy itself
//   IPAMPool              the policies that use the pool (poolUpdateMattersToPolicies)
//   OperatorConfig        every policy (operatorConfigUpdateMattersToPolicies)
//   Namespace             its policies (a pool's namespaceSelector may now admit or refuse them)
//   Pod                   the policies that select it or own it (podUpdateMattersToPolicies)
//   Deployment, PodDisruptionBudget   the policy its label names
//   ReplicaSet            the policy of its Deployment (it completes or breaks a pod's proof)
//   EgressPolicySlice     its policy (an orphan is deleted by the reconcile of a gone policy)
//   the Context's trigger `policies`: what other reconciles find: an address freed (the
//                         policies waiting for it), an agent Lease's change (the policies with
//                         a gateway on that node, and those of the addresses it took or let go
//                         of).
#pragma once

#include <map>
#include <set>
#include <string>

#include "pkg/controller/egressgateway/deployment_processor.h"
#include "pkg/controller/egressgateway/ippool_processor.h"
#include "pkg/controller/egressgateway/status_processor.h"
#include "pkg/controller/subcontroller.h"
#include "pkg/controller/update_filters.h"

namespace egress::controller {

class EgressGatewayController final : public Subcontroller {
 public:
  EgressGatewayController(Options options, Context& ctx);

 private:
  Result<Ok, std::string> addEventHandlers() override;
  net::awaitable<controllerruntime::ReconcileResult> reconcile(const std::string& key) override;

  // Read your own writes: the policy as this controller last wrote it, and the versions that
  // write replaced. While the cache still shows one of those, the reconcile starts from the
  // written object instead, so it neither writes the same status again nor conflicts with its
  // own write; once the cache shows anything else, the entry goes.
  struct Written {
    std::set<std::string> superseded;
    v1alpha1::EgressGatewayPolicy object;
  };
  void useOwnWrite(EgressGatewayPolicyInfo& info);

  std::map<std::string, Written> written_;
  IPPoolProcessor ipPool_;
  DeploymentProcessor deployment_;
  StatusProcessor status_;
};

}  // namespace egress::controller
