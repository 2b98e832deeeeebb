// File: fence.h
//
// Fencing that lives in the kernel, not in the agent's process. What a holder programs for an
// egress IP (the SNAT to it, and the kernel's proxy ARP/NDP answers for it) outlives an agent that
// is killed or hangs; left alone, a node in a crash loop would keep answering after the operator
// moved the address elsewhere. So every held address is also an element, with a timeout, of the
// "held" sets of two small tables egw-agent owns beside its main one:
//
//   table inet egw_fence   snat_gate  postrouting, srcnat+11 (after every NAT chain, the CNI's
//                                     masquerade included): a packet leaving other than by the
//                                     tunnel with an egress IP this node knows as its source,
//                                     while that address is not in @held4/@held6, is dropped
//                          nd_gate    output: a neighbour advertisement for a known egress IP
//                                     (its ICMPv6 target, matched as raw payload) that is not in
//                                     @heldnd is dropped: the kernel's proxy NDP answer dies
//   table arp egw_fence    out        output: an ARP reply from a known egress IP not in @held
//                                     is dropped: the kernel's proxy ARP answer dies
//
// Each sync that finds this agent holding, and every heartbeat round after it, re-sets the held
// elements' timeouts to the time left until this agent's lease ends (pkg/agent/peer_quorum.h: a
// majority of the agents grants it): the kernel stops answering for and SNATing to an address at
// the moment the lease ends, whether or not the agent is still running then, and so before any
// other node can take it (that needs a majority to certify this node dead, which cannot overlap
// with its lease). Known addresses are every egress IP of the view (held here or elsewhere);
// every drop is counted (counter "fenced" of each table). Written in nft's text syntax, because
// libnftables' JSON of this version cannot declare a set typed as a raw 128-bit payload.
// Gratuitous ARP and unsolicited NA go out on packet sockets, past these hooks: they are sent only
// by a fresh agent.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/ipam/address.h"

namespace egress::dataplane {

inline constexpr const char* kFenceTable = "egw_fence";

struct FenceState {
  std::string tunnel = "egw0";
  // Every egress IP this node knows of, and those it holds now.
  std::vector<ipam::Address> known;
  std::vector<ipam::Address> held;
  // How long the held elements live unless refreshed (the agent's freshness left); the kernel's
  // timeouts have millisecond resolution, below one millisecond nothing is held.
  std::chrono::milliseconds remaining{0};
};

// One transaction that creates the tables if absent, sets their rules and known sets, and
// replaces the held elements with `state.held`, each timing out after `state.remaining`.
std::string renderFence(const FenceState& state);
// The part of renderFence(state) that sets the gates' rules and the held elements: a refresh of
// the held elements' timeouts where the tables and their known sets are there already (an error
// where the tables or chains are not).
std::string renderFenceHeld(const FenceState& state);
// The transaction that removes both tables (and succeeds when there are none).
std::string removeFence();

// The agents' long promises (pkg/agent/peer_quorum.h: a leaving peer's restart grace) outlive
// the process that made them: set "promised" of table inet egw_fence holds one element per
// peer, the hash below of its name, timing out when the promise ends, so that the next agent on
// the node keeps them. renderFence() makes the set and never flushes it.
uint32_t promiseKey(std::string_view node);
// One transaction: the tables and set if absent, and the element of `node` timing out after
// `remaining` (replacing an element there was).
std::string renderPromise(std::string_view node, std::chrono::milliseconds remaining);

}  // namespace egress::dataplane
