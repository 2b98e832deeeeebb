#include "pkg/agent/agent.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <spdlog/spdlog.h>

#include "pkg/apis/networking/v1alpha1/zz_generated.codec.h"
#include "pkg/cache/informer_factory.h"
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace egress::agent {
namespace {

using dataplane::ClusterView;

// Announcement rounds after a takeover, a second apart: a neighbour that missed the first
// gratuitous ARP / unsolicited NA catches a later one.
constexpr int kAnnounceRounds = 3;
constexpr auto kAnnounceInterval = std::chrono::seconds(1);

const kube::Resource kNodes{"", "v1", "nodes", false};
// Cluster-scoped: only the operator's ServiceAccount may write them.
const kube::Resource kSlices{"networking.egressgateway.dev", "v1alpha1", "egresspolicyslices",
                             false};
const kube::Resource kLeases{"coordination.k8s.io", "v1", "leases", true};
const kube::Resource kPools{"networking.egressgateway.dev", "v1alpha1", "ipampools", false};
const kube::Resource kConfigs{"networking.egressgateway.dev", "v1alpha1", "operatorconfigs", false};
const kube::Resource kDaemonSets{"apps", "v1", "daemonsets", true};

// Every event of an informer queues one debounced sync.
template <class T>
cache::EventHandler<T> syncOnEvent(const controllerruntime::Enqueuer& queue,
                                   std::chrono::milliseconds debounce) {
  using Ptr = typename cache::EventHandler<T>::Ptr;
  cache::EventHandler<T> h;
  h.onAdd = [queue, debounce](const Ptr&, bool) { queue.addAfter(kSyncKey, debounce); };
  h.onUpdate = [queue, debounce](const Ptr&, const Ptr&) { queue.addAfter(kSyncKey, debounce); };
  h.onDelete = [queue, debounce](const Ptr&, bool) { queue.addAfter(kSyncKey, debounce); };
  h.onUndecodable = [queue, debounce](const cache::UndecodablePtr&) {
    queue.addAfter(kSyncKey, debounce);
  };
  return h;
}

ipam::Address addressOf(const sockaddr* sa) {
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    return ipam::Address{ipam::Family::kIPv4, ntohl(in->sin_addr.s_addr)};
  }
  const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
  ipam::Uint128 v = 0;
  for (uint8_t b : in6->sin6_addr.s6_addr) {
    v = (v << 8) | b;
  }
  return ipam::Address{ipam::Family::kIPv6, v};
}

}  // namespace

std::string deviceWithAddress(const ipam::Address& ip) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    return "";
  }
  std::string out;
  for (ifaddrs* i = list; i != nullptr && out.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr ||
        (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6)) {
      continue;
    }
    if (addressOf(i->ifa_addr) == ip) {
      out = i->ifa_name;
    }
  }
  freeifaddrs(list);
  return out;
}

uint32_t deviceMtu(const std::string& dev) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) {
    return 0;
  }
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, dev.c_str(), IFNAMSIZ - 1);
  const int rc = ioctl(fd, SIOCGIFMTU, &ifr);
  close(fd);
  return rc == 0 ? static_cast<uint32_t>(ifr.ifr_mtu) : 0U;
}

struct Agent::FenceKeeper {
  std::mutex mu;
  dataplane::NftApplier nft;
  // What the last sync wrote (refreshes write it again with a later end).
  std::optional<dataplane::FenceState> state;

  static std::chrono::milliseconds left(std::optional<Clock::TimePoint> until,
                                        Clock::TimePoint now) {
    return until && *until > now
               ? std::chrono::duration_cast<std::chrono::milliseconds>(*until - now)
               : std::chrono::milliseconds(0);
  }
  Result<Ok, std::string> write(dataplane::FenceState next, std::optional<Clock::TimePoint> until,
                                Clock& clock) {
    std::lock_guard lock(mu);
    next.remaining = left(until, clock.now());
    auto done = nft.applyFence(next);
    // Refreshes re-arm only what a write put in the kernel: after a failed one, what was there.
    if (done) {
      state = std::move(next);
    }
    return done;
  }
  // The held addresses again, until `until` (nothing held when it has passed).
  void refresh(std::optional<Clock::TimePoint> until, Clock& clock) {
    std::lock_guard lock(mu);
    if (!state || state->held.empty()) {
      return;
    }
    state->remaining = left(until, clock.now());
    if (auto done = nft.applyFence(*state); !done) {
      spdlog::warn("egw-agent: refreshing the fence: {}", done.error());
    }
  }
  Result<Ok, std::string> remove() {
    std::lock_guard lock(mu);
    state.reset();
    return nft.removeFence();
  }
};

