// File: types.h
//
// The operator's API, group networking.egressgateway.dev, version v1alpha1: the single source of
// truth from which `make generate` writes the JSON codecs, field validation, typed clientset,
// listers, informers and the CRD manifests (hack/codegen). It is the C++ analogue of a Go
// types.go with client-gen and kubebuilder markers, read by a strict grammar:
//
//   - `// +marker` lines attach to the struct or field that follows; other `//` lines directly
//     above it become its description in the CRD schema.
//   - A field is `Type name;` (a trailing `_` is dropped from the JSON name, for C++ keywords);
//     types: std::string, bool, int32_t, int64_t, std::optional<T>, std::vector<T>,
//     meta::StringMap, meta::Quantity, meta::QuantityMap, meta::ObjectMeta, meta::LabelSelector,
//     meta::Condition, or a struct above.
//   - meta::Quantity is a resource.Quantity ("500m", "128Mi", or a JSON integer), kept as the
//     text given; meta::QuantityMap maps resource names to quantities (a container's requests
//     and limits). The CRD declares each quantity int-or-string with controller-gen's quantity
//     pattern, and validation parses it (meta::parseQuantity in pkg/apis/meta/quantity.h). No
//     validation marker applies to them.
//   - `+required` marks required fields; every other field is optional and omitted from JSON when
//     empty (Go's omitempty); std::optional keeps "absent" apart from zero. `+emitzero` on an
//     integer or bool writes it even when 0 or false (a Go field without omitempty: a count whose
//     0 is news, "free: 0"), without making it required.
//   - Comment lines become the field's description in `kubectl explain`: write them for
//     Kubernetes users (JSON names, "absent", "list"), never in C++ terms.
//   - Validation markers are kubebuilder's (Minimum, Maximum, MinLength, MaxLength, MinItems,
//     MaxItems, Pattern, Enum, Format, items:*, XValidation, default). Formats: cidr, ipv4, ipv6,
//     ip (either family), ip-or-cidr.
//
// Validation happens three times: the CRD schema (API server), CEL rules (API servers >= 1.25;
// older ones, like our 1.20 test server, ignore them), and validate() in validation.h, which
// checks every marker and every CEL rule again, because controllers must never act on a spec
// the API server let through.
//
// +groupName=networking.egressgateway.dev
// +version=v1alpha1
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pkg/apis/meta/condition.h"
#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/label_selector.h"
#include "pkg/apis/meta/object_meta.h"
#include "pkg/apis/meta/quantity.h"

namespace egress::networking::v1alpha1 {

// ---------------------------------------------------------------------------------------------
// IPAMPool

// IPFamilyCounts counts the addresses of one IP family in a pool. Counts saturate at 2^63-1
// (an IPv6 /64 holds more).
struct IPFamilyCounts {
  // Addresses in the pool's CIDRs minus the excluded ones.
  // +emitzero
  int64_t total = 0;
  // Addresses held by policies.
  // +emitzero
  int64_t allocated = 0;
  // Addresses that can still be allocated.
  // +emitzero
  int64_t free = 0;

  bool operator==(const IPFamilyCounts&) const = default;
};

// IPAMPoolSpec is the address space an IPAMPool hands out.
struct IPAMPoolSpec {
  // CIDRs to allocate egress IPs from, IPv4 and/or IPv6, e.g. 203.0.113.0/28 or
  // 2001:db8:100::/120. Never allocated: network and broadcast addresses of IPv4 prefixes
  // shorter than /31, the all-zeros (Subnet-Router anycast) address of IPv6 prefixes shorter
  // than /127, special-use addresses (loopback, link-local, multicast, unspecified), and the
  // cluster's own: node addresses, node pod CIDRs, the OperatorConfig's clusterCIDRs, the API
  // server's address.
  // +required
  // +kubebuilder:validation:MinItems=1
  // +kubebuilder:validation:MaxItems=16
  // +kubebuilder:validation:items:Format=cidr
  // +kubebuilder:validation:items:MaxLength=43
  std::vector<std::string> cidrs;
  // Addresses or CIDRs inside cidrs that are never allocated (routers, reserved addresses).
  // +kubebuilder:validation:MaxItems=256
  // +kubebuilder:validation:items:Format=ip-or-cidr
  // +kubebuilder:validation:items:MaxLength=43
  std::vector<std::string> exclude;
  // True keeps existing allocations but makes no new ones (to drain a pool).
  bool disabled = false;
  // The namespaces whose policies may allocate from this pool; absent: every namespace. A policy
  // in a namespace it does not select gets condition IPAllocated=False, reason PoolNotAllowed.
  std::optional<meta::LabelSelector> namespaceSelector;

