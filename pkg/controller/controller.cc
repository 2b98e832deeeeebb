#include "pkg/controller/controller.h"

#include <algorithm>

#include <boost/asio/co_spawn.hpp>
#include <spdlog/spdlog.h>

#include "pkg/apis/meta/time.h"
#include "pkg/base/notifier.h"
#include "pkg/controller/names.h"
#include "pkg/controller/reserved.h"
#include "pkg/controllerruntime/event_handlers.h"

namespace egress::controller {
namespace {

// Subcontrollers that run concurrently under one run(): the last to finish wakes it.
struct RunGroup {
  explicit RunGroup(const net::any_io_executor& ex) : finished(ex) {}
  int live = 0;
  Notifier finished;
};

// Static, taking its state explicitly (the g++ 12 bug with spawned member coroutines).
net::awaitable<void> runOne(controllerruntime::Runnable* runnable, std::shared_ptr<RunGroup> g) {
  co_await runnable->run();
  if (--g->live == 0) {
    g->finished.notify();
  }
}

const rapidjson::Value* member(const rapidjson::Value& v, const char* name) {
  if (!v.IsObject()) {
    return nullptr;
  }
  auto it = v.FindMember(name);
  return it == v.MemberEnd() ? nullptr : &it->value;
}

std::string stringMember(const rapidjson::Value& v, const char* name) {
  const auto* m = member(v, name);
  return m != nullptr && m->IsString() ? std::string(m->GetString(), m->GetStringLength()) : "";
}

std::vector<std::string> strings(const rapidjson::Value* v) {
  std::vector<std::string> out;
  if (v != nullptr && v->IsArray()) {
    for (const auto& s : v->GetArray()) {
      if (s.IsString()) {
        out.emplace_back(s.GetString(), s.GetStringLength());
      }
    }
  }
  return out;
}

}  // namespace

std::optional<RawLedger> ledgerFromRaw(const rapidjson::Value& item) {
  const auto* md = member(item, "metadata");
  if (md == nullptr) {
    return std::nullopt;
  }
  RawLedger out;
  out.ref.kind = std::string(kPolicyKind);
  out.ref.apiVersion = std::string(kApiVersion);
  out.ref.name = stringMember(*md, "name");
  out.ref.namespace_ = stringMember(*md, "namespace");
  out.ref.uid = stringMember(*md, "uid");
  out.ref.resourceVersion = stringMember(*md, "resourceVersion");
  if (out.ref.name.empty()) {
    return std::nullopt;
  }
  out.ledger.name = out.ref.namespace_ + "/" + out.ref.name;
  // By uid: a policy re-created under the same name is another owner (allocator.h).
  out.ledger.owner = out.ref.uid.empty() ? out.ledger.name : out.ref.uid;
  if (auto t = meta::parseRfc3339(stringMember(*md, "creationTimestamp"))) {
    out.ledger.created =
        std::chrono::duration_cast<std::chrono::seconds>(t->time_since_epoch()).count();
  }
  const auto* status = member(item, "status");
  if (status == nullptr) {
    return out;
  }
  out.ledger.pool = stringMember(*status, "pool");
  const auto* gateways = member(*status, "gateways");
  std::set<std::string> listed;
  if (gateways != nullptr && gateways->IsArray()) {
    for (const auto& g : gateways->GetArray()) {
      auto ips = strings(member(g, "egressIPs"));
      listed.insert(ips.begin(), ips.end());
      if (!ips.empty()) {
        out.ledger.entries.push_back(std::move(ips));
      }
    }
  }
  // The flat list too: an address there but in no entry (a half-written or hand-edited status)
  // stays held rather than being handed to someone else.
  for (auto& ip : strings(member(*status, "egressIPs"))) {
    if (listed.count(ip) == 0) {
      out.ledger.entries.push_back({std::move(ip)});
    }
  }
  return out;
}

net::awaitable<Result<bool, std::string>> serverHasPolicyV1(kube::RestClient& client) {
  auto got = co_await client.raw("GET", "/apis/policy/v1");
  if (!got) {
    if (got.error().isNotFound()) {
      co_return false;
    }
    co_return "asking the API server for policy/v1: " + got.error().message();
  }
  co_return got->status != 404;
}

MainController::MainController(Options options)
    : options_(std::move(options)), metrics_(options_.registry) {}

MainController::~MainController() {
  stop();
}

const std::string& MainController::name() const {
  return name_;
}

Result<Ok, std::string> MainController::setUp(cache::SharedInformerFactory& factory) {
  cache_ = std::make_unique<Cache>(factory, options_.policyV1);
  if (!options_.agentLeaseNamespace.empty()) {
    cache_->watchAgentLeases(factory, options_.agentLeaseNamespace);
  }
  ctx_ = std::make_unique<Context>(Context{options_.client,
                                           *cache_,
                                           allocator_,
                                           options_.recorder,
                                           options_.clock,
                                           metrics_,
                                           agents_,
                                           {},
                                           {},
                                           {}});
  auto opts = [&](const char* controllerName, int workers) {
    return controllerruntime::Controller::Options{controllerName, workers, options_.clock,
                                                  options_.executor, options_.registry};
  };
  egressGateway_ =
      std::make_unique<EgressGatewayController>(opts("egressgateway", options_.workers), *ctx_);
  ipamPool_ = std::make_unique<IPAMPoolController>(opts("ipampool", 1), *ctx_);
  operator_ = std::make_unique<OperatorController>(opts("operator", 1), *ctx_);
  ctx_->policies = egressGateway_->enqueuer();
  ctx_->pools = ipamPool_->enqueuer();
  ctx_->operatorConfig = operator_->enqueuer();
  if (cache_->agentLeases() != nullptr) {
    agentLease_ = std::make_unique<AgentLeaseController>(opts("agentlease", 1), *ctx_);
  }
  for (controllerruntime::Runnable* c : subcontrollers()) {
    if (auto r = c->setUp(factory); !r) {
      return r;
    }
  }
  return wireCrossTriggers();
}

void MainController::updateReserved() {
  allocator_.setReserved(clusterReservations(cache_->nodes().indexer().list(),
                                             cache_->operatorConfig().get(),
                                             options_.apiServerAddresses));
}

std::vector<controllerruntime::Runnable*> MainController::subcontrollers() const {
  std::vector<controllerruntime::Runnable*> out;
  for (controllerruntime::Runnable* c : std::initializer_list<controllerruntime::Runnable*>{
           egressGateway_.get(), ipamPool_.get(), operator_.get(), agentLease_.get()}) {
    if (c != nullptr) {
      out.push_back(c);
    }
  }
  return out;
}

bool poolUpdateMattersToPolicies(const v1alpha1::IPAMPool& oldPool,
                                 const v1alpha1::IPAMPool& newPool) {
  const auto& o = oldPool.metadata;
  const auto& n = newPool.metadata;
  if (o.uid != n.uid || o.generation != n.generation || o.labels != n.labels ||
      o.deletionTimestamp.has_value() != n.deletionTimestamp.has_value() ||
      !(oldPool.spec == newPool.spec)) {
    return true;
  }
  const auto& oc = oldPool.status.conditions;
  const auto& nc = newPool.status.conditions;
  return !std::equal(oc.begin(), oc.end(), nc.begin(), nc.end(),
                     [](const meta::Condition& a, const meta::Condition& b) {
                       return a.type == b.type && a.status == b.status && a.reason == b.reason;
                     });
}

bool operatorConfigUpdateMattersToPolicies(const v1alpha1::OperatorConfig& oldConfig,
                                           const v1alpha1::OperatorConfig& newConfig) {
  const auto& o = oldConfig.metadata;
  const auto& n = newConfig.metadata;
  return o.uid != n.uid || o.generation != n.generation ||
         o.deletionTimestamp.has_value() != n.deletionTimestamp.has_value() ||
         !(oldConfig.spec == newConfig.spec);
}

bool podUpdateMattersToPolicies(const core::Pod& oldPod, const core::Pod& newPod) {
  const auto& o = oldPod.metadata;
  const auto& n = newPod.metadata;
  return o.uid != n.uid || !(o.labels == n.labels) || !(o.annotations == n.annotations) ||
         o.ownerReferences != n.ownerReferences ||
         o.deletionTimestamp.has_value() != n.deletionTimestamp.has_value() ||
         !(oldPod.spec == newPod.spec) || !(oldPod.status == newPod.status);
}

Result<Ok, std::string> MainController::wireCrossTriggers() {
  using controllerruntime::enqueueMapped;
  Cache* cache = cache_.get();
  const auto policies = ctx_->policies;
  const auto pools = ctx_->pools;
  std::vector<Result<Ok, std::string>> regs;
  auto check = [&](auto reg) {
    if (!reg) {
      regs.emplace_back(reg.error().message());
    }
  };
  check(cache->pools().addEventHandler(enqueueMapped<v1alpha1::IPAMPool>(
      policies,
      [cache](const v1alpha1::IPAMPool& p) { return cache->policyKeysUsingPool(p.metadata.name); },
      poolUpdateMattersToPolicies)));
  // Overlaps are pairwise: any pool's change may change another's Overlapping condition.
  check(cache->pools().addEventHandler(enqueueMapped<v1alpha1::IPAMPool>(
      pools,
      [cache](const v1alpha1::IPAMPool&) {
        std::vector<std::string> names;
        for (const auto& p : cache->allPools()) {
          names.push_back(p->metadata.name);
        }
        return names;
      },
      poolUpdateMattersToPolicies)));
  check(cache->operatorConfigs().addEventHandler(enqueueMapped<v1alpha1::OperatorConfig>(
      policies, [cache](const v1alpha1::OperatorConfig&) { return cache->allPolicyKeys(); },
      operatorConfigUpdateMattersToPolicies)));
  check(cache->namespaces().addEventHandler(
      enqueueMapped<core::Namespace>(policies, [cache](const core::Namespace& ns) {
        return cache->policyKeysInNamespace(ns.metadata.name);
      })));
  // What no pool may hand out follows the Nodes and the OperatorConfig's clusterCIDRs.
  auto reserved = [this](const auto&...) { updateReserved(); };
  cache::EventHandler<core::Node> nodes;
  nodes.onAdd = reserved;
  nodes.onUpdate = reserved;
  nodes.onDelete = reserved;
  check(cache->nodes().addEventHandler(std::move(nodes)));
  cache::EventHandler<v1alpha1::OperatorConfig> configs;
  configs.onAdd = reserved;
  configs.onUpdate = reserved;
  configs.onDelete = reserved;
  check(cache->operatorConfigs().addEventHandler(std::move(configs)));
  check(cache->pods().addEventHandler(enqueueMapped<core::Pod>(
      policies, [cache](const core::Pod& pod) { return cache->policyKeysForPod(pod); },
      podUpdateMattersToPolicies)));
  auto byLabel = [](const meta::ObjectMeta& m) {
    auto it = m.labels.find(std::string(kPolicyLabel));
    return it == m.labels.end() ? std::vector<std::string>{}
                                : std::vector<std::string>{m.namespace_ + "/" + it->second};
  };
  check(cache->deployments().addEventHandler(enqueueMapped<apps::Deployment>(
      policies, [byLabel](const apps::Deployment& d) { return byLabel(d.metadata); })));
  // A slice's policy: an orphan (its policy gone, say while no operator ran) is deleted by
  // the reconcile of a policy that is not there.
  check(cache->slices().addEventHandler(enqueueMapped<v1alpha1::EgressPolicySlice>(
      policies, [](const v1alpha1::EgressPolicySlice& s) {
        return std::vector<std::string>{s.spec.policy.namespace_ + "/" + s.spec.policy.name};
      })));
  // A gateway pod's ReplicaSet completes (or breaks) the chain of owners that proves the pod.
  check(cache->replicaSets().addEventHandler(
      enqueueMapped<apps::ReplicaSet>(policies, [cache](const apps::ReplicaSet& rs) {
        std::vector<std::string> keys;
        if (const auto* ref = meta::controllerOf(rs.metadata);
            ref != nullptr && ref->kind == "Deployment") {
          if (auto d =
                  cache->deployments().indexer().get(rs.metadata.namespace_ + "/" + ref->name)) {
            auto it = d->metadata.labels.find(std::string(kPolicyLabel));
            if (it != d->metadata.labels.end()) {
              keys.push_back(rs.metadata.namespace_ + "/" + it->second);
            }
          }
        }
        return keys;
      })));
  check(cache->podDisruptionBudgets().addEventHandler(enqueueMapped<policy::PodDisruptionBudget>(
      policies, [byLabel](const policy::PodDisruptionBudget& p) { return byLabel(p.metadata); })));
  if (!regs.empty()) {
    return regs.front();
  }
  return Ok{};
}

net::awaitable<Result<Ok, std::string>> MainController::start() {
  // Every policy's ledger, from the API server itself.
  std::vector<ipam::PolicyLedger> ledgers;
  std::map<std::string, core::ObjectReference> refs;
  std::string continueToken;
  do {
    kube::ListOptions opts;
    opts.limit = 500;
    opts.continueToken = continueToken;
    kube::Resource resource = policiesResource();
    auto page = co_await options_.client.list(std::move(resource), std::string(), std::move(opts));
    if (!page) {
      co_return "listing EgressGatewayPolicies to restore the ledger: " + page.error().message();
    }
    const auto* items = member(*page, "items");
    if (items != nullptr && items->IsArray()) {
      for (const auto& item : items->GetArray()) {
        if (auto raw = ledgerFromRaw(item)) {
          refs[raw->ledger.owner] = raw->ref;
          ledgers.push_back(std::move(raw->ledger));
        }
      }
    }
    const auto* md = member(*page, "metadata");
    continueToken = md != nullptr ? stringMember(*md, "continue") : "";
  } while (!continueToken.empty());

  updateReserved();
  std::vector<ipam::PoolSpec> pools;
  for (const auto& p : cache_->allPools()) {
    syncPoolFromCache(*ctx_, p->metadata.name);
    pools.push_back(*allocator_.poolSpec(p->metadata.name));
  }
  // What the gateway pods and the published view show in use besides the ledgers: a release
  // the previous leader deferred (a terminating pod still carrying the address) is known only
  // there, and must not be handed out before that pod is gone.
  const auto conflicts = allocator_.rebuild(pools, ledgers, cache_->addressesInUse());
  size_t held = 0;
  size_t beyond = 0;
  for (const auto& owner : allocator_.owners()) {
    size_t listed = 0;
    for (const auto& e : allocator_.committedEntries(owner)) {
      listed += e.size();
    }
    held += listed;
    const size_t all = allocator_.heldBy(owner).size();
    beyond += all > listed ? all - listed : 0;
  }
  spdlog::info(
      "egress-gateway-operator: ledger restored: {} policies, {} pools, {} addresses, "
      "{} more held while a gateway pod or the view still shows them, {} conflicts",
      ledgers.size(), pools.size(), held, beyond, conflicts.size());
  for (const auto& c : conflicts) {
    spdlog::warn("egress-gateway-operator: ledger of {}: {}", allocator_.ownerName(c.owner),
                 c.message);
    if (auto it = refs.find(c.owner); it != refs.end() && !c.inUse) {
      const bool lost = c.reason == ipam::Reason::kAlreadyAllocated;
      options_.recorder.event(it->second, core::kEventTypeWarning,
                              lost ? "AddressConflict" : "AllocatedOutsidePool", c.message);
    }
  }
  for (controllerruntime::Runnable* c : subcontrollers()) {
    auto started = co_await c->start();
    if (!started) {
      co_return started;
    }
  }
  // Every pool and the summary once, now that the allocator knows the ledgers.
  for (const auto& p : cache_->allPools()) {
    ctx_->pools.add(p->metadata.name);
  }
  ctx_->operatorConfig.add(std::string(kOperatorConfigName));
  co_return Ok{};
}

net::awaitable<void> MainController::run() {
  auto group = std::make_shared<RunGroup>(options_.executor);
  for (controllerruntime::Runnable* c : subcontrollers()) {
    ++group->live;
    net::co_spawn(options_.executor, runOne(c, group), rethrowUnhandled);
  }
  while (group->live > 0) {
    if (!co_await group->finished.wait()) {
      stop();  // our caller stopped waiting: the subcontrollers wind down on their own
      co_return;
    }
  }
}

void MainController::stop() {
  for (controllerruntime::Runnable* c : subcontrollers()) {
    c->stop();
  }
}

}  // namespace egress::controller