Agent::Agent(controllerruntime::Controller::Options base, AgentOptions options,
             LeaseRenewer& renewer, prometheus::Registry& registry)
    : Controller(std::move(base)),
      options_(std::move(options)),
      renewer_(renewer),
      metrics_(registry),
      fence_(std::make_unique<FenceKeeper>()) {
  if (options_.dryRun) {
    return;
  }
  PeerMesh::Options mesh;
  mesh.port = options_.dataplane.heartbeatPort;
  mesh.quorum = options_.quorum;
  mesh.onChange = [q = enqueuer(), d = options_.debounce] { q.addAfter(kSyncKey, d); };
  mesh.onRound = [this] { refreshFence(); };
  mesh_ =
      std::make_unique<PeerMesh>(options_.nodeName, clock(), executor(), std::move(mesh), registry);
}

Agent::~Agent() = default;

Result<Ok, std::string> Agent::watchResources(cache::SharedInformerFactory& factory) {
  nodes_ = &factory.informerFor<core::Node>(kNodes, core::decodeNode, "", "", dataplane::stripNode);
  slices_ = &factory.informerFor<networking::v1alpha1::EgressPolicySlice>(
      kSlices, networking::v1alpha1::decodeEgressPolicySlice, "", "", dataplane::stripSlice);
  pools_ = &factory.informerFor<networking::v1alpha1::IPAMPool>(
      kPools, networking::v1alpha1::decodeIPAMPool);
  configs_ = &factory.informerFor<networking::v1alpha1::OperatorConfig>(
      kConfigs, networking::v1alpha1::decodeOperatorConfig);
  leases_ = &factory.informerFor<coordination::Lease>(kLeases, coordination::decodeLease,
                                                      options_.leaseNamespace);
  // Cached only, never a sync's input: read once, when the agent stops.
  if (!options_.ownerDaemonSet.empty()) {
    owner_ = &factory.informerFor<apps::DaemonSet>(kDaemonSets, apps::decodeDaemonSet,
                                                   options_.ownerNamespace);
  }
  return Ok{};
}

void Agent::makeAppliers() {
  if (!links_) {
    links_ = std::make_unique<dataplane::LinkApplier>();
    routing_ = std::make_unique<dataplane::RoutingApplier>();
    nft_ = std::make_unique<dataplane::NftApplier>();
  }
}

net::awaitable<void> Agent::run() {
  return runThenCleanUp(this, Controller::run());
}

// Static, with the agent passed explicitly: a member coroutine started from inside another
// coroutine can lose `this` under g++ 12 (controller.cc).
net::awaitable<void> Agent::runThenCleanUp(Agent* self, net::awaitable<void> workers) {
  co_await std::move(workers);
  // The workers are done: no sync runs any more, so nothing re-programs what is removed here.
  const std::string why = self->uninstallReason();
  if (why.empty() && self->mesh_ && self->meshStarted_) {
    co_await leave(self);
  }
  if (self->mesh_) {
    self->mesh_->stop();
  }
  if (why.empty()) {
    spdlog::info("egw-agent: stopping; the kernel state stays for the next agent on this node{}",
                 self->options_.ownerDaemonSet.empty()
                     ? " (no --owner-daemonset: an uninstall would not be noticed)"
                     : "");
  } else if (self->options_.dryRun) {
    spdlog::info("egw-agent: {}: a dry run removes nothing", why);
  } else {
    self->removeKernelState(why);
  }
}