  bool operator==(const IPAMPoolSpec&) const = default;
};

// IPAMPoolStatus is the pool's usage as the operator last computed it.
struct IPAMPoolStatus {
  // IPv4 usage; absent if the pool has no IPv4 CIDR.
  std::optional<IPFamilyCounts> ipv4;
  // IPv6 usage; absent if the pool has no IPv6 CIDR.
  std::optional<IPFamilyCounts> ipv6;
  // Addresses of this pool held by policies, both families.
  // +emitzero
  int64_t allocated = 0;
  // The spec generation this status describes.
  int64_t observedGeneration = 0;
  // Ready, Exhausted, Overlapping.
  // +listType=map
  // +listMapKey=type
  std::vector<meta::Condition> conditions;

  bool operator==(const IPAMPoolStatus&) const = default;
};

// IPAMPool is a cluster-wide set of addresses that egress gateways take their source IPs from.
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:resource:scope=Cluster,shortName=ipp,categories=egress
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name=CIDRs,type=string,JSONPath=.spec.cidrs
// +kubebuilder:printcolumn:name=Allocated,type=integer,JSONPath=.status.allocated
// +kubebuilder:printcolumn:name=IPv4-Free,type=integer,JSONPath=.status.ipv4.free
// +kubebuilder:printcolumn:name=IPv6-Free,type=integer,JSONPath=.status.ipv6.free
// +kubebuilder:printcolumn:name=Ready,type=string,JSONPath=.status.conditions[?(@.type=="Ready")].status
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=.metadata.creationTimestamp
struct IPAMPool {
  meta::ObjectMeta metadata;
  // +required
  IPAMPoolSpec spec;
  IPAMPoolStatus status;

  bool operator==(const IPAMPool&) const = default;
};

// ---------------------------------------------------------------------------------------------
// EgressGatewayPolicy

// EgressIPSpec says which source IPs the policy's traffic leaves with.
// +kubebuilder:validation:XValidation:rule=!has(oldSelf.pool) || (has(self.pool) && self.pool == oldSelf.pool),message=pool is immutable
// +kubebuilder:validation:XValidation:rule=(has(self.ipFamily) && self.ipFamily != 'IPv4') || !has(self.addresses) || self.addresses.all(a, !a.contains(':')),message=ipFamily IPv4 (the default) takes IPv4 addresses only
// +kubebuilder:validation:XValidation:rule=!has(self.ipFamily) || self.ipFamily != 'IPv6' || !has(self.addresses) || self.addresses.all(a, a.contains(':')),message=ipFamily IPv6 takes IPv6 addresses only
// +kubebuilder:validation:XValidation:rule=!has(self.ipFamily) || self.ipFamily != 'DualStack' || !has(self.addresses) || self.addresses.filter(a, a.contains(':')).size() * 2 == self.addresses.size(),message=ipFamily DualStack takes as many IPv4 as IPv6 addresses
struct EgressIPSpec {
  // The IPAMPool the policy's egress IPs come from; absent: the OperatorConfig's
  // spec.defaultPool. Explicit addresses must lie inside this pool. Once set, the pool cannot be
  // changed or removed: a policy keeps its addresses for life. status.pool records the pool in
  // use.
  // +kubebuilder:validation:MinLength=1
  // +kubebuilder:validation:MaxLength=253
  // +kubebuilder:validation:Pattern=^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$
  std::optional<std::string> pool;
  // Explicit egress IPs, one per gateway replica (one of each family per replica for
  // DualStack), each inside the pool; absent: the operator allocates them from the pool.
  // +listType=set
  // +kubebuilder:validation:MaxItems=64
  // +kubebuilder:validation:items:Format=ip
  // +kubebuilder:validation:items:MaxLength=39
  std::vector<std::string> addresses;
  // IPv4 (the default), IPv6, or DualStack (one address of each family per replica).
  // +kubebuilder:validation:Enum=IPv4;IPv6;DualStack
  // +kubebuilder:default=IPv4
  std::string ipFamily;

