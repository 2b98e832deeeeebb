// File: egressgateway_policy.h
//
// EgressGatewayPolicyInfo: everything one reconcile of a policy looks at, gathered once at its
// start from the shared cache and this process's own writes the cache has yet to show (the
// seed's pkg/controller/apis EgressGatewayPolicyInfo). It is read-only: the processors take it
// const and return what they decided (LedgerPlan, below), which the controller hands to the
// steps after them. The cached objects are shared and immutable.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pkg/apis/apps/deployment.h"
#include "pkg/apis/core/namespace.h"
#include "pkg/apis/core/pod.h"
#include "pkg/apis/networking/v1alpha1/types.h"
#include "pkg/apis/policy/pod_disruption_budget.h"
#include "pkg/apis/validation/field_error.h"
#include "pkg/cache/undecodable.h"
#include "pkg/controller/agentlease/agents.h"
#include "pkg/ipam/allocator.h"

namespace egress::controller {

namespace v1alpha1 = networking::v1alpha1;

using PolicyPtr = std::shared_ptr<const v1alpha1::EgressGatewayPolicy>;
using PoolPtr = std::shared_ptr<const v1alpha1::IPAMPool>;
using OperatorConfigPtr = std::shared_ptr<const v1alpha1::OperatorConfig>;
using PodPtr = std::shared_ptr<const core::Pod>;
using NamespacePtr = std::shared_ptr<const core::Namespace>;
using DeploymentPtr = std::shared_ptr<const apps::Deployment>;
using SlicePtr = std::shared_ptr<const v1alpha1::EgressPolicySlice>;
using PdbPtr = std::shared_ptr<const policy::PodDisruptionBudget>;

// A gateway pod, by name within the policy's namespace.
using EgressPodId = std::string;

struct EgressPodInfo {
  PodPtr pod;
  bool ready = false;
  // Its containers are ready (Ready but for the readiness gate, which only an egress IP opens).
  bool containersReady = false;
  // Being deleted: the data-plane view names it no more, and a pod waiting for an entry takes
  // its entry over.
  bool terminating = false;
  // Its readiness gate kIPProgrammedCondition as cached: nullopt if absent, else True or not.
  std::optional<bool> programmed;
};

// The objects the DeploymentProcessor owns for the policy, as cached (null if absent).
struct EgressGatewayDeployment {
  DeploymentPtr deployment;
  PdbPtr podDisruptionBudget;
  // The policy's EgressPolicySlices (its data-plane view), by spec.policy's namespace and name,
  // whatever uid they name (a re-created policy rewrites its predecessor's).
  std::vector<SlicePtr> slices;
};

struct EgressGatewayPolicyInfo {
  std::string key;  // "namespace/name"
  std::string ns;
  std::string name;
  // Null when the policy is gone (or undecodable: see `undecodable`).
  PolicyPtr policy;
  cache::UndecodablePtr undecodable;
  OperatorConfigPtr config;
  NamespacePtr policyNamespace;
  // The resolved pool's name ("" for none) and the pool itself (null if it does not exist).
  std::string poolName;
  PoolPtr pool;
  EgressGatewayDeployment deployment;
  // Its gateway pods: only pods controlled, by owner UIDs, by a ReplicaSet controlled by the
  // Deployment this policy (uid) controls. A pod merely labelled as its gateway (a deleted
  // predecessor's of the same name, or a forgery) is not one. Empty while the policy is gone.
  std::map<EgressPodId, EgressPodInfo> egressPods;
  // The source pods the policy selects (its own namespace only), not being deleted.
  std::vector<PodPtr> sourcePods;
  // Those being deleted: not counted as selected, but still sources of the data-plane view
  // until they are gone (a pod may send through its grace period, and its address is not
  // handed to another pod before it is gone).
  std::vector<PodPtr> leavingSourcePods;

  // The policy this reconcile starts from: the cached one, or this process's own later status
  // write while the watch has yet to deliver it (read your own writes). Unset while gone.
  std::optional<v1alpha1::EgressGatewayPolicy> current;
  // Addresses the policy's data-plane view, as this process last wrote it, names while the cache
  // still shows an older view: in use, as if the cache showed them.
  std::set<ipam::Address> viewInFlight;
  // What the live agents report they cannot program of this policy (by its uid), one per node,
  // sorted by node (Agents::problemsOf): its Programmed and Ready say the first.
  std::vector<NodeProblem> dataplaneProblems;
};

// The IPPoolProcessor's decision, which the later steps of the reconcile are handed: the ledger
// the policy holds and the gateway pod that holds each entry.
struct LedgerPlan {
  // The spec's problems; non-empty: nothing new is allocated and no gateway object is applied,
  // and the ledger is the one the status records (kept).
  validation::FieldErrors invalid;
  // The allocator's answer (nullopt while the spec is invalid): the ledger's pool, and why it is
  // short of the replicas, if it is.
  std::optional<ipam::Assignment> assignment;
  // The ledger, what every later step reads: the assignment's entries, or while the spec is
  // invalid the ones the status records.
  std::vector<ipam::Entry> entries;
  // Per entry, the gateway pod (by name) that holds it; "" for none.
  std::vector<std::string> holders;
};

}  // namespace egress::controller
