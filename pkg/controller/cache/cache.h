// File: cache.h
//
// The operator's shared watch cache (the seed's gridCache): one informer per kind the
// controllers read, all from the Manager's SharedInformerFactory, with the indexes and the
// per-reconcile views built on them. Everything the operator decides is decided from here; the
// API server is only written to.
//
//   kind                    scope              held
//   EgressGatewayPolicy     all namespaces     whole (the ledger is its status)
//   IPAMPool                cluster            whole
//   OperatorConfig          cluster            whole (only "default" is read)
//   Namespace               cluster            name and labels (pools' namespaceSelectors)
//   Node                    cluster            name, addresses, podCIDRs: what no pool may
//                                              hand out (reserved.h)
//   Pod                     all namespaces     what the operator reads (stripPod below): a
//                                              source pod's IPs, node, phase and hostNetwork,
//                                              a gateway pod's uid, controller, annotation,
//                                              readiness and readiness gate
//   Deployment,             all namespaces,    only the operator's own, selected on
//   PodDisruptionBudget     labelled ours      app.kubernetes.io/managed-by
//   ReplicaSet              all namespaces,    the gateway Deployments' (the pod template's
//                           labelled ours      labels): uid and controller only
//   EgressPolicySlice       cluster            whole (the operator writes them all)
//   Lease                   the agents' one    the agents' egw-agent-<node> Leases (and any
//                           namespace          other Lease there), once watchAgentLeases ran
//
// Indexes: policies by pool (status.pool, else spec.egressIP.pool, else "" for the default),
// policies by explicit address, gateway pods by policy ("ns/policy") and by node, slices by
// policy.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pkg/apis/apps/replica_set.h"
#include "pkg/apis/coordination/lease.h"
#include "pkg/apis/core/node.h"
#include "pkg/apis/networking/v1alpha1/types.h"
#include "pkg/cache/informer_factory.h"
#include "pkg/cache/shared_informer.h"
#include "pkg/controller/apis/egressgateway_policy.h"

namespace egress::controller {

// The transform the pod informer applies: keeps identity, labels, the egress-IP annotation, the
// node, hostNetwork, the pod IPs, the phase and the Ready condition, and a gateway pod's
// controller owner reference, ContainersReady and readiness gate. The labels come out interned
// (StringMapInterner::global()): shared with every other cached pod that has the same ones.
void stripPod(core::Pod& pod);
// The ReplicaSet informer's: identity and the controller owner reference.
void stripReplicaSet(apps::ReplicaSet& rs);

// Whether `pod` is one of the gateways of the policy with uid `policyUid`, proven by owner UIDs:
// its controller is ReplicaSet `rs` (by uid), whose controller is Deployment `deployment` (by
// uid), whose controller is the policy (by uid). A label, a name or a copy of the Deployment
// proves nothing: anyone who may edit the namespace can write those. Null `rs` or `deployment`
// (not cached): not proven.
bool provenGateway(const core::Pod& pod, const apps::ReplicaSet* rs,
                   const apps::Deployment* deployment, const std::string& policyUid);
// The same for namespaces: name and labels.
void stripNamespace(core::Namespace& ns);
// And for nodes: name, addresses and pod CIDRs.
void stripNode(core::Node& node);

class Cache {
 public:
  // Makes the informers (before the factory starts). `policyV1`: PodDisruptionBudgets through
  // policy/v1, else policy/v1beta1.
  Cache(cache::SharedInformerFactory& factory, bool policyV1);
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  cache::SharedIndexInformer<v1alpha1::EgressGatewayPolicy>& policies() { return *policies_; }
  cache::SharedIndexInformer<v1alpha1::IPAMPool>& pools() { return *pools_; }
  cache::SharedIndexInformer<v1alpha1::OperatorConfig>& operatorConfigs() { return *configs_; }
  cache::SharedIndexInformer<core::Namespace>& namespaces() { return *namespaces_; }
  cache::SharedIndexInformer<core::Pod>& pods() { return *pods_; }
  cache::SharedIndexInformer<core::Node>& nodes() { return *nodes_; }
  cache::SharedIndexInformer<apps::Deployment>& deployments() { return *deployments_; }
  cache::SharedIndexInformer<apps::ReplicaSet>& replicaSets() { return *replicaSets_; }
  cache::SharedIndexInformer<v1alpha1::EgressPolicySlice>& slices() { return *slices_; }
  cache::SharedIndexInformer<policy::PodDisruptionBudget>& podDisruptionBudgets() { return *pdbs_; }
  bool policyV1() const { return policyV1_; }

