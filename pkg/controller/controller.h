// File: controller.h
//
// The main controller (the seed's pkg/controller/controller.go): one Runnable that the Manager
// drives, hosting the subcontrollers (egressgateway, ipampool, operator, and agentlease when
// agent Leases are watched) over one shared watch cache and one allocator.
//   setUp   builds the cache's informers and the subcontrollers, keeps the allocator's reserved
//           addresses (reserved.h: nodes, cluster CIDRs, the API server) in step with the Nodes
//           and the OperatorConfig, and wires the cross-triggers:
//           a pool change queues the policies that use it (and re-checks every pool: overlaps
//           are pairwise); an OperatorConfig change queues every policy; a namespace change
//           queues its policies (a pool's namespaceSelector may now admit or refuse them); a pod
//           change queues the policies that select it or own it; a gateway object's change
//           queues its policy.
//   start   (caches synced, lease won, no worker running yet) rebuilds the allocator from a
//           fresh LIST of every policy's ledger (status.pool + status.gateways), read from the
//           raw JSON so a policy the typed decoder refuses keeps its addresses too (fail
//           closed); conflicts go to the log and, as AddressConflict events, to the policies
//           that lose them. A fresh LIST, not the cache: the cache of a replica that just won
//           the lease may not have seen the last ledger the previous leader wrote.
//   run     the three subcontrollers' workers, until stop.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <prometheus/registry.h>

#include "pkg/base/clock.h"
#include "pkg/controller/agentlease/controller.h"
#include "pkg/controller/cache/cache.h"
#include "pkg/controller/context.h"
#include "pkg/controller/egressgateway/controller.h"
#include "pkg/controller/ipampool/controller.h"
#include "pkg/controller/metrics.h"
#include "pkg/controller/operator/controller.h"
#include "pkg/controllerruntime/event_recorder.h"
#include "pkg/controllerruntime/runnable.h"
#include "pkg/ipam/allocator.h"
#include "pkg/kube/rest_client.h"

namespace egress::controller {

// Whether a pool's update can change what the policies using it (and the other pools, through
// overlaps) reconcile to: its spec, labels, uid, deletion or conditions (type, status,
// reason). Its usage counts alone cannot: the allocator, not the pool's status, holds the
// usage, and a release wakes the policies waiting for the pool itself. Every allocation
// rewrites a pool's counts; passing those on queued each of the pool's policies once per
// allocation (43 reconciles per policy for 1,000 policies over 20 pools, measured).
bool poolUpdateMattersToPolicies(const v1alpha1::IPAMPool& oldPool,
                                 const v1alpha1::IPAMPool& newPool);

// Whether an OperatorConfig's update can change what any policy reconciles to: its spec, uid or
// deletion. Its status cannot (no policy reads it), and the status summary is rewritten after
// policies' status writes: passing those on queued every policy again after each summary
// (75 summaries and 88 reconciles per policy for 1,000 policies and 10,000 pods, measured).
bool operatorConfigUpdateMattersToPolicies(const v1alpha1::OperatorConfig& oldConfig,
                                           const v1alpha1::OperatorConfig& newConfig);

// Whether a pod's update can change what the policies that select or own it reconcile to: a
// difference in what the pod cache keeps of it (stripPod: labels, the egress-IP annotation,
// identity and controller, deletion, node, hostNetwork, phase, addresses, readiness and the
// readiness gate). Everything else a kubelet writes (container statuses, probe times) is
// stripped before the cache sees it and arrives as an update with equal views: passing those on
// queued every selecting policy, and each reconcile scanned its namespace's pods.
bool podUpdateMattersToPolicies(const core::Pod& oldPod, const core::Pod& newPod);

class MainController : public controllerruntime::Runnable {
 public:
  struct Options {
    // Concurrent reconciles of the egressgateway controller (--workers); the ipampool and
    // operator controllers run one each (they rewrite a handful of objects).
    int workers = 1;
    Clock& clock;
    net::any_io_executor executor;
    kube::RestClient& client;
    controllerruntime::EventRecorder& recorder;
    prometheus::Registry* registry = nullptr;
    // PodDisruptionBudgets through policy/v1 (servers >= 1.21) or policy/v1beta1.
    bool policyV1 = true;
    // Where egw-agent renews its egw-agent-<node> Leases (--agent-lease-namespace); "" watches
    // none, and with OperatorConfig spec.dataplane.agent no holder then moves.
    std::string agentLeaseNamespace;
    // The API server's addresses as this process reaches it (its REST config's host when that
    // is an IP address, and $KUBERNETES_SERVICE_HOST): never an egress IP (reserved.h).
    std::vector<std::string> apiServerAddresses;
  };

  explicit MainController(Options options);
  ~MainController() override;
  MainController(const MainController&) = delete;
  MainController& operator=(const MainController&) = delete;

  const std::string& name() const override;
  Result<Ok, std::string> setUp(cache::SharedInformerFactory& factory) override;
  net::awaitable<Result<Ok, std::string>> start() override;
  net::awaitable<void> run() override;
  void stop() override;

  // For tests: the allocator's view once start() has run.
  const ipam::Allocator& allocator() const { return allocator_; }

 private:
  Result<Ok, std::string> wireCrossTriggers();
  // The cluster's own addresses (reserved.h) into the allocator; cheap when they did not change.
  void updateReserved();
  // The subcontrollers that exist, in start order.
  std::vector<controllerruntime::Runnable*> subcontrollers() const;

  Options options_;
  std::string name_ = "egress-gateway-operator";
  ipam::Allocator allocator_;
  Metrics metrics_;
  Agents agents_;
  std::unique_ptr<Cache> cache_;
  std::unique_ptr<Context> ctx_;
  std::unique_ptr<EgressGatewayController> egressGateway_;
  std::unique_ptr<IPAMPoolController> ipamPool_;
  std::unique_ptr<OperatorController> operator_;
  std::unique_ptr<AgentLeaseController> agentLease_;
};

// Whether the server serves policy/v1 (PodDisruptionBudgets); an error if it cannot be asked.
net::awaitable<Result<bool, std::string>> serverHasPolicyV1(kube::RestClient& client);

// The ledgers in a raw EgressGatewayPolicy LIST item: read leniently, field by field, so an
// object the typed decoder refuses still yields the addresses it holds. Nullopt without a name.
struct RawLedger {
  ipam::PolicyLedger ledger;
  core::ObjectReference ref;
};
std::optional<RawLedger> ledgerFromRaw(const rapidjson::Value& item);

}  // namespace egress::controller