std::string Agent::uninstallReason() const {
  if (owner_ == nullptr || !owner_->hasSynced() || !ownerSeen_) {
    return "";
  }
  const std::string key = options_.ownerNamespace + "/" + options_.ownerDaemonSet;
  const auto ds = owner_->indexer().get(key);
  if (!ds) {
    return "DaemonSet " + key + " was deleted";
  }
  if (ds->metadata.deletionTimestamp) {
    return "DaemonSet " + key + " is being deleted";
  }
  return "";
}

void Agent::removeKernelState(const std::string& why) {
  spdlog::info("egw-agent: {}: removing what this agent put in the kernel", why);
  makeAppliers();
  std::vector<std::string> failed;
  // The SNAT and the answers go first, then what they used.
  devices_.reset();
  if (auto r = nft_->remove(options_.dataplane.nftTable); !r) {
    failed.push_back(r.error());
  }
  if (auto r = fence_->remove(); !r) {
    failed.push_back(r.error());
  }
  int removed = 0;
  if (auto r = routing_->removeAll(); r) {
    removed += *r;
  } else {
    failed.push_back(r.error());
  }
  if (auto r = links_->removeAll(); r) {
    removed += *r;
  } else {
    failed.push_back(r.error());
  }
  for (const auto& f : failed) {
    spdlog::error("egw-agent: clean-up: {}", f);
  }
  spdlog::info(
      "egw-agent: removed the nft tables and {} links, addresses, neighbours, rules and "
      "routes{}",
      removed, failed.empty() ? "" : "; " + std::to_string(failed.size()) + " steps failed");
}

Result<Ok, std::string> Agent::addEventHandlers() {
  const auto q = enqueuer();
  const auto d = options_.debounce;
  std::string problem;
  auto check = [&problem](const auto& registration) {
    if (!registration && problem.empty()) {
      problem = registration.error().message();
    }
  };
  // A Node's status is rewritten for reasons of no concern here (conditions, images, the
  // kubelet's heartbeat): only what its view holds (addresses, pod CIDRs) is worth a sync. On
  // 500 nodes the rest would be a sync every few seconds for nothing.
  auto nodes = syncOnEvent<core::Node>(q, d);
  using NodePtr = cache::EventHandler<core::Node>::Ptr;
  nodes.onUpdate = [update = nodes.onUpdate](const NodePtr& old, const NodePtr& n) {
    if (!(dataplane::nodeView(*old) == dataplane::nodeView(*n))) {
      update(old, n);
    }
  };
  check(nodes_->addEventHandler(std::move(nodes)));
  check(slices_->addEventHandler(syncOnEvent<networking::v1alpha1::EgressPolicySlice>(q, d)));
  check(pools_->addEventHandler(syncOnEvent<networking::v1alpha1::IPAMPool>(q, d)));
  check(configs_->addEventHandler(syncOnEvent<networking::v1alpha1::OperatorConfig>(q, d)));
  // A peer's Lease is live from when this process sees it change, on its own monotonic clock:
  // recorded in the handler, as the event arrives, not when a later sync lists the cache.
  auto leases = syncOnEvent<coordination::Lease>(q, d);
  using LeasePtr = cache::EventHandler<coordination::Lease>::Ptr;
  leases.onAdd = [this, add = leases.onAdd](const LeasePtr& l, bool initial) {
    observed_.observe(l->metadata.name, *l, clock().now());
    add(l, initial);
  };
  // A renewal of a Lease that was fresh changes no view: freshness is judged when a sync lists
  // the Leases, and the sync that its expiry schedules (nextExpiry) finds it renewed. Only a
  // stale Lease coming back is news that cannot wait for the next resync. Without this, the
  // renewals of 500 agents every 2 s would be a sync every debounce interval on every node.
  // This agent's own Lease is never in its view (its liveness is the renewer's).
  leases.onUpdate = [this, update = leases.onUpdate](const LeasePtr& old, const LeasePtr& l) {
    const auto now = clock().now();
    const bool wasFresh = observed_.fresh(l->metadata.name, now);
    const auto wasExpiring = observed_.expiry(l->metadata.name);
    observed_.observe(l->metadata.name, *l, now);
    const auto expiring = observed_.expiry(l->metadata.name);
    const bool own = dataplane::agentLeaseNode(l->metadata.name) == options_.nodeName;
    // A shorter duration can move the expiry before the sync that the old one scheduled.
    const bool sooner = expiring && wasExpiring && *expiring < *wasExpiring;
    if (!own && (!wasFresh || !observed_.fresh(l->metadata.name, now) || sooner)) {
      update(old, l);
    }
  };
  leases.onDelete = [this, del = leases.onDelete](const LeasePtr& l, bool unknown) {
    observed_.forget(l->metadata.name);
    del(l, unknown);
  };
  check(leases_->addEventHandler(std::move(leases)));
  if (owner_ != nullptr) {
    // Its absence means an uninstall only once this process has seen it: a wrong name must not
    // turn every restart into a clean-up.
    using DaemonSetPtr = cache::EventHandler<apps::DaemonSet>::Ptr;
    cache::EventHandler<apps::DaemonSet> owner;
    owner.onAdd = [this](const DaemonSetPtr& ds, bool) {
      if (ds->metadata.name == options_.ownerDaemonSet && !ownerSeen_) {
        ownerSeen_ = true;
        spdlog::info("egw-agent: watching DaemonSet {}/{}: its deletion is an uninstall",
                     options_.ownerNamespace, options_.ownerDaemonSet);
      }
    };
    owner.onDelete = [this](const DaemonSetPtr& ds, bool) {
      if (ds->metadata.name == options_.ownerDaemonSet && ownerSeen_) {
        spdlog::info(
            "egw-agent: DaemonSet {}/{} was deleted: stopped, this agent will remove its "
            "kernel state",
            options_.ownerNamespace, options_.ownerDaemonSet);
      }
    };
    check(owner_->addEventHandler(std::move(owner)));
  }
  if (!problem.empty()) {
    return problem;
  }
  q.add(kSyncKey);
  return Ok{};
}

