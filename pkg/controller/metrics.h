// File: metrics.h
//
// The operator's domain metrics, beside the runtime's controller_runtime_*, workqueue_* and
// rest_client_* families: what a platform team alerts on.
//   egress_ipam_pool_addresses{pool,family,state}      gauge; state total|allocated|free
//   egress_ip_allocation_failures_total{pool,reason}   counter; reason as the IPAllocated
//                                                      condition's (PoolExhausted, ...), counted
//                                                      when a policy newly falls short
//   egress_policies{state}                             gauge; ready|not_ready|invalid
//   egress_gateway_replicas{namespace,policy,state}    gauge; state desired|available
//   egress_selected_pods{namespace,policy}             gauge
//   egress_policy_ready{namespace,policy}              gauge; 1 while the policy's Ready
//                                                      condition is True, else 0 (what a
//                                                      per-policy "not Ready for 10 m" alert
//                                                      needs, which egress_policies cannot say)
// Series of a deleted pool or policy are removed, so a dashboard never shows ghosts.
#pragma once

#include <map>
#include <string>
#include <tuple>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "pkg/ipam/pool.h"

namespace egress::controller {

class Metrics {
 public:
  // Null registry: every call does nothing.
  explicit Metrics(prometheus::Registry* registry);
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // hasFamily false removes the family's series.
  void setPoolAddresses(const std::string& pool, ipam::Family family, bool hasFamily,
                        const ipam::FamilyCounts& counts);
  void removePool(const std::string& pool);
  void allocationFailed(const std::string& pool, const std::string& reason);
  void setPolicies(int ready, int notReady, int invalid);
  void setPolicy(const std::string& ns, const std::string& name, int desired, int available,
                 int selectedPods, bool ready);
  void removePolicy(const std::string& ns, const std::string& name);

 private:
  prometheus::Family<prometheus::Gauge>* poolAddresses_ = nullptr;
  prometheus::Family<prometheus::Counter>* failures_ = nullptr;
  prometheus::Family<prometheus::Gauge>* policies_ = nullptr;
  prometheus::Family<prometheus::Gauge>* replicas_ = nullptr;
  prometheus::Family<prometheus::Gauge>* selected_ = nullptr;
  prometheus::Family<prometheus::Gauge>* ready_ = nullptr;
  // The children this object made, so they can be removed again.
  std::map<std::tuple<std::string, std::string, std::string>, prometheus::Gauge*> poolSeries_;
  std::map<std::pair<std::string, std::string>, prometheus::Counter*> failureSeries_;
  std::map<std::tuple<std::string, std::string, std::string>, prometheus::Gauge*> replicaSeries_;
  std::map<std::pair<std::string, std::string>, prometheus::Gauge*> selectedSeries_;
  std::map<std::pair<std::string, std::string>, prometheus::Gauge*> readySeries_;
};

}  // namespace egress::controller
