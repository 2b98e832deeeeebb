// File: controller.h
//
// The operator subcontroller: reconciles the cluster singleton OperatorConfig "default". It
// validates the config, and reports in its status what the operator manages (policies, Ready
// policies, pools) with a Ready condition: False while the spec is invalid (InvalidSpec) or names
// a defaultPool that does not exist (DefaultPoolNotFound). It also sets egress_policies{state}.
// An OperatorConfig of another name (a 1.20 server cannot refuse it) is never read; its status
// says so once. What it watches: OperatorConfigs; policies whose readiness (ready, not ready,
// invalid) changed, and policies and pools that came or went, which queue the summary's recount
// (batched over two seconds).
#pragma once

#include <string>

#include "pkg/controller/subcontroller.h"

namespace egress::controller {

class OperatorController final : public Subcontroller {
  using Subcontroller::Subcontroller;
  Result<Ok, std::string> addEventHandlers() override;
  net::awaitable<controllerruntime::ReconcileResult> reconcile(const std::string& key) override;
};

}  // namespace egress::controller