ClusterView Agent::view(std::vector<dataplane::Problem>* problems) const {
  ClusterView v;
  v.self = options_.nodeName;
  for (const auto& n : nodes_->indexer().list()) {
    v.nodes.push_back(dataplane::nodeView(*n));
  }
  v.policies = dataplane::policyViews(slices_->indexer().list(), problems);
  v.poolCIDRs = dataplane::poolCIDRs(pools_->indexer().list());
  v.clusterCIDRs = dataplane::clusterCIDRs(configs_->indexer().list());
  v.apiServer = options_.apiServer;
  return v;
}

std::map<std::string, PeerMesh::Member> Agent::members(const ClusterView& v) const {
  std::set<std::string> withAgent{options_.nodeName};
  for (const auto& l : leases_->indexer().list()) {
    if (auto node = dataplane::agentLeaseNode(l->metadata.name)) {
      withAgent.insert(*node);
    }
  }
  std::map<std::string, PeerMesh::Member> out;
  for (const auto& n : v.nodes) {
    if (withAgent.contains(n.name)) {
      out[n.name] = {n.ipv4, n.ipv6};
    }
  }
  out.try_emplace(options_.nodeName);
  return out;
}

std::vector<dataplane::LeaseView> Agent::liveness(const ClusterView& v,
                                                  Clock::TimePoint now) const {
  std::vector<dataplane::LeaseView> out;
  const std::vector<ipam::Address> held(held_.begin(), held_.end());
  if (!mesh_) {
    // A dry run: the Leases, as the operator judges them.
    for (const auto& l : leases_->indexer().list()) {
      auto node = dataplane::agentLeaseNode(l->metadata.name);
      if (node && *node != options_.nodeName) {
        out.push_back({*node, observed_.fresh(l->metadata.name, now), true, {}});
      }
    }
    out.push_back({options_.nodeName, renewer_.fresh(now), true, held});
    return out;
  }
  for (const auto& [node, m] : members(v)) {
    if (node == options_.nodeName) {
      out.push_back({node, holdUntil(now).has_value(), true, held});
    } else {
      out.push_back(
          {node, !mesh_->dead(node, now), mesh_->current(node, now), mesh_->quorum().claims(node)});
    }
  }
  return out;
}