  bool operator==(const EgressIPSpec&) const = default;
};

// Toleration is a core/v1 Toleration of the gateway pods, checked as the API server checks a
// pod's.
struct Toleration {
  // The taint key, a qualified name (example.com/dedicated); absent with operator Exists
  // tolerates every taint.
  // +kubebuilder:validation:MaxLength=317
  std::string key;
  // Exists or Equal (the default).
  // +kubebuilder:validation:Enum=Exists;Equal
  std::string operator_;
  // The taint value for operator Equal, a label value; absent for operator Exists.
  // +kubebuilder:validation:MaxLength=63
  std::string value;
  // NoSchedule, PreferNoSchedule or NoExecute; absent: every effect.
  // +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
  std::string effect;
  // Seconds the pod stays bound after a NoExecute taint appears (effect must be NoExecute);
  // absent: forever.
  std::optional<int64_t> tolerationSeconds;

  bool operator==(const Toleration&) const = default;
};

// ResourceRequirements are the gateway container's requests and limits, as in a pod: resource
// names (cpu, memory, ephemeral-storage, hugepages-2Mi, example.com/foo) to quantities (1,
// "0.5", "500m", "128Mi", "2Gi", "1e3").
struct ResourceRequirements {
  // The most the container may use of each resource.
  meta::QuantityMap limits;
  // What the container is guaranteed of each resource; each at most its limit.
  meta::QuantityMap requests;

  bool operator==(const ResourceRequirements&) const = default;
};

// GatewaySpec shapes the gateway Deployment (egw-<policy>).
struct GatewaySpec {
  // Gateway pods, each holding one egress IP (one of each family for DualStack); absent: the
  // OperatorConfig's spec.gatewayDefaults.replicas, else 2.
  // +kubebuilder:validation:Minimum=1
  // +kubebuilder:validation:Maximum=64
  std::optional<int32_t> replicas;
  // Labels of the nodes the gateway pods may run on (keys qualified names, values label values).
  meta::StringMap nodeSelector;
  // Taints the gateway pods tolerate.
  // +kubebuilder:validation:MaxItems=32
  std::vector<Toleration> tolerations;
  // The gateway container's requests and limits.
  std::optional<ResourceRequirements> resources;
  // The gateway pods' PriorityClass (a DNS subdomain).
  // +kubebuilder:validation:MaxLength=253
  // +kubebuilder:validation:Pattern=^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$
  std::string priorityClassName;

  bool operator==(const GatewaySpec&) const = default;
};

// EgressGatewayPolicySpec selects source pods of the policy's namespace and the gateway their
// traffic leaves through.
struct EgressGatewayPolicySpec {
  // The source pods, in the policy's own namespace only.
  // +required
  meta::LabelSelector podSelector;
  // Destination networks whose traffic leaves through the gateway, of the policy's IP family
  // (either family for DualStack); absent: everything outside the cluster. The cluster's own
  // CIDRs (OperatorConfig spec.clusterCIDRs) never do.
  // +kubebuilder:validation:MaxItems=64
  // +kubebuilder:validation:items:Format=cidr
  // +kubebuilder:validation:items:MaxLength=43
  std::vector<std::string> destinationCIDRs;
  // Destination networks that never leave through the gateway, even inside destinationCIDRs;
  // of the policy's IP family, as destinationCIDRs.
  // +kubebuilder:validation:MaxItems=64
  // +kubebuilder:validation:items:Format=cidr
  // +kubebuilder:validation:items:MaxLength=43
  std::vector<std::string> excludedCIDRs;
  // Where the source IPs come from.
  // +required
  EgressIPSpec egressIP;
  // The gateway pods.
  GatewaySpec gateway;

