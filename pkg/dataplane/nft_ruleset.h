// File: nft_ruleset.h
//
// egw-agent's nftables table (`inet egw`) as a value, and its libnftables JSON. The table is
// owned whole: one transaction deletes and re-creates it (atomic, conntrack and NAT bindings
// survive), and the one element of its set `tag` carries a digest of the rest as a comment, so an
// agent that restarts reads the digest back and leaves an unchanged table alone.
//
//   classify  prerouting, dstnat+10 (after kube-proxy's DNAT): replies restore the reply mark
//             (symmetric return through the tunnel) and stop; connections from the tunnel get the
//             reply ct mark; traffic to the cluster's own addresses (@incluster4/6) stops; then
//             per policy and family
//             `daddr @dst daddr != @exc saddr vmap @pick`, the pick map sending each source pod
//             to the chain of its egress IP (eip_<address>), which sets the mark of the node that
//             holds it (routed to that node through the tunnel) or the local mark where it is
//             held here; or to chain `refuse`. A move of an egress IP to another node rewrites its
//             chain's one rule, not the pick maps.
//   srcnat    nat postrouting, srcnat-10 (before a CNI's MASQUERADE at srcnat): identity SNAT
//             into the tunnel, so the CNI cannot claim the connection; then, for packets with the
//             local mark, per policy that has a source leaving through an egress IP held here,
//             `daddr @dst daddr != @exc snat to saddr map @snat`: the map from each such source
//             to its egress IP, ports preserved (no fully-random: a connection survives a move
//             of its IP). The same policy order and sets as classify, so the first policy that
//             classified a packet is the one that SNATs it.
//   guard     postrouting, srcnat+1: drops tunnel traffic leaving un-SNATed, and a packet
//             marked for another node that is not leaving through the tunnel (its routing rule
//             not there yet, or any more).
//   account   postrouting, srcnat+15 (after the fence's snat_gate): counts what leaves with
//             each egress IP held here on connections SNATed to it (named counter
//             egress_<address>, '.' and ':' as '_'), for the agent's per-policy metrics.
//   unmark    postrouting, srcnat+10: clears our mark bits on packets into the tunnel, else the
//             outer packet inherits the mark and is routed into the tunnel again.
//   forward   no tunnel-to-tunnel forwarding; TCP MSS clamped to the tunnel's MTU; UDP to a
//             node's tunnel or heartbeat port that a pod sends (it is forwarded, where the
//             agents' own packets are not) is dropped: counter tunnel_from_pod.
//   tunnel_in input: UDP to the tunnel or heartbeat port from an address that is no node's is
//             dropped (counter tunnel_not_node): no pod can send the agents a heartbeat. And in
//             classify, before anything else: a packet the tunnel delivers that opens a connection
//             is dropped unless its (inner source MAC, source address) is a source pod on the node
//             that sent it (counter tunnel_forged): no pod can leave as another policy's source by
//             sending a frame with a forged inner source.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pkg/ipam/address.h"

namespace egress::dataplane {

// A source pod and the egress IP it leaves with; none: refused (no live holder of its family).
struct NftPick {
  ipam::Address source;
  std::optional<ipam::Address> egressIP;

  friend bool operator==(const NftPick&, const NftPick&) = default;
};

// A source pod whose egress IP is held on this node: SNAT to it.
struct NftSnat {
  ipam::Address source;
  ipam::Address egressIP;

  friend bool operator==(const NftSnat&, const NftSnat&) = default;
};

struct NftPolicy {
  std::string key;
  // Indexed by ipam::Family.
  std::array<std::vector<ipam::Prefix>, 2> destinations;
  std::array<std::vector<ipam::Prefix>, 2> excluded;
  std::array<std::vector<NftPick>, 2> picks;
  std::array<std::vector<NftSnat>, 2> snat;

  friend bool operator==(const NftPolicy&, const NftPolicy&) = default;
};

// A source pod as the tunnel delivers it: the sending node's tunnel MAC (tunnelMac of its
// underlay address) and the pod's address.
struct NftTunnelSource {
  std::array<uint8_t, 6> mac{};
  ipam::Address ip;

