#include "pkg/controller/agentlease/controller.h"

#include <spdlog/spdlog.h>

#include "pkg/controller/egressgateway/holder_moves.h"
#include "pkg/controller/names.h"
#include "pkg/controllerruntime/event_handlers.h"

namespace egress::controller {
namespace {

using controllerruntime::ReconcileResult;

// After the expiry, so that the reconcile it schedules finds the Lease stale.
constexpr auto kPastExpiry = std::chrono::milliseconds(200);

std::vector<std::string> nodeOf(const coordination::Lease& lease) {
  const auto& name = lease.metadata.name;
  if (!name.starts_with(kAgentLeasePrefix) || name.size() == kAgentLeasePrefix.size()) {
    return {};
  }
  return {name.substr(kAgentLeasePrefix.size())};
}

}  // namespace

AgentLeaseController::AgentLeaseController(Options options, Context& ctx)
    : Controller(std::move(options)), ctx_(ctx) {}

Result<Ok, std::string> AgentLeaseController::addEventHandlers() {
  auto* leases = ctx_.cache.agentLeases();
  if (leases == nullptr) {
    return Ok{};  // no agent Lease namespace: nothing to watch
  }
  auto reg = leases->addEventHandler(
      controllerruntime::enqueueMapped<coordination::Lease>(enqueuer(), nodeOf));
  if (!reg) {
    return reg.error().message();
  }
  // Switched on: a dead agent's Lease has no events any more, so every node is looked at now.
  auto configs = ctx_.cache.operatorConfigs().addEventHandler(
      controllerruntime::enqueueMapped<v1alpha1::OperatorConfig>(
          enqueuer(), [leases](const v1alpha1::OperatorConfig&) {
            std::vector<std::string> nodes;
            for (const auto& l : leases->indexer().list()) {
              auto n = nodeOf(*l);
              nodes.insert(nodes.end(), n.begin(), n.end());
            }
            return nodes;
          }));
  if (!configs) {
    return configs.error().message();
  }
  return Ok{};
}

net::awaitable<ReconcileResult> AgentLeaseController::reconcile(const std::string& node) {
  if (!agentEnabled(ctx_.cache.operatorConfig().get())) {
    fresh_.erase(node);
    co_return ReconcileResult::done();
  }
  const auto lease = ctx_.cache.agentLease(node);
  const meta::Time now = ctx_.clock.wallNow();
  const bool fresh = agentLeaseFresh(lease.get(), now);
  auto it = fresh_.find(node);
  // A first sight of a fresh Lease changes nothing: every policy is reconciled at start anyway.
  const bool flipped = it == fresh_.end() ? !fresh : it->second != fresh;
  fresh_[node] = fresh;
  if (!lease) {
    fresh_.erase(node);
  }
  if (flipped) {
    spdlog::info("agentlease: the agent Lease of node {} is {}", node, fresh ? "fresh" : "stale");
    for (const auto& key : ctx_.cache.allPolicyKeys()) {
      ctx_.policies.add(key);
    }
  }
  if (fresh) {
    const auto expiry = agentLeaseExpiry(*lease);
    co_return ReconcileResult::requeueAfter(
        std::chrono::duration_cast<Clock::Duration>(*expiry - now) + kPastExpiry);
  }
  co_return ReconcileResult::done();
}

}  // namespace egress::controller
