// File: conntrack_cleaner.h
//
// Forgets the connections an egress IP carried once this node no longer holds it
// (the release of an address): every conntrack entry whose reply tuple is addressed to the IP,
// that is every connection this node SNATed to it, is deleted through ctnetlink. Left in place
// they would pin the NAT binding and its ports after the nft SNAT rule is gone, and, if the IP
// comes back to this node, meet the new holder's flows with a stale state.
#pragma once

#include <cstddef>
#include <set>
#include <string>

#include "pkg/base/result.h"
#include "pkg/dataplane/rtnetlink.h"
#include "pkg/ipam/address.h"

namespace egress::dataplane {

class ConntrackCleaner {
 public:
  ConntrackCleaner();

  // Deletes the entries whose reply destination is one of `ips`, with one dump of the table per
  // family (a fenced node releases all its IPs at once); the number deleted. Entries that end
  // between the dump and their delete (ENOENT) are not errors; a family that fails does not
  // stop the other, and the error names what was deleted.
  Result<size_t, std::string> forget(const std::set<ipam::Address>& ips);

 private:
  Rtnetlink nl_;
};

}  // namespace egress::dataplane
