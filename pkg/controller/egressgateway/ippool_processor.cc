#include "pkg/controller/egressgateway/ippool_processor.h"

#include <algorithm>
#include <charconv>
#include <tuple>

#include <spdlog/spdlog.h>

#include "pkg/apis/networking/v1alpha1/validation.h"
#include "pkg/client/networking/v1alpha1/zz_generated.clientset.h"
#include "pkg/controller/conditions.h"
#include "pkg/controller/egressgateway/holder_moves.h"
#include "pkg/controller/egressgateway/render.h"
#include "pkg/controller/egressgateway/status.h"
#include "pkg/controller/names.h"

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
// is recounted: the counts lag the policies' ledgers by at most this plus one write;
// at 1 s a cold start of 1,000 policies over 20 pools rewrote each pool every second, 1.5 PUTs
// per policy on top of the 7 writes a policy needs (make bench, docs/performance.md).
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

bool sameLedger(const v1alpha1::EgressGatewayPolicyStatus& status,
                const ipam::Assignment& assignment) {
  return status.pool == assignment.pool && statusLedger(status) == assignment.entries &&
         status.gateways.size() == assignment.entries.size();
}

// Addresses came free: the policies waiting for a free address of the pool, and those that name
// one of them explicitly (an AddressConflict), try again.
void wakeWaiting(Context& ctx, const std::string& pool, const std::vector<ipam::Address>& freed) {
  if (!pool.empty()) {
    for (const auto& waiting : ctx.allocator.waitingFor(pool)) {
      ctx.policies.add(ctx.allocator.ownerName(waiting));
    }
  }
  for (const auto& a : freed) {
    for (const auto& key : ctx.cache.policyKeysWithAddress(a.toString())) {
      ctx.policies.add(key);
    }
  }
}

// Whether resourceVersion `cached` is certainly older than `written`: both integers, and less.
bool versionBefore(const std::string& cached, const std::string& written) {
  uint64_t a = 0;
  uint64_t b = 0;
  const auto* ae = cached.data() + cached.size();
  const auto* be = written.data() + written.size();
  auto [ap, aerr] = std::from_chars(cached.data(), ae, a);
  auto [bp, berr] = std::from_chars(written.data(), be, b);
  return aerr == std::errc() && berr == std::errc() && ap == ae && bp == be && a < b;
}

}  // namespace

void syncPoolFromCache(Context& ctx, const std::string& name) {
  if (name.empty()) {
    return;
  }
  auto pool = ctx.cache.pool(name);
  const ipam::PoolSpec* known = ctx.allocator.poolSpec(name);
  if (!pool) {
    if (known != nullptr) {
      ctx.allocator.removePool(name);
    }
    return;
  }
  ipam::PoolSpec spec;
  spec.name = name;
  spec.created = std::chrono::duration_cast<std::chrono::seconds>(
                     pool->metadata.creationTimestamp.time_since_epoch())
                     .count();
  spec.cidrs = pool->spec.cidrs;
  spec.exclude = pool->spec.exclude;
  spec.disabled = pool->spec.disabled;
  if (auto errs = v1alpha1::validate(*pool); !errs.empty()) {
    spec.invalid = validation::join(errs);
  }
  if (known == nullptr || !(*known == spec)) {
    ctx.allocator.setPool(spec);
  }
}

const std::string& ownerOf(const EgressGatewayPolicyInfo& info) {
  // A policy always has a uid from the API server; the key stands in for hand-built ones.
  return info.policy && !info.policy->metadata.uid.empty() ? info.policy->metadata.uid : info.key;
}

std::set<ipam::Address> addressesInUse(const Context& ctx, const EgressGatewayPolicyInfo& info) {
  std::set<ipam::Address> out;
  for (const auto& [name, p] : info.egressPods) {
    if (auto entry = parseEntryText(p.egressIPs)) {
      out.insert(entry->begin(), entry->end());
    }
  }
  // An address a live agent still answers for is not free: another policy's holder must not
  // take it before that agent has let go (it does once the view no longer names it).
  for (const auto& [address, nodes] : ctx.agents.claims(ctx.clock.now())) {
    out.insert(address);
  }
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
  return r;
}

