#include "pkg/dataplane/desired_state.h"

#include <algorithm>
#include <bit>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include <openssl/sha.h>

#include "pkg/base/fnv1a.h"
#include "pkg/dataplane/holder_choice.h"
#include "pkg/dataplane/rendezvous.h"

namespace egress::dataplane {
namespace {

using ipam::Address;
using ipam::Family;
using ipam::Prefix;

constexpr size_t idx(Family f) {
  return static_cast<size_t>(f);
}

Prefix defaultPrefix(Family f) {
  return Prefix{Address{f, 0}, 0};
}
bool contains(const Prefix& p, const Address& a) {
  return p.address.family == a.family && p.first() <= a.value && a.value <= p.last();
}
Prefix hostPrefix(const Address& a) {
  return Prefix{a, ipam::familyBits(a.family)};
}
uint32_t metricOf(Family f) {
  return f == Family::kIPv6 ? kIPv6DefaultMetric : 0;
}

// The prefixes no other one contains, sorted: nftables refuses overlapping elements in one
// interval set (CIDRs never overlap partially: one contains the other or they are disjoint).
std::vector<Prefix> outermost(std::vector<Prefix> list) {
  std::sort(list.begin(), list.end(), [](const Prefix& a, const Prefix& b) {
    return a.address < b.address || (a.address == b.address && a.bits < b.bits);
  });
  std::vector<Prefix> out;
  for (const auto& p : list) {
    if (out.empty() || p.first() > out.back().last()) {
      out.push_back(p);
    }
  }
  return out;
}

// In the order of their text, once each (the text made once per element, not per comparison).
template <typename T>
void sortUnique(std::vector<T>& v) {
  std::vector<std::pair<std::string, T>> keyed;
  keyed.reserve(v.size());
  for (auto& x : v) {
    keyed.emplace_back(x.toString(), std::move(x));
  }
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  v.clear();
  for (size_t i = 0; i < keyed.size(); ++i) {
    if (i == 0 || keyed[i].first != keyed[i - 1].first) {
      v.push_back(std::move(keyed[i].second));
    }
  }
}

struct Peer {
  Address underlay;
  Mac mac;
  std::optional<Address> ipv4;
};

class Computer {
 public:
  Computer(const ClusterView& view, const DataplaneConfig& config) : view_(view), config_(config) {}

  Result<DesiredState, std::string> run() {
    const NodeView* self = nullptr;
    for (const auto& n : view_.nodes) {
      if (n.name == view_.self) {
        self = &n;
      }
    }
    if (self == nullptr) {
      return "node " + view_.self + " is not in the cache";
    }
    if (!self->ipv4 && !self->ipv6) {
      return "node " + view_.self + " has no InternalIP";
    }
    underlayFamily_ = self->ipv4 ? Family::kIPv4 : Family::kIPv6;
    for (const auto& n : view_.nodes) {
      auto ul = underlayFamily_ == Family::kIPv4 ? n.ipv4 : n.ipv6;
      if (ul) {
        peers_[n.name] = Peer{*ul, tunnelMac(*ul), n.ipv4};
      }
    }
    liveNodes();
    validEgressIPs();
    findHolders();
    assignNodeMarks();
    tunnel(*self);
    policies();
    routing();
    auto& k = out_.kernel;
    sortUnique(k.links);
    sortUnique(k.addresses);
    sortUnique(k.rules);
    sortUnique(k.routes);
    sortUnique(k.neighbours);
    sortUnique(k.fdb);
    sortUnique(k.sysctls);
    return std::move(out_);
  }

 private:
  void liveNodes() {
    for (const auto& l : view_.leases) {
      agents_.emplace(l.node, &l);
    }
  }

