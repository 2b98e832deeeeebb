#include "pkg/dataplane/link_applier.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
#include <set>

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <net/if.h>

namespace egress::dataplane {

struct LinkApplier::KernelLink {
  int index = 0;
  bool up = false;
  bool owned = false;
  std::string kind;  // IFLA_INFO_KIND; "" for a device without one
  Link link;
};

namespace {

using ipam::Address;
using ipam::Family;

struct LinkDump {
  std::vector<LinkApplier::KernelLink> links;
};

std::string attrString(const nlattr* a) {
  return a != nullptr ? std::string(mnl_attr_get_str(a)) : std::string();
}

std::optional<Mac> attrMac(const nlattr* a) {
  if (a == nullptr || mnl_attr_get_payload_len(a) != 6) {
    return std::nullopt;
  }
  Mac m{};
  std::memcpy(m.data(), mnl_attr_get_payload(a), 6);
  return m;
}

// An address attribute of either family, told apart by its length.
std::optional<Address> attrAddress(const nlattr* a) {
  if (a == nullptr) {
    return std::nullopt;
  }
  return getAddress(a, mnl_attr_get_payload_len(a) == 4 ? Family::kIPv4 : Family::kIPv6);
}

int linkCallback(const nlmsghdr* nlh, void* data) {
  const auto* ifi = static_cast<const ifinfomsg*>(mnl_nlmsg_get_payload(nlh));
  Attrs a(IFLA_MAX);
  mnl_attr_parse(nlh, sizeof *ifi, collectAttr, &a);
  LinkApplier::KernelLink k;
  k.index = ifi->ifi_index;
  k.up = (ifi->ifi_flags & IFF_UP) != 0;
  k.owned = attrString(a[IFLA_IFALIAS]) == kLinkAlias;
  Link& l = k.link;
  l.name = attrString(a[IFLA_IFNAME]);
  l.mtu = a[IFLA_MTU] != nullptr ? mnl_attr_get_u32(a[IFLA_MTU]) : 0;
  l.mac = attrMac(a[IFLA_ADDRESS]).value_or(Mac{});
  std::string kind;
  if (a[IFLA_LINKINFO] != nullptr) {
    Attrs info(IFLA_INFO_MAX);
    mnl_attr_parse_nested(a[IFLA_LINKINFO], collectAttr, &info);
    kind = attrString(info[IFLA_INFO_KIND]);
    if (kind == "vxlan" && info[IFLA_INFO_DATA] != nullptr) {
      Attrs vx(IFLA_VXLAN_MAX);
      mnl_attr_parse_nested(info[IFLA_INFO_DATA], collectAttr, &vx);
      l.vni = vx[IFLA_VXLAN_ID] != nullptr ? mnl_attr_get_u32(vx[IFLA_VXLAN_ID]) : 0;
      l.port = vx[IFLA_VXLAN_PORT] != nullptr ? ntohs(mnl_attr_get_u16(vx[IFLA_VXLAN_PORT])) : 0;
      l.local = getAddress(vx[IFLA_VXLAN_LOCAL], Family::kIPv4);
      if (!l.local) {
        l.local = getAddress(vx[IFLA_VXLAN_LOCAL6], Family::kIPv6);
      }
      if (vx[IFLA_VXLAN_LINK] != nullptr) {
        l.underlay = interfaceName(mnl_attr_get_u32(vx[IFLA_VXLAN_LINK]));
      }
    }
  }
  k.kind = kind;
  l.kind = kind == "vxlan" ? Link::Kind::kVxlan : Link::Kind::kIfb;
  static_cast<LinkDump*>(data)->links.push_back(std::move(k));
  return MNL_CB_OK;
}

int addressCallback(const nlmsghdr* nlh, void* data) {
  const auto* ifa = static_cast<const ifaddrmsg*>(mnl_nlmsg_get_payload(nlh));
  Attrs a(IFA_MAX);
  mnl_attr_parse(nlh, sizeof *ifa, collectAttr, &a);
  if (a[IFA_PROTO] == nullptr || mnl_attr_get_u8(a[IFA_PROTO]) != kRouteProtocol) {
    return MNL_CB_OK;
  }
  const Family f = ifa->ifa_family == AF_INET ? Family::kIPv4 : Family::kIPv6;
  auto addr = getAddress(a[f == Family::kIPv4 ? IFA_LOCAL : IFA_ADDRESS], f);
  if (!addr) {
    return MNL_CB_OK;
  }
  static_cast<std::vector<LinkAddress>*>(data)->push_back(
      {interfaceName(ifa->ifa_index), ipam::Prefix{*addr, ifa->ifa_prefixlen}});
  return MNL_CB_OK;
}

int neighbourCallback(const nlmsghdr* nlh, void* data) {
  const auto* ndm = static_cast<const ndmsg*>(mnl_nlmsg_get_payload(nlh));
  Attrs a(NDA_MAX);
  mnl_attr_parse(nlh, sizeof *ndm, collectAttr, &a);
  if (a[NDA_PROTOCOL] == nullptr || mnl_attr_get_u8(a[NDA_PROTOCOL]) != kRouteProtocol) {
    return MNL_CB_OK;
  }
  auto ip = attrAddress(a[NDA_DST]);
  if (!ip) {
    return MNL_CB_OK;
  }
  Neighbour n;
  n.dev = interfaceName(static_cast<uint32_t>(ndm->ndm_ifindex));
  n.ip = *ip;
  n.proxy = (ndm->ndm_flags & NTF_PROXY) != 0;
  n.mac = attrMac(a[NDA_LLADDR]).value_or(Mac{});
  static_cast<std::vector<Neighbour>*>(data)->push_back(n);
  return MNL_CB_OK;
}

struct FdbDump {
  std::set<int> owned;  // the ifindexes of egw's links: their FDB is egw's
  std::vector<FdbEntry> out;
};

int fdbCallback(const nlmsghdr* nlh, void* data) {
  auto* dump = static_cast<FdbDump*>(data);
  const auto* ndm = static_cast<const ndmsg*>(mnl_nlmsg_get_payload(nlh));
  if (!dump->owned.contains(ndm->ndm_ifindex)) {
    return MNL_CB_OK;
  }
  Attrs a(NDA_MAX);
  mnl_attr_parse(nlh, sizeof *ndm, collectAttr, &a);
  auto dst = attrAddress(a[NDA_DST]);
  auto mac = attrMac(a[NDA_LLADDR]);
  if (dst && mac) {
    dump->out.push_back({interfaceName(static_cast<uint32_t>(ndm->ndm_ifindex)), *mac, *dst});
  }
  return MNL_CB_OK;
}

// The kernel objects of `have` whose key is not wanted go; wanted lines not in `have` are
// added (in place, by key, where the kernel replaces).
template <typename T>
Result<int, std::string> applyDiff(
    const std::vector<T>& have, const std::vector<T>& want,
    const std::function<Result<Ok, std::string>(const T&, bool)>& change) {
  int changes = 0;
  const auto haveLines = linesOf(have);
  std::set<std::string> wantKeys;
  for (const auto& w : want) {
    wantKeys.insert(w.key());
    if (!haveLines.contains(w.toString())) {
      auto done = change(w, true);
      if (!done) {
        return unexpected(done.error());
      }
      ++changes;
    }
  }
  for (const auto& h : have) {
    if (!wantKeys.contains(h.key())) {
      auto done = change(h, false);
      if (!done) {
        return unexpected(done.error());
      }
      ++changes;
    }
  }
  return changes;
}

const char* kindName(Link::Kind k) {
  return k == Link::Kind::kVxlan ? "vxlan" : "ifb";
}

// What only recreating a link changes: everything but its MAC and MTU.
std::string identity(Link l) {
  l.mac = Mac{};
  l.mtu = 0;
  return l.toString();
}

uint8_t scopeOf(const ipam::Prefix& p) {
  const bool linkLocal = p.address.family == Family::kIPv4
                             ? (p.address.value >> 16) == 0xa9fe
                             : (p.address.value >> 118) == (ipam::Uint128{0xfe80} >> 6);
  return linkLocal ? uint8_t{RT_SCOPE_LINK} : uint8_t{RT_SCOPE_UNIVERSE};
}

// A request that adds (in place, by key) or deletes one object.
nlmsghdr* changeHeader(char* buf, uint16_t newType, uint16_t delType, bool add) {
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = add ? newType : delType;
  nlh->nlmsg_flags =
      NLM_F_REQUEST | NLM_F_ACK | (add ? unsigned{NLM_F_CREATE | NLM_F_REPLACE} : 0U);
  return nlh;
}

}  // namespace

Result<Ok, std::string> LinkApplier::send(nlmsghdr* nlh, bool add, const std::string& what) {
  auto r = nl_.request(nlh, nullptr, nullptr);
  if (!r) {
    return unexpected((add ? "add " : "delete ") + what + ": " + r.error());
  }
  return Ok{};
}

Result<std::vector<LinkApplier::KernelLink>, std::string> LinkApplier::dumpLinks() {
  char buf[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* nlh = linkMessage(buf, RTM_GETLINK, NLM_F_DUMP, 0);
  LinkDump dump;
  auto r = nl_.request(nlh, linkCallback, &dump);
  if (!r) {
    return unexpected(r.error());
  }
  return std::move(dump.links);
}

Result<std::vector<Link>, std::string> LinkApplier::readLinks() {
  auto links = dumpLinks();
  if (!links) {
    return unexpected(links.error());
  }
  std::vector<Link> out;
  for (auto& k : *links) {
    if (k.owned) {
      out.push_back(std::move(k.link));
    }
  }
  return out;
}

Result<std::vector<LinkAddress>, std::string> LinkApplier::readAddresses() {
  char buf[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_GETADDR;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  auto* ifa = static_cast<ifaddrmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifaddrmsg)));
  ifa->ifa_family = AF_UNSPEC;
  std::vector<LinkAddress> out;
  auto r = nl_.request(nlh, addressCallback, &out);
  if (!r) {
    return unexpected(r.error());
  }
  return out;
}

