// File: nft_ruleset.h
//
// egw-agent's nftables table (`inet egw`) as a value, and its libnftables JSON. The table is
// owned whole: one transaction deletes and re-creates it (atomic, conntrack and NAT bindings
// survive), and its first classify rule carries a digest of the body as a comment, so an agent
// that restarts reads the digest back and leaves an unchanged table alone.
//
//   classify  prerouting, dstnat+10 (after kube-proxy's DNAT): replies restore the reply mark
//             (symmetric return through the tunnel) and stop; connections from the tunnel get the
//             reply ct mark; then per policy and family
//             `daddr @dst daddr != @exc saddr vmap @pick`, the pick map sending each source pod
//             to the chain that sets the mark of its egress IP (or the refuse mark).
//   srcnat    nat postrouting, srcnat-10 (before a CNI's MASQUERADE at srcnat): identity SNAT
//             into the tunnel, so the CNI cannot claim the connection; SNAT to each egress IP
//             held here by its mark, ports preserved (no fully-random: a connection survives a
//             move of its IP).
//   guard     postrouting, srcnat+1: drops tunnel traffic leaving un-SNATed.
//   unmark    postrouting, srcnat+10: clears our mark bits on packets into the tunnel, else the
//             outer packet inherits the mark and is routed into the tunnel again.
//   forward   no tunnel-to-tunnel forwarding; TCP MSS clamped to the tunnel's MTU.
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

struct NftEgressIP {
  ipam::Address ip;
  uint32_t mark = 0;
  bool held = false;  // held on this node: SNAT to it
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

  std::string toString() const;
};

struct NftJson {
  std::string json;    // one libnftables transaction that replaces the table
  std::string digest;  // 16 hex digits, also in the tag comment
};

NftJson renderNftJson(const NftTable& table);
// The transaction that removes the table (and succeeds when there is none).
std::string removeNftJson(const std::string& tableName);
// The comment of the tag rule: "egw:" + digest.
std::string nftTag(const std::string& digest);

}  // namespace egress::dataplane