  bool operator==(const EgressGatewayPolicySpec&) const = default;
};

// GatewayStatus is one entry of the policy's allocation ledger: the egress IPs of one gateway
// replica slot, and the gateway pod that holds them.
struct GatewayStatus {
  // The slot's egress IPs: one IPv4 and/or one IPv6 address.
  // +required
  // +kubebuilder:validation:MinItems=1
  // +kubebuilder:validation:MaxItems=2
  // +kubebuilder:validation:items:Format=ip
  // +kubebuilder:validation:items:MaxLength=39
  std::vector<std::string> egressIPs;
  // The gateway pod that holds these addresses; absent until one does. The operator names it
  // here and nowhere else: this record, which only the operator writes, is what the data-plane
  // view's holder comes from.
  // +kubebuilder:validation:MaxLength=253
  std::string pod;
  // That pod's uid: a pod of the same name made later holds nothing.
  // +kubebuilder:validation:MaxLength=36
  std::string podUID;
  // The node that pod runs on.
  // +kubebuilder:validation:MaxLength=253
  std::string node;
  // Whether that pod is Ready.
  bool ready = false;

  bool operator==(const GatewayStatus&) const = default;
};

// EgressGatewayPolicyStatus is what the operator did for the policy.
struct EgressGatewayPolicyStatus {
  // The IPAMPool the ledger's addresses are allocated from: spec.egressIP.pool, or the
  // OperatorConfig's spec.defaultPool when the policy first got addresses; absent if the policy
  // holds only explicit addresses outside every pool. Sticky: it never changes while the ledger
  // holds addresses, whatever the spec says later.
  // +kubebuilder:validation:MaxLength=253
  std::string pool;
  // Every address of the ledger (gateways[*].egressIPs), in ledger order.
  // +kubebuilder:validation:MaxItems=128
  // +kubebuilder:validation:items:Format=ip
  // +kubebuilder:validation:items:MaxLength=39
  std::vector<std::string> egressIPs;
  // The allocation ledger, one entry per gateway replica slot, in order.
  // +kubebuilder:validation:MaxItems=64
  std::vector<GatewayStatus> gateways;
  // The nodes the ledger's egress IPs leave from (gateways[*].node, distinct, in ledger order):
  // for `kubectl get`, whose printer columns show one value of a list path, not all.
  // +kubebuilder:validation:MaxItems=64
  // +kubebuilder:validation:items:MaxLength=253
  std::vector<std::string> nodes;
  // Source pods the policy selects.
  // +emitzero
  int32_t selectedPods = 0;
  // The spec generation this status describes.
  int64_t observedGeneration = 0;
  // IPAllocated, GatewayAvailable, Ready.
  // +listType=map
  // +listMapKey=type
  std::vector<meta::Condition> conditions;

  bool operator==(const EgressGatewayPolicyStatus&) const = default;
};

// EgressGatewayPolicy gives the selected pods a stable source IP for traffic leaving the
// cluster.
// +genclient
// +kubebuilder:resource:scope=Namespaced,shortName=egp,categories=egress
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name=Pool,type=string,JSONPath=.status.pool
// +kubebuilder:printcolumn:name=Egress-IPs,type=string,JSONPath=.status.egressIPs
// +kubebuilder:printcolumn:name=Pods,type=integer,JSONPath=.status.selectedPods
// +kubebuilder:printcolumn:name=Nodes,type=string,JSONPath=.status.nodes
// +kubebuilder:printcolumn:name=Ready,type=string,JSONPath=.status.conditions[?(@.type=="Ready")].status
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=.metadata.creationTimestamp
struct EgressGatewayPolicy {
  meta::ObjectMeta metadata;
  // +required
  EgressGatewayPolicySpec spec;
  EgressGatewayPolicyStatus status;

  bool operator==(const EgressGatewayPolicy&) const = default;
};

// ---------------------------------------------------------------------------------------------
// EgressPolicySlice

// PolicyReference names the EgressGatewayPolicy a slice belongs to, by uid: a policy deleted and
// re-created under the same name is another policy.
struct PolicyReference {
  // The policy's namespace.
  // +required
  // +kubebuilder:validation:MaxLength=63
  std::string namespace_;
  // The policy's name.
  // +required
  // +kubebuilder:validation:MaxLength=253
  std::string name;
  // The policy's metadata.uid.
  // +required
  // +kubebuilder:validation:MaxLength=128
  std::string uid;

