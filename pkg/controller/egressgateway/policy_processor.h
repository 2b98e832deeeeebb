// File: policy_processor.h
//
// One step of a policy's reconcile (the seed's Processor over EgressGatewayPolicyInfo): the
// egressgateway controller gathers the info view once and runs its processors over it in order,
// combining their results as controllerruntime::runProcessors does (processor.h): an error or a
// requeue stops the chain, a requeueAfter does not. A processor may add to the view what later
// ones need (the assignment, the policy as last written).
#pragma once

#include <string>

#include <boost/asio/awaitable.hpp>

#include "pkg/controller/apis/egressgateway_policy.h"
#include "pkg/controllerruntime/reconcile_result.h"

namespace egress::controller {

namespace net = boost::asio;

class PolicyProcessor {
 public:
  virtual ~PolicyProcessor() = default;
  virtual const std::string& name() const = 0;
  virtual net::awaitable<controllerruntime::ReconcileResult> process(
      EgressGatewayPolicyInfo& info) = 0;
};

}  // namespace egress::controller