  void validEgressIPs() {
    for (const auto& n : view_.nodes) {
      for (const auto& a : n.addresses) {
        nodeAddresses_.emplace(a, n.name);
      }
    }
    const uint32_t shift = static_cast<uint32_t>(std::countr_zero(config_.markMask));
    maxIndex_ = config_.markMask >> shift;
    replyMark_ = markValue(config_.markMask, maxIndex_);
    refuseMark_ = markValue(config_.markMask, maxIndex_ - 1);
    localMark_ = markValue(config_.markMask, maxIndex_ - 2);
    // Who lists each egress IP: the policies (by uid: keys can repeat across a re-creation) and
    // how many slots.
    for (const auto& p : view_.policies) {
      for (const auto& slot : p.slots) {
        for (const auto& e : std::set<Address>(slot.ips.begin(), slot.ips.end())) {
          auto& c = claims_[e];
          c.keyByUID.emplace(p.uid, p.key);
          ++c.slots;
        }
      }
    }
    for (const auto& [e, c] : claims_) {
      // What the operator must never hand out, checked again here: the agent does not take
      // the view's word that an address is fit to be announced on this segment.
      if (auto why = refusal(e)) {
        std::string who;
        for (const auto& [uid, key] : c.keyByUID) {
          who += (who.empty() ? "" : ", ") + key;
        }
        problem(ProblemKind::kRefusedAddress, c.keyByUID,
                "egress IP " + e.toString() + " of " + who + " refused: it is " + *why);
        continue;
      }
      // Nobody may hold an address two policies claim, nor one two slots name (two holders):
      // neither is a conflict the agent can settle, and whichever it picked could be the forged
      // one. Fail closed until the operator's view is unambiguous again.
      if (c.keyByUID.size() > 1) {
        std::string who;
        for (const auto& [uid, key] : c.keyByUID) {
          who += (who.empty() ? "" : ", ") + key + " (uid " + uid + ")";
        }
        problem(ProblemKind::kContestedAddress, c.keyByUID,
                "egress IP " + e.toString() + " is in " + who + ": held by none of them");
        continue;
      }
      const auto& key = c.keyByUID.begin()->second;
      if (c.slots > 1) {
        problem(ProblemKind::kDuplicateSlot, c.keyByUID,
                "egress IP " + e.toString() + " is in " + std::to_string(c.slots) + " slots of " +
                    key + ": held by none");
        continue;
      }
      owners_[e] = key;
    }
  }

  // Each node that holds an egress IP for this one's sources gets a mark value of its own: the
  // mark selects the routing table whose route leads through the tunnel to that node. Marks are
  // per node, not per egress IP, so the mask's size bounds the holder nodes, not the addresses.
  // A node's index starts at a hash of its name and probes upwards (nodes in name order), so a
  // new holder node rarely renumbers another (each renumbering rewrites that node's egress-IP
  // chains and its routing rule). Marks never leave the node (the unmark chain clears them
  // before the tunnel), so no two agents need to agree on them.
  void assignNodeMarks() {
    std::map<std::string, std::vector<Address>> byNode;
    for (const auto& [e, node] : holder_) {
      byNode[node].push_back(e);
    }
    // Indices 1 .. maxIndex-3: the three highest are the local, refuse and reply marks.
    const uint32_t capacity = maxIndex_ >= 3 ? maxIndex_ - 3 : 0;
    std::set<uint32_t> taken;
    for (const auto& [node, addresses] : byNode) {
      if (node == view_.self) {
        for (const auto& e : addresses) {
          marks_[e] = localMark_;
        }
        continue;
      }
      std::optional<uint32_t> index;
      if (taken.size() < capacity) {
        uint32_t i = static_cast<uint32_t>(fnv1a(node) % capacity);
        while (taken.contains(i + 1)) {
          i = (i + 1) % capacity;
        }
        index = i + 1;
        taken.insert(*index);
      }
      if (!index) {
        for (const auto& e : addresses) {
          problem(ProblemKind::kNoMark, claims_.at(e).keyByUID,
                  "egress IP " + e.toString() + " of " + owners_.at(e) + ": its node " + node +
                      " gets no mark: more nodes hold egress IPs than the mark mask has values "
                      "(--mark-mask)");
          holder_.erase(e);
        }
        continue;
      }
      nodeMarks_[node] = markValue(config_.markMask, *index);
      for (const auto& e : addresses) {
        marks_[e] = nodeMarks_[node];
      }
    }
  }