Result<std::vector<Neighbour>, std::string> LinkApplier::readNeighbours() {
  std::vector<Neighbour> out;
  for (int family : {AF_INET, AF_INET6}) {
    // The kernel dumps proxy entries only when asked for exactly NTF_PROXY.
    for (uint8_t flags : {uint8_t{0}, uint8_t{NTF_PROXY}}) {
      char buf[MNL_SOCKET_BUFFER_SIZE];
      nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
      nlh->nlmsg_type = RTM_GETNEIGH;
      nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
      auto* ndm = static_cast<ndmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ndmsg)));
      ndm->ndm_family = static_cast<uint8_t>(family);
      ndm->ndm_flags = flags;
      auto r = nl_.request(nlh, neighbourCallback, &out);
      if (!r) {
        return unexpected(r.error());
      }
    }
  }
  return out;
}

Result<std::vector<FdbEntry>, std::string> LinkApplier::readFdb() {
  auto links = dumpLinks();
  if (!links) {
    return unexpected(links.error());
  }
  FdbDump dump;
  for (const auto& k : *links) {
    if (k.owned && k.link.kind == Link::Kind::kVxlan) {
      dump.owned.insert(k.index);
    }
  }
  if (dump.owned.empty()) {
    return std::vector<FdbEntry>{};
  }
  char buf[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_GETNEIGH;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  auto* ndm = static_cast<ndmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ndmsg)));
  ndm->ndm_family = AF_BRIDGE;
  auto r = nl_.request(nlh, fdbCallback, &dump);
  if (!r) {
    return unexpected(r.error());
  }
  return std::move(dump.out);
}

