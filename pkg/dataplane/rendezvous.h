// File: rendezvous.h
//
// Which of a policy's egress IPs a source pod leaves with: highest-random-weight (rendezvous)
// hashing of (source, egress IP). A pod's choice depends only on its own address and the
// candidate set, so adding an egress IP moves only the pods that now score highest on it, and
// removing one moves only the pods that were on it: a pod keeps its egress IP until that IP
// leaves the policy. Every agent computes the same choice (the source node routes by it, the
// holder SNATs by it), so the score is a fixed function of the addresses' values, never of
// process state.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "pkg/ipam/address.h"

namespace egress::dataplane {

uint64_t rendezvousScore(const ipam::Address& source, const ipam::Address& egressIP);

// The candidate of the source's family with the highest score (ties: the lower address);
// nullopt when there is none of that family.
std::optional<ipam::Address> pickEgressIP(const ipam::Address& source,
                                          const std::vector<ipam::Address>& candidates);

}  // namespace egress::dataplane