std::optional<Clock::TimePoint> Agent::holdUntil(Clock::TimePoint now) const {
  if (!mesh_) {
    auto until = renewer_.freshUntil();
    return until && *until > now ? until : std::nullopt;
  }
  auto until = mesh_->quorum().leaseUntil(now);
  if (!until) {
    return std::nullopt;
  }
  // Alone (a majority of one) the lease never ends; the fence must, if the agent dies.
  return std::min(*until, now + options_.quorum.restartGrace);
}

std::optional<Clock::TimePoint> Agent::nextExpiry(Clock::TimePoint now) const {
  std::optional<Clock::TimePoint> next;
  if (mesh_) {
    return next;  // the mesh calls for a sync when a liveness changes
  }
  auto consider = [&](std::optional<Clock::TimePoint> t) {
    if (t && *t > now && (!next || *t < *next)) {
      next = t;
    }
  };
  consider(renewer_.freshUntil());
  for (const auto& l : leases_->indexer().list()) {
    if (dataplane::agentLeaseNode(l->metadata.name)) {
      consider(observed_.expiry(l->metadata.name));
    }
  }
  return next;
}

void Agent::refreshFence() {
  if (*fenceBusy_ || options_.dryRun) {
    return;  // the one in flight is a round old at most
  }
  *fenceBusy_ = true;
  const auto until = holdUntil(clock().now());
  net::co_spawn(
      executor(),
      [busy = fenceBusy_, fence = fence_.get(), thread = &fenceThread_, clock = &clock(),
       until]() -> net::awaitable<void> {
        co_await thread->run([fence, clock, until] {
          fence->refresh(until, *clock);
          return 0;
        });
        *busy = false;
      },
      net::detached);
}

net::awaitable<void> Agent::leave(Agent* self) {
  auto& mesh = *self->mesh_;
  mesh.leave();
  // The peers grant the restart grace in their next rounds; the fence then lasts that long.
  const auto grace = self->options_.quorum.restartGrace;
  const auto deadline = self->clock().now() + 2 * self->options_.quorum.timeout;
  std::optional<Clock::TimePoint> until;
  while (self->clock().now() < deadline) {
    until = self->holdUntil(self->clock().now());
    if (until && *until - self->clock().now() > grace / 2) {
      break;
    }
    co_await self->clock().sleepFor(self->options_.quorum.interval);
  }
  until = self->holdUntil(self->clock().now());
  co_await self->fenceThread_.run([self, until] {
    self->fence_->refresh(until, self->clock());
    return 0;
  });
  const auto left =
      until ? std::chrono::duration_cast<std::chrono::milliseconds>(*until - self->clock().now())
            : std::chrono::milliseconds(0);
  spdlog::info("egw-agent: leaving for a restart: {} egress IPs held for {} ms more",
               self->held_.size(), left.count());
}

void Agent::warnAbout(const std::vector<dataplane::Problem>& problems) {
  std::set<std::string> now;
  std::map<dataplane::ProblemKind, int> byKind;
  for (const auto& p : problems) {
    now.insert(p.toString());
    ++byKind[p.kind];
  }
  for (const auto& p : now) {
    if (!problems_.contains(p)) {
      spdlog::warn("egw-agent: ignored: {}", p);
    }
  }
  problems_ = std::move(now);
  metrics_.setProblems(byKind);
  problemsReport_ = dataplane::problemsAnnotation(problems);
}

void Agent::report(AgentReport next) {
  if (!options_.report || reported_ == next) {
    return;
  }
  options_.report(next);
  const bool urgent = !reported_ || reported_->programmed != next.programmed ||
                      reported_->problems != next.problems;
  reported_ = std::move(next);
  if (urgent) {
    renewer_.renewSoon();
  }
}