net::awaitable<ReconcileResult> IPPoolProcessor::process(EgressGatewayPolicyInfo& info) {
  const auto& policy = *info.policy;
  // The once-per-transition checks read the status as this reconcile found it: what this
  // process last wrote if the watch has yet to deliver it (info.current), or they report again
  // until the watch catches up. Copied: the ledger write below replaces info.current.
  const auto& found = info.current ? info.current->status : policy.status;
  const std::string reported = conditionReason(found.conditions, kConditionIPAllocated);
  const int64_t reportedGeneration = found.observedGeneration;
  info.invalid = validatePolicy(policy);
  if (!info.invalid.empty()) {
    if (reported != "InvalidSpec" || reportedGeneration != policy.metadata.generation) {
      ctx_.recorder.event(referenceTo(kPolicyKind, policy.metadata), core::kEventTypeWarning,
                          "InvalidSpec", validation::join(info.invalid));
    }
    // What it holds stays held and in the ledger; nothing new until the spec is fixed.
    co_return ReconcileResult::done();
  }
  syncPoolFromCache(ctx_, info.poolName);
  ipam::Assignment assignment = ctx_.allocator.assign(request(info));
  info.assignment = assignment;
  const bool ledgerChanged = !sameLedger(info.current->status, assignment);
  if (ledgerChanged) {
    auto written = co_await writeLedger(info);
    if (!written.isDone()) {
      co_return written;
    }
    if (!assignment.allocated.empty()) {
      ctx_.recorder.event(
          referenceTo(kPolicyKind, policy.metadata), core::kEventTypeNormal, "Allocated",
          join(assignment.allocated) +
              (assignment.pool.empty() ? "" : " allocated from IPAMPool " + assignment.pool));
    }
  }
  // Once per transition (the condition the reconcile found says whether it was reported),
  // whether or not the ledger changed: a policy that never got an address writes no ledger.
  reportShortfall(info, assignment, reported);
  auto released = ctx_.allocator.commit(ownerOf(info), assignment.pool, assignment.entries,
                                        addressesInUse(ctx_, info));
  if (!released.empty()) {
    ctx_.recorder.event(
        referenceTo(kPolicyKind, policy.metadata), core::kEventTypeNormal, "Released",
        join(released) +
            (assignment.pool.empty() ? " released" : " returned to IPAMPool " + assignment.pool));
    wakeWaiting(ctx_, assignment.pool, released);
  }
  if ((ledgerChanged || !released.empty()) && !assignment.pool.empty()) {
    // Batched: a burst of allocations in one pool rewrites its status once, not per policy.
    ctx_.pools.addAfter(assignment.pool, kPoolStatusBatch);
  }
  co_return co_await annotatePods(info);
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

net::awaitable<ReconcileResult> IPPoolProcessor::writeLedger(EgressGatewayPolicyInfo& info) {
  v1alpha1::EgressGatewayPolicy updated = *info.current;
  updated.status = desiredStatus(info, meta::truncateToSeconds(ctx_.clock.wallNow()));
  client::TypedClient<v1alpha1::EgressGatewayPolicy> policies(ctx_.client, info.ns);
  kube::WriteOptions opts;
  opts.fieldManager = std::string(kFieldManager);
  auto written = co_await policies.updateStatus(std::move(updated), std::move(opts));
  if (!written) {
    if (written.error().isConflict()) {
      // Our copy is stale: the next try reads the newer one. The allocator keeps what it took.
      co_return ReconcileResult::requeue();
    }
    if (written.error().isNotFound()) {
      co_return ReconcileResult::done();  // deleted meanwhile: its delete event comes next
    }
    co_return ReconcileResult::error("writing the ledger to status: " + written.error().message());
  }
  info.superseded.push_back(info.current->metadata.resourceVersion);
  info.current = std::move(*written);
  co_return ReconcileResult::done();
}

net::awaitable<Result<bool, std::string>> IPPoolProcessor::setEntry(const std::string& key,
                                                                    const core::Pod& pod,
                                                                    const std::string& value) {
  const std::string annotation = value.empty() ? "null" : "\"" + value + "\"";
  std::string body = R"({"metadata":{"annotations":{")" + std::string(kEgressIPsAnnotation) +
                     "\":" + annotation + "}}}";
  kube::Resource pods = podsResource();
  kube::WriteOptions opts;
  opts.fieldManager = std::string(kFieldManager);
  std::string podNs = pod.metadata.namespace_;
  std::string podName = pod.metadata.name;
  auto patched = co_await ctx_.client.patch(std::move(pods), std::move(podNs), std::move(podName),
                                            kube::PatchType::Merge, std::move(body),
                                            std::move(opts), std::string());
  if (!patched) {
    if (patched.error().isNotFound()) {
      podWrites_[key].erase(pod.metadata.uid);
      co_return false;  // gone meanwhile
    }
    co_return "annotating gateway pod " + pod.metadata.name + ": " + patched.error().message();
  }
  std::string written;
  if (const auto md = patched->FindMember("metadata");
      md != patched->MemberEnd() && md->value.IsObject()) {
    if (const auto rv = md->value.FindMember("resourceVersion");
        rv != md->value.MemberEnd() && rv->value.IsString()) {
      written.assign(rv->value.GetString(), rv->value.GetStringLength());
    }
  }
  if (!written.empty()) {
    podWrites_[key][pod.metadata.uid] = PodWrite{std::move(written), value};
  }
  co_return true;
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

net::awaitable<ReconcileResult> IPPoolProcessor::moveStaleHolders(
    const EgressGatewayPolicyInfo& info, std::vector<std::string>& holders,
    std::set<std::string>& written) {
  const auto& ledger = info.assignment->entries;
  const auto now = ctx_.clock.now();
  auto fresh = [&](const std::string& node) { return ctx_.agents.live(node, now); };
  for (const auto& move : staleHolderMoves(info, holders, fresh)) {
    const std::string value = entryText(ledger[move.entry]);
    const std::string& fromNode = info.egressPods.at(move.from).pod->spec.nodeName;
    const std::string& toNode = info.egressPods.at(move.to).pod->spec.nodeName;
    // Stale as this process saw it: its Lease watch may lag (a stall, a relist). Ask the API
    // server before taking the address away from a node whose agent may still hold it.
    auto renewed = co_await renewedSinceSeen(fromNode);
    if (!renewed) {
      co_return ReconcileResult::error(renewed.error());
    }
    if (*renewed) {
      spdlog::info("egressgateway: policy {}: not moving {} off {}: its agent renewed its Lease",
                   info.key, value, fromNode);
      continue;
    }
    // The new holder first: until the old one loses it, both carry the entry and the agents
    // pick the one on the node with a fresh Lease, so there is no moment without a holder.
    auto taken = co_await setEntry(info.key, *info.egressPods.at(move.to).pod, value);
    if (!taken) {
      co_return ReconcileResult::error(taken.error());
    }
    if (!*taken) {
      continue;
    }
    const std::string none;
    auto released = co_await setEntry(info.key, *info.egressPods.at(move.from).pod, none);
    if (!released) {
      co_return ReconcileResult::error(released.error());
    }
    holders[move.entry] = move.to;
    written.insert(move.from);
    written.insert(move.to);
    ctx_.recorder.event(referenceTo(kPolicyKind, info.policy->metadata), core::kEventTypeNormal,
                        "Moved",
                        value + " moved from gateway pod " + move.from + " on node " + fromNode +
                            " (its agent Lease " + std::string(kAgentLeasePrefix) + fromNode +
                            " is stale) to gateway pod " + move.to + " on node " + toNode);
    spdlog::info("egressgateway: policy {}: {} moved from {} ({}, agent Lease stale) to {} ({})",
                 info.key, value, move.from, fromNode, move.to, toNode);
  }
  co_return ReconcileResult::done();
}

net::awaitable<ReconcileResult> IPPoolProcessor::annotatePods(EgressGatewayPolicyInfo& info) {
  const auto& ledger = info.assignment->entries;
  auto holders = entryHolders(info, ledger);
  // Pods already written by this reconcile (a move), left alone below.
  std::set<std::string> written;
  if (agentEnabled(info.config.get())) {
    auto moved = co_await moveStaleHolders(info, holders, written);
    if (!moved.isDone()) {
      co_return moved;
    }
  }
  std::vector<std::string> free;
  std::set<std::string> holding;
  for (size_t i = 0; i < ledger.size(); ++i) {
    if (holders[i].empty()) {
      free.push_back(entryText(ledger[i]));
    } else {
      holding.insert(holders[i]);
    }
  }
  // Pods that need an entry, oldest first: those without one, and those whose entry is not (or
  // no longer) theirs. Terminating pods keep what they have until they are gone.
  std::vector<EgressPodInfo*> waiting;
  for (auto& [name, p] : info.egressPods) {
    if (!p.terminating && holding.count(name) == 0 && written.count(name) == 0) {
      waiting.push_back(&p);
    }
  }
  std::sort(waiting.begin(), waiting.end(), [](const EgressPodInfo* a, const EgressPodInfo* b) {
    return std::tie(a->pod->metadata.creationTimestamp, a->pod->metadata.name) <
           std::tie(b->pod->metadata.creationTimestamp, b->pod->metadata.name);
  });
  size_t nextFree = 0;
  for (EgressPodInfo* p : waiting) {
    std::string value;
    if (nextFree < free.size()) {
      value = free[nextFree++];
    } else if (p->egressIPs.empty()) {
      continue;  // nothing to give, nothing to take away
    }
    const std::string& podName = p->pod->metadata.name;
    auto patched = co_await setEntry(info.key, *p->pod, value);
    if (!patched) {
      co_return ReconcileResult::error(patched.error());
    }
    if (!*patched) {
      continue;  // gone meanwhile: it holds nothing
    }
    if (!value.empty()) {
      ctx_.recorder.event(referenceTo(kPolicyKind, info.policy->metadata), core::kEventTypeNormal,
                          "Assigned", "gateway pod " + podName + " holds " + value);
    }
    // The rest of this reconcile sees what the pod now carries, not the cached copy the watch
    // has yet to replace: otherwise a pod that is already Ready (its Deployment Available) is
    // reported as holding nothing, one status write (Ready=False GatewaysNotReady) before Ready.
    p->egressIPs = value;
  }
  co_return ReconcileResult::done();
}

void IPPoolProcessor::useOwnPodWrites(EgressGatewayPolicyInfo& info) {
  auto it = podWrites_.find(info.key);
  if (it == podWrites_.end()) {
    return;
  }
  auto& writes = it->second;
  std::map<std::string, EgressPodInfo*> byUid;
  for (auto& [name, p] : info.egressPods) {
    byUid.emplace(p.pod->metadata.uid, &p);
  }
  std::erase_if(writes, [&](const auto& kv) {
    auto pod = byUid.find(kv.first);
    if (pod == byUid.end() ||
        !versionBefore(pod->second->pod->metadata.resourceVersion, kv.second.written)) {
      return true;  // gone, or the cache shows our write (or a later one, or cannot tell)
    }
    pod->second->egressIPs = kv.second.value;
    return false;
  });
  if (writes.empty()) {
    podWrites_.erase(it);
  }
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
  // What any pod labelled as the name's gateway carries, proven or not, terminating or not (an
  // old gateway adopted by the successor, or one whose owners the garbage collector removed,
  // may still send from it); and the slices still published under a former uid.
  std::set<ipam::Address> carried;
  auto carry = [&](const std::string& annotation) {
    if (auto entry = parseEntryText(annotation)) {
      carried.insert(entry->begin(), entry->end());
    }
  };
  for (const auto& [name, p] : info.egressPods) {
    carry(p.egressIPs);
  }
  for (const auto& pod : info.unprovenGatewayPods) {
    if (auto it = pod->metadata.annotations.find(std::string(kEgressIPsAnnotation));
        it != pod->metadata.annotations.end()) {
      carry(it->second);
    }
  }
  const auto claims = ctx_.agents.claims(ctx_.clock.now());
  bool freed = false;
  for (const auto& owner : former) {
    if (std::any_of(info.deployment.slices.begin(), info.deployment.slices.end(),
                    [&](const SlicePtr& s) { return s->spec.policy.uid == owner; })) {
      continue;  // its view is still published: the slices' rewrite or deletion brings us back
    }
    const auto held = ctx_.allocator.heldBy(owner);
    if (std::any_of(held.begin(), held.end(),
                    [&](const auto& a) { return carried.contains(a) || claims.contains(a); })) {
      // A pod still carries it, or a live agent still answers for it: the pod's deletion or
      // change, or the agent's report changing (the agentlease controller queues the address's
      // holder), brings us back.
      continue;
    }
    const auto pool = ctx_.allocator.committedPool(owner);
    auto released = ctx_.allocator.releaseAll(owner);
    if (released.empty()) {
      continue;
    }
    freed = true;
    spdlog::info("egressgateway: policy {} (uid {}) is gone: released {}", info.key, owner,
                 join(released));
    if (info.policy) {
      ctx_.recorder.event(referenceTo(kPolicyKind, info.policy->metadata), core::kEventTypeNormal,
                          "Released",
                          join(released) + " of the previous policy named " + info.key + " (uid " +
                              owner + ") released: its gateway pods are gone");
    }
    if (pool && !pool->empty()) {
      ctx_.pools.addAfter(*pool, kPoolStatusBatch);
    }
    wakeWaiting(ctx_, pool.value_or(""), released);
  }
  return freed;
}

}  // namespace egress::controller