  // One problem for each policy (uid -> key) it concerns.
  void problem(ProblemKind kind, const std::map<std::string, std::string>& keyByUID,
               const std::string& message) {
    for (const auto& [uid, key] : keyByUID) {
      out_.problems.push_back({kind, uid, key, message});
    }
  }

  // Why `e` may never be an egress IP, if it may not.
  std::optional<std::string> refusal(const Address& e) const {
    if (auto special = ipam::specialUse(e)) {
      return ipam::specialUsePhrase(*special);
    }
    if (auto node = nodeAddresses_.find(e); node != nodeAddresses_.end()) {
      return "node " + node->second + "'s address";
    }
    for (const auto& n : view_.nodes) {
      for (const auto& p : n.podCIDRs) {
        if (contains(p, e)) {
          return "in node " + n.name + "'s pod CIDR " + p.toString();
        }
      }
    }
    for (const auto& p : view_.clusterCIDRs) {
      if (contains(p, e)) {
        return "in the cluster CIDR " + p.toString();
      }
    }
    if (std::find(view_.apiServer.begin(), view_.apiServer.end(), e) != view_.apiServer.end()) {
      return std::string("the API server's address");
    }
    if (std::none_of(view_.poolCIDRs.begin(), view_.poolCIDRs.end(),
                     [&](const Prefix& p) { return contains(p, e); })) {
      return std::string("in no IPAMPool");
    }
    return std::nullopt;
  }

  // Each egress IP's holder among its policy's gateway nodes (holder_choice.h). Where this node
  // would be the holder but may not hold it (no lease, or a live candidate's claims are not
  // current), nobody holds it here: its traffic is refused, never sent to a node that does not
  // hold it.
  void findHolders() {
    const LeaseView* self = agent(view_.self);
    const bool selfLive = self != nullptr && self->fresh;
    std::map<Address, std::vector<std::string>> claimants;
    for (const auto& l : view_.leases) {
      if (l.node != view_.self && l.fresh) {
        for (const auto& e : l.claims) {
          claimants[e].push_back(l.node);
        }
      }
    }
    PeerLiveness peers{[this](const std::string& n) {
                         const LeaseView* l = agent(n);
                         return l == nullptr || !l->fresh;
                       },
                       [this](const std::string& n) {
                         const LeaseView* l = agent(n);
                         return l != nullptr && l->current;
                       },
                       [&claimants](const Address& e) {
                         auto it = claimants.find(e);
                         return it == claimants.end() ? std::vector<std::string>{} : it->second;
                       }};
    for (const auto& p : view_.policies) {
      std::vector<std::string> nodes;
      for (const auto& slot : p.slots) {
        if (!slot.node.empty() && std::find(nodes.begin(), nodes.end(), slot.node) == nodes.end()) {
          nodes.push_back(slot.node);
        }
      }
      for (const auto& slot : p.slots) {
        for (const auto& e : slot.ips) {
          if (!owners_.contains(e)) {
            continue;
          }
          const bool holds = self != nullptr && std::find(self->claims.begin(), self->claims.end(),
                                                          e) != self->claims.end();
          auto choice = chooseHolder(e, rankCandidates(e, slot.node, nodes), view_.self, selfLive,
                                     holds, peers);
          if (choice.held) {
            holder_[e] = view_.self;
          } else if (choice.holder && *choice.holder != view_.self) {
            holder_[e] = *choice.holder;
          }
        }
      }
    }
  }

  const LeaseView* agent(const std::string& node) const {
    auto it = agents_.find(node);
    return it == agents_.end() ? nullptr : it->second;
  }

  bool heldHere(const Address& e) const {
    auto it = holder_.find(e);
    return it != holder_.end() && it->second == view_.self;
  }

  // The next hop in the tunnel towards `node` for `family`, if the node is a known peer.
  std::optional<Address> nextHop(const std::string& node, Family family) const {
    auto it = peers_.find(node);
    if (it == peers_.end() || node == view_.self) {
      return std::nullopt;
    }
    if (family == Family::kIPv6) {
      return linkLocal(it->second.mac);
    }
    return it->second.ipv4;
  }

