// File: peer_mesh.h
//
// The agents' heartbeats on the wire (peer_quorum.h is the protocol they carry): a UDP socket per
// family, bound to this node's InternalIP and the heartbeat port, a round every interval to every
// member's InternalIP, and each datagram received handed to the quorum as the member's whose
// InternalIP sent it (anything else is counted and dropped). Bound to the node's own address, so
// that what it sends leaves with that address whatever the routes say, which is the address the
// peers know it by. The agent's nft table drops datagrams to this port from any address that is
// not a node's, and any that a pod sends to a node (nft_ruleset.h).
// It runs on the agent's event loop: the sync reads the quorum between its own awaits. It calls
// onChange when what a sync reads changed (this node's lease began or ended, a node was certified
// dead or is no longer, a live node's claims or their currency changed) and onRound after every
// round (the kernel fence's refresh: the held addresses live as long as the lease).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <prometheus/registry.h>

#include "pkg/agent/peer_quorum.h"
#include "pkg/base/clock.h"
#include "pkg/base/result.h"
#include "pkg/ipam/address.h"

namespace egress::agent {

class PeerMesh {
 public:
  using TimePoint = Clock::TimePoint;

  struct Options {
    uint16_t port = 4798;
    QuorumOptions quorum;
    std::function<void()> onChange;
    std::function<void()> onRound;
  };
  // A member's InternalIPs, the first of each family.
  struct Member {
    std::optional<ipam::Address> ipv4;
    std::optional<ipam::Address> ipv6;

    friend bool operator==(const Member&, const Member&) = default;
  };

  // `clock` must outlive the mesh; `registry` gets its metrics.
  PeerMesh(std::string self, Clock& clock, boost::asio::any_io_executor executor, Options options,
           prometheus::Registry& registry);
  ~PeerMesh();
  PeerMesh(const PeerMesh&) = delete;
  PeerMesh& operator=(const PeerMesh&) = delete;

  // The nodes with an agent and their InternalIPs, this node's among them: its sockets are bound
  // to its own (again when they change). An error names an address that could not be bound; the
  // rounds go on with the sockets there are.
  Result<Ok, std::string> setMembers(const std::map<std::string, Member>& members);
  // The egress IPs this node holds now (claimed from the next round).
  void setClaims(std::vector<ipam::Address> held);
  // This agent stops to restart (PeerQuorum::leave): the next round asks for the restart grace.
  void leave();
  // Restores what an agent before this one on the node promised (fence.h's promised set), then
  // starts the rounds and the receiving, on the executor; stop() ends them and closes the
  // sockets. Call setMembers() first.
  void start();
  void stop();

  const PeerQuorum& quorum() const;
  const QuorumOptions& options() const;
  // A first sync may run: this node has a lease, or the timeout has passed since start() (it
  // may be alone, or nobody answers; a sync then holds nothing).
  bool ready(TimePoint now) const;
  // What chooseHolder asks of a node, at `now` (claims: quorum().claims()).
  bool dead(const std::string& node, TimePoint now) const;
  bool current(const std::string& node, TimePoint now) const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace egress::agent