Agent::Devices Agent::devicesOf(const dataplane::KernelState& k) {
  return {k.links, k.addresses, k.rules, k.routes, k.neighbours, k.fdb, k.sysctls};
}

Result<int, std::string> Agent::apply(const dataplane::DesiredState& want, Clock::TimePoint now) {
  makeAppliers();
  int changes = 0;
  // Links, addresses, neighbours, the FDB, sysctls, rules and routes follow nodes and held
  // addresses, mostly not pods (on a holder, each SNATed source also has a reply route, so
  // there a pod change does change them): while they are what the last full pass applied, a sync
  // reads them back
  // (and repairs what someone else changed) at most twice a resync interval, not on every pod
  // change of a churn. At rest that is every sync, as before; each read is a set of rtnetlink
  // dumps (measured: a seventh of the agent's CPU under a churn of 50 pods/s at 10,000 sources).
  auto devices = devicesOf(want.kernel);
  const bool recheck =
      !devices_ || !(*devices_ == devices) || now - devicesChecked_ >= options_.resync / 2;
  if (recheck) {
    devices_.reset();
    auto links = links_->apply(want.kernel);
    if (!links) {
      return unexpected(links.error());
    }
    changes += *links;
    // In a pod without privileges the init container set these: a failure is not fatal.
    std::vector<dataplane::Sysctl> sysctls = want.kernel.sysctls;
    // With IPv6 forwarding on, accept_ra=1 ignores router advertisements and a node that took
    // its default route from them loses it; 2 keeps taking them. An administrator's 0 stays 0,
    // so this is decided here, from what the uplink has, not in the pure desired state.
    const std::string acceptRa = "net/ipv6/conf/" + options_.dataplane.uplink + "/accept_ra";
    if (auto ra = sysctls_.read(acceptRa); ra && *ra == "1") {
      sysctls.push_back({acceptRa, "2"});
    }
    auto sysctlsSet = sysctls_.apply(sysctls);
    if (!sysctlsSet) {
      spdlog::warn("egw-agent: {}", sysctlsSet.error());
    } else {
      changes += *sysctlsSet;
    }
  }
  // The counts up to now, on the same cadence, and always right before a replacement: a
  // replaced table starts its counters at 0.
  auto readCounters = [&] {
    if (auto before = nft_->counters(want.kernel.nft.name)) {
      metrics_.kernelCounts(*before);
    }
  };
  if (recheck) {
    readCounters();
  }
  auto nft = nft_->apply(want.kernel.nft, readCounters);
  if (!nft) {
    return unexpected(nft.error());
  }
  using Kind = dataplane::NftApplier::Change::Kind;
  // A replacement counts 1; an element transaction, its elements.
  changes += nft->kind == Kind::kReplaced ? 1 : static_cast<int>(nft->elements);
  metrics_.tableApplied(want.kernel.nft.egressIPs, nft->kind == Kind::kReplaced);
  if (recheck) {
    auto routes = routing_->apply(want.kernel.rules, want.kernel.routes);
    if (!routes) {
      return unexpected(routes.error());
    }
    changes += *routes;
    devices_ = std::move(devices);
    devicesChecked_ = now;
  }
  return changes;
}

void Agent::announce(const dataplane::DesiredState& want, Clock::TimePoint now, bool fresh) {
  std::set<ipam::Address> held(want.held.begin(), want.held.end());
  for (const auto& e : held) {
    if (!held_.contains(e)) {
      announcing_[e] = Pending{now, kAnnounceRounds};
    }
  }
  // Released only once the kernel no longer SNATs to them (announce runs after the apply), so
  // no packet recreates what is deleted here.
  std::set<ipam::Address> released;
  for (const auto& e : held_) {
    if (!held.contains(e)) {
      released.insert(e);
    }
  }
  if (!released.empty()) {
    std::string names;
    for (const auto& e : released) {
      names += (names.empty() ? "" : ", ") + e.toString();
    }
    auto forgot = conntrack_.forget(released);
    if (forgot) {
      metrics_.forgotConnections(*forgot);
      spdlog::info("egw-agent: released {}: {} conntrack entries deleted", names, *forgot);
    } else {
      spdlog::warn("egw-agent: released {}: {}", names, forgot.error());
    }
  }
  held_ = std::move(held);
  for (auto it = announcing_.begin(); it != announcing_.end();) {
    auto& [e, p] = *it;
    if (!held_.contains(e) || p.left == 0) {
      it = announcing_.erase(it);
      continue;
    }
    if (fresh && p.next <= now) {
      auto sent = announcer_.announce(options_.dataplane.uplink, e);
      if (sent) {
        metrics_.announced(*sent);
      } else {
        spdlog::warn("egw-agent: {}", sent.error());
      }
      --p.left;
      p.next = now + kAnnounceInterval;
    }
    ++it;
  }
}

