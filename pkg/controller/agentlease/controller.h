// File: controller.h
//
// The agentlease subcontroller (with OperatorConfig spec.dataplane.agent): turns the agents'
// Lease freshness, which changes with time alone, into policy reconciles. Its keys are node
// names, from the egw-agent-<node> Leases' events (every renewal, about each 2 s per agent) and
// from OperatorConfig changes. A reconcile of node N looks at N's Lease: while it is fresh it
// comes back just after it would expire; when N's freshness flips (stale: its holders' entries
// may move away; fresh again: entries may move to it), every policy is queued, so a stale
// holder moves within the Lease duration and a fraction of a second. It writes nothing itself
// and costs one in-memory check per Lease event.
#pragma once

#include <map>
#include <string>

#include "pkg/controller/context.h"
#include "pkg/controllerruntime/controller.h"

namespace egress::controller {

class AgentLeaseController : public controllerruntime::Controller {
 public:
  AgentLeaseController(Options options, Context& ctx);

 protected:
  Result<Ok, std::string> addEventHandlers() override;
  net::awaitable<controllerruntime::ReconcileResult> reconcile(const std::string& key) override;

 private:
  Context& ctx_;
  // Each node's freshness at its last reconcile.
  std::map<std::string, bool> fresh_;
};

}  // namespace egress::controller
