#include "pkg/controller/egressgateway/ippool_processor.h"

#include <algorithm>
#include <iterator>
#include <tuple>

#include <spdlog/spdlog.h>

#include "pkg/apis/networking/v1alpha1/validation.h"
#include "pkg/client/networking/v1alpha1/zz_generated.clientset.h"
#include "pkg/controller/conditions.h"
#include "pkg/controller/egressgateway/holder_moves.h"
#include "pkg/controller/egressgateway/render.h"
#include "pkg/controller/egressgateway/status.h"
#include "pkg/controller/egressgateway/status_processor.h"
#include "pkg/controller/egressgateway/view.h"
#include "pkg/controller/names.h"
#include "pkg/controller/pool_sync.h"

namespace egress::controller {
namespace {

using controllerruntime::ReconcileResult;

std::string join(const std::vector<ipam::Address>& addresses) {
  std::string out;
  for (const auto& a : addresses) {
    out += (out.empty() ? "" : ", ") + a.toString();
  }
  return out;
}

// Label values are at most 63 characters, and every gateway object is labelled with the
// policy's name.
constexpr size_t kMaxPolicyName = 63;

// How long a pool's status (and egress_ipam_pool_addresses) waits for more allocations before it
// is recounted: the counts lag the policies' ledgers by at most this plus one write. Shorter, a
// cold start of many policies over a few pools rewrites each pool about once per batch, which
// at 1 s was more writes than the policies' own.
constexpr std::chrono::seconds kPoolStatusBatch{5};

validation::FieldErrors validatePolicy(const v1alpha1::EgressGatewayPolicy& policy) {
  validation::FieldErrors errs = v1alpha1::validate(policy);
  if (policy.metadata.name.size() > kMaxPolicyName) {
    errs.push_back({"metadata.name",
                    "must be no more than 63 characters (it labels the "
                    "gateway's objects)"});
  }
  return errs;
}

// Whether the status records this ledger with these holders already.
bool sameRecord(const v1alpha1::EgressGatewayPolicyStatus& status,
                const v1alpha1::EgressGatewayPolicyStatus& desired) {
  if (status.pool != desired.pool || status.gateways.size() != desired.gateways.size()) {
    return false;
  }
  for (size_t i = 0; i < status.gateways.size(); ++i) {
    const auto& a = status.gateways[i];
    const auto& b = desired.gateways[i];
    if (gatewayEntry(a) != gatewayEntry(b) || a.podUID != b.podUID) {
      return false;
    }
  }
  return true;
}

// Addresses came free: the policies waiting for a free address of a freed one's pool and family,
// and those that name one of them explicitly (an AddressConflict), try again.
void wakeWaiting(Context& ctx, const std::vector<ipam::Address>& freed) {
  for (const auto& a : freed) {
    ctx.agents.forgetWithdrawal(a);
  }
  for (const auto& waiting : ctx.allocator.waitingFor(freed)) {
    ctx.policies.add(ctx.allocator.ownerName(waiting));
  }
  for (const auto& a : freed) {
    for (const auto& key : ctx.cache.policyKeysWithAddress(a.toString())) {
      ctx.policies.add(key);
    }
  }
}

// Of `addresses` (held by the policy of `key`, named by no view of it now), those a live agent
// may still answer for: their withdrawal is recorded as of the slices' version the cache's
// reflector has reached, unless recorded already.
std::set<ipam::Address> stillWithdrawing(Context& ctx, const std::set<ipam::Address>& addresses,
                                         const std::string& key) {
  const auto now = ctx.clock.now();
  // The cache no longer shows a slice naming them, so the version its reflector has reached is
  // at least that of the write that dropped them (not indexedResourceVersion(), which may lag the
  // indexer: too little). Waiting for it may wait a little longer than needed, never too little.
  const std::string version = ctx.cache.slices().lastSyncResourceVersion();
  std::set<ipam::Address> out;
  for (const auto& a : addresses) {
    if (ctx.agents.withdrawn(a, version, key, now)) {
      out.insert(a);
    }
  }
  return out;
}

}  // namespace

const std::string& ownerOf(const EgressGatewayPolicyInfo& info) {
  // A policy always has a uid from the API server; the key stands in for hand-built ones.
  return info.policy && !info.policy->metadata.uid.empty() ? info.policy->metadata.uid : info.key;
}

bool releaseWaits(const Context& ctx, const std::string& uid) {
  auto held = ctx.allocator.heldBy(uid);
  for (const auto& entry : ctx.allocator.committedEntries(uid)) {
    for (const auto& a : entry) {
      held.erase(a);
    }
  }
  return !held.empty();
}

void returnUnwritten(Context& ctx, const EgressGatewayPolicyInfo& info,
                     const v1alpha1::EgressGatewayPolicy& written) {
  const auto& status = written.status;
  // An empty ledger names no pool: what was taken came from the one the spec names.
  const std::string& pool = status.pool.empty() ? info.poolName : status.pool;
  const auto ledger = statusLedger(status);
  auto released =
      ctx.allocator.commit(ownerOf(info), pool, ledger, addressesInUse(ctx, info, ledger));
  if (released.empty()) {
    return;
  }
  spdlog::info("egressgateway: policy {}: {} returned to IPAMPool {} (never written to its ledger)",
               info.key, join(released), pool);
  wakeWaiting(ctx, released);
  if (!pool.empty()) {
    ctx.pools.addAfter(pool, kPoolStatusBatch);
  }
}

std::set<ipam::Address> addressesInUse(Context& ctx, const EgressGatewayPolicyInfo& info,
                                       const std::vector<ipam::Entry>& ledger) {
  // What the published view names (the slices as cached, and as this process last wrote them
  // if the cache is behind): an agent may hold it as long as a slice says so.
  std::set<ipam::Address> named = info.viewInFlight;
  for (const auto& slice : info.deployment.slices) {
    named.merge(sliceAddresses(*slice));
  }
  std::set<ipam::Address> out = named;
  // An address a live agent still answers for is not free: another policy's holder must not
  // take it before that agent has let go (it does once the view no longer names it).
  for (const auto& [address, nodes] : ctx.agents.claims(ctx.clock.now())) {
    out.insert(address);
  }
  // What the commit would free: the policy's addresses beyond the ledger that nothing above
  // keeps. An address named again (or still listed) has no withdrawal to wait for: dropped
  // later, it is recorded then, at a newer version.
  std::set<ipam::Address> leaving;
  for (const auto& a : ctx.allocator.heldBy(ownerOf(info))) {
    const bool listed = std::any_of(ledger.begin(), ledger.end(), [&](const ipam::Entry& e) {
      return std::find(e.begin(), e.end(), a) != e.end();
    });
    if (listed || named.contains(a)) {
      ctx.agents.forgetWithdrawal(a);
    } else if (!out.contains(a)) {
      leaving.insert(a);
    }
  }
  out.merge(stillWithdrawing(ctx, leaving, info.key));
  return out;
}

const std::string& IPPoolProcessor::name() const {
  static const std::string kName = "IPPoolProcessor";
  return kName;
}

ipam::AssignRequest IPPoolProcessor::request(const EgressGatewayPolicyInfo& info) const {
  const auto& policy = *info.policy;
  ipam::AssignRequest r;
  r.owner = ownerOf(info);
  r.name = info.key;
  r.families = policyFamilies(policy);
  r.replicas = gatewayShape(policy, info.config.get()).replicas;
  r.explicitAddresses = policy.spec.egressIP.addresses;
  r.pool = info.poolName;
  const auto committed = ctx_.allocator.committedPool(r.owner);
  if (committed && !ctx_.allocator.committedEntries(r.owner).empty()) {
    // The ledger decides the pool once it holds addresses (status.pool): never the spec's
    // history, which a 1.20 server cannot keep immutable.
    r.pool = *committed;
    const auto& named = policy.spec.egressIP.pool;
    if (named && *named != *committed) {
      r.allowNew = false;
      r.denied = ipam::Shortfall::kPoolChanged;
      r.deniedMessage = "spec.egressIP.pool is " + *named + ", but the policy's addresses are " +
                        (committed->empty() ? "not from a pool" : "from IPAMPool " + *committed) +
                        " (status.pool); a policy's pool cannot change: re-create the policy "
                        "to move it";
      return r;
    }
  }
  auto pool = ctx_.cache.pool(r.pool);
  if (pool && pool->spec.namespaceSelector) {
    static const meta::StringMap kNoLabels;
    const auto& labels = info.policyNamespace ? info.policyNamespace->metadata.labels : kNoLabels;
    if (!pool->spec.namespaceSelector->matches(labels)) {
      r.allowNew = false;
      r.denied = ipam::Shortfall::kNotAllowed;
      r.deniedMessage = "IPAMPool " + r.pool + " does not admit namespace " + info.ns +
                        " (its spec.namespaceSelector)";
    }
  }
  if (r.allowNew && ctx_.agents.startPending(ctx_.clock.now())) {
    r.allowNew = false;
    r.denied = ipam::Shortfall::kAgentsCatchingUp;
    r.deniedMessage =
        "waiting for every live egw-agent to report the EgressPolicySlices as of this operator's "
        "start (resourceVersion " +
        ctx_.agents.startVersion() +
        "): an address found free may have been let go of moments before, by an agent that has "
        "not said so yet";
  }
  return r;
}

net::awaitable<IPPoolProcessor::Outcome> IPPoolProcessor::process(
    const EgressGatewayPolicyInfo& info, PolicyWriter& writer) {
  const auto& policy = *info.policy;
  // The once-per-transition checks read the status this reconcile starts from: what this process
  // last wrote if the watch has yet to deliver it (info.current, which no write changes), or they
  // report again until the watch catches up.
  const v1alpha1::EgressGatewayPolicyStatus& found = info.current->status;
  const std::string reported = conditionReason(found.conditions, kConditionIPAllocated);
  Outcome out;
  LedgerPlan& plan = out.plan;
  plan.invalid = validatePolicy(policy);
  if (!plan.invalid.empty()) {
    if (reported != kReasonInvalidSpec || found.observedGeneration != policy.metadata.generation) {
      ctx_.recorder.event(referenceTo(kPolicyKind, policy.metadata), core::kEventTypeWarning,
                          kReasonInvalidSpec, validation::join(plan.invalid));
    }
    // What it holds stays held and in the ledger; nothing new until the spec is fixed.
    plan.entries = statusLedger(found);
    plan.holders = entryHolders(info, found, plan.entries);
    co_return out;
  }
  syncPoolFromCache(ctx_, info.poolName);
  const auto req = request(info);
  plan.assignment = ctx_.allocator.assign(req);
  // Whichever shortfall is reported first, a policy the start barrier kept from a new address is
  // queued again once the agents have caught up.
  if (!req.allowNew && req.denied == ipam::Shortfall::kAgentsCatchingUp &&
      plan.assignment->shortfall != ipam::Shortfall::kNone) {
    ctx_.agents.awaitStart(info.key);
  }
  const ipam::Assignment& assignment = *plan.assignment;
  plan.entries = assignment.entries;
  std::vector<HolderMove> moved;
  std::vector<HolderMove> given;
  auto holders = co_await chooseHolders(info, plan.entries, found, moved, given);
  if (!holders) {
    out.result = ReconcileResult::error(holders.error());
    co_return out;
  }
  plan.holders = std::move(*holders);
  auto desired = desiredStatus(info, writer.policy(), plan, std::string(),
                               meta::truncateToSeconds(ctx_.clock.wallNow()));
  const bool recordChanged = !sameRecord(found, desired);
  if (recordChanged) {
    // What the ledger gains, against the status as found: not assignment.allocated, which a
    // retry after a conflicting write no longer lists (the allocator kept what it took).
    std::set<ipam::Address> before;
    for (const auto& e : statusLedger(found)) {
      before.insert(e.begin(), e.end());
    }
    std::vector<ipam::Address> gained;
    for (const auto& e : assignment.entries) {
      std::copy_if(e.begin(), e.end(), std::back_inserter(gained),
                   [&](const ipam::Address& a) { return !before.contains(a); });
    }
    // A conflict requeues: the next try reads the newer policy, and the allocator keeps what it
    // took meanwhile.
    out.result = co_await writer.write(std::move(desired), "writing the ledger to status", nullptr);
    if (!out.result.isDone()) {
      co_return out;
    }
    const auto ref = referenceTo(kPolicyKind, policy.metadata);
    if (!gained.empty()) {
      ctx_.recorder.event(
          ref, core::kEventTypeNormal, kEventAllocated,
          join(gained) +
              (assignment.pool.empty() ? "" : " allocated from IPAMPool " + assignment.pool));
    }
    for (const auto& m : moved) {
      const std::string value = entryText(assignment.entries[m.entry]);
      const std::string fromNode =
          m.from.empty() ? "" : info.egressPods.at(m.from).pod->spec.nodeName;
      const std::string& toNode = info.egressPods.at(m.to).pod->spec.nodeName;
      const std::string from =
          m.from.empty() ? "no gateway pod" : "gateway pod " + m.from + " on node " + fromNode;
      const std::string why =
          m.reported
              ? " (the agents moved it: node " + toNode + "'s agent reports it held)"
              : " (its agent Lease " + std::string(kAgentLeasePrefix) + fromNode + " is stale)";
      ctx_.recorder.event(
          ref, core::kEventTypeNormal, kEventMoved,
          value + " moved from " + from + " to gateway pod " + m.to + " on node " + toNode + why);
      spdlog::info("egressgateway: policy {}: {} moved from {} to {} ({}){}", info.key, value, from,
                   m.to, toNode, why);
    }
    // A first holder is routine, and the status says it: no Event (one POST per gateway pod).
    for (const auto& g : given) {
      spdlog::info("egressgateway: policy {}: gateway pod {} holds {}", info.key, g.to,
                   entryText(assignment.entries[g.entry]));
    }
  }
  // Once per transition (the condition the reconcile found says whether it was reported),
  // whether or not the ledger changed: a policy that never got an address writes no ledger.
  reportShortfall(info, assignment, reported);
  auto released = ctx_.allocator.commit(ownerOf(info), assignment.pool, assignment.entries,
                                        addressesInUse(ctx_, info, assignment.entries));
  if (!released.empty()) {
    ctx_.recorder.event(
        referenceTo(kPolicyKind, policy.metadata), core::kEventTypeNormal, kEventReleased,
        join(released) +
            (assignment.pool.empty() ? " released" : " returned to IPAMPool " + assignment.pool));
    wakeWaiting(ctx_, released);
  }
  if ((recordChanged || !released.empty()) && !assignment.pool.empty()) {
    // Batched: a burst of allocations in one pool rewrites its status once, not per policy.
    ctx_.pools.addAfter(assignment.pool, kPoolStatusBatch);
  }
  co_return out;
}

void IPPoolProcessor::reportShortfall(const EgressGatewayPolicyInfo& info,
                                      const ipam::Assignment& assignment,
                                      const std::string& reported) {
  if (assignment.shortfall == ipam::Shortfall::kNone) {
    return;
  }
  const std::string reason(ipam::shortfallName(assignment.shortfall));
  if (reported == reason) {
    return;  // already reported
  }
  ctx_.recorder.event(referenceTo(kPolicyKind, info.policy->metadata), core::kEventTypeWarning,
                      reason, assignment.message);
  ctx_.metrics.allocationFailed(assignment.pool, reason);
}

net::awaitable<Result<bool, std::string>> IPPoolProcessor::renewedSinceSeen(
    const std::string& node) {
  const auto seen = ctx_.cache.agentLease(node);
  kube::Resource leases = agentLeasesResource();
  std::string ns = ctx_.cache.agentLeaseNamespace();
  std::string name = std::string(kAgentLeasePrefix) + node;
  std::string subresource;
  auto got = co_await ctx_.client.get(std::move(leases), std::move(ns), std::move(name),
                                      std::move(subresource));
  if (!got) {
    if (got.error().isNotFound()) {
      co_return false;
    }
    co_return "reading the agent Lease of node " + node + ": " + got.error().message();
  }
  auto lease = coordination::decodeLease(*got);
  if (!lease) {
    co_return "decoding the agent Lease of node " + node + ": " + lease.error().toString();
  }
  if (seen && seen->spec == lease->spec) {
    co_return false;
  }
  // A renewal the watch has not delivered: counted from now, as if the watch had.
  ctx_.agents.observe(*lease, ctx_.clock.now());
  co_return ctx_.agents.live(node, ctx_.clock.now());
}

net::awaitable<Result<std::vector<std::string>, std::string>> IPPoolProcessor::chooseHolders(
    const EgressGatewayPolicyInfo& info, const std::vector<ipam::Entry>& ledger,
    const v1alpha1::EgressGatewayPolicyStatus& found, std::vector<HolderMove>& moved,
    std::vector<HolderMove>& given) {
  auto holders = entryHolders(info, found, ledger);
  if (agentEnabled(info.config.get())) {
    const auto now = ctx_.clock.now();
    // First what the agents did: they move an address among the policy's gateway nodes
    // themselves, API server or not; the ledger records it.
    for (const auto& move : reportedHolderMoves(info, ledger, holders, ctx_.agents.claims(now))) {
      holders[move.entry] = move.to;
      moved.push_back(move);
    }
    auto fresh = [&](const std::string& node) { return ctx_.agents.live(node, now); };
    for (const auto& move : staleHolderMoves(info, holders, fresh)) {
      // Stale as this process saw it: its Lease watch may lag (a stall, a relist). Ask the API
      // server before taking the address away from a node whose agent may still hold it.
      const std::string& fromNode = info.egressPods.at(move.from).pod->spec.nodeName;
      auto renewed = co_await renewedSinceSeen(fromNode);
      if (!renewed) {
        co_return renewed.error();
      }
      if (*renewed) {
        spdlog::info("egressgateway: policy {}: not moving {} off {}: its agent renewed its Lease",
                     info.key, entryText(ledger[move.entry]), fromNode);
        continue;
      }
      // One status write names the new holder instead of the old: the view follows, and names
      // the new one only once the old node's agent has let go (viewHolders).
      holders[move.entry] = move.to;
      moved.push_back(move);
    }
  }
  for (const auto& g : newHolders(info, holders)) {
    holders[g.entry] = g.to;
    given.push_back(g);
  }
  co_return holders;
}

bool IPPoolProcessor::releaseFormerOwners(const EgressGatewayPolicyInfo& info) {
  if (info.undecodable) {
    return false;  // it exists, we just cannot read it: it keeps everything (fail closed)
  }
  const std::string current = info.policy ? ownerOf(info) : std::string();
  auto former = ctx_.allocator.ownersNamed(info.key);
  std::erase(former, current);
  if (former.empty()) {
    return false;  // the usual case, every reconcile: nothing to look at
  }
  const auto claims = ctx_.agents.claims(ctx_.clock.now());
  bool freed = false;
  for (const auto& owner : former) {
    if (std::any_of(info.deployment.slices.begin(), info.deployment.slices.end(),
                    [&](const SlicePtr& s) { return s->spec.policy.uid == owner; })) {
      continue;  // its view is still published: the slices' rewrite or deletion brings us back
    }
    const auto held = ctx_.allocator.heldBy(owner);
    if (std::any_of(held.begin(), held.end(), [&](const auto& a) { return claims.contains(a); })) {
      // A live agent still answers for it: the agent's report changing (the agentlease
      // controller queues the address's holder) brings us back.
      continue;
    }
    if (!stillWithdrawing(ctx_, held, info.key).empty()) {
      // A live agent may answer for it from a read before the slices' deletion: the agentlease
      // controller queues this key once every live agent reports having observed it.
      continue;
    }
    const auto committed = ctx_.allocator.committedPool(owner);
    auto released = ctx_.allocator.releaseAll(owner);
    if (released.empty()) {
      continue;
    }
    freed = true;
    spdlog::info("egressgateway: policy {} (uid {}) is gone: released {}", info.key, owner,
                 join(released));
    if (info.policy) {
      ctx_.recorder.event(referenceTo(kPolicyKind, info.policy->metadata), core::kEventTypeNormal,
                          kEventReleased,
                          join(released) + " of the previous policy named " + info.key + " (uid " +
                              owner + ") released: no data-plane view names them any more");
    }
    // The pools to recount: its ledger's (whose CIDRs may no longer contain them), and those the
    // addresses return to (an owner a new leader found only in use has no ledger pool).
    std::set<std::string> pools;
    if (committed) {
      pools.insert(*committed);
    }
    for (const auto& a : released) {
      pools.insert(ctx_.allocator.poolContaining(a));
    }
    pools.erase("");
    for (const auto& pool : pools) {
      ctx_.pools.addAfter(pool, kPoolStatusBatch);
    }
    wakeWaiting(ctx_, released);
  }
  return freed;
}

}  // namespace egress::controller