  void tunnel(const NodeView& self) {
    auto& k = out_.kernel;
    const auto& me = peers_.at(self.name);
    Link vx;
    vx.name = config_.tunnelDevice;
    vx.kind = Link::Kind::kVxlan;
    vx.mac = me.mac;
    vx.mtu = config_.uplinkMtu - (underlayFamily_ == Family::kIPv4 ? 50 : 70);
    vx.vni = config_.vni;
    vx.port = config_.port;
    vx.local = me.underlay;
    vx.underlay = config_.uplink;
    k.links.push_back(vx);
    Link eip;
    eip.name = config_.egressIPDevice;
    eip.kind = Link::Kind::kIfb;
    eip.mtu = 1500;
    k.links.push_back(eip);
    k.addresses.push_back({config_.tunnelDevice, hostPrefix(*ipam::parseAddress(kTunnelAddress))});
    for (const auto& [name, p] : peers_) {
      if (name == view_.self) {
        continue;
      }
      k.fdb.push_back({config_.tunnelDevice, p.mac, p.underlay});
      k.neighbours.push_back({config_.tunnelDevice, linkLocal(p.mac), false, p.mac});
      if (p.ipv4) {
        k.neighbours.push_back({config_.tunnelDevice, *p.ipv4, false, p.mac});
      }
    }
    sysctls();
  }

  // What the design needs of the kernel's parameters, on every node (a node becomes a source or
  // a holder with the next policy; sysctls are the init container's and need no re-apply then).
  void sysctls() {
    auto& s = out_.kernel.sysctls;
    const std::string& up = config_.uplink;
    // Sources route marked pod traffic into the tunnel; holders forward it out of the uplink.
    s.push_back({"net/ipv4/ip_forward", "1"});
    s.push_back({"net/ipv6/conf/all/forwarding", "1"});
    // Decapsulated packets come from peers' tunnel addresses the main table routes elsewhere:
    // loose mode on the tunnel only (the effective value is the max of all and the device).
    s.push_back({"net/ipv4/conf/" + config_.tunnelDevice + "/rp_filter", "2"});
    // A proxy neighbour entry answers ARP only with forwarding on (above) and a route for E on
    // another device (the host route): no proxy_arp, which would answer for every routed
    // address. Without proxy_delay=0 each answer waits up to 0.8 s.
    s.push_back({"net/ipv4/neigh/" + up + "/proxy_delay", "0"});
    // IPv6 proxy entries answer only with proxy_ndp on the uplink.
    s.push_back({"net/ipv6/conf/" + up + "/proxy_ndp", "1"});
    s.push_back({"net/ipv6/neigh/" + up + "/proxy_delay", "0"});
  }

