// File: desired_state.h
//
// The core of egw-agent: a pure function from what the agent knows of the cluster (ClusterView)
// to the kernel state its node should have. The same function runs on every node; whether a
// node is a source, a holder or both follows from the data, so every agent reaches the same
// answer without talking to the others. It reads no clock: liveness arrives as a boolean per
// node.
//
//   - every egress IP E of every policy gets a mark k (in the configured mark bits, in address
//     order). An E listed by two policies (two uids) gets none and is held by nobody: any
//     namespace may ask for an address, and a first-come rule would let a forged policy win it;
//   - E's holder is chosen among the nodes of its policy's slots by holder_choice.h: the node
//     that claims it and is not certified dead, else the first live one, its slot's node first.
//     So E moves to another gateway node of its policy when its holder dies, decided by the
//     agents alone (through an API outage too), and stays there. E is held here only while this
//     agent has a lease (a majority hears it: once it has not, another node may hold E soon);
//   - each source pod is sent by rendezvous hash to one E of its family among the policy's
//     egress IPs that have a live holder, so a dead holder moves only its own pods, to live
//     addresses, and they come back when it does; with none, the refuse mark: fail closed, the
//     pod gets an error, never the node's address;
//   - where E is held elsewhere, `fwmark k lookup table+k` routes through the tunnel to the
//     holder; where E has no holder, that table has only the unreachable route;
//   - where E is held here, no rule: SNAT to E by mark, a host route for E on the egress-IP
//     device and a proxy ARP/NDP entry on the uplink; the reply table routes replies of
//     tunnelled connections back to the source pod's node;
//   - the tunnel: one VXLAN device, one FDB and neighbour entry per peer node, MACs derived from
//     the node's underlay address so every node computes every peer's MAC.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pkg/base/result.h"
#include "pkg/dataplane/cluster_view.h"
#include "pkg/dataplane/kernel_state.h"
#include "pkg/dataplane/problem.h"

namespace egress::dataplane {

struct DataplaneConfig {
  std::string uplink;  // the device with the node's InternalIP
  uint32_t uplinkMtu = 1500;
  std::string tunnelDevice = "egw0";
  std::string egressIPDevice = "egw-eip0";
  uint32_t vni = 4242;
  uint16_t port = 4799;
  // The agents' heartbeats (pkg/agent/peer_mesh.h): only nodes may send to it. 0 = none.
  uint16_t heartbeatPort = 4798;
  // The packet/connection mark bits the agent owns (kube-proxy uses 0x4000/0x8000, Calico
  // 0xffff0000). The highest value is the reply mark, the one below it the refuse mark.
  uint32_t markMask = 0xff;
  uint32_t tableBase = 7000;  // reply table = base, egress IP k = base + k
  uint32_t rulePriority = 100;
  bool symmetricReply = true;
  std::string nftTable = "egw";
};

// Every tunnel endpoint answers decapsulated traffic from this address (without one, rp_filter
// drops what the tunnel delivers).
inline constexpr const char* kTunnelAddress = "169.254.99.1";

struct DesiredState {
  KernelState kernel;
  // The egress IPs this node holds, in address order (announce them, GARP on takeover, and
  // report them on the agent's Lease once programmed).
  std::vector<ipam::Address> held;
  // Inputs that were ignored (an egress IP in two policies or two slots, more egress IPs than
  // marks), one per policy they concern.
  std::vector<Problem> problems;
};

// An error when this node is unknown or has no InternalIP: there is nothing safe to program.
Result<DesiredState, std::string> computeDesiredState(const ClusterView& view,
                                                      const DataplaneConfig& config);

// 02 + the first five bytes of SHA-256(the address's canonical text).
Mac tunnelMac(const ipam::Address& underlayIP);
// fe80::/64 with the EUI-64 interface identifier of `mac`: a peer's IPv6 next hop in the tunnel.
ipam::Address linkLocal(const Mac& mac);
// The mark value of index i (1-based) in `mask`'s bits.
uint32_t markValue(uint32_t mask, uint32_t index);

}  // namespace egress::dataplane