  friend bool operator==(const NftTunnelSource&, const NftTunnelSource&) = default;
};

struct NftEgressIP {
  ipam::Address ip;
  // The mark its chain sets: its holder node's, or the local mark when held here; 0 while no
  // live node holds it (no chain: no pick names it).
  uint32_t mark = 0;
  bool held = false;   // held on this node: SNAT to it
  std::string policy;  // "namespace/policy": whose traffic its counter counts (not in the table)

  friend bool operator==(const NftEgressIP&, const NftEgressIP&) = default;
};

struct NftTable {
  std::string name = "egw";
  std::string tunnel = "egw0";
  uint32_t markMask = 0xff;
  uint32_t replyMark = 0;
  uint32_t refuseMark = 0;
  uint32_t localMark = 0;
  bool symmetricReply = true;
  std::vector<NftPolicy> policies;
  std::vector<NftEgressIP> egressIPs;
  // The cluster's own destinations (node addresses, pod CIDRs, cluster CIDRs, the API server),
  // indexed by ipam::Family: never sent through a gateway, whatever a policy says.
  std::array<std::vector<ipam::Prefix>, 2> inCluster;
  // The tunnel's UDP port, every node's underlay address (by family), and the source pods the
  // tunnel may deliver (by family): what the tunnel filter lets through.
  uint16_t tunnelPort = 4799;
  // The agents' heartbeat port (peer_mesh.h), filtered as the tunnel's; 0 = none.
  uint16_t heartbeatPort = 0;
  std::array<std::vector<ipam::Address>, 2> nodes;
  std::array<std::vector<NftTunnelSource>, 2> tunnelSources;

  friend bool operator==(const NftTable&, const NftTable&) = default;
  std::string toString() const;
};

struct NftJson {
  std::string json;    // one libnftables transaction that replaces the table
  std::string digest;  // 16 hex digits, also in the tag comment
};

NftJson renderNftJson(const NftTable& table);
// The table's digest (renderNftJson(table).digest): its shape digest combined with a hash of
// every element, in order. No JSON of the elements is made, so a change of one element costs a
// pass over them, not a rendering of the table.
std::string nftDigest(const NftTable& table);
// The same, with nftShapeDigest(table) known already.
std::string nftDigest(const NftTable& table, const std::string& shapeDigest);
// The table's drop counters, by name.
inline constexpr const char* kTunnelNotNode = "tunnel_not_node";
inline constexpr const char* kTunnelFromPod = "tunnel_from_pod";
inline constexpr const char* kTunnelForged = "tunnel_forged";

// What a named counter of the table has counted.
struct NftCount {
  uint64_t packets = 0;
  uint64_t bytes = 0;
};

// Whatever of a table is not an element of its maps and plain sets (the pick and SNAT maps,
// tunsrc4/6, nodes4/6): two tables with equal shape digests differ only in those elements.
// The interval sets (destinations, exclusions, in-cluster) are part of the shape.
std::string nftShapeDigest(const NftTable& table);
// Whether two tables have the same shape digest, by comparing what it covers (no rendering).
bool nftSameShape(const NftTable& a, const NftTable& b);

// One transaction that turns table `from`, as the kernel has it, into `to` (of the same shape)
// by deleting and adding elements, and rewrites the tag element with `to`'s digest. `elements`
// counts the elements deleted and added (a changed map value is a deletion and an addition),
// the tag's not included.
struct NftDelta {
  std::string json;
  size_t elements = 0;
};
NftDelta renderNftDelta(const NftTable& from, const NftTable& to, const std::string& digest);

// The chain the pick maps send a source of egress IP `ip` to.
std::string egressIPChain(const ipam::Address& ip);
// The named counter of what leaves with egress IP `ip` held on this node.
std::string egressCounter(const ipam::Address& ip);

// The transaction that removes the table (and succeeds when there is none).
std::string removeNftJson(const std::string& tableName);
// The set whose one element's comment is the tag.
inline constexpr const char* kTagSet = "tag";
// The comment of the tag element: "egw:" + digest.
std::string nftTag(const std::string& digest);

}  // namespace egress::dataplane
