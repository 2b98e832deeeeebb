// File: cluster_view.h
//
// What egw-agent knows of the cluster, as plain values: the Nodes' InternalIPs (tunnel peers),
// each policy's `egw-*` ConfigMap (egress IPs, destinations, exclusions, source pods with their
// nodes), the gateway pods with their egress-IP annotation, and the agents' Leases. The desired
// kernel state (desired_state.h) is a pure function of one ClusterView, so tests and the netns
// e2e feed it values instead of informers. The converters read exactly what the operator writes
// (pkg/controller/egressgateway/render.cc: configMapData, entryText).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/apis/coordination/lease.h"
#include "pkg/apis/core/config_map.h"
#include "pkg/apis/core/node.h"
#include "pkg/apis/core/pod.h"
#include "pkg/apis/meta/time.h"
#include "pkg/ipam/address.h"

namespace egress::dataplane {

// The operator's names the agent reads (pkg/controller/names.h; duplicated as text because the
// agent does not link the operator; dataplane_contract_test pins them against each other).
inline constexpr std::string_view kEgressIPsAnnotation = "egressgateway.dev/egress-ips";
inline constexpr std::string_view kPolicyLabel = "egressgateway.dev/policy";
inline constexpr std::string_view kConfigMapPrefix = "egw-";
// The gateway pods' readiness gate: the agent sets it True on a local gateway pod once all its
// egress IPs are programmed and announced here, False once they are not.
inline constexpr std::string_view kIPProgrammedCondition = "egressgateway.dev/ip-programmed";
// The agent of node N renews Lease "egw-agent-N" in its own namespace.
inline constexpr std::string_view kAgentLeasePrefix = "egw-agent-";

struct NodeView {
  std::string name;
  std::optional<ipam::Address> ipv4;  // first InternalIP of each family
  std::optional<ipam::Address> ipv6;
};

struct SourceView {
  ipam::Address ip;
  std::string node;
};

// One policy, from its ConfigMap "egw-<policy>" in the policy's namespace.
struct PolicyView {
  std::string key;  // "namespace/policy"
  std::vector<ipam::Address> egressIPs;
  std::vector<ipam::Prefix> destinations;
  std::vector<ipam::Prefix> excluded;
  std::vector<SourceView> sources;
};

// A gateway pod: the node that holds its annotation's egress IPs.
struct GatewayPodView {
  std::string key;  // "namespace/name"
  std::string node;
  std::vector<ipam::Address> egressIPs;
  bool ready = false;
  bool terminating = false;  // deletionTimestamp set, or phase Succeeded/Failed
};

struct LeaseView {
  std::string node;
  meta::Time renewTime;
  std::chrono::seconds duration{0};

  // Renewed less than `duration` ago.
  bool freshAt(meta::Time now) const { return now < renewTime + duration; }
};

struct ClusterView {
  std::string self;  // this agent's node
  meta::Time now;
  std::vector<NodeView> nodes;
  std::vector<PolicyView> policies;
  std::vector<GatewayPodView> gateways;
  std::vector<LeaseView> leases;
};

NodeView nodeView(const core::Node& node);
// nullopt for a ConfigMap that is not a gateway's ("egw-" prefix). Lines that do not parse are
// skipped and named in `problems`.
std::optional<PolicyView> policyView(const core::ConfigMap& configMap,
                                     std::vector<std::string>* problems);
// nullopt for a pod without the annotation or not yet scheduled.
std::optional<GatewayPodView> gatewayPodView(const core::Pod& pod);
// nullopt for a Lease that is not an agent's, or has no renewTime or duration.
std::optional<LeaseView> leaseView(const coordination::Lease& lease);

}  // namespace egress::dataplane