Result<Ok, std::string> LinkApplier::createLink(const Link& link) {
  char buf[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* nlh = linkMessage(buf, RTM_NEWLINK, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, 0);
  mnl_attr_put_strz(nlh, IFLA_IFNAME, link.name.c_str());
  nlattr* info = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
  mnl_attr_put_strz(nlh, IFLA_INFO_KIND, kindName(link.kind));
  if (link.kind == Link::Kind::kVxlan) {
    nlattr* data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
    mnl_attr_put_u32(nlh, IFLA_VXLAN_ID, link.vni);
    mnl_attr_put_u16(nlh, IFLA_VXLAN_PORT, htons(link.port));
    mnl_attr_put_u8(nlh, IFLA_VXLAN_LEARNING, 0);
    if (link.local) {
      putAddress(nlh, link.local->family == Family::kIPv4 ? IFLA_VXLAN_LOCAL : IFLA_VXLAN_LOCAL6,
                 *link.local);
    }
    if (!link.underlay.empty()) {
      unsigned idx = if_nametoindex(link.underlay.c_str());
      if (idx == 0) {
        return unexpected("link " + link.toString() + ": no device " + link.underlay);
      }
      mnl_attr_put_u32(nlh, IFLA_VXLAN_LINK, idx);
    }
    mnl_attr_nest_end(nlh, data);
  }
  mnl_attr_nest_end(nlh, info);
  auto r = nl_.request(nlh, nullptr, nullptr);
  if (!r) {
    return unexpected("add link " + link.toString() + ": " + r.error());
  }
  // The kernel takes an alias, a MAC and an MTU only on a link that exists.
  unsigned idx = if_nametoindex(link.name.c_str());
  if (idx == 0) {
    return unexpected("add link " + link.name + ": gone after it was made");
  }
  return changeLink(static_cast<int>(idx), link, nullptr);
}

Result<Ok, std::string> LinkApplier::changeLink(int index, const Link& link, const Link* have) {
  char buf[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* nlh = linkMessage(buf, RTM_NEWLINK, NLM_F_ACK, index);
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_get_payload(nlh));
  ifi->ifi_change = IFF_UP;
  ifi->ifi_flags = IFF_UP;
  if (have == nullptr) {
    mnl_attr_put_strz(nlh, IFLA_IFALIAS, kLinkAlias);
  }
  if (link.kind == Link::Kind::kVxlan) {
    if (have == nullptr || have->mtu != link.mtu) {
      mnl_attr_put_u32(nlh, IFLA_MTU, link.mtu);
    }
    if (have == nullptr || have->mac != link.mac) {
      mnl_attr_put(nlh, IFLA_ADDRESS, link.mac.size(), link.mac.data());
    }
  }
  auto r = nl_.request(nlh, nullptr, nullptr);
  if (!r) {
    return unexpected("set link " + link.toString() + ": " + r.error());
  }
  return Ok{};
}

Result<Ok, std::string> LinkApplier::deleteLink(int index, const std::string& name) {
  char buf[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* nlh = linkMessage(buf, RTM_DELLINK, NLM_F_ACK, index);
  auto r = nl_.request(nlh, nullptr, nullptr);
  if (!r) {
    return unexpected("delete link " + name + ": " + r.error());
  }
  return Ok{};
}

Result<int, std::string> LinkApplier::applyLinks(const std::vector<Link>& want) {
  auto have = dumpLinks();
  if (!have) {
    return unexpected(have.error());
  }
  int changes = 0;
  std::set<std::string> wanted;
  for (const auto& w : want) {
    wanted.insert(w.name);
    auto k = std::find_if(have->begin(), have->end(),
                          [&](const KernelLink& h) { return h.link.name == w.name; });
    Result<Ok, std::string> done = Ok{};
    if (k == have->end()) {
      done = createLink(w);
    } else if (!k->owned) {
      return unexpected("device " + w.name + " exists and is not egw-agent's (no alias " +
                        std::string(kLinkAlias) + "): not taking it over");
    } else if (k->kind != kindName(w.kind) || identity(k->link) != identity(w)) {
      done = deleteLink(k->index, w.name);
      if (done) {
        ++changes;
        done = createLink(w);
      }
    } else if (k->link.toString() != w.toString() || !k->up) {
      done = changeLink(k->index, w, &k->link);
    } else {
      continue;
    }
    if (!done) {
      return unexpected(done.error());
    }
    ++changes;
  }
  for (const auto& k : *have) {
    if (k.owned && !wanted.contains(k.link.name)) {
      auto done = deleteLink(k.index, k.link.name);
      if (!done) {
        return unexpected(done.error());
      }
      ++changes;
    }
  }
  return changes;
}

Result<Ok, std::string> LinkApplier::changeAddress(const LinkAddress& a, bool add) {
  unsigned idx = if_nametoindex(a.dev.c_str());
  if (idx == 0) {
    return unexpected("address " + a.toString() + ": no device " + a.dev);
  }
  char buf[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* nlh = changeHeader(buf, RTM_NEWADDR, RTM_DELADDR, add);
  auto* ifa = static_cast<ifaddrmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifaddrmsg)));
  const bool v4 = a.prefix.address.family == Family::kIPv4;
  ifa->ifa_family = static_cast<uint8_t>(addressFamily(a.prefix.address.family));
  ifa->ifa_prefixlen = static_cast<uint8_t>(a.prefix.bits);
  ifa->ifa_scope = scopeOf(a.prefix);
  ifa->ifa_index = idx;
  // No duplicate address detection: the tunnel address is the same on every node by design.
  ifa->ifa_flags = IFA_F_NODAD;
  putAddress(nlh, IFA_LOCAL, a.prefix.address);
  if (v4) {
    putAddress(nlh, IFA_ADDRESS, a.prefix.address);
  }
  mnl_attr_put_u8(nlh, IFA_PROTO, kRouteProtocol);
  return send(nlh, add, "address " + a.toString());
}

