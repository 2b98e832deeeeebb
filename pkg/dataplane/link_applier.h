// File: link_applier.h
//
// Puts egw-agent's devices and what hangs off them into the kernel over rtnetlink (libmnl),
// without flushing: the links (the VXLAN tunnel egw0 and the egress-IP device; their alias
// kLinkAlias marks them as egw's), the addresses it adds (IFA_PROTO kRouteProtocol), the
// neighbours (the tunnel peers and the proxy ARP/NDP entries on the uplink, NDA_PROTOCOL
// kRouteProtocol) and the tunnel's FDB (every entry on an egw link is egw's). It reads back only
// what it owns, applies the difference, and changes a link in place where the kernel can (MTU,
// MAC) instead of recreating it, so a restarted agent changes nothing and traffic through the
// tunnel never sees a gap. A device of a desired name that is not egw's is an error, never
// taken over.
#pragma once

#include <string>
#include <vector>

#include "pkg/base/result.h"
#include "pkg/dataplane/kernel_state.h"
#include "pkg/dataplane/rtnetlink.h"

struct nlmsghdr;

namespace egress::dataplane {

inline constexpr const char* kLinkAlias = "egw-agent";

class LinkApplier {
 public:
  // The number of netlink changes made (0: the kernel already had exactly this). Links first
  // (up, in place where possible), then addresses, neighbours and the FDB, which need them.
  Result<int, std::string> apply(const KernelState& want);
  // Removes every link, address and neighbour egw owns.
  Result<int, std::string> removeAll();

  Result<std::vector<Link>, std::string> readLinks();
  Result<std::vector<LinkAddress>, std::string> readAddresses();
  Result<std::vector<Neighbour>, std::string> readNeighbours();
  Result<std::vector<FdbEntry>, std::string> readFdb();

  struct KernelLink;

 private:
  Result<std::vector<KernelLink>, std::string> dumpLinks();
  Result<int, std::string> applyLinks(const std::vector<Link>& want);
  Result<Ok, std::string> createLink(const Link& link);
  // Sets what differs from `have` (null: all of it); a MAC set, even to the same one, flushes
  // the link's neighbours.
  Result<Ok, std::string> changeLink(int index, const Link& link, const Link* have);
  Result<Ok, std::string> deleteLink(int index, const std::string& name);
  Result<Ok, std::string> changeAddress(const LinkAddress& a, bool add);
  Result<Ok, std::string> changeNeighbour(const Neighbour& n, bool add);
  Result<Ok, std::string> changeFdb(const FdbEntry& f, bool add);
  // Sends a change; an error names `what` and whether it was added or deleted.
  Result<Ok, std::string> send(nlmsghdr* nlh, bool add, const std::string& what);

  Rtnetlink nl_;
};

}  // namespace egress::dataplane
