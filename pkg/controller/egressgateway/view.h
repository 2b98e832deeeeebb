// File: view.h
//
// A policy's data-plane view: the EgressPolicySlices egw-agent programs the kernel from. They are
// cluster-scoped and written by the operator alone, so no namespace's editor can forge one (a
// ConfigMap in the policy's namespace could be, and was, by anyone with the `edit` role there).
// The first slice, <namespace>.<policy>.0, carries the gateway part: each ledger entry's egress
// IPs with their holder (the gateway pod, by uid, and its node), the destinations and the
// exclusions. Every slice carries up to kSourcesPerSlice source pods with their nodes, so no
// object grows with the number of pods (one ConfigMap per policy would have hit the 1 MiB object
// limit near 30,000 dual-stack pods).
//
// Placement is stable, as the EndpointSlice controller's: a source pod stays in the slice it is
// in while it is selected, new pods fill the slices with room, so one pod's change rewrites one
// slice; the slices are repacked only once they are mostly empty.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pkg/controller/apis/egressgateway_policy.h"
#include "pkg/controller/egressgateway/render.h"
#include "pkg/ipam/allocator.h"

namespace egress::controller {

// EndpointSlices hold 100 endpoints by default for the same reason: a change rewrites a small
// object (about 10 KB here), and a large policy is still a few hundred objects.
inline constexpr size_t kSourcesPerSlice = 100;

// The pod that holds one ledger entry, as the view names it.
struct ViewHolder {
  std::string pod;
  std::string podUID;
  std::string node;
};

// The ledger's holders: per entry, the gateway pod the IPPoolProcessor's plan names (what the
// status records once its ledger write succeeded, or already did), if it is one the data plane
// may trust now: proven (info.egressPods holds only those), not being deleted, scheduled, and no
// other node answers for the entry's addresses. `claims` (Agents::claims) says which
// nodes' live agents report each address programmed: an entry another node still holds gets no
// holder until that node's agent has let go (the view no longer names it, so it does), so a
// move never has two nodes answering for one address, however late one agent sees the view.
std::vector<std::optional<ViewHolder>> viewHolders(
    const EgressGatewayPolicyInfo& info, const LedgerPlan& ledger,
    const std::map<ipam::Address, std::set<std::string>>& claims = {});

// The gateway part: the ledger with its holders, the destinations (the policy's of its families,
// or the whole of each family) and the exclusions (the policy's and the cluster's CIDRs), every
// CIDR canonical and sorted.
v1alpha1::SliceGateway sliceGateway(const v1alpha1::EgressGatewayPolicy& policy,
                                    const std::vector<ipam::Entry>& ledger,
                                    const std::vector<std::optional<ViewHolder>>& holders,
                                    const std::vector<std::string>& clusterCIDRs);

// The sources: selected pods that can send, by name, those being deleted included (they may
// send until they are gone). A pod that has finished (Succeeded, Failed) keeps its
// status.podIPs, which the CNI hands to new pods of any namespace; a hostNetwork pod's address
// is its node's. Neither is ever a source.
std::vector<v1alpha1::SliceSource> sliceSources(const v1alpha1::EgressGatewayPolicy& policy,
                                                const std::vector<PodPtr>& sourcePods);

// What to write and what to delete so that the policy's slices say `gateway` and `sources`.
struct SlicePlan {
  std::vector<v1alpha1::EgressPolicySlice> write;  // new or changed, the first slice first
  std::vector<SlicePtr> remove;                    // no longer needed
};
SlicePlan planSlices(const v1alpha1::EgressGatewayPolicy& policy,
                     const v1alpha1::SliceGateway& gateway,
                     const std::vector<v1alpha1::SliceSource>& sources,
                     const std::vector<SlicePtr>& existing, size_t perSlice = kSourcesPerSlice);

// The egress IPs a slice's gateway part names (none for a slice of sources only); items that do
// not parse are left out.
std::set<ipam::Address> sliceAddresses(const v1alpha1::EgressPolicySlice& slice);

// The server-side apply body of a slice.
Rendered renderSlice(const v1alpha1::EgressPolicySlice& slice);

}  // namespace egress::controller