Result<Ok, std::string> LinkApplier::changeNeighbour(const Neighbour& n, bool add) {
  unsigned idx = if_nametoindex(n.dev.c_str());
  if (idx == 0) {
    return unexpected("neighbour " + n.toString() + ": no device " + n.dev);
  }
  char buf[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* nlh = changeHeader(buf, RTM_NEWNEIGH, RTM_DELNEIGH, add);
  auto* ndm = static_cast<ndmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ndmsg)));
  ndm->ndm_family = static_cast<uint8_t>(addressFamily(n.ip.family));
  ndm->ndm_ifindex = static_cast<int>(idx);
  ndm->ndm_state = NUD_PERMANENT;
  ndm->ndm_flags = n.proxy ? uint8_t{NTF_PROXY} : uint8_t{0};
  putAddress(nlh, NDA_DST, n.ip);
  if (!n.proxy) {
    mnl_attr_put(nlh, NDA_LLADDR, n.mac.size(), n.mac.data());
  }
  mnl_attr_put_u8(nlh, NDA_PROTOCOL, kRouteProtocol);
  return send(nlh, add, "neighbour " + n.toString());
}

Result<Ok, std::string> LinkApplier::changeFdb(const FdbEntry& f, bool add) {
  unsigned idx = if_nametoindex(f.dev.c_str());
  if (idx == 0) {
    return unexpected("fdb " + f.toString() + ": no device " + f.dev);
  }
  char buf[MNL_SOCKET_BUFFER_SIZE];
  // Replace: a peer's entry whose underlay address changed moves in place.
  nlmsghdr* nlh = changeHeader(buf, RTM_NEWNEIGH, RTM_DELNEIGH, add);
  auto* ndm = static_cast<ndmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ndmsg)));
  ndm->ndm_family = AF_BRIDGE;
  ndm->ndm_ifindex = static_cast<int>(idx);
  ndm->ndm_state = NUD_PERMANENT;
  ndm->ndm_flags = NTF_SELF;
  mnl_attr_put(nlh, NDA_LLADDR, f.mac.size(), f.mac.data());
  putAddress(nlh, NDA_DST, f.dst);
  return send(nlh, add, "fdb " + f.toString());
}