  // Makes the informer on the Leases of namespace `ns`, where egw-agent renews egw-agent-<node>
  // (OperatorConfig spec.dataplane.agent moves stale holders by them). Before the factory starts.
  void watchAgentLeases(cache::SharedInformerFactory& factory, const std::string& ns);
  // Null until watchAgentLeases ran.
  cache::SharedIndexInformer<coordination::Lease>* agentLeases() { return leases_; }
  const std::string& agentLeaseNamespace() const { return leaseNamespace_; }
  // The agent Lease of `node`; null if there is none, or no Leases are watched.
  std::shared_ptr<const coordination::Lease> agentLease(const std::string& node) const;

  PolicyPtr policy(const std::string& ns, const std::string& name) const;
  PoolPtr pool(const std::string& name) const;
  // OperatorConfig "default", or null.
  OperatorConfigPtr operatorConfig() const;
  NamespacePtr getNamespace(const std::string& name) const;

  std::vector<PolicyPtr> allPolicies() const;
  std::vector<PoolPtr> allPools() const;
  // Keys of the policies whose pool is `pool`, counting those that name none when `pool` is the
  // OperatorConfig's default.
  std::vector<std::string> policyKeysUsingPool(const std::string& pool) const;
  std::vector<std::string> policyKeysInNamespace(const std::string& ns) const;
  // Keys of the policies that list `address` (canonical text) among their explicit addresses.
  std::vector<std::string> policyKeysWithAddress(const std::string& address) const;
  // Keys of the policies that select `pod` as a source or own it as a gateway.
  std::vector<std::string> policyKeysForPod(const core::Pod& pod) const;
  // Keys of the policies with a gateway pod (by its label) on `node`.
  std::vector<std::string> policyKeysWithGatewayOn(const std::string& node) const;
  // Every policy key, undecodable ones included.
  std::vector<std::string> allPolicyKeys() const;

  // The pool a policy uses: its ledger's (status.pool) once it has addresses, else
  // spec.egressIP.pool, else the OperatorConfig's defaultPool; "" for none.
  std::string resolvedPoolName(const v1alpha1::EgressGatewayPolicy& policy) const;

  // The view one reconcile of policy `key` works on.
  EgressGatewayPolicyInfo policyInfo(const std::string& key) const;

  // What shows an address in use besides the ledgers, for the start hook's rebuild: every
  // address a published slice names (owner: the slice's policy uid; only the operator writes
  // slices). An agent that still holds an address no slice names any more keeps it from a new
  // holder in the view (viewHolders), not in the allocator.
  std::vector<ipam::InUse> addressesInUse() const;

  // Undecodable policies (the cache holds them as entries without an object).
  std::vector<cache::UndecodablePtr> undecodablePolicies() const;

 private:
  bool policyV1_;
  cache::SharedIndexInformer<v1alpha1::EgressGatewayPolicy>* policies_;
  cache::SharedIndexInformer<v1alpha1::IPAMPool>* pools_;
  cache::SharedIndexInformer<v1alpha1::OperatorConfig>* configs_;
  cache::SharedIndexInformer<core::Namespace>* namespaces_;
  cache::SharedIndexInformer<core::Pod>* pods_;
  cache::SharedIndexInformer<core::Node>* nodes_;
  cache::SharedIndexInformer<apps::Deployment>* deployments_;
  cache::SharedIndexInformer<apps::ReplicaSet>* replicaSets_;
  cache::SharedIndexInformer<v1alpha1::EgressPolicySlice>* slices_;
  cache::SharedIndexInformer<policy::PodDisruptionBudget>* pdbs_;
  cache::SharedIndexInformer<coordination::Lease>* leases_ = nullptr;
  std::string leaseNamespace_;
};

}  // namespace egress::controller
