// File: agents.h
//
// What the operator knows of the egw-agents, from their egw-agent-<node> Leases: whether each
// node's agent is live, and which egress IPs it reports programmed (kProgrammedAnnotation).
// Liveness is judged by when the operator saw a renewal (ObservedLeases: client-go's
// observedTime), never by comparing the agent's renewTime with the operator's clock: an agent
// whose clock runs 5 s behind would otherwise look dead 5 s early, and its address would move
// while it still answers for it. The agent fences itself a margin before a full duration after
// it sent the renewal; the operator moves an address no earlier than a full duration after it
// saw that renewal, which is later.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "pkg/apis/coordination/lease.h"
#include "pkg/base/clock.h"
#include "pkg/ipam/address.h"
#include "pkg/leaderelection/observed_leases.h"

namespace egress::controller {

// The node of an agent Lease ("egw-agent-<node>"), or "" for another Lease.
std::string agentLeaseNode(const coordination::Lease& lease);
// The addresses an agent Lease reports programmed; unparsable items are skipped.
std::set<ipam::Address> programmedAddresses(const coordination::Lease& lease);

class Agents {
 public:
  // Records a Lease event seen at `now`. Returns whether what the operator acts on changed:
  // the reported addresses (a renewal alone changes only the observed time).
  bool observe(const coordination::Lease& lease, Clock::TimePoint now);
  void forget(const std::string& node);

  bool live(const std::string& node, Clock::TimePoint now) const;
  // When `node`'s agent goes stale unless a renewal is seen first; nullopt if never live.
  std::optional<Clock::TimePoint> expiry(const std::string& node) const;
  // What `node`'s agent reports programmed (whether or not it is live).
  const std::set<ipam::Address>& programmed(const std::string& node) const;
  // Per address, the nodes whose live agents report it programmed: who answers for it now. A
  // stale agent has fenced itself (it withdraws before the operator can see it stale), so it
  // claims nothing.
  std::map<ipam::Address, std::set<std::string>> claims(Clock::TimePoint now) const;
  // Every node with a Lease.
  std::set<std::string> nodes() const;

 private:
  leaderelection::ObservedLeases leases_;
  std::map<std::string, std::set<ipam::Address>> programmed_;
};

}  // namespace egress::controller