  void policies() {
    auto& t = out_.kernel.nft;
    t.name = config_.nftTable;
    t.tunnel = config_.tunnelDevice;
    t.markMask = config_.markMask;
    t.replyMark = replyMark_;
    t.refuseMark = refuseMark_;
    t.localMark = localMark_;
    t.symmetricReply = config_.symmetricReply;
    for (const auto& [e, key] : owners_) {
      auto mark = marks_.find(e);
      t.egressIPs.push_back({e, mark == marks_.end() ? 0 : mark->second, heldHere(e), key});
    }
    std::vector<Prefix> inCluster = view_.clusterCIDRs;
    for (const auto& n : view_.nodes) {
      for (const auto& a : n.addresses) {
        inCluster.push_back(hostPrefix(a));
      }
      inCluster.insert(inCluster.end(), n.podCIDRs.begin(), n.podCIDRs.end());
    }
    for (const auto& a : view_.apiServer) {
      inCluster.push_back(hostPrefix(a));
    }
    for (const auto& p : inCluster) {
      t.inCluster[idx(p.address.family)].push_back(p);
    }
    for (auto& list : t.inCluster) {
      list = outermost(std::move(list));
    }
    // The tunnel filter: who may send to the tunnel port (every node), and what a peer's tunnel
    // may deliver (its own source pods, by its tunnel MAC).
    t.tunnelPort = config_.port;
    t.heartbeatPort = config_.heartbeatPort;
    for (const auto& n : view_.nodes) {
      for (const auto& a : {n.ipv4, n.ipv6}) {
        if (a) {
          t.nodes[idx(a->family)].push_back(*a);
        }
      }
    }
    for (const auto& p : view_.policies) {
      for (const auto& src : p.sources) {
        auto peer = peers_.find(src.node);
        if (src.node == view_.self || peer == peers_.end()) {
          continue;
        }
        t.tunnelSources[idx(src.ip.family)].push_back({peer->second.mac, src.ip});
      }
    }
    for (auto& list : t.nodes) {
      std::sort(list.begin(), list.end());
      list.erase(std::unique(list.begin(), list.end()), list.end());
    }
    // A pod in two policies is one element.
    for (auto& list : t.tunnelSources) {
      std::sort(list.begin(), list.end(), [](const NftTunnelSource& a, const NftTunnelSource& b) {
        return std::tie(a.ip, a.mac) < std::tie(b.ip, b.mac);
      });
      list.erase(std::unique(list.begin(), list.end()), list.end());
    }
    std::vector<const PolicyView*> sorted;
    for (const auto& p : view_.policies) {
      sorted.push_back(&p);
    }
    std::sort(sorted.begin(), sorted.end(), [](const PolicyView* a, const PolicyView* b) {
      return a->key != b->key ? a->key < b->key : a->uid < b->uid;
    });
    for (const PolicyView* p : sorted) {
      NftPolicy np;
      np.key = p->key;
      for (const auto& d : p->destinations) {
        np.destinations[idx(d.address.family)].push_back(d);
      }
      for (const auto& d : p->excluded) {
        np.excluded[idx(d.address.family)].push_back(d);
      }
      // Only addresses someone live holds: a pod hashed onto a dead holder's address would be
      // refused while a live one of the same policy could carry it.
      std::vector<Address> candidates;
      for (const auto& slot : p->slots) {
        for (const auto& e : slot.ips) {
          if (holder_.contains(e)) {
            candidates.push_back(e);
          }
        }
      }
      std::set<Address> seen;
      for (const auto& s : p->sources) {
        if (!seen.insert(s.ip).second) {
          continue;
        }
        // No live egress IP of the pod's family: refused, never sent with the node's address.
        auto pick = pickEgressIP(s.ip, candidates);
        np.picks[idx(s.ip.family)].push_back({s.ip, pick});
        if (pick && heldHere(*pick)) {
          np.snat[idx(s.ip.family)].push_back({s.ip, *pick});
          replySources_.push_back(s);
        }
      }
      for (auto& v : np.picks) {
        std::sort(v.begin(), v.end(),
                  [](const NftPick& a, const NftPick& b) { return a.source < b.source; });
      }
      for (auto& v : np.snat) {
        std::sort(v.begin(), v.end(),
                  [](const NftSnat& a, const NftSnat& b) { return a.source < b.source; });
      }
      for (auto* v : {&np.destinations, &np.excluded}) {
        for (auto& list : *v) {
          list = outermost(std::move(list));
        }
      }
      t.policies.push_back(std::move(np));
    }
  }

