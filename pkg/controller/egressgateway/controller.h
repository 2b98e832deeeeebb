// File: controller.h
//
// The egressgateway subcontroller: reconciles EgressGatewayPolicies. A key's reconcile gathers
// the policy's info view from the shared cache (cache.h) and runs the IPPoolProcessor, the
// DeploymentProcessor and the StatusProcessor over it, in order (the StatusProcessor also after
// a failed DeploymentProcessor, to report the failure); a policy that is gone has its
// EgressPolicySlices deleted at once (the data plane stops using its addresses; cluster-scoped,
// they cannot be owned by it) and its addresses freed once its gateway pods are gone (the
// garbage collector deletes its Deployment and PodDisruptionBudget through their owner
// references). Its keys come from the policies themselves and, through the main controller's
// cross-triggers, from pools, the OperatorConfig, namespaces, source and gateway pods and their
// ReplicaSets, the gateway objects and the slices.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "pkg/controller/context.h"
#include "pkg/controller/egressgateway/deployment_processor.h"
#include "pkg/controller/egressgateway/ippool_processor.h"
#include "pkg/controller/egressgateway/policy_processor.h"
#include "pkg/controller/egressgateway/status_processor.h"
#include "pkg/controllerruntime/controller.h"

namespace egress::controller {

class EgressGatewayController : public controllerruntime::Controller {
 public:
  EgressGatewayController(Options options, Context& ctx);

 protected:
  Result<Ok, std::string> addEventHandlers() override;
  net::awaitable<controllerruntime::ReconcileResult> reconcile(const std::string& key) override;

 private:
  // Read your own writes: the policy as this controller last wrote it, and the versions that
  // write replaced. While the cache still shows one of those, the reconcile starts from the
  // written object instead, so it neither writes the same status again nor conflicts with its
  // own write; once the cache shows anything else, the entry goes.
  struct Written {
    std::set<std::string> superseded;
    v1alpha1::EgressGatewayPolicy object;
  };
  void useOwnWrite(EgressGatewayPolicyInfo& info);

  Context& ctx_;
  std::map<std::string, Written> written_;
  std::shared_ptr<IPPoolProcessor> ipPool_;
  std::shared_ptr<DeploymentProcessor> deployment_;
  std::shared_ptr<StatusProcessor> status_;
  std::vector<std::shared_ptr<PolicyProcessor>> processors_;
};

}  // namespace egress::controller
