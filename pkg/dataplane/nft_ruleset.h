// File: nft_ruleset.h
//
// egw-agent's nftables table (`inet egw`) as a value, and its libnftables JSON. The table is
// owned whole: one transaction deletes and re-creates it (atomic, conntrack and NAT bindings
// survive), and its first classify rule carries a digest of the body as a comment, so an agent
// that restarts reads the digest back and leaves an unchanged table alone.
//
//   classify  prerouting, dstnat+10 (after kube-proxy's DNAT): replies restore the reply mark
//             (symmetric return through the tunnel) and stop; connections from the tunnel get the
//             reply ct mark; traffic to the cluster's own addresses (@incluster4/6) stops; then
//             per policy and family
//             `daddr @dst daddr != @exc saddr vmap @pick`, the pick map sending each source pod
//             to the chain that sets the mark of its egress IP (or the refuse mark).
//   srcnat    nat postrouting, srcnat-10 (before a CNI's MASQUERADE at srcnat): identity SNAT
//             into the tunnel, so the CNI cannot claim the connection; SNAT to each egress IP
//             held here by its mark, ports preserved (no fully-random: a connection survives a
//             move of its IP).
//   guard     postrouting, srcnat+1: drops tunnel traffic leaving un-SNATed.
//   account   postrouting, srcnat+15 (after the fence's snat_gate): counts what leaves with
//             each egress IP held here on connections SNATed to it (named counter
//             egress_<address>, '.' and ':' as '_'), for the agent's per-policy metrics.
//   unmark    postrouting, srcnat+10: clears our mark bits on packets into the tunnel, else the
//             outer packet inherits the mark and is routed into the tunnel again.
//   forward   no tunnel-to-tunnel forwarding; TCP MSS clamped to the tunnel's MTU; UDP to a
//             node's tunnel port that a pod sends (it is forwarded, where the tunnel's own
//             packets are not) is dropped: counter tunnel_from_pod.
//   tunnel_in input: UDP to the tunnel port from an address that is no node's is dropped
//             (counter tunnel_not_node). And in classify, before anything else: a packet the
//             tunnel delivers that opens a connection is dropped unless its (inner source MAC,
//             source address) is a source pod on the node that sent it (counter
//             tunnel_forged): no pod can leave as another policy's source by sending a frame
//             with a forged inner source.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "pkg/ipam/address.h"

namespace egress::dataplane {

struct NftPick {
  ipam::Address source;
  uint32_t mark = 0;
};

struct NftPolicy {
  std::string key;
  // Indexed by ipam::Family.
  std::array<std::vector<ipam::Prefix>, 2> destinations;
  std::array<std::vector<ipam::Prefix>, 2> excluded;
  std::array<std::vector<NftPick>, 2> picks;
};

// A source pod as the tunnel delivers it: the sending node's tunnel MAC (tunnelMac of its
// underlay address) and the pod's address.
struct NftTunnelSource {
  std::array<uint8_t, 6> mac{};
  ipam::Address ip;
};

struct NftEgressIP {
  ipam::Address ip;
  uint32_t mark = 0;
  bool held = false;   // held on this node: SNAT to it
  std::string policy;  // "namespace/policy": whose traffic its counter counts (not in the table)
};

struct NftTable {
  std::string name = "egw";
  std::string tunnel = "egw0";
  uint32_t markMask = 0xff;
  uint32_t replyMark = 0;
  uint32_t refuseMark = 0;
  bool symmetricReply = true;
  std::vector<NftPolicy> policies;
  std::vector<NftEgressIP> egressIPs;
  // The cluster's own destinations (node addresses, pod CIDRs, cluster CIDRs, the API server),
  // indexed by ipam::Family: never sent through a gateway, whatever a policy says.
  std::array<std::vector<ipam::Prefix>, 2> inCluster;
  // The tunnel's UDP port, every node's underlay address (by family), and the source pods the
  // tunnel may deliver (by family): what the tunnel filter lets through.
  uint16_t tunnelPort = 4799;
  std::array<std::vector<ipam::Address>, 2> nodes;
  std::array<std::vector<NftTunnelSource>, 2> tunnelSources;

  std::string toString() const;
};

struct NftJson {
  std::string json;    // one libnftables transaction that replaces the table
  std::string digest;  // 16 hex digits, also in the tag comment
};

NftJson renderNftJson(const NftTable& table);
// The table's drop counters, by name.
inline constexpr const char* kTunnelNotNode = "tunnel_not_node";
inline constexpr const char* kTunnelFromPod = "tunnel_from_pod";
inline constexpr const char* kTunnelForged = "tunnel_forged";

// What a named counter of the table has counted.
struct NftCount {
  uint64_t packets = 0;
  uint64_t bytes = 0;
};

// The named counter of what leaves with egress IP `ip` held on this node.
std::string egressCounter(const ipam::Address& ip);

// The transaction that removes the table (and succeeds when there is none).
std::string removeNftJson(const std::string& tableName);
// The comment of the tag rule: "egw:" + digest.
std::string nftTag(const std::string& digest);

}  // namespace egress::dataplane
