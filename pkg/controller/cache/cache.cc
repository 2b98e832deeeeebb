#include "pkg/controller/cache/cache.h"

#include <algorithm>
#include <set>

#include "pkg/apis/meta/string_map_interner.h"
#include "pkg/cache/indexer.h"
#include "pkg/client/networking/v1alpha1/zz_generated.informers.h"
#include "pkg/controller/names.h"
#include "pkg/ipam/address.h"

namespace egress::controller {
namespace {

constexpr const char* kByPool = "byPool";
constexpr const char* kByAddress = "byAddress";
constexpr const char* kByPolicy = "byPolicy";
constexpr const char* kByNode = "byNode";

std::string ownedSelector() {
  return std::string(kManagedByLabel) + "=" + std::string(kManagedByValue);
}

// "ns/policy" of an object labelled as a policy's; nothing for anything else.
template <class T>
std::vector<std::string> policyOf(const T& obj) {
  auto it = obj.metadata.labels.find(std::string(kPolicyLabel));
  if (it == obj.metadata.labels.end() || it->second.empty()) {
    return {};
  }
  return {obj.metadata.namespace_ + "/" + it->second};
}

std::string poolIndexValue(const v1alpha1::EgressGatewayPolicy& p) {
  if (!p.status.pool.empty()) {
    return p.status.pool;
  }
  return p.spec.egressIP.pool.value_or("");
}

template <class T>
std::vector<std::string> keysOf(const std::optional<std::vector<std::shared_ptr<const T>>>& objs) {
  std::vector<std::string> out;
  if (objs) {
    for (const auto& o : *objs) {
      out.push_back(cache::objectKey(o->metadata));
    }
  }
  return out;
}

bool containersAreReady(const core::Pod& pod) {
  return std::any_of(pod.status.conditions.begin(), pod.status.conditions.end(),
                     [](const core::PodCondition& c) {
                       return c.type == "ContainersReady" && c.status == "True";
                     });
}

}  // namespace

bool provenGateway(const core::Pod& pod, const apps::ReplicaSet* rs,
                   const apps::Deployment* deployment, const std::string& policyUid) {
  if (rs == nullptr || deployment == nullptr || policyUid.empty()) {
    return false;
  }
  // By group, kind and uid: the version in a reference is whichever the writer used, and a new
  // version of the policy's API must not orphan every gateway.
  auto controlledBy = [](const meta::ObjectMeta& m, std::string_view group, std::string_view kind,
                         const std::string& uid) {
    const auto* ref = meta::controllerOf(m);
    if (ref == nullptr || uid.empty() || ref->uid != uid || ref->kind != kind) {
      return false;
    }
    const auto slash = ref->apiVersion.find('/');
    return slash != std::string::npos &&
           std::string_view(ref->apiVersion).substr(0, slash) == group;
  };
  return rs->metadata.namespace_ == pod.metadata.namespace_ &&
         deployment->metadata.namespace_ == pod.metadata.namespace_ &&
         controlledBy(pod.metadata, "apps", "ReplicaSet", rs->metadata.uid) &&
         controlledBy(rs->metadata, "apps", "Deployment", deployment->metadata.uid) &&
         controlledBy(deployment->metadata, kGroup, kPolicyKind, policyUid);
}

void stripPod(core::Pod& pod) {
  auto& m = pod.metadata;
  // No annotation is read (the holder record is the policy's status). Assigned, not clear()ed:
  // a cleared map keeps its capacity (80 bytes for a pod's one annotation, and real pods carry
  // several).
  m.annotations = meta::StringMap();
  // A gateway pod keeps its controller (its ReplicaSet) and its uid; a source pod's owners and
  // uid are never read, and at about 200 and 48 bytes they would be a fifth of what a cached pod
  // costs.
  const bool gateway = m.labels.find(std::string(kPolicyLabel)) != m.labels.end();
  std::vector<meta::OwnerReference> controllerRef;
  const auto* ref = meta::controllerOf(m);
  if (ref != nullptr && gateway) {
    controllerRef.push_back(*ref);
  }
  m.ownerReferences = std::move(controllerRef);
  if (!gateway) {
    m.uid = std::string();
  }
  m.finalizers.clear();
  m.finalizers.shrink_to_fit();
  m.generation = 0;
  const bool ready = core::isPodReady(pod);
  // A gateway pod's ContainersReady too: with the agent's readiness gate a pod without an egress
  // IP is never Ready, yet it can take over one (moveStaleHolders). And the gate itself, which
  // the operator writes: without it every reconcile would write it again.
  const bool containersReady = gateway && containersAreReady(pod);
  std::optional<core::PodCondition> gate;
  if (gateway) {
    for (const auto& c : pod.status.conditions) {
      if (c.type == kIPProgrammedCondition) {
        gate = core::PodCondition{std::string(kIPProgrammedCondition), c.status};
      }
    }
  }
  pod.status.conditions.clear();
  if (ready) {
    pod.status.conditions.push_back({"Ready", "True"});
  }
  if (containersReady) {
    pod.status.conditions.push_back({"ContainersReady", "True"});
  }
  if (gate) {
    pod.status.conditions.push_back(std::move(*gate));
  }
  pod.status.conditions.shrink_to_fit();
  pod.status.podIPs.shrink_to_fit();
  // Last: after this the labels are read-only and shared with the other pods of the ReplicaSet.
  meta::StringMapInterner::global().intern(m.labels);
}

void stripReplicaSet(apps::ReplicaSet& rs) {
  auto& m = rs.metadata;
  std::vector<meta::OwnerReference> controllerRef;
  if (const auto* ref = meta::controllerOf(m)) {
    controllerRef.push_back(*ref);
  }
  m.ownerReferences = std::move(controllerRef);
  m.labels = meta::StringMap();
  m.annotations = meta::StringMap();
  m.finalizers.clear();
}

void stripNode(core::Node& node) {
  auto& m = node.metadata;
  m.labels = meta::StringMap();
  m.annotations = meta::StringMap();
  m.ownerReferences.clear();
  m.finalizers.clear();
  node.taints.clear();
  node.conditions.clear();
  std::erase_if(node.addresses, [](const core::NodeAddress& a) {
    return a.type != "InternalIP" && a.type != "ExternalIP";
  });
}

void stripNamespace(core::Namespace& ns) {
  ns.metadata.annotations = meta::StringMap();
  ns.metadata.ownerReferences.clear();
  ns.metadata.finalizers.clear();
}

Cache::Cache(cache::SharedInformerFactory& factory, bool policyV1) : policyV1_(policyV1) {
  client::NetworkingV1alpha1Informers typed(factory);
  policies_ = &typed.egressGatewayPolicies();
  pools_ = &typed.ipamPools();
  configs_ = &typed.operatorConfigs();
  namespaces_ = &factory.informerFor<core::Namespace>(namespacesResource(), core::decodeNamespace,
                                                      "", "", stripNamespace);
  pods_ = &factory.informerFor<core::Pod>(podsResource(), core::decodePod, "", "", stripPod);
  nodes_ = &factory.informerFor<core::Node>(nodesResource(), core::decodeNode, "", "", stripNode);
  const std::string owned = ownedSelector();
  deployments_ = &factory.informerFor<apps::Deployment>(deploymentsResource(),
                                                        apps::decodeDeployment, "", owned);
  replicaSets_ = &factory.informerFor<apps::ReplicaSet>(
      replicaSetsResource(), apps::decodeReplicaSet, "", owned, stripReplicaSet);
  slices_ = &typed.egressPolicySlices();
  pdbs_ = &factory.informerFor<policy::PodDisruptionBudget>(
      podDisruptionBudgetsResource(policyV1), policy::decodePodDisruptionBudget, "", owned);

  policies_->addIndexers({{kByPool,
                           [](const v1alpha1::EgressGatewayPolicy& p) {
                             return std::vector<std::string>{poolIndexValue(p)};
                           }},
                          {kByAddress, [](const v1alpha1::EgressGatewayPolicy& p) {
                             std::vector<std::string> out;
                             for (const auto& text : p.spec.egressIP.addresses) {
                               auto a = ipam::parseAddress(text);
                               out.push_back(a ? a->toString() : text);
                             }
                             return out;
                           }}});
  pods_->addIndexers(
      {{kByPolicy, policyOf<core::Pod>}, {kByNode, [](const core::Pod& p) {
                                            return policyOf(p).empty() || p.spec.nodeName.empty()
                                                       ? std::vector<std::string>{}
                                                       : std::vector<std::string>{p.spec.nodeName};
                                          }}});
  slices_->addIndexers({{kByPolicy, [](const v1alpha1::EgressPolicySlice& s) {
                           return std::vector<std::string>{s.spec.policy.namespace_ + "/" +
                                                           s.spec.policy.name};
                         }}});
}

void Cache::watchAgentLeases(cache::SharedInformerFactory& factory, const std::string& ns) {
  leaseNamespace_ = ns;
  leases_ = &factory.informerFor<coordination::Lease>(agentLeasesResource(),
                                                      coordination::decodeLease, ns);
}

std::shared_ptr<const coordination::Lease> Cache::agentLease(const std::string& node) const {
  if (leases_ == nullptr) {
    return nullptr;
  }
  return leases_->indexer().get(leaseNamespace_ + "/" + std::string(kAgentLeasePrefix) + node);
}

PolicyPtr Cache::policy(const std::string& ns, const std::string& name) const {
  return policies_->indexer().get(ns + "/" + name);
}

PoolPtr Cache::pool(const std::string& name) const {
  return name.empty() ? nullptr : pools_->indexer().get(name);
}

OperatorConfigPtr Cache::operatorConfig() const {
  return configs_->indexer().get(std::string(kOperatorConfigName));
}

NamespacePtr Cache::getNamespace(const std::string& name) const {
  return namespaces_->indexer().get(name);
}

std::vector<PolicyPtr> Cache::allPolicies() const {
  return policies_->indexer().list();
}

std::vector<PoolPtr> Cache::allPools() const {
  return pools_->indexer().list();
}

std::vector<std::string> Cache::policyKeysUsingPool(const std::string& pool) const {
  std::vector<std::string> out = keysOf(policies_->indexer().byIndex(kByPool, pool));
  auto config = operatorConfig();
  if (config && !pool.empty() && config->spec.defaultPool == pool) {
    auto defaulted = keysOf(policies_->indexer().byIndex(kByPool, ""));
    out.insert(out.end(), defaulted.begin(), defaulted.end());
  }
  return out;
}

std::vector<std::string> Cache::policyKeysInNamespace(const std::string& ns) const {
  return keysOf(policies_->indexer().byIndex(cache::kNamespaceIndex, ns));
}

std::vector<std::string> Cache::policyKeysWithAddress(const std::string& address) const {
  return keysOf(policies_->indexer().byIndex(kByAddress, address));
}

std::vector<std::string> Cache::policyKeysForPod(const core::Pod& pod) const {
  std::vector<std::string> out = policyOf(pod);
  if (auto inNs = policies_->indexer().byIndex(cache::kNamespaceIndex, pod.metadata.namespace_)) {
    for (const auto& p : *inNs) {
      if (p->spec.podSelector.matches(pod.metadata.labels)) {
        out.push_back(cache::objectKey(p->metadata));
      }
    }
  }
  return out;
}

std::vector<std::string> Cache::policyKeysWithGatewayOn(const std::string& node) const {
  std::set<std::string> keys;
  if (auto pods = pods_->indexer().byIndex(kByNode, node)) {
    for (const auto& pod : *pods) {
      for (auto& k : policyOf(*pod)) {
        keys.insert(std::move(k));
      }
    }
  }
  return {keys.begin(), keys.end()};
}

std::vector<std::string> Cache::allPolicyKeys() const {
  std::vector<std::string> out = policies_->indexer().listKeys();
  for (const auto& [key, entry] : policies_->indexer().undecodable()) {
    out.push_back(key);
  }
  return out;
}

std::vector<cache::UndecodablePtr> Cache::undecodablePolicies() const {
  std::vector<cache::UndecodablePtr> out;
  for (const auto& [key, entry] : policies_->indexer().undecodable()) {
    out.push_back(entry);
  }
  return out;
}

std::string Cache::resolvedPoolName(const v1alpha1::EgressGatewayPolicy& policy) const {
  if (!policy.status.pool.empty()) {
    return policy.status.pool;
  }
  if (policy.spec.egressIP.pool) {
    return *policy.spec.egressIP.pool;
  }
  auto config = operatorConfig();
  return config ? config->spec.defaultPool : "";
}

std::vector<ipam::InUse> Cache::addressesInUse() const {
  std::vector<ipam::InUse> out;
  slices_->indexer().forEach([&](const SlicePtr& slice) {
    if (!slice->spec.gateway) {
      return;
    }
    const auto& ref = slice->spec.policy;
    ipam::InUse u{
        ref.uid, ref.namespace_ + "/" + ref.name, "EgressPolicySlice " + slice->metadata.name, {}};
    for (const auto& e : slice->spec.gateway->egressIPs) {
      u.addresses.insert(u.addresses.end(), e.ips.begin(), e.ips.end());
    }
    out.push_back(std::move(u));
  });
  return out;
}

EgressGatewayPolicyInfo Cache::policyInfo(const std::string& key) const {
  EgressGatewayPolicyInfo info;
  info.key = key;
  auto slash = key.find('/');
  info.ns = key.substr(0, slash);
  info.name = slash == std::string::npos ? key : key.substr(slash + 1);
  info.policy = policies_->indexer().get(key);
  info.undecodable = policies_->indexer().undecodable(key);
  info.config = operatorConfig();
  info.policyNamespace = getNamespace(info.ns);
  const std::string owned = gatewayName(info.name);
  info.deployment.deployment = deployments_->indexer().get(info.ns + "/" + owned);
  info.deployment.podDisruptionBudget = pdbs_->indexer().get(info.ns + "/" + owned);
  if (auto slices = slices_->indexer().byIndex(kByPolicy, key)) {
    info.deployment.slices = std::move(*slices);
  }
  const std::string policyUid = info.policy ? info.policy->metadata.uid : "";
  auto gateways = info.policy ? pods_->indexer().byIndex(kByPolicy, key) : std::nullopt;
  if (gateways) {
    for (const auto& pod : *gateways) {
      const auto* ref = meta::controllerOf(pod->metadata);
      auto rs = ref == nullptr ? nullptr : replicaSets_->indexer().get(info.ns + "/" + ref->name);
      if (!provenGateway(*pod, rs.get(), info.deployment.deployment.get(), policyUid)) {
        continue;  // labelled as its gateway, but not one it controls: it proves nothing
      }
      EgressPodInfo p;
      p.pod = pod;
      p.ready = core::isPodReady(*pod);
      p.containersReady = containersAreReady(*pod);
      p.terminating = pod->metadata.deletionTimestamp.has_value();
      for (const auto& c : pod->status.conditions) {
        if (c.type == kIPProgrammedCondition) {
          p.programmed = c.status == "True";
        }
      }
      info.egressPods.emplace(pod->metadata.name, std::move(p));
    }
  }
  if (!info.policy) {
    return info;
  }
  info.current = *info.policy;
  info.poolName = resolvedPoolName(*info.policy);
  info.pool = pool(info.poolName);
  if (auto inNs = pods_->indexer().byIndex(cache::kNamespaceIndex, info.ns)) {
    for (const auto& pod : *inNs) {
      if (info.policy->spec.podSelector.matches(pod->metadata.labels) && policyOf(*pod).empty()) {
        (pod->metadata.deletionTimestamp ? info.leavingSourcePods : info.sourcePods).push_back(pod);
      }
    }
  }
  std::sort(info.sourcePods.begin(), info.sourcePods.end(),
            [](const PodPtr& a, const PodPtr& b) { return a->metadata.name < b->metadata.name; });
  return info;
}

}  // namespace egress::controller
