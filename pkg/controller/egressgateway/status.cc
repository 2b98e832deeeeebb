#include "pkg/controller/egressgateway/status.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "pkg/apis/apps/deployment.h"
#include "pkg/controller/conditions.h"
#include "pkg/controller/egressgateway/render.h"
#include "pkg/controller/names.h"

namespace egress::controller {
namespace {

std::string firstProblems(const validation::FieldErrors& errs) {
  std::string out;
  for (size_t i = 0; i < errs.size() && i < 3; ++i) {
    out += (i == 0 ? "" : "; ") + errs[i].toString();
  }
  if (errs.size() > 3) {
    out += "; and " + std::to_string(errs.size() - 3) + " more";
  }
  return out;
}

}  // namespace

ipam::Entry gatewayEntry(const v1alpha1::GatewayStatus& gateway) {
  ipam::Entry e;
  for (const auto& text : gateway.egressIPs) {
    if (auto a = ipam::parseAddress(text)) {
      e.push_back(*a);
    }
  }
  std::sort(e.begin(), e.end());
  return e;
}

std::vector<ipam::Entry> statusLedger(const v1alpha1::EgressGatewayPolicyStatus& status) {
  std::vector<ipam::Entry> out;
  for (const auto& g : status.gateways) {
    if (auto e = gatewayEntry(g); !e.empty()) {
      out.push_back(std::move(e));
    }
  }
  return out;
}

std::vector<std::string> entryHolders(const EgressGatewayPolicyInfo& info,
                                      const v1alpha1::EgressGatewayPolicyStatus& status,
                                      const std::vector<ipam::Entry>& ledger) {
  std::vector<std::string> holders(ledger.size());
  std::map<std::string, std::string> byUid;
  for (const auto& [name, p] : info.egressPods) {
    byUid.emplace(p.pod->metadata.uid, name);
  }
  std::set<std::string> named;
  for (size_t i = 0; i < ledger.size(); ++i) {
    for (const auto& g : status.gateways) {
      auto pod = byUid.find(g.podUID);
      if (pod != byUid.end() && !named.contains(g.podUID) && gatewayEntry(g) == ledger[i]) {
        holders[i] = pod->second;
        named.insert(g.podUID);
        break;
      }
    }
  }
  return holders;
}

v1alpha1::EgressGatewayPolicyStatus desiredStatus(const EgressGatewayPolicyInfo& info,
                                                  const v1alpha1::EgressGatewayPolicy& policy,
                                                  const LedgerPlan& plan,
                                                  const std::string& applyFailure, meta::Time now) {
  v1alpha1::EgressGatewayPolicyStatus s = policy.status;
  const int64_t generation = policy.metadata.generation;
  if (plan.assignment) {
    s.pool = plan.assignment->pool;
  }
  const std::vector<ipam::Entry>& ledger = plan.entries;
  const std::vector<std::string>& holders = plan.holders;
  s.egressIPs.clear();
  s.gateways.clear();
  s.nodes.clear();
  int readyHolders = 0;
  // Ready holders whose readiness gate the agent's report opened: a pod made before the agent
  // was switched on is Ready without one, and nothing has programmed its IPs.
  int programmedHolders = 0;
  for (size_t i = 0; i < ledger.size(); ++i) {
    v1alpha1::GatewayStatus g;
    for (const auto& a : ledger[i]) {
      g.egressIPs.push_back(a.toString());
      s.egressIPs.push_back(a.toString());
    }
    if (!holders[i].empty()) {
      const EgressPodInfo& p = info.egressPods.at(holders[i]);
      g.pod = holders[i];
      g.podUID = p.pod->metadata.uid;
      g.node = p.pod->spec.nodeName;
      if (!g.node.empty() && std::find(s.nodes.begin(), s.nodes.end(), g.node) == s.nodes.end()) {
        s.nodes.push_back(g.node);
      }
      g.ready = p.ready && !p.terminating;
      readyHolders += g.ready ? 1 : 0;
      programmedHolders += g.ready && p.programmed.value_or(false) ? 1 : 0;
    }
    s.gateways.push_back(std::move(g));
  }
  s.selectedPods = static_cast<int32_t>(info.sourcePods.size());
  s.observedGeneration = generation;

  const GatewayShape shape = gatewayShape(policy, info.config.get());
  const int wanted = shape.replicas;
  const int entries = static_cast<int>(ledger.size());

  meta::Condition allocated;
  if (!plan.invalid.empty()) {
    allocated = makeCondition(kConditionIPAllocated, false, kReasonInvalidSpec,
                              firstProblems(plan.invalid), generation);
  } else if (plan.assignment && plan.assignment->shortfall != ipam::Shortfall::kNone) {
    allocated = makeCondition(kConditionIPAllocated, false,
                              std::string(ipam::shortfallName(plan.assignment->shortfall)),
                              plan.assignment->message + " (" + std::to_string(entries) + " of " +
                                  std::to_string(wanted) + " gateways have addresses)",
                              generation);
  } else {
    allocated = makeCondition(kConditionIPAllocated, true, kReasonAllocated,
                              std::to_string(entries) + " of " + std::to_string(wanted) +
                                  " gateways have egress IPs" +
                                  (s.pool.empty() ? "" : " from IPAMPool " + s.pool),
                              generation);
  }

  meta::Condition available;
  const auto* d = info.deployment.deployment.get();
  const auto rollout = d != nullptr ? apps::deploymentRolloutStatus(*d) : apps::RolloutStatus{};
  // With minReadySeconds 0 (render.cc) a Ready pod is an available one: once every replica runs
  // the current template, a Ready pod holding its entry counts at once, not only when the
  // ReplicaSet and Deployment controllers have said so too (one status write instead of two:
  // the pod's readiness, then the condition).
  const bool updated = rollout.stage == apps::RolloutStage::kBecomingAvailable ||
                       rollout.stage == apps::RolloutStage::kDone;
  const int availablePods = d == nullptr ? 0
                            : updated    ? std::max(d->status.availableReplicas, readyHolders)
                                         : d->status.availableReplicas;
  // Only the count, which changes when a pod comes or goes, not on each step of the Deployment's
  // status: the steps of a rollout that goes as it should tell the user nothing to act on.
  const std::string count =
      std::to_string(availablePods) + " of " + std::to_string(entries) + " gateway pods available";
  const apps::DeploymentCondition* replicaFailure =
      d != nullptr ? apps::findDeploymentCondition(*d, "ReplicaFailure") : nullptr;
  if (!plan.invalid.empty()) {
    available = makeCondition(kConditionGatewayAvailable, false, kReasonInvalidSpec,
                              "the gateway is left as it is until the spec is valid", generation);
  } else if (info.config == nullptr || info.config->spec.gatewayImage.empty()) {
    available =
        makeCondition(kConditionGatewayAvailable, false, kReasonNoOperatorConfig,
                      "OperatorConfig default (with spec.gatewayImage) does not exist", generation);
  } else if (entries == 0) {
    available = makeCondition(kConditionGatewayAvailable, false, kReasonNoAddresses,
                              "no gateway runs without an egress IP", generation);
  } else if (!applyFailure.empty()) {
    available = makeCondition(kConditionGatewayAvailable, false, kReasonApplyFailed,
                              count + ": " + applyFailure, generation);
  } else if (d == nullptr && info.policyNamespace && info.policyNamespace->phase == "Terminating") {
    available = makeCondition(kConditionGatewayAvailable, false, kReasonPending,
                              "Deployment " + gatewayName(info.name) + " is not made: namespace " +
                                  info.ns + " is being deleted",
                              generation);
  } else if (updated && d->spec.replicas.value_or(1) == entries && availablePods >= entries) {
    available =
        makeCondition(kConditionGatewayAvailable, true, kReasonAvailable, count, generation);
  } else if (rollout.stage == apps::RolloutStage::kDeadlineExceeded) {
    available = makeCondition(kConditionGatewayAvailable, false, kReasonProgressDeadlineExceeded,
                              count + ": " + rollout.message, generation);
  } else if (replicaFailure != nullptr && replicaFailure->status == meta::kConditionTrue) {
    // Pods that cannot be made (quota, admission): nothing changes until the user acts, and
    // the progress deadline would only say so minutes later, and not why.
    available = makeCondition(kConditionGatewayAvailable, false, kReasonReplicaFailure,
                              count + ": " + replicaFailure->message, generation);
  } else if (rollout.stage == apps::RolloutStage::kOldReplicasPending) {
    // With maxSurge 0 the old pods are scaled down before the new ones come: old ones left
    // after every new one came are not a step of a normal rollout.
    available = makeCondition(kConditionGatewayAvailable, false, kReasonProgressing,
                              count + ": " + rollout.message, generation);
  } else {
    // Also before the Deployment is in the cache: the DeploymentProcessor applies it in the
    // reconcile that writes the ledger (an apply that fails says so above), so its appearance
    // with no pod available is no change.
    available =
        makeCondition(kConditionGatewayAvailable, false, kReasonProgressing, count, generation);
  }

  const bool agent =
      info.config != nullptr && info.config->spec.dataplane && info.config->spec.dataplane->agent;
  // A node whose agent cannot program the policy: some of its traffic is refused or cannot
  // leave, whatever the holders say.
  std::optional<meta::Condition> refused;
  if (agent && !info.dataplaneProblems.empty()) {
    const auto& first = info.dataplaneProblems.front();
    std::string message = "egw-agent on node " + first.node + ": " + first.message;
    if (info.dataplaneProblems.size() > 1) {
      message += " (and " + std::to_string(info.dataplaneProblems.size() - 1) +
                 " more nodes report problems)";
    }
    refused = makeCondition(kConditionProgrammed, false, first.reason, message, generation);
  }
  meta::Condition ready;
  if (allocated.status != meta::kConditionTrue) {
    ready = makeCondition(kConditionReady, false, allocated.reason, allocated.message, generation);
  } else if (available.status != meta::kConditionTrue) {
    ready = makeCondition(kConditionReady, false, available.reason, available.message, generation);
  } else if (refused) {
    ready = makeCondition(kConditionReady, false, refused->reason, refused->message, generation);
  } else if (readyHolders < entries) {
    ready = makeCondition(kConditionReady, false, kReasonGatewaysNotReady,
                          std::to_string(readyHolders) + " of " + std::to_string(entries) +
                              " egress IPs are held by a Ready gateway pod",
                          generation);
  } else {
    ready = makeCondition(kConditionReady, true, kReasonReady,
                          std::string("every egress IP is held by a Ready gateway pod") +
                              (agent ? "" : "; no node carries its traffic (see Programmed)"),
                          generation);
  }
  // Whether packets leave with the egress IPs. With the agent a holder is Ready only once the
  // agent on its node has programmed its IPs (the readiness gate), so the Ready holders say it.
  // Without it nothing does: the policy is bookkeeping, and says so rather than let Ready alone
  // suggest traffic.
  meta::Condition programmed;
  if (info.config == nullptr) {
    programmed = makeCondition(kConditionProgrammed, false, kReasonNoOperatorConfig,
                               "OperatorConfig default does not exist", generation);
  } else if (!agent) {
    programmed = makeCondition(
        kConditionProgrammed, false, kReasonAgentDisabled,
        "OperatorConfig default has spec.dataplane.agent false: no node programs these egress "
        "IPs, and the selected pods leave with their nodes' addresses as before",
        generation);
  } else if (refused) {
    programmed = *refused;
  } else if (entries > 0 && programmedHolders == entries) {
    programmed =
        makeCondition(kConditionProgrammed, true, kReasonProgrammed,
                      "egw-agent on each holder's node carries its egress IPs", generation);
  } else {
    programmed =
        makeCondition(kConditionProgrammed, false, kReasonNotProgrammed,
                      std::to_string(programmedHolders) + " of " + std::to_string(entries) +
                          " egress IPs are programmed on a Ready holder's node",
                      generation);
  }
  meta::setCondition(s.conditions, allocated, now);
  meta::setCondition(s.conditions, available, now);
  meta::setCondition(s.conditions, ready, now);
  meta::setCondition(s.conditions, programmed, now);
  return s;
}

}  // namespace egress::controller