  bool operator==(const PolicyReference&) const = default;
};

// SliceEgressIP is one gateway replica slot of the policy: its egress IPs and the gateway pod
// that holds them, if one does.
struct SliceEgressIP {
  // The slot's egress IPs: one IPv4 and/or one IPv6 address.
  // +required
  // +kubebuilder:validation:MinItems=1
  // +kubebuilder:validation:MaxItems=2
  // +kubebuilder:validation:items:Format=ip
  // +kubebuilder:validation:items:MaxLength=39
  std::vector<std::string> ips;
  // The node whose egw-agent holds these addresses: SNATs to them and answers ARP/NDP for them.
  // Absent: nobody holds them, and traffic that would leave with them is refused.
  // +kubebuilder:validation:MaxLength=253
  std::string node;
  // The gateway pod that holds them (controlled, by uid, by the ReplicaSet of the policy's
  // gateway Deployment), in the policy's namespace.
  // +kubebuilder:validation:MaxLength=253
  std::string pod;
  // That pod's metadata.uid.
  // +kubebuilder:validation:MaxLength=128
  std::string podUID;

  bool operator==(const SliceEgressIP&) const = default;
};

// SliceGateway is what the data plane needs of a policy besides its source pods.
struct SliceGateway {
  // The policy's ledger: one entry per gateway replica slot.
  // +kubebuilder:validation:MaxItems=64
  std::vector<SliceEgressIP> egressIPs;
  // Destinations whose traffic leaves with an egress IP (spec.destinationCIDRs; absent in the
  // policy: 0.0.0.0/0 and/or ::/0).
  // +kubebuilder:validation:MaxItems=64
  // +kubebuilder:validation:items:Format=cidr
  // +kubebuilder:validation:items:MaxLength=43
  std::vector<std::string> destinationCIDRs;
  // Destinations that never do: spec.excludedCIDRs and the OperatorConfig's clusterCIDRs.
  // +kubebuilder:validation:MaxItems=128
  // +kubebuilder:validation:items:Format=cidr
  // +kubebuilder:validation:items:MaxLength=43
  std::vector<std::string> excludedCIDRs;

  bool operator==(const SliceGateway&) const = default;
};

// SliceSource is one selected source pod that can send: not Succeeded or Failed, not
// hostNetwork.
struct SliceSource {
  // The pod's name, in the policy's namespace.
  // +required
  // +kubebuilder:validation:MaxLength=253
  std::string pod;
  // The node it runs on: its traffic reaches the holder through that node's tunnel endpoint.
  // +required
  // +kubebuilder:validation:MaxLength=253
  std::string node;
  // Its addresses of the policy's IP families.
  // +required
  // +kubebuilder:validation:MinItems=1
  // +kubebuilder:validation:MaxItems=2
  // +kubebuilder:validation:items:Format=ip
  // +kubebuilder:validation:items:MaxLength=39
  std::vector<std::string> ips;

  bool operator==(const SliceSource&) const = default;
};

// EgressPolicySliceSpec is one part of a policy's data-plane view.
struct EgressPolicySliceSpec {
  // The policy this slice belongs to.
  // +required
  PolicyReference policy;
  // The egress IPs with their holders, the destinations and the exclusions: present in the
  // policy's first slice (<namespace>.<policy>.0) only.
  std::optional<SliceGateway> gateway;
  // Source pods of the policy, at most 100 per slice.
  // +kubebuilder:validation:MaxItems=1000
  std::vector<SliceSource> sources;

  bool operator==(const EgressPolicySliceSpec&) const = default;
};

// EgressPolicySlice is part of what egw-agent programs for one EgressGatewayPolicy: which
// gateway node holds each egress IP and which pods leave with them. Written by the operator
// only (cluster-scoped, so no namespace's editors can write one); the agents read nothing else
// of the policies. A policy's slices are named <namespace>.<policy>.<index>.
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:resource:scope=Cluster,shortName=egps,categories=egress
// +kubebuilder:printcolumn:name=Namespace,type=string,JSONPath=.spec.policy.namespace
// +kubebuilder:printcolumn:name=Policy,type=string,JSONPath=.spec.policy.name
// +kubebuilder:printcolumn:name=Egress-IPs,type=string,JSONPath=.spec.gateway.egressIPs[*].ips
// +kubebuilder:printcolumn:name=Nodes,type=string,JSONPath=.spec.gateway.egressIPs[*].node
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=.metadata.creationTimestamp
struct EgressPolicySlice {
  meta::ObjectMeta metadata;
  // +required
  EgressPolicySliceSpec spec;

