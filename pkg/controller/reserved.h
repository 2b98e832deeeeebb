// File: reserved.h
//
// What no IPAMPool may hand out, whatever its CIDRs say: the cluster's own addresses. A node's
// address (a proxy ARP answer for it would take the node's own traffic), the pod and service
// ranges (the OperatorConfig's clusterCIDRs and every Node's spec.podCIDRs), and the API
// server's address. The allocator treats them as excluded from every pool
// (ipam::Allocator::setReserved), so they are never allocated and an explicit one is refused
// with reason AddressReserved; egw-agent refuses them again on its side.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pkg/apis/core/node.h"
#include "pkg/apis/networking/v1alpha1/types.h"
#include "pkg/ipam/allocator.h"

namespace egress::controller {

// Sorted by prefix, each with why it is reserved ("node n1's InternalIP", ...). Texts that do
// not parse are skipped (validation reports them where they are written).
std::vector<ipam::Reservation> clusterReservations(
    const std::vector<std::shared_ptr<const core::Node>>& nodes,
    const networking::v1alpha1::OperatorConfig* config,
    const std::vector<std::string>& apiServerAddresses);

}  // namespace egress::controller
