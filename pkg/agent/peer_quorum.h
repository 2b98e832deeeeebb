// File: peer_quorum.h
//
// Liveness among the egw-agents themselves, without the API server: who may hold an egress IP
// now, decided by majorities of the agents, so that egress survives an API outage and a holder
// cut off from its peers stops at once, while no two nodes ever hold one address.
//
// Every agent sends every other member (each node with an agent) a heartbeat (heartbeat.h) each
// round, `interval` apart. A message carries two kinds of promise, each standing for a window W
// from the moment the sender wrote it:
//   - a grant to its recipient: "I heard you within the grace G (2 intervals)"; the sender will
//     not vote the recipient dead until W after the last grant it wrote;
//   - dead votes, the same in every message of a round: "I have not granted N for W"; the
//     sender will not grant N again until W after the last vote it wrote.
// So one sender's grant windows and dead-vote windows for a node never overlap in time. A
// receiver knows when a promise was written only as "after I sent the seq it echoes" (each
// message echoes the recipient's latest seq the sender had received), so it counts a promise as
// standing until (its own send time of the echoed seq) + W, a little earlier than the sender's
// own end (and shortened by 2 % for clock rates).
//
// A node's *lease*: a majority of the members (itself counted) grant it now. A node is
// *certified dead*: a majority (the node itself never counted) vote it dead now. Any majority
// and any other majority share a member, whose grant and vote windows cannot overlap, so while
// some node counts N certified dead, N has no lease, in real time, whatever their clocks read.
// A holder keeps egress IPs only while it has a lease, and the kernel fence (pkg/dataplane
// fence.h) drops them at the lease's end even if the agent hangs; another node takes an
// address only from a holder that is certified dead (holder_choice.h). Detection takes G + W:
// the default 100 ms interval and 1 s timeout give about 1 s.
//
// Why a majority of all agents, not of a policy's gateway nodes: a policy commonly has two;
// a majority of two is both, so losing one would stop the other too. A cluster split into
// halves of equal size has no majority on either side and holds nothing: it fails closed.
//
// A restart is not a death. An agent stopping to restart asks its peers for grants of the
// restart grace R instead of W (leave()), and keeps its node's addresses and their kernel fence
// for that long: its successor finds them held (the kernel fence lists them) and carries on, and
// no peer takes them meanwhile. A node that does not come back within R fails over then.
//
// A new process grants nothing and votes nobody dead for its first W: it cannot know what its
// predecessor on the node promised in its last window. The longer promises (the grants of a
// restart grace) outlive a process: they are written to the node's kernel before they are sent
// (PeerMesh, fence.h's "promised" set) and a new process restores them. It takes a peer's word
// only from a message echoing its own incarnation
// (64 random bits, new at each start) and a recent seq: a sender that cannot read the
// node-to-node traffic cannot write one that counts. Seqs only grow: a replayed message is
// ignored.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pkg/agent/heartbeat.h"
#include "pkg/base/clock.h"
#include "pkg/ipam/address.h"

namespace egress::agent {

struct QuorumOptions {
  std::chrono::milliseconds interval{100};
  // From the last message heard to a majority's dead certificate: grace + window.
  std::chrono::milliseconds timeout{1000};

  // How long a leaving agent's peers let its node hold its addresses (leave()).
  std::chrono::milliseconds restartGrace{30000};

  std::chrono::milliseconds grace() const { return 2 * interval; }
  std::chrono::milliseconds window() const { return timeout - grace(); }
};

// An error when the timeout is not at least 4 intervals, the window exceeds 60 s, or the restart
// grace is shorter than the timeout or longer than 5 minutes.
Result<Ok, std::string> validateQuorumOptions(const QuorumOptions& options);

class PeerQuorum {
 public:
  using TimePoint = Clock::TimePoint;

  // `start`: this process's start (no promise before start + window).
  PeerQuorum(std::string self, uint64_t incarnation, QuorumOptions options, TimePoint start);

  const std::string& self() const { return self_; }
  uint64_t incarnation() const { return incarnation_; }

