// File: agent.h
//
// egw-agent's sync loop, run by the Manager as a controller with one key: informers on Nodes,
// the operator's `egw-*` ConfigMaps and gateway Pods (label-selected by the policy label) and
// the agents' Leases; any event queues a sync after a short debounce (a burst of events is one
// sync), and every sync re-runs at least each second, because Lease freshness changes with
// time alone. A sync turns the caches into a ClusterView (its own Lease as the renewer last
// wrote it: fencing does not wait for the informer), computes the desired kernel state
// (pkg/dataplane) and applies it with the appliers (links, sysctls, rules and routes, nftables),
// then announces newly held egress IPs by gratuitous ARP / unsolicited NA at 0, 1 and 2 s.
// Then it has the readiness gate of its local gateway pods written (pod_readiness.h, through
// pods/status, never waited for). With dryRun nothing is applied or sent: the state is computed and
// counted only, and the readiness gate is written as if it had been (so the API side can be
// tested).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "pkg/agent/agent_metrics.h"
#include "pkg/agent/lease_renewer.h"
#include "pkg/agent/pod_readiness.h"
#include "pkg/apis/coordination/lease.h"
#include "pkg/apis/core/config_map.h"
#include "pkg/apis/core/node.h"
#include "pkg/apis/core/pod.h"
#include "pkg/cache/shared_informer.h"
#include "pkg/controllerruntime/controller.h"
#include "pkg/dataplane/announcer.h"
#include "pkg/dataplane/conntrack_cleaner.h"
#include "pkg/dataplane/desired_state.h"
#include "pkg/dataplane/link_applier.h"
#include "pkg/dataplane/nft_applier.h"
#include "pkg/dataplane/routing_applier.h"
#include "pkg/dataplane/sysctl_applier.h"
#include "pkg/kube/rest_client.h"

namespace egress::agent {

inline constexpr const char* kSyncKey = "sync";

struct AgentOptions {
  std::string nodeName;
  std::string leaseNamespace;
  // uplink "" = the device that has the node's InternalIP, found at the first sync.
  dataplane::DataplaneConfig dataplane;
  bool dryRun = false;
  std::chrono::milliseconds debounce{100};
  std::chrono::milliseconds resync{1000};
};

class Agent : public controllerruntime::Controller {
 public:
  // `client`, `renewer` and `registry` must outlive the agent.
  Agent(controllerruntime::Controller::Options base, AgentOptions options, kube::RestClient& client,
        const LeaseRenewer& renewer, prometheus::Registry& registry);

  // The sync's key, for the renewer's onChange.
  controllerruntime::Enqueuer syncQueue() { return enqueuer(); }

 protected:
  Result<Ok, std::string> watchResources(cache::SharedInformerFactory& factory) override;
  Result<Ok, std::string> addEventHandlers() override;
  net::awaitable<controllerruntime::ReconcileResult> reconcile(const std::string& key) override;

 private:
  dataplane::ClusterView view(meta::Time now) const;
  Result<int, std::string> apply(const dataplane::DesiredState& want);
  void announce(const dataplane::DesiredState& want, Clock::TimePoint now);

  AgentOptions options_;
  const LeaseRenewer& renewer_;
  std::shared_ptr<ReadinessWriter> readiness_;
  AgentMetrics metrics_;
  cache::SharedIndexInformer<core::Node>* nodes_ = nullptr;
  cache::SharedIndexInformer<core::ConfigMap>* configMaps_ = nullptr;
  cache::SharedIndexInformer<core::Pod>* pods_ = nullptr;
  cache::SharedIndexInformer<coordination::Lease>* leases_ = nullptr;
  std::unique_ptr<dataplane::LinkApplier> links_;
  std::unique_ptr<dataplane::RoutingApplier> routing_;
  std::unique_ptr<dataplane::NftApplier> nft_;
  dataplane::SysctlApplier sysctls_;
  dataplane::Announcer announcer_;
  dataplane::ConntrackCleaner conntrack_;
  // Egress IPs being announced: when the next round is due and how many remain.
  struct Pending {
    Clock::TimePoint next;
    int left = 0;
  };
  std::map<ipam::Address, Pending> announcing_;
  std::set<ipam::Address> held_;
  std::string lastError_;
};

// The device that has `ip` (getifaddrs), or "".
std::string deviceWithAddress(const ipam::Address& ip);
// A device's MTU, or 0.
uint32_t deviceMtu(const std::string& dev);

}  // namespace egress::agent
