// File: controller.h
//
// The main controller (the seed's pkg/controller/controller.go): one Runnable that the Manager
// drives, hosting the subcontrollers (egressgateway, ipampool, operator, and agentlease when
// agent Leases are watched) over one shared watch cache and one allocator.
//   setUp   builds the cache's informers and the subcontrollers (each declares what it watches
//           and which keys an event queues, in its own controller.h), and keeps the allocator's
//           reserved addresses (reserved.h: nodes, cluster CIDRs, the API server) in step with
//           the Nodes and the OperatorConfig. It only composes: the subcontrollers reach each
//           other through the Context's triggers, each connected by the one it queues.
//   start   (caches synced, lease won, no worker running yet) rebuilds the allocator from a
//           fresh LIST of every policy's ledger (status.pool + status.gateways), read from the
//           raw JSON so a policy the typed decoder refuses keeps its addresses too (fail
//           closed); conflicts go to the log and, as AddressConflict events, to the policies
//           that lose them. A fresh LIST, not the cache: the cache of a replica that just won
//           the lease may not have seen the last ledger the previous leader wrote.
//   run     the subcontrollers' workers, until stop.
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
  // Keeps the allocator's reservations (what no pool may hand out) in line with the Nodes and
  // the OperatorConfig's clusterCIDRs.
  Result<Ok, std::string> watchReservations();
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
