// File: holder_choice.h
//
// Which node holds an egress IP, decided by each agent alone from what the agents tell each
// other (pkg/agent/peer_quorum.h), so that an address moves when its holder dies even while
// the API server is unreachable, and never to two nodes at once:
//   - the candidates are the nodes of the policy's gateway slots, the slot's own node first (the
//     operator's choice), the others by a rendezvous score of (node, address), so every agent
//     ranks them alike;
//   - a claimant is a candidate that says in its heartbeats that it holds the address and is not
//     certified dead (a node that is has no lease and has withdrawn). The highest-ranked
//     claimant is the holder: an address stays where it is when a higher-ranked node comes back
//     (no second move), and of two claimants after a change of the candidates, the lower yields;
//   - with no claimant, the holder is the first candidate that is not certified dead;
//   - a live node that claims the address but is no candidate in this agent's view stays its
//     holder: nobody else takes it, and sources send it there, until that node lets go (its own
//     view no longer names it) or is certified dead. That is a holder cut off from the API
//     server, whose view is old: its gateway pod evicted meanwhile, or the address given up by
//     its policy and given to another. It keeps serving its own view's sources, and two nodes
//     never hold the address;
//   - this node holds the address only while it has a lease (a majority hears it), and takes it
//     (holds it without holding it already) only when every candidate that is not certified
//     dead wrote to it after its lease began: their claims are current, and one that took the
//     address while this node was certified dead says so.
// A certified-dead node's lease, and so its kernel fence, has ended: taking its address never
// overlaps with its holding it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pkg/ipam/address.h"

namespace egress::dataplane {

// What this agent knows of the other agents now.
struct PeerLiveness {
  std::function<bool(const std::string& node)> dead;
  // Its claims are current: it wrote its last message after this node's lease began.
  std::function<bool(const std::string& node)> current;
  // The nodes, this one aside, that are not certified dead and claim the address.
  std::function<std::vector<std::string>(const ipam::Address&)> claimants;
};

// `nodes` (distinct, `slotNode` among them or not) ranked for `egressIP`: `slotNode` first (when
// not empty), then by descending rendezvous score (ties: the lower name).
std::vector<std::string> rankCandidates(const ipam::Address& egressIP, const std::string& slotNode,
                                        std::vector<std::string> nodes);

struct HolderChoice {
  // Where sources send the address's traffic; nullopt: nowhere (refused).
  std::optional<std::string> holder;
  // Whether this node holds it (SNATs to it, answers for it, claims it).
  bool held = false;
};

// `self`'s view of `egressIP` among `ranked` candidates. `selfLive`: this node has a lease;
// `selfHolds`: it holds the address now.
HolderChoice chooseHolder(const ipam::Address& egressIP, const std::vector<std::string>& ranked,
                          const std::string& self, bool selfLive, bool selfHolds,
                          const PeerLiveness& peers);

}  // namespace egress::dataplane
