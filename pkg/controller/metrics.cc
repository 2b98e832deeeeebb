#include "pkg/controller/metrics.h"

#include <string_view>

namespace egress::controller {

namespace {

template <class Builder>
auto* registerFamily(Builder builder, prometheus::Registry& registry, const char* name,
                     const char* help) {
  return &builder.Name(name).Help(help).Register(registry);
}

// Removes from `family` each series of `series` whose key satisfies `pred`.
template <class Family, class Series, class Pred>
void removeSeriesIf(Family& family, Series& series, Pred pred) {
  for (auto it = series.begin(); it != series.end();) {
    if (pred(it->first)) {
      family.Remove(it->second);
      it = series.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace

Metrics::Metrics(prometheus::Registry* registry) {
  if (registry == nullptr) {
    return;
  }
  using prometheus::BuildCounter;
  using prometheus::BuildGauge;
  poolAddresses_ = registerFamily(BuildGauge(), *registry, "egress_ipam_pool_addresses",
                                  "Addresses of an IPAMPool by family and state (total, "
                                  "allocated, free); counts saturate at 2^63-1.");
  failures_ = registerFamily(BuildCounter(), *registry, "egress_ip_allocation_failures_total",
                             "Times a policy fell short of egress IPs, by pool and reason.");
  policies_ = registerFamily(BuildGauge(), *registry, "egress_policies",
                             "EgressGatewayPolicies by state (ready, not_ready, invalid).");
  replicas_ = registerFamily(BuildGauge(), *registry, "egress_gateway_replicas",
                             "Gateway pods of a policy: desired, and available.");
  selected_ = registerFamily(BuildGauge(), *registry, "egress_selected_pods",
                             "Source pods a policy selects.");
  ready_ = registerFamily(BuildGauge(), *registry, "egress_policy_ready",
                          "1 while a policy's Ready condition is True, else 0.");
  for (const char* state : {"ready", "not_ready", "invalid"}) {
    policies_->Add({{"state", state}}).Set(0);
  }
}

void Metrics::setPoolAddresses(const std::string& pool, ipam::Family family, bool hasFamily,
                               const ipam::FamilyCounts& counts) {
  if (poolAddresses_ == nullptr) {
    return;
  }
  const std::string f(ipam::familyName(family));
  const std::pair<const char*, int64_t> states[] = {
      {"total", counts.total}, {"allocated", counts.allocated}, {"free", counts.free}};
  for (const auto& [state, value] : states) {
    auto key = std::make_tuple(pool, f, std::string(state));
    auto it = poolSeries_.find(key);
    if (!hasFamily) {
      if (it != poolSeries_.end()) {
        poolAddresses_->Remove(it->second);
        poolSeries_.erase(it);
      }
      continue;
    }
    if (it == poolSeries_.end()) {
      it =
          poolSeries_
              .emplace(key, &poolAddresses_->Add({{"pool", pool}, {"family", f}, {"state", state}}))
              .first;
    }
    it->second->Set(static_cast<double>(value));
  }
}

void Metrics::removePool(const std::string& pool) {
  if (poolAddresses_ == nullptr) {
    return;
  }
  removeSeriesIf(*poolAddresses_, poolSeries_,
                 [&](const auto& key) { return std::get<0>(key) == pool; });
  removeSeriesIf(*failures_, failureSeries_, [&](const auto& key) { return key.first == pool; });
}

void Metrics::allocationFailed(const std::string& pool, const std::string& reason) {
  if (failures_ == nullptr) {
    return;
  }
  auto key = std::make_pair(pool, reason);
  auto it = failureSeries_.find(key);
  if (it == failureSeries_.end()) {
    it = failureSeries_.emplace(key, &failures_->Add({{"pool", pool}, {"reason", reason}})).first;
  }
  it->second->Increment();
}

void Metrics::setPolicies(int ready, int notReady, int invalid) {
  if (policies_ == nullptr) {
    return;
  }
  policies_->Add({{"state", "ready"}}).Set(ready);
  policies_->Add({{"state", "not_ready"}}).Set(notReady);
  policies_->Add({{"state", "invalid"}}).Set(invalid);
}

namespace {

// The policy's series of `family`, made on first use.
prometheus::Gauge& policyGauge(
    prometheus::Family<prometheus::Gauge>& family,
    std::map<std::pair<std::string, std::string>, prometheus::Gauge*>& series,
    const std::string& ns, const std::string& name) {
  auto key = std::make_pair(ns, name);
  auto it = series.find(key);
  if (it == series.end()) {
    it = series.emplace(key, &family.Add({{"namespace", ns}, {"policy", name}})).first;
  }
  return *it->second;
}

void removePolicyGauge(prometheus::Family<prometheus::Gauge>& family,
                       std::map<std::pair<std::string, std::string>, prometheus::Gauge*>& series,
                       const std::string& ns, const std::string& name) {
  if (auto it = series.find(std::make_pair(ns, name)); it != series.end()) {
    family.Remove(it->second);
    series.erase(it);
  }
}

}  // namespace

void Metrics::setPolicy(const std::string& ns, const std::string& name, int desired, int available,
                        int selectedPods, bool ready) {
  if (replicas_ == nullptr) {
    return;
  }
  for (const auto& [state, value] :
       {std::pair<std::string_view, int>{"desired", desired}, {"available", available}}) {
    auto key = std::make_tuple(ns, name, std::string(state));
    auto it = replicaSeries_.find(key);
    if (it == replicaSeries_.end()) {
      it = replicaSeries_
               .emplace(key,
                        &replicas_->Add(
                            {{"namespace", ns}, {"policy", name}, {"state", std::string(state)}}))
               .first;
    }
    it->second->Set(value);
  }
  policyGauge(*selected_, selectedSeries_, ns, name).Set(selectedPods);
  policyGauge(*ready_, readySeries_, ns, name).Set(ready ? 1 : 0);
}

void Metrics::removePolicy(const std::string& ns, const std::string& name) {
  if (replicas_ == nullptr) {
    return;
  }
  for (const char* state : {"desired", "available"}) {
    if (auto it = replicaSeries_.find(std::make_tuple(ns, name, std::string(state)));
        it != replicaSeries_.end()) {
      replicas_->Remove(it->second);
      replicaSeries_.erase(it);
    }
  }
  removePolicyGauge(*selected_, selectedSeries_, ns, name);
  removePolicyGauge(*ready_, readySeries_, ns, name);
}

}  // namespace egress::controller
