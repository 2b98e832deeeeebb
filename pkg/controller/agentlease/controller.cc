#include "pkg/controller/agentlease/controller.h"

#include <spdlog/spdlog.h>

#include "pkg/controller/egressgateway/holder_moves.h"
#include "pkg/controllerruntime/event_handlers.h"

namespace egress::controller {
namespace {

using controllerruntime::ReconcileResult;
using LeasePtr = std::shared_ptr<const coordination::Lease>;

// After the expiry, so that the reconcile it schedules finds the agent stale.
constexpr auto kPastExpiry = std::chrono::milliseconds(200);

}  // namespace

Result<Ok, std::string> AgentLeaseController::addEventHandlers() {
  auto* leases = ctx_.cache.agentLeases();
  if (leases == nullptr) {
    return Ok{};  // no agent Lease namespace: nothing to watch
  }
  const auto queue = enqueuer();
  Context* ctx = &ctx_;
  // Observed here, when the event arrives: the moment the operator saw the renewal is what its
  // liveness judgement counts from.
  auto seen = [queue, ctx](const LeasePtr& lease) {
    const std::string node = agentLeaseNode(*lease);
    if (!node.empty()) {
      ctx->agents.observe(*lease, ctx->clock.now());
      queue.add(node);
    }
  };
  cache::EventHandler<coordination::Lease> handler;
  handler.onAdd = [seen](const LeasePtr& lease, bool) { seen(lease); };
  handler.onUpdate = [seen](const LeasePtr&, const LeasePtr& lease) { seen(lease); };
  // A deleted Lease proves nothing about its agent, which may still renew (and re-create it): the
  // last renewal seen keeps counting until it expires, and the reconcile forgets the node then.
  handler.onDelete = [queue](const LeasePtr& lease, bool) {
    const std::string node = agentLeaseNode(*lease);
    if (!node.empty()) {
      queue.add(node);
    }
  };
  if (auto reg = leases->addEventHandler(std::move(handler)); !reg) {
    return reg.error().message();
  }
  // Switched on: a dead agent's Lease has no events any more, so every node is looked at now.
  auto configs = ctx_.cache.operatorConfigs().addEventHandler(
      controllerruntime::enqueueMapped<v1alpha1::OperatorConfig>(
          queue, [ctx](const v1alpha1::OperatorConfig&) {
            auto nodes = ctx->agents.nodes();
            return std::vector<std::string>(nodes.begin(), nodes.end());
          }));
  if (!configs) {
    return configs.error().message();
  }
  return Ok{};
}

net::awaitable<ReconcileResult> AgentLeaseController::reconcile(const std::string& node) {
  const auto now = ctx_.clock.now();
  // Every Lease event (a renewal carries the agent's observed slices' version) and every expiry
  // (a stale agent stops counting) may let a withdrawal settle: its policy's release waited.
  for (const auto& key : ctx_.agents.settle(now)) {
    ctx_.policies.add(key);
  }
  if (!agentEnabled(ctx_.cache.operatorConfig().get())) {
    seen_.erase(node);
    co_return ReconcileResult::done();
  }
  Seen current{ctx_.agents.live(node, now), ctx_.agents.programmed(node),
               ctx_.agents.problems(node)};
  auto it = seen_.find(node);
  // A first sight of a live agent changes nothing: every policy is reconciled at start anyway.
  const bool first = it == seen_.end();
  const bool flipped = first ? !current.live : it->second.live != current.live;
  const bool reported = !first && it->second.programmed != current.programmed;
  const bool problems = first ? !current.problems.empty() : it->second.problems != current.problems;
  if (flipped) {
    spdlog::info("agentlease: the agent of node {} is {}", node, current.live ? "live" : "stale");
  }
  if (flipped || problems) {
    // Their Programmed and Ready name this node's problems only while its agent is live.
    for (const auto& [uid, p] : current.problems) {
      ctx_.policies.add(p.key);
    }
    if (!first) {
      for (const auto& [uid, p] : it->second.problems) {
        ctx_.policies.add(p.key);
      }
    }
  }
  if (flipped || reported || (first && !current.programmed.empty())) {
    std::set<std::string> keys;
    for (auto& key : ctx_.cache.policyKeysWithGatewayOn(node)) {
      keys.insert(std::move(key));
    }
    // The policies of the addresses it took or let go of, or that it claims no more now that
    // it is stale: one may be waiting for it to let go before a new holder is named (view.h)
    // or the address is freed (ippool_processor.h), and its gateway pod may be gone already.
    std::set<ipam::Address> changed = current.programmed;
    if (!first) {
      changed.insert(it->second.programmed.begin(), it->second.programmed.end());
    }
    for (const auto& a : changed) {
      if (auto owner = ctx_.allocator.holderOf(a); !owner.empty()) {
        keys.insert(ctx_.allocator.ownerName(owner));
      }
    }
    for (const auto& key : keys) {
      ctx_.policies.add(key);
    }
  }
  const auto expiry = ctx_.agents.expiry(node);
  if (!ctx_.cache.agentLease(node) && !current.live) {
    seen_.erase(node);
    ctx_.agents.forget(node);
  } else {
    seen_[node] = std::move(current);
  }
  if (expiry && now < *expiry) {
    co_return ReconcileResult::requeueAfter(
        std::chrono::duration_cast<Clock::Duration>(*expiry - now) + kPastExpiry);
  }
  co_return ReconcileResult::done();
}

}  // namespace egress::controller