Result<int, std::string> LinkApplier::apply(const KernelState& want) {
  auto links = applyLinks(want.links);
  if (!links) {
    return unexpected(links.error());
  }
  int changes = *links;
  auto addresses = readAddresses();
  if (!addresses) {
    return unexpected(addresses.error());
  }
  auto a = applyDiff<LinkAddress>(
      *addresses, want.addresses,
      [this](const LinkAddress& x, bool add) { return changeAddress(x, add); });
  if (!a) {
    return unexpected(a.error());
  }
  changes += *a;
  auto neighbours = readNeighbours();
  if (!neighbours) {
    return unexpected(neighbours.error());
  }
  auto n = applyDiff<Neighbour>(*neighbours, want.neighbours, [this](const Neighbour& x, bool add) {
    return changeNeighbour(x, add);
  });
  if (!n) {
    return unexpected(n.error());
  }
  changes += *n;
  auto fdb = readFdb();
  if (!fdb) {
    return unexpected(fdb.error());
  }
  auto f = applyDiff<FdbEntry>(*fdb, want.fdb,
                               [this](const FdbEntry& x, bool add) { return changeFdb(x, add); });
  if (!f) {
    return unexpected(f.error());
  }
  return changes + *f;
}

Result<int, std::string> LinkApplier::removeAll() {
  // The links go first (their addresses, neighbours and FDB with them), then the proxy entries
  // on the uplink, which stays.
  return apply(KernelState{});
}

}  // namespace egress::dataplane