net::awaitable<controllerruntime::ReconcileResult> Agent::reconcile(const std::string& key) {
  using controllerruntime::ReconcileResult;
  if (key != kSyncKey) {
    co_return ReconcileResult::done();
  }
  // A dry run's first sync waits for its first renewal attempt (the renewer queues a sync when
  // it ends): before it, it would find itself without a fresh Lease and report nothing held for
  // one sync. After a failed attempt it is fenced, as a process whose renewals fail should be.
  if (!mesh_ && !renewer_.attempted()) {
    co_return ReconcileResult::done();
  }
  std::vector<dataplane::Problem> problems;
  // Read with the view, in the same turn: the version its slices reflect.
  const std::string observedSlices = slices_->indexedResourceVersion();
  auto v = view(&problems);
  if (mesh_) {
    auto bound = mesh_->setMembers(members(v));
    if (!bound) {
      metrics_.syncFailed();
      co_return ReconcileResult::error(bound.error());
    }
    if (!meshStarted_) {
      // What this node's kernel fence still holds, its predecessor's (a restart): claimed and
      // kept, not withdrawn and taken again.
      auto held = co_await kernel_.run([this] { return fence_->nft.fenceHeld(); });
      if (held) {
        held_ = std::set<ipam::Address>(held->begin(), held->end());
        if (!held_.empty()) {
          spdlog::info("egw-agent: the kernel fence holds {} egress IPs: carrying on with them",
                       held_.size());
        }
      } else {
        spdlog::warn("egw-agent: {}", held.error());
      }
      mesh_->setClaims(std::vector<ipam::Address>(held_.begin(), held_.end()));
      mesh_->start();
      meshStarted_ = true;
    }
    // The first sync waits for a majority (the mesh queues a sync when this node's lease
    // begins), or for the timeout: before it, it would withdraw what its predecessor held.
    if (!mesh_->ready(clock().now())) {
      co_return ReconcileResult::requeueAfter(options_.quorum.timeout);
    }
  }
  const Clock::TimePoint now = clock().now();
  v.leases = liveness(v, now);
  // A dry run's liveness changes with time alone: look again at the next resync, or when a
  // liveness runs out if that is sooner (the mesh queues a sync itself when one changes).
  Clock::Duration after = options_.resync;
  if (auto expiry = nextExpiry(now)) {
    after = std::min(after, *expiry - now);
  }
  const auto resync = ReconcileResult::requeueAfter(after);
  metrics_.setFenced(!holdUntil(now));
  if (options_.dataplane.uplink.empty()) {
    for (const auto& n : v.nodes) {
      if (n.name != v.self) {
        continue;
      }
      for (const auto& ip : {n.ipv4, n.ipv6}) {
        if (ip && options_.dataplane.uplink.empty()) {
          options_.dataplane.uplink = deviceWithAddress(*ip);
        }
      }
    }
    if (options_.dataplane.uplink.empty()) {
      metrics_.syncFailed();
      co_return ReconcileResult::error("node " + v.self +
                                       ": no local device has its InternalIP (set --uplink)");
    }
    if (uint32_t mtu = deviceMtu(options_.dataplane.uplink); mtu > 0) {
      options_.dataplane.uplinkMtu = mtu;
    }
    spdlog::info("egw-agent: uplink {} (MTU {})", options_.dataplane.uplink,
                 options_.dataplane.uplinkMtu);
  }
  // The kernel's work runs on a thread of its own (kernel_): computing and programming a large
  // state takes seconds (measured: 3.4 s for a first programming at 100,000 source pods), and
  // the loop must go on renewing this agent's Lease meanwhile, or the agent would fence itself
  // for being busy. The loop's state stays on the loop: the work reads the view this sync built,
  // and the appliers and what they remember are used by this sync alone, which waits.
  struct Applied {
    Result<dataplane::DesiredState, std::string> want;
    Result<int, std::string> changes = 0;
  };
  // By reference (this coroutine waits for it): with an init-capture that moved the view out of
  // this coroutine's frame, g++ 12's build crashed freeing the view twice (seen in agent_e2e).
  Applied done = co_await kernel_.run([this, &v, now] {
    Applied out{dataplane::computeDesiredState(v, options_.dataplane)};
    if (out.want && !options_.dryRun) {
      out.changes = apply(*out.want, now);
    }
    return out;
  });
  auto& want = done.want;
  if (!want) {
    metrics_.syncFailed();
    co_return ReconcileResult::error(want.error());
  }
  problems.insert(problems.end(), want->problems.begin(), want->problems.end());
  warnAbout(problems);
  int changes = 0;
  if (!options_.dryRun) {
    if (!done.changes) {
      // The kernel is somewhere between the two states: report only what was programmed before
      // and is still wanted, never an address that may not be (or no longer be) held.
      std::vector<ipam::Address> still;
      for (const auto& e : want->held) {
        if (held_.contains(e)) {
          still.push_back(e);
        }
      }
      report({dataplane::programmedAnnotation(still), programmedSlices_, problemsReport_});
      metrics_.syncFailed();
      co_return ReconcileResult::error(done.changes.error());
    }
    changes = *done.changes;
    // Fencing in the kernel (fence.h): what this node holds stays answerable and SNATed to only
    // until this agent's own fence time, whether or not the agent still runs then. That time is
    // read here, on the loop that renews (a renewal during the work above only moves it later),
    // and the time left is taken on the kernel's thread, right before the transaction.
    dataplane::FenceState fence;
    fence.tunnel = options_.dataplane.tunnelDevice;
    for (const auto& e : want->kernel.nft.egressIPs) {
      fence.known.push_back(e.ip);
    }
    fence.held = want->held;
    const auto until = holdUntil(clock().now());
    auto fenced = co_await kernel_.run([this, &fence, &want, until]() -> Result<Ok, std::string> {
      if (auto r = fence_->write(fence, until, clock()); !r) {
        return r;
      }
      // Announcements go out on packet sockets, past the fence: never once the fence time has
      // passed (the work above can take seconds), when another node may hold the address.
      const auto announceNow = clock().now();
      announce(*want, announceNow, until && *until > announceNow);
      return Ok{};
    });
    if (!fenced) {
      metrics_.syncFailed();
      co_return ReconcileResult::error(fenced.error());
    }
    // Claimed once the kernel holds them (and no longer once it does not): what the peers
    // read as this node's holding.
    if (mesh_) {
      mesh_->setClaims(std::vector<ipam::Address>(held_.begin(), held_.end()));
    }
  }
  if (changes > 0) {
    spdlog::info("egw-agent: {} kernel changes; {} policies, {} egress IPs held", changes,
                 want->kernel.nft.policies.size(), want->held.size());
  }
  metrics_.syncSucceeded(
      static_cast<int>(want->kernel.nft.policies.size()), static_cast<int>(want->held.size()),
      std::chrono::duration<double>(clock().wallNow().time_since_epoch()).count(), changes);
  // After the kernel (in a dry run: after computing it), and never waited for: the renewer
  // writes it.
  programmedSlices_ = observedSlices;
  report({dataplane::programmedAnnotation(want->held), programmedSlices_, problemsReport_});
  co_return resync;
}

}  // namespace egress::agent