  bool operator==(const EgressPolicySlice&) const = default;
};

// ---------------------------------------------------------------------------------------------
// OperatorConfig

// DataplaneSpec says which data plane carries the gateways' egress IPs.
struct DataplaneSpec {
  // True when egw-agent (the chart's DaemonSet, agent.enabled) programs the egress IPs on the
  // gateway pods' nodes. The operator then gives gateway pods the readiness gate
  // egressgateway.dev/ip-programmed (set by the agent once the IP is programmed and announced)
  // and 10 s not-ready/unreachable tolerations, and moves an egress IP whose holder's node has
  // no fresh agent Lease to a Ready gateway pod on a node whose agent Lease is fresh. False or
  // absent: none of this (a cluster without the agent).
  bool agent = false;

  bool operator==(const DataplaneSpec&) const = default;
};

// OperatorConfigSpec holds cluster-wide settings.
struct OperatorConfigSpec {
  // The gateway container image.
  // +required
  // +kubebuilder:validation:MinLength=1
  // +kubebuilder:validation:MaxLength=512
  std::string gatewayImage;
  // The gateway container's command; absent or empty: the image's own entrypoint. The project's
  // image needs ["/usr/local/bin/egw-gateway"] (its entrypoint is the operator), which holds the
  // pod's place: egw-agent carries the packets.
  // +kubebuilder:validation:MaxItems=16
  // +kubebuilder:validation:items:MaxLength=1024
  std::vector<std::string> gatewayCommand;
  // The IPAMPool of policies whose spec.egressIP.pool is absent.
  // +kubebuilder:validation:MaxLength=253
  // +kubebuilder:validation:Pattern=^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$
  std::string defaultPool;
  // Gateway settings of policies that set none.
  std::optional<GatewaySpec> gatewayDefaults;
  // The cluster's pod and service CIDRs, both families (e.g. 10.244.0.0/16, 10.96.0.0/12,
  // fd00:10:244::/56): always excluded from what gateways are told to route, whatever a
  // policy's destinationCIDRs say.
  // +kubebuilder:validation:MaxItems=32
  // +kubebuilder:validation:items:Format=cidr
  // +kubebuilder:validation:items:MaxLength=43
  std::vector<std::string> clusterCIDRs;
  // The data plane the gateways' egress IPs are programmed by.
  std::optional<DataplaneSpec> dataplane;

  bool operator==(const OperatorConfigSpec&) const = default;
};

// OperatorConfigStatus summarises the operator's state.
struct OperatorConfigStatus {
  // EgressGatewayPolicies in the cluster.
  // +emitzero
  int32_t policies = 0;
  // Those of them with condition Ready=True.
  // +emitzero
  int32_t readyPolicies = 0;
  // IPAMPools in the cluster.
  // +emitzero
  int32_t pools = 0;
  // The spec generation this status describes.
  int64_t observedGeneration = 0;
  // The operator's own conditions.
  // +listType=map
  // +listMapKey=type
  std::vector<meta::Condition> conditions;

  bool operator==(const OperatorConfigStatus&) const = default;
};

// OperatorConfig is the operator's cluster-wide configuration: a singleton named "default".
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:resource:scope=Cluster,shortName=eoc,categories=egress
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule=self.metadata.name == 'default',message=the OperatorConfig must be named default
// +kubebuilder:printcolumn:name=Image,type=string,JSONPath=.spec.gatewayImage
// +kubebuilder:printcolumn:name=Policies,type=integer,JSONPath=.status.policies
// +kubebuilder:printcolumn:name=Ready-Policies,type=integer,JSONPath=.status.readyPolicies
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=.metadata.creationTimestamp
struct OperatorConfig {
  meta::ObjectMeta metadata;
  // +required
  OperatorConfigSpec spec;
  OperatorConfigStatus status;

  bool operator==(const OperatorConfig&) const = default;
};

}  // namespace egress::networking::v1alpha1
