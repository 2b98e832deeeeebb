// File: names.h
//
// The names the operator writes into the cluster and finds its objects by: resources, labels,
// the egress-IP annotation, the field manager, the condition types and reasons. They are the
// operator's contract with the gateway data plane (egw-agent), with users' label selectors and
// with alert rules, so they live in one place and change only deliberately.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "pkg/kube/rest_client.h"

namespace egress::controller {

inline constexpr std::string_view kGroup = "networking.egressgateway.dev";
inline constexpr std::string_view kApiVersion = "networking.egressgateway.dev/v1alpha1";
inline constexpr std::string_view kPolicyKind = "EgressGatewayPolicy";
inline constexpr std::string_view kPoolKind = "IPAMPool";
inline constexpr std::string_view kOperatorConfigKind = "OperatorConfig";
// The one OperatorConfig the operator reads.
inline constexpr std::string_view kOperatorConfigName = "default";

// Server-side apply's field manager, and the Events' reportingController.
inline constexpr std::string_view kFieldManager = "egress-gateway-operator";

// On every object the operator makes (Deployments, PodDisruptionBudgets, EgressPolicySlices) and
// on the gateway pods and their ReplicaSets: the informers select on kManagedByLabel, so they
// cache only the operator's own. Labels are for selection and kubectl; nothing is believed
// because of one (ownership is proven by owner UIDs).
inline constexpr std::string_view kManagedByLabel = "app.kubernetes.io/managed-by";
inline constexpr std::string_view kManagedByValue = "egress-gateway-operator";
inline constexpr std::string_view kNameLabel = "app.kubernetes.io/name";
inline constexpr std::string_view kNameValue = "egress-gateway";
// The policy (in the object's namespace) a gateway object or pod belongs to; on the
// cluster-scoped EgressPolicySlices, with kPolicyNamespaceLabel.
inline constexpr std::string_view kPolicyLabel = "egressgateway.dev/policy";
inline constexpr std::string_view kPolicyNamespaceLabel = "egressgateway.dev/policy-namespace";

// On the objects the operator applies: a digest of what it applied, so an unchanged object is
// not applied again.
inline constexpr std::string_view kAppliedHashAnnotation = "egressgateway.dev/applied-hash";

// With the agent (OperatorConfig spec.dataplane.agent): the gateway pods' readiness gate, which
// the operator sets True once the agent of the pod's node reports the pod's egress IPs
// programmed and announced (kProgrammedAnnotation on its fresh Lease), and False when it no
// longer does. The agent writes no pod: only its own Lease.
inline constexpr std::string_view kIPProgrammedCondition = "egressgateway.dev/ip-programmed";
// On egw-agent's Lease: the egress IPs it holds and has programmed, canonical, sorted,
// comma-separated (pkg/dataplane/cluster_view.h has the same text for the agent).
inline constexpr std::string_view kProgrammedAnnotation = "egressgateway.dev/programmed";
// On egw-agent's Lease, with it: the EgressPolicySlices' resourceVersion its programmed state
// reflects (withdrawals.h: when an address the slices dropped may be freed).
inline constexpr std::string_view kObservedSlicesAnnotation = "egressgateway.dev/observed-slices";
// On egw-agent's Lease, with it: the policies it cannot program, and why (pkg/dataplane/problem.h
// writes it): a JSON array of {"uid", "policy", "reason", "message", "count"}. Their Programmed
// and Ready are False with the reason (one of kDataplaneProblemReasons) while the agent is live.
inline constexpr std::string_view kProblemsAnnotation = "egressgateway.dev/problems";
// With the agent, gateway pods leave a not-ready or unreachable node after this long instead of
// the API server's default 300 s, so the Deployment replaces them while the IP moves.
inline constexpr int64_t kAgentTolerationSeconds = 10;

// egw-agent on node N renews Lease "egw-agent-N" (pkg/dataplane/cluster_view.h has the same).
inline constexpr std::string_view kAgentLeasePrefix = "egw-agent-";

// The Deployment and PodDisruptionBudget of policy `policy`.
std::string gatewayName(std::string_view policy);
// The `index`th EgressPolicySlice of policy `ns`/`policy`: "<ns>.<policy>.<index>" (a namespace
// has no dot, so the name is unambiguous; the operator keeps policy names to 63 characters).
std::string sliceName(std::string_view ns, std::string_view policy, size_t index);

// Condition types.
inline constexpr std::string_view kConditionReady = "Ready";
inline constexpr std::string_view kConditionIPAllocated = "IPAllocated";
inline constexpr std::string_view kConditionGatewayAvailable = "GatewayAvailable";
// A policy's: whether a data plane carries its egress IPs (the agent, on the holders' nodes).
inline constexpr std::string_view kConditionProgrammed = "Programmed";
inline constexpr std::string_view kConditionExhausted = "Exhausted";
inline constexpr std::string_view kConditionOverlapping = "Overlapping";

// Condition reasons. A policy's IPAllocated: kReasonAllocated, kReasonInvalidSpec, or the
// allocator's shortfall (ipam::shortfallName). Its GatewayAvailable: kReasonAvailable,
// kReasonProgressing, kReasonInvalidSpec, kReasonNoOperatorConfig, kReasonNoAddresses,
// kReasonApplyFailed, kReasonPending, kReasonProgressDeadlineExceeded, kReasonReplicaFailure.
// Its Ready: kReasonReady, kReasonGatewaysNotReady, or the first of the two above that is not
// True. A pool's Ready: kReasonReady, kReasonDisabled, kReasonInvalidSpec, kReasonOverlapping,
// kReasonAllocatedOutsidePool; its Exhausted: kReasonNoFreeAddresses,
// kReasonFreeAddressesAvailable; its Overlapping: kReasonNoOverlap, kReasonOverlapsOlderPool.
// The OperatorConfig's Ready: kReasonReady, kReasonNotDefault, kReasonInvalidSpec,
// kReasonDefaultPoolNotFound.
inline constexpr std::string_view kReasonAllocated = "Allocated";
inline constexpr std::string_view kReasonAllocatedOutsidePool = "AllocatedOutsidePool";
inline constexpr std::string_view kReasonAvailable = "Available";
inline constexpr std::string_view kReasonDefaultPoolNotFound = "DefaultPoolNotFound";
inline constexpr std::string_view kReasonDisabled = "Disabled";
inline constexpr std::string_view kReasonFreeAddressesAvailable = "FreeAddressesAvailable";
inline constexpr std::string_view kReasonGatewaysNotReady = "GatewaysNotReady";
inline constexpr std::string_view kReasonInvalidSpec = "InvalidSpec";
inline constexpr std::string_view kReasonNoAddresses = "NoAddresses";
inline constexpr std::string_view kReasonNoFreeAddresses = "NoFreeAddresses";
inline constexpr std::string_view kReasonNoOperatorConfig = "NoOperatorConfig";
inline constexpr std::string_view kReasonNoOverlap = "NoOverlap";
inline constexpr std::string_view kReasonNotDefault = "NotDefault";
inline constexpr std::string_view kReasonOverlapping = "Overlapping";
inline constexpr std::string_view kReasonOverlapsOlderPool = "OverlapsOlderPool";
inline constexpr std::string_view kReasonPending = "Pending";
inline constexpr std::string_view kReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded";
inline constexpr std::string_view kReasonProgressing = "Progressing";
inline constexpr std::string_view kReasonReady = "Ready";
inline constexpr std::string_view kReasonReplicaFailure = "ReplicaFailure";
// GatewayAvailable's reason, and the Warning Event's, while a gateway object cannot be written
// (the DeploymentProcessor reports it, the status says it).
inline constexpr std::string_view kReasonApplyFailed = "ApplyFailed";
// The reason of a gateway pod's readiness gate (kIPProgrammedCondition), and of a policy's
// Programmed, which is also kReasonAgentDisabled or kReasonNoOperatorConfig.
inline constexpr std::string_view kReasonProgrammed = "Programmed";
inline constexpr std::string_view kReasonNotProgrammed = "NotProgrammed";
inline constexpr std::string_view kReasonAgentDisabled = "AgentDisabled";
// A policy's Programmed and Ready when a live agent cannot program it (kProblemsAnnotation), by
// what it reports (pkg/dataplane/problem.h's reasons; dataplane_contract_test pins them); a
// reason not among them reads as kReasonDataplaneProblem.
inline constexpr std::string_view kDataplaneProblemReasons[] = {
    "Unparsable", "InvalidSlice", "RefusedAddress", "ContestedAddress", "DuplicateSlot", "NoMark"};
inline constexpr std::string_view kReasonDataplaneProblem = "DataplaneProblem";
// The longest reported problem message the operator copies into a condition (the agent's own
// bound, pkg/dataplane/problem.h).
inline constexpr size_t kMaxProblemMessage = 200;

// Event reasons beside the condition reasons above (a condition's Warning Event carries its
// reason): a policy's addresses allocated, moved to another holder, released; a pool with no
// free address left; a ledger address another policy holds, found when a leader starts.
inline constexpr std::string_view kEventAllocated = "Allocated";
inline constexpr std::string_view kEventMoved = "Moved";
inline constexpr std::string_view kEventReleased = "Released";
inline constexpr std::string_view kEventPoolExhausted = "PoolExhausted";
inline constexpr std::string_view kEventAddressConflict = "AddressConflict";

// The resources the operator reads and writes.
kube::Resource policiesResource();
kube::Resource poolsResource();
kube::Resource operatorConfigsResource();
kube::Resource podsResource();
kube::Resource namespacesResource();
kube::Resource nodesResource();
kube::Resource deploymentsResource();
kube::Resource replicaSetsResource();
kube::Resource slicesResource();
kube::Resource agentLeasesResource();
// policy/v1 where the server has it (1.21+), else policy/v1beta1 (1.20): the operator asks the
// server at start (serverHasPolicyV1) and uses the same object shape either way.
kube::Resource podDisruptionBudgetsResource(bool policyV1);

}  // namespace egress::controller