  // The nodes with an agent; this node always counts, listed or not. What this process promised
  // a node that leaves and comes back is kept.
  void setMembers(const std::vector<std::string>& nodes);
  // The egress IPs this node holds now: claimed in the next round's messages.
  void setClaims(std::vector<ipam::Address> held);

  // This agent is stopping to restart: from the next round its messages ask for grants of the
  // restart grace, and leaseUntil() grows to their end as they come in.
  void leave() { leaving_ = true; }
  // What a predecessor on this node promised: no dead vote for each node before its time.
  void restorePromises(const std::map<std::string, TimePoint>& grantedUntil);

  // One round at `now`: the message for each member peer. From now on the round's grants and
  // dead votes are promises.
  std::vector<std::pair<std::string, Heartbeat>> round(TimePoint now);
  // A heartbeat received at `now` from a datagram whose source address is node `from`'s. Its
  // promises and claims count only if it echoes this process's incarnation and a seq of the last
  // minute. Returns whether it counted.
  bool receive(const std::string& from, const Heartbeat& hb, TimePoint now);

  // This node's lease: until when a majority grants it; nullopt when none does at `now`.
  std::optional<TimePoint> leaseUntil(TimePoint now) const;
  // Until when a majority holds `node` dead; nullopt when none does at `now`.
  std::optional<TimePoint> deadUntil(const std::string& node, TimePoint now) const;
  // A message of `node`'s counted within the grace.
  bool heard(const std::string& node, TimePoint now) const;
  // Heard, by a message `node` wrote after this node's lease began: what it claims is current.
  // Any node that took an address while this one was certified dead did so before the lease
  // began (no lease overlaps a death certificate), so such a message shows the take.
  bool current(const std::string& node, TimePoint now) const;
  // The egress IPs `node`'s latest counted message claimed (none once it was certified dead).
  std::vector<ipam::Address> claims(const std::string& node) const;

  // The members, this node included, and how many make a majority.
  size_t members() const;
  size_t majority() const { return members() / 2 + 1; }

 private:
  struct Peer {
    bool member = false;
    // Its process, and the highest seq of it received (echoed back to it).
    uint64_t incarnation = 0;
    uint64_t seq = 0;
    std::optional<TimePoint> lastCounted;
    // When this process sent the seq its last counted message echoed.
    std::optional<TimePoint> echoed;
    // The promises this process wrote about it: no dead vote before grantedUntil, no grant
    // before a window after lastDead.
    std::optional<TimePoint> grantedUntil;
    std::optional<TimePoint> lastDead;
    // It is leaving and asks for grants this long (0: it is not).
    std::chrono::milliseconds asks{0};
    // Its promises to this node: its grant, and its dead votes by node.
    std::optional<TimePoint> grantUntil;
    std::map<std::string, TimePoint> votes;
    std::vector<ipam::Address> claims;
  };

  // The send time of this process's seq, if of the last minute.
  std::optional<TimePoint> sentAt(uint64_t seq) const;
  // How long a promise of `ms` written after `echoed` stands here.
  static TimePoint standsUntil(TimePoint echoed, uint32_t ms);
  bool canGrant(const Peer& p, TimePoint now) const;
  bool canVoteDead(const Peer& p, TimePoint now) const;
  // Notes when this node's lease began, if it did since the last look.
  void trackLease(TimePoint now);

  std::string self_;
  uint64_t incarnation_;
  QuorumOptions options_;
  TimePoint start_;
  uint64_t seq_ = 0;
  // (seq, send time) of the rounds of the last minute, in order.
  std::deque<std::pair<uint64_t, TimePoint>> rounds_;
  std::map<std::string, Peer> peers_;
  std::vector<ipam::Address> claims_;
  bool leaving_ = false;
  // The start of this node's lease, and its end as last seen (a lease that lapsed between two
  // looks began anew).
  std::optional<TimePoint> leaseSince_;
  std::optional<TimePoint> leaseSeenUntil_;
};

}  // namespace egress::agent
