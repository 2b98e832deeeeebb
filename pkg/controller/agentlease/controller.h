// File: controller.h
//
// The agentlease subcontroller (with OperatorConfig spec.dataplane.agent): turns what the agents'
// egw-agent-<node> Leases say into policy reconciles. Each Lease event is recorded in the
// context's Agents (agents.h: when the renewal was seen, what the agent reports programmed) and
// queues the Lease's node. A reconcile of node N compares N's liveness, which changes with time
// alone, and its report with what the last reconcile of N saw; when either changed, it queues
// the policies that have a gateway pod on N (their holders may move away or back, their
// readiness gates follow the report), and the policies N's agent reports problems for, before or
// now (their Programmed and Ready follow them), not every policy. While N is live it comes back
// just after N would go stale. It writes nothing itself.
#pragma once

#include <map>
#include <set>
#include <string>

#include "pkg/controller/agentlease/agents.h"
#include "pkg/controller/subcontroller.h"

namespace egress::controller {

class AgentLeaseController final : public Subcontroller {
  using Subcontroller::Subcontroller;
  Result<Ok, std::string> addEventHandlers() override;
  net::awaitable<controllerruntime::ReconcileResult> reconcile(const std::string& key) override;

  struct Seen {
    bool live = false;
    std::set<ipam::Address> programmed;
    std::map<std::string, ReportedProblem> problems;
  };
  // Each node as its last reconcile saw it.
  std::map<std::string, Seen> seen_;
};

}  // namespace egress::controller
