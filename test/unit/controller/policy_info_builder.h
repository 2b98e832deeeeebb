// File: policy_info_builder.h
//
// The reconcile's view of one policy (EgressGatewayPolicyInfo) as the processors' tests build it:
// policy ns/p with the gateway image set, its Deployment, and its gateway pods, each test adding
// only what it is about; and the policy and ledger entries the rendering tests start from.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pkg/controller/controller.h"

namespace egress::controller::testing {

// Policy team-a/billing (uid-1) of IP family `family`, nothing else set.
inline v1alpha1::EgressGatewayPolicy billingPolicy(const std::string& family = "IPv4") {
  v1alpha1::EgressGatewayPolicy p;
  p.metadata.name = "billing";
  p.metadata.namespace_ = "team-a";
  p.metadata.uid = "uid-1";
  p.spec.egressIP.ipFamily = family;
  return p;
}

// A ledger entry of the given addresses.
inline ipam::Entry entry(const std::vector<std::string>& texts) {
  ipam::Entry e;
  for (const auto& t : texts) {
    e.push_back(*ipam::parseAddress(t));
  }
  return e;
}

// Policy ns/p (resourceVersion 5) at `generation` with `replicas` gateways from IPAMPool "pool";
// no ledger, pool, Deployment or pods in the info.
inline EgressGatewayPolicyInfo policyInfo(int64_t generation, int32_t replicas) {
  EgressGatewayPolicyInfo i;
  i.key = "ns/p";
  i.ns = "ns";
  i.name = "p";
  auto policy = std::make_shared<v1alpha1::EgressGatewayPolicy>();
  policy->metadata.name = "p";
  policy->metadata.namespace_ = "ns";
  policy->metadata.resourceVersion = "5";
  policy->metadata.generation = generation;
  policy->spec.egressIP.pool = "pool";
  policy->spec.gateway.replicas = replicas;
  i.policy = policy;
  i.current = *policy;
  auto config = std::make_shared<v1alpha1::OperatorConfig>();
  config->spec.gatewayImage = "img";
  i.config = config;
  return i;
}

// The policy's Deployment, rolled out to its spec: `available` of `replicas` available and ready.
inline void addDeployment(EgressGatewayPolicyInfo& i, int32_t replicas, int32_t available) {
  auto d = std::make_shared<apps::Deployment>();
  d->metadata.generation = 1;
  d->spec.replicas = replicas;
  d->status.observedGeneration = 1;
  d->status.replicas = replicas;
  d->status.updatedReplicas = replicas;
  d->status.availableReplicas = available;
  d->status.readyReplicas = available;
  i.deployment.deployment = d;
}

// A gateway pod of the policy (uid "uid-<name>") on node "node-<name>", created at `created`
// (seconds since the epoch), neither ready nor holding an entry; the caller sets what its test
// is about.
inline EgressPodInfo& addGatewayPod(EgressGatewayPolicyInfo& i, const std::string& name,
                                    int64_t created) {
  auto pod = std::make_shared<core::Pod>();
  pod->metadata.name = name;
  pod->metadata.namespace_ = i.ns;
  pod->metadata.uid = "uid-" + name;
  pod->metadata.creationTimestamp = meta::Time(std::chrono::seconds(created));
  pod->spec.nodeName = "node-" + name;
  EgressPodInfo& p = i.egressPods[name];
  p = EgressPodInfo();
  p.pod = pod;
  return p;
}

// Records in the policy's status (i.current), as the operator's ledger write does, that gateway
// pod `pod` (uid "uid-<pod>") holds the entry of addresses `ips`, comma-separated: the entry with
// those addresses names it, and is appended if the status has none. "" records that it holds
// nothing.
inline void recordHolder(EgressGatewayPolicyInfo& i, const std::string& pod,
                         const std::string& ips) {
  auto& gateways = i.current->status.gateways;
  for (auto& g : gateways) {
    if (g.pod == pod) {
      g.pod.clear();
      g.podUID.clear();
    }
  }
  if (ips.empty()) {
    return;
  }
  std::vector<std::string> list;
  for (size_t start = 0; start <= ips.size();) {
    const size_t comma = std::min(ips.find(',', start), ips.size());
    list.push_back(ips.substr(start, comma - start));
    start = comma + 1;
  }
  for (auto& g : gateways) {
    if (g.egressIPs == list) {
      g.pod = pod;
      g.podUID = "uid-" + pod;
      return;
    }
  }
  v1alpha1::GatewayStatus g;
  g.egressIPs = list;
  g.pod = pod;
  g.podUID = "uid-" + pod;
  gateways.push_back(std::move(g));
}

}  // namespace egress::controller::testing