  void routing() {
    auto& k = out_.kernel;
    auto table = [&](uint32_t mark) {
      return config_.tableBase + (mark >> std::countr_zero(config_.markMask));
    };
    auto unreachable = [&](uint32_t tbl, Family f) {
      Route r;
      r.table = tbl;
      r.type = Route::Type::kUnreachable;
      r.dst = defaultPrefix(f);
      r.metric = kUnreachableMetric;
      k.routes.push_back(r);
    };
    auto rule = [&](Family f, uint32_t mark, uint32_t tbl) {
      k.rules.push_back({f, config_.rulePriority, mark, config_.markMask, tbl});
    };
    for (auto f : {Family::kIPv4, Family::kIPv6}) {
      rule(f, refuseMark_, table(refuseMark_));
      unreachable(table(refuseMark_), f);
    }
    for (const auto& [e, mark] : marks_) {
      if (heldHere(e)) {
        out_.held.push_back(e);
        Route host;
        host.dst = hostPrefix(e);
        host.dev = config_.egressIPDevice;
        host.metric = metricOf(e.family);
        k.routes.push_back(host);
        k.neighbours.push_back({config_.uplink, e, true, Mac{}});
      }
    }
    // One table per holder node, for the families it holds egress IPs of: the tunnel to it, and
    // the unreachable route under it (no next hop: refused, never the main table).
    std::map<std::string, std::set<Family>> families;
    for (const auto& [e, node] : holder_) {
      if (node != view_.self) {
        families[node].insert(e.family);
      }
    }
    for (const auto& [node, mark] : nodeMarks_) {
      for (Family f : families[node]) {
        rule(f, mark, table(mark));
        unreachable(table(mark), f);
        if (auto nh = nextHop(node, f)) {
          Route via;
          via.table = table(mark);
          via.dst = defaultPrefix(f);
          via.gateway = *nh;
          via.dev = config_.tunnelDevice;
          via.onlink = true;
          via.metric = metricOf(f);
          k.routes.push_back(via);
        }
      }
    }
    if (!config_.symmetricReply || out_.held.empty()) {
      return;
    }
    for (auto f : {Family::kIPv4, Family::kIPv6}) {
      rule(f, replyMark_, config_.tableBase);
    }
    for (const auto& s : replySources_) {
      if (auto nh = nextHop(s.node, s.ip.family)) {
        Route r;
        r.table = config_.tableBase;
        r.dst = hostPrefix(s.ip);
        r.gateway = *nh;
        r.dev = config_.tunnelDevice;
        r.onlink = true;
        r.metric = metricOf(s.ip.family);
        k.routes.push_back(r);
      }
    }
  }

  const ClusterView& view_;
  const DataplaneConfig& config_;
  DesiredState out_;
  Family underlayFamily_ = Family::kIPv4;
  // By name, looked up once per source pod.
  std::unordered_map<std::string, Peer> peers_;
  // Every node's addresses, and whose (the first node in the view's order).
  std::map<Address, std::string> nodeAddresses_;
  // The agents by node (view_.leases).
  std::map<std::string, const LeaseView*> agents_;
  struct Claim {
    std::map<std::string, std::string> keyByUID;
    int slots = 0;
  };
  std::map<Address, Claim> claims_;
  // The egress IPs that may be held (no refusal, no conflict), and the key of each one's policy.
  std::map<Address, std::string> owners_;
  // The egress IPs with a live holder that has a mark: the mark their chain sets.
  std::map<Address, uint32_t> marks_;
  std::map<std::string, uint32_t> nodeMarks_;
  std::map<Address, std::string> holder_;
  std::vector<SourceView> replySources_;
  uint32_t maxIndex_ = 0;
  uint32_t replyMark_ = 0;
  uint32_t refuseMark_ = 0;
  uint32_t localMark_ = 0;
};

}  // namespace

Result<DesiredState, std::string> computeDesiredState(const ClusterView& view,
                                                      const DataplaneConfig& config) {
  return Computer(view, config).run();
}

Mac tunnelMac(const ipam::Address& underlayIP) {
  const std::string text = underlayIP.toString();
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  return Mac{0x02, digest[0], digest[1], digest[2], digest[3], digest[4]};
}

ipam::Address linkLocal(const Mac& mac) {
  ipam::Uint128 v = ipam::Uint128{0xfe80} << 112;
  const uint8_t eui[8] = {
      static_cast<uint8_t>(mac[0] ^ 0x02), mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5]};
  ipam::Uint128 iid = 0;
  for (uint8_t b : eui) {
    iid = (iid << 8) | b;
  }
  return ipam::Address{ipam::Family::kIPv6, v | iid};
}

uint32_t markValue(uint32_t mask, uint32_t index) {
  return index << static_cast<uint32_t>(std::countr_zero(mask));
}

}  // namespace egress::dataplane
