#include "pkg/controller/controller.h"

#include <algorithm>

#include <boost/asio/co_spawn.hpp>
#include <spdlog/spdlog.h>

#include "pkg/apis/meta/time.h"
#include "pkg/base/notifier.h"
#include "pkg/controller/names.h"
#include "pkg/controller/pool_sync.h"
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
  ctx_ = std::make_unique<Context>(options_.client, *cache_, allocator_, options_.recorder,
                                   options_.clock, metrics_, agents_);
  auto opts = [&](const char* controllerName, int workers) {
    return controllerruntime::Controller::Options{controllerName, workers, options_.clock,
                                                  options_.executor, options_.registry};
  };
  egressGateway_ =
      std::make_unique<EgressGatewayController>(opts("egressgateway", options_.workers), *ctx_);
  ipamPool_ = std::make_unique<IPAMPoolController>(opts("ipampool", 1), *ctx_);
  operator_ = std::make_unique<OperatorController>(opts("operator", 1), *ctx_);
  if (cache_->agentLeases() != nullptr) {
    agentLease_ = std::make_unique<AgentLeaseController>(opts("agentlease", 1), *ctx_);
  }
  for (controllerruntime::Runnable* c : subcontrollers()) {
    if (auto r = c->setUp(factory); !r) {
      return r;
    }
  }
  return watchReservations();
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

Result<Ok, std::string> MainController::watchReservations() {
  // What no pool may hand out follows the Nodes and the OperatorConfig's clusterCIDRs.
  auto reserved = [this](const auto&...) { updateReserved(); };
  auto onEvery = [&reserved](auto handler) {
    handler.onAdd = reserved;
    handler.onUpdate = reserved;
    handler.onDelete = reserved;
    return handler;
  };
  if (auto reg = cache_->nodes().addEventHandler(onEvery(cache::EventHandler<core::Node>{}));
      !reg) {
    return reg.error().message();
  }
  if (auto reg = cache_->operatorConfigs().addEventHandler(
          onEvery(cache::EventHandler<v1alpha1::OperatorConfig>{}));
      !reg) {
    return reg.error().message();
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
  // What the published view shows in use besides the ledgers: a release the previous leader
  // deferred (a slice still naming the address) is known only there, and must not be handed out
  // while an agent may program it. (An agent still answering for an address no slice names keeps
  // it from any new holder in the view: viewHolders.)
  const auto conflicts = allocator_.rebuild(pools, ledgers, cache_->addressesInUse());
  // What the rebuild finds free may have left the predecessor's view moments ago (agents.h).
  // The reflector's version, never behind what the rebuild read.
  agents_.setStartVersion(cache_->slices().lastSyncResourceVersion());
  if (auto behind = agents_.behind(agents_.startVersion(), options_.clock.now()); !behind.empty()) {
    spdlog::info(
        "egress-gateway-operator: no address is allocated afresh until every live agent reports "
        "the slices at version {} or later (AgentsCatchingUp); behind: {}",
        agents_.startVersion(), behind);
  }
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
      "{} more held while the view still shows them, {} conflicts",
      ledgers.size(), pools.size(), held, beyond, conflicts.size());
  for (const auto& c : conflicts) {
    spdlog::warn("egress-gateway-operator: ledger of {}: {}", allocator_.ownerName(c.owner),
                 c.message);
    if (auto it = refs.find(c.owner); it != refs.end() && !c.inUse) {
      const bool lost = c.reason == ipam::Reason::kAlreadyAllocated;
      options_.recorder.event(it->second, core::kEventTypeWarning,
                              lost ? kEventAddressConflict : kReasonAllocatedOutsidePool,
                              c.message);
    }
  }
  for (controllerruntime::Runnable* c : subcontrollers()) {
    auto started = co_await c->start();
    if (!started) {
      co_return started;
    }
  }
  // Every pool once, now that the allocator knows the ledgers.
  for (const auto& p : cache_->allPools()) {
    ctx_->pools.add(p->metadata.name);
  }
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
