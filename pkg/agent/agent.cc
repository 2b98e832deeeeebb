#include "pkg/agent/agent.h"

#include <cstring>

#include <boost/asio/this_coro.hpp>
#include <spdlog/spdlog.h>

#include "pkg/agent/pod_readiness.h"
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

// Announcement rounds after a takeover, a second apart (dataplane.md §2.3).
constexpr int kAnnounceRounds = 3;
constexpr auto kAnnounceInterval = std::chrono::seconds(1);

const kube::Resource kNodes{"", "v1", "nodes", false};
const kube::Resource kConfigMaps{"", "v1", "configmaps", true};
const kube::Resource kPods{"", "v1", "pods", true};
const kube::Resource kLeases{"coordination.k8s.io", "v1", "leases", true};

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

Agent::Agent(controllerruntime::Controller::Options base, AgentOptions options,
             kube::RestClient& client, const LeaseRenewer& renewer, prometheus::Registry& registry)
    : Controller(std::move(base)),
      options_(std::move(options)),
      renewer_(renewer),
      readiness_(std::make_shared<ReadinessWriter>(client, options_.nodeName)),
      metrics_(registry) {}

Result<Ok, std::string> Agent::watchResources(cache::SharedInformerFactory& factory) {
  const std::string byPolicy(dataplane::kPolicyLabel);
  nodes_ = &factory.informerFor<core::Node>(kNodes, core::decodeNode);
  configMaps_ =
      &factory.informerFor<core::ConfigMap>(kConfigMaps, core::decodeConfigMap, "", byPolicy);
  pods_ = &factory.informerFor<core::Pod>(kPods, core::decodePod, "", byPolicy);
  leases_ = &factory.informerFor<coordination::Lease>(kLeases, coordination::decodeLease,
                                                      options_.leaseNamespace);
  return Ok{};
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
  check(nodes_->addEventHandler(syncOnEvent<core::Node>(q, d)));
  check(configMaps_->addEventHandler(syncOnEvent<core::ConfigMap>(q, d)));
  check(pods_->addEventHandler(syncOnEvent<core::Pod>(q, d)));
  check(leases_->addEventHandler(syncOnEvent<coordination::Lease>(q, d)));
  if (!problem.empty()) {
    return problem;
  }
  q.add(kSyncKey);
  return Ok{};
}

ClusterView Agent::view(meta::Time now) const {
  ClusterView v;
  v.self = options_.nodeName;
  v.now = now;
  for (const auto& n : nodes_->indexer().list()) {
    v.nodes.push_back(dataplane::nodeView(*n));
  }
  std::vector<std::string> problems;
  for (const auto& cm : configMaps_->indexer().list()) {
    if (auto p = dataplane::policyView(*cm, &problems)) {
      v.policies.push_back(std::move(*p));
    }
  }
  for (const auto& problem : problems) {
    spdlog::debug("egw-agent: {}", problem);
  }
  for (const auto& pod : pods_->indexer().list()) {
    if (auto g = dataplane::gatewayPodView(*pod)) {
      v.gateways.push_back(std::move(*g));
    }
  }
  for (const auto& l : leases_->indexer().list()) {
    auto lv = dataplane::leaseView(*l);
    if (lv && lv->node != options_.nodeName) {
      v.leases.push_back(*lv);
    }
  }
  // Our own liveness is what the renewer last wrote, not what the informer saw: fencing.
  if (auto last = renewer_.lastRenewed()) {
    v.leases.push_back({options_.nodeName, *last, renewer_.duration()});
  }
  return v;
}

Result<int, std::string> Agent::apply(const dataplane::DesiredState& want) {
  if (!links_) {
    links_ = std::make_unique<dataplane::LinkApplier>();
    routing_ = std::make_unique<dataplane::RoutingApplier>();
    nft_ = std::make_unique<dataplane::NftApplier>();
  }
  int changes = 0;
  auto links = links_->apply(want.kernel);
  if (!links) {
    return unexpected(links.error());
  }
  changes += *links;
  // In a pod without privileges the init container set these: a failure is not fatal.
  auto sysctls = sysctls_.apply(want.kernel.sysctls);
  if (!sysctls) {
    spdlog::warn("egw-agent: {}", sysctls.error());
  } else {
    changes += *sysctls;
  }
  auto nft = nft_->apply(want.kernel.nft);
  if (!nft) {
    return unexpected(nft.error());
  }
  changes += *nft ? 1 : 0;
  auto routes = routing_->apply(want.kernel.rules, want.kernel.routes);
  if (!routes) {
    return unexpected(routes.error());
  }
  return changes + *routes;
}

void Agent::announce(const dataplane::DesiredState& want, Clock::TimePoint now) {
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
    if (p.next <= now) {
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
  // A restarted agent's first sync waits for its first renewal attempt (the renewer queues a
  // sync when it ends): before it, the agent would find itself without a fresh Lease and
  // withdraw, for one sync, every egress IP its predecessor held and announced (measured: 13
  // kernel changes and back on a holder's restart). After a failed attempt it is fenced, as a
  // process whose renewals fail should be.
  if (!renewer_.attempted()) {
    co_return ReconcileResult::done();
  }
  const auto resync = ReconcileResult::requeueAfter(options_.resync);
  const meta::Time now = clock().wallNow();
  metrics_.setFenced(!renewer_.freshAt(now));
  auto v = view(now);
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
  auto want = dataplane::computeDesiredState(v, options_.dataplane);
  if (!want) {
    metrics_.syncFailed();
    co_return ReconcileResult::error(want.error());
  }
  int changes = 0;
  if (!options_.dryRun) {
    auto applied = apply(*want);
    if (!applied) {
      metrics_.syncFailed();
      co_return ReconcileResult::error(applied.error());
    }
    changes = *applied;
    announce(*want, clock().now());
  }
  if (changes > 0) {
    spdlog::info("egw-agent: {} kernel changes; {} policies, {} egress IPs held", changes,
                 want->kernel.nft.policies.size(), want->held.size());
  }
  metrics_.syncSucceeded(static_cast<int>(want->kernel.nft.policies.size()),
                         static_cast<int>(want->held.size()),
                         std::chrono::duration<double>(now.time_since_epoch()).count(), changes);
  // After the kernel (in a dry run: after computing it), and never waited for.
  const auto executor = co_await net::this_coro::executor;
  readiness_->update(executor, pods_->indexer().list(), want->readyPods, now);
  co_return resync;
}

}  // namespace egress::agent
