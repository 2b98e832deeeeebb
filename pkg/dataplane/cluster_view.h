// File: cluster_view.h
//
// What egw-agent knows of the cluster, as plain values. Everything here comes from objects only
// the operator, administrators (or the agents themselves) can write: the cluster-scoped
// EgressPolicySlices (a policy's egress-IP slots with their holder nodes, destinations,
// exclusions and source pods), the Nodes (tunnel peers, the cluster's own addresses), the
// IPAMPools and the OperatorConfig (what an egress IP may be), and whether each node's agent is
// live. Namespaced
// objects are never read: any editor of a namespace could forge a ConfigMap or a pod annotation
// and so make the kernel SNAT to, or announce, an address that is not theirs.
//
// Liveness arrives as a boolean per node, decided by the agent on its monotonic clock
// (ObservedLeases for the peers, its own renewals for itself), so the pure core
// (desired_state.h) never compares a remote renewTime with a local wall clock, and tests and
// the netns e2e feed it values instead of informers.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/apis/core/node.h"
#include "pkg/apis/networking/v1alpha1/types.h"
#include "pkg/dataplane/problem.h"
#include "pkg/ipam/address.h"

namespace egress::dataplane {

// The agent of node N renews Lease "egw-agent-N" in its own namespace (pkg/controller/names.h
// has the same text: the agent does not link the operator; dataplane_contract_test pins them).
inline constexpr std::string_view kAgentLeasePrefix = "egw-agent-";
// The agent's report on its own Lease: the egress IPs it holds and has programmed, from which
// the operator sets the gateway pods' readiness gate (the agent writes no pod).
inline constexpr std::string_view kProgrammedAnnotation = "egressgateway.dev/programmed";
// With it: the EgressPolicySlices' resourceVersion that the programmed state reflects. The
// operator frees an address the slices stopped naming only once every live agent reports a
// version at least that of the write that dropped it.
inline constexpr std::string_view kObservedSlicesAnnotation = "egressgateway.dev/observed-slices";

struct NodeView {
  std::string name;
  std::optional<ipam::Address> ipv4;  // first InternalIP of each family
  std::optional<ipam::Address> ipv6;
  // Every InternalIP and ExternalIP, and spec.podCIDRs: never an egress IP, and traffic to them
  // never leaves through a gateway.
  std::vector<ipam::Address> addresses;
  std::vector<ipam::Prefix> podCIDRs;

  friend bool operator==(const NodeView&, const NodeView&) = default;
};

struct SourceView {
  ipam::Address ip;
  std::string node;
};

// One gateway replica slot of a policy: its egress IPs (one per family) and the node whose agent
// holds them, as the operator decided from the gateway pod it proved by owner UIDs.
struct EgressIPSlot {
  std::vector<ipam::Address> ips;
  std::string node;  // "" = nobody holds them: traffic that would leave with them is refused
  std::string pod;
  std::string podUID;
};

// One policy, merged from its EgressPolicySlices.
struct PolicyView {
  std::string key;  // "namespace/policy": nft comments and problems
  std::string uid;  // the policy's metadata.uid: two policies are two uids, whatever their keys
  std::vector<EgressIPSlot> slots;
  std::vector<ipam::Prefix> destinations;
  std::vector<ipam::Prefix> excluded;
  std::vector<SourceView> sources;
};

// What this agent knows now of a node's agent, from the agents' heartbeats (pkg/agent
// peer_quorum.h); a node without an entry has no agent and holds nothing.
struct LeaseView {
  std::string node;
  // This node: it has a lease (a majority of the agents hears it). A peer: no majority certifies
  // it dead.
  bool fresh = false;
  // A peer: it wrote to this node after this node's lease began, so `claims` are current.
  bool current = true;
  // The egress IPs it holds (this node: now, in its kernel).
  std::vector<ipam::Address> claims;
};

struct ClusterView {
  std::string self;  // this agent's node
  std::vector<NodeView> nodes;
  std::vector<PolicyView> policies;
  std::vector<LeaseView> leases;
  // The IPAMPools' CIDRs: an egress IP outside them all is refused (the operator checked it
  // already; the agent does not take its word for it).
  std::vector<ipam::Prefix> poolCIDRs;
  // The OperatorConfig's clusterCIDRs, and the API server's addresses as this agent reaches it:
  // never an egress IP, never a destination that leaves through a gateway.
  std::vector<ipam::Prefix> clusterCIDRs;
  std::vector<ipam::Address> apiServer;
};

NodeView nodeView(const core::Node& node);
// The CIDRs of every pool (valid or not: an address in a pool the operator refused is still not
// a forgery), and the clusterCIDRs of the OperatorConfig "default" among `configs`.
std::vector<ipam::Prefix> poolCIDRs(
    const std::vector<std::shared_ptr<const networking::v1alpha1::IPAMPool>>& pools);
std::vector<ipam::Prefix> clusterCIDRs(
    const std::vector<std::shared_ptr<const networking::v1alpha1::OperatorConfig>>& configs);

// The policies of `slices`, sorted by key then uid. Slices are grouped by spec.policy.uid; the
// group's head is its slice with spec.gateway (of several, the lowest metadata.name; the others
// are named in `problems`). A group without a head is ignored and named in `problems`: without
// its ledger nothing safe can be programmed for its sources. Addresses and CIDRs that do not
// parse are skipped and named in `problems`. Each problem names the policy (uid and key) of its
// group.
std::vector<PolicyView> policyViews(
    const std::vector<std::shared_ptr<const networking::v1alpha1::EgressPolicySlice>>& slices,
    std::vector<Problem>* problems);

// The transform of the agent's Node informer: the name, the InternalIP and ExternalIP addresses
// and the pod CIDRs, all that nodeView reads. A cloud's Node carries tens of labels and
// annotations, taints and conditions: kilobytes a node, which no sync reads.
void stripNode(core::Node& node);

// The transform of the agent's slice informer: keeps what policyViews reads. A source's pod name
// is read only to name a source whose address does not parse, so only such a source keeps it: a
// pod named as a Deployment names them is longer than std::string holds inline, and 100,000 such
// names hold 3 MiB of heap in 32-byte blocks (agent_bench, one run each: 92 MiB of RSS after the
// first programming with this transform, 113 MiB without). Labels, annotations, owner
// references and finalizers are never read.
void stripSlice(networking::v1alpha1::EgressPolicySlice& slice);

// The node of an agent's Lease name ("egw-agent-<node>"), or nullopt for any other Lease.
std::optional<std::string> agentLeaseNode(std::string_view leaseName);

// The value of kProgrammedAnnotation for `held`: canonical text, sorted, joined by ",".
std::string programmedAnnotation(const std::vector<ipam::Address>& held);

}  // namespace egress::dataplane
