// File: pool.h
//
// Pool: the allocation logic of one IPAMPool, with no I/O and no Kubernetes types: the pool's
// CIDR and exclusion strings in, addresses and typed errors out. The controller builds a Pool
// from the IPAMPool's spec, restores the ledger (policy -> addresses, from the policies' status)
// into it, and then allocates, reserves and releases; when the spec changes it builds a new Pool
// and restores the same ledger into that.
//
// Which addresses a pool hands out, per family: the union of its CIDRs, where an IPv4 CIDR
// shorter than /31 contributes its addresses but its network and broadcast address (a /31 or
// /32 contributes all, RFC 3021) and an IPv6 CIDR shorter than /127 its addresses but the first,
// all-zeros one (the Subnet-Router anycast address, RFC 4291 2.6.1: every router of the subnet
// answers for it, so a node's proxy NDP must not; a /127 or /128 contributes all, RFC 6164),
// minus the union of the exclusions (exclusions outside every CIDR, or of the other family,
// change nothing), minus the special-use blocks of address.h (loopback, link-local, multicast,
// ...: no egress IP can be one, whatever CIDR a user writes). Overlapping CIDRs count their
// addresses once; an address that is the broadcast (or anycast) address of one CIDR and a host
// of a larger overlapping one is usable.
//
// Rules:
//   - Allocation is deterministic: the lowest free addresses of the family, in order, so users
//     and tests can predict them. allocate(n) is all or nothing.
//   - Counts saturate at 2^63-1 (IPFamilyCounts in the API) and are exact below it: a /64 has a
//     total and a free count of 2^63-1, however many addresses are allocated.
//   - restore() replaces every allocation with the ledger's and returns every conflict in one
//     list, never picking silently. An address claimed by two owners stays with the first in
//     ledger order (owners sorted by name) and the other claim is an AlreadyAllocated conflict.
//     An address outside the pool's CIDRs (NotInPool) or one of its CIDRs does not contribute
//     (Excluded: an exclusion, a special-use, network, broadcast or anycast address) is a conflict
//     and STAYS HELD by its owner: it appears in ledger() and addressesOf(), counts as `outside`,
//     is never handed to anyone else, and if a later spec brings it back into the pool it is still
//     its owner's. Releasing it does not make it allocatable unless it is in the pool.
//   - reserve() checks the address against the pool first, then against its holder: an address
//     the owner already holds succeeds again (idempotent), unless it is no longer usable (a held
//     conflict keeps failing NotInPool / Excluded, so the condition stays). release() of an
//     address nobody holds succeeds and reports that nothing was released.
//   - Not thread-safe: one controller owns a Pool and calls it from its one io_context.
//
// Complexity, with n the number of held addresses: allocate of k addresses, reserve and release
// are O(k log n) / O(log n); memory is O(n + CIDRs + exclusions), never proportional to the
// pool's size. Free space is kept per family as a map of maximal free intervals (initially the
// usable ranges), split when an address is taken and merged when it comes back, so the lowest
// free address is the first interval's start; held addresses are a map value -> owner plus an
// owner -> addresses index for releaseAll() and addressesOf().
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/base/result.h"
#include "pkg/ipam/address.h"
#include "pkg/ipam/range_set.h"

namespace egress::ipam {

enum class Reason {
  // Fewer free addresses of the family than requested (or the pool has no CIDR of it).
  kPoolExhausted,
  // Outside every CIDR of the pool (including an address of a family the pool lacks).
  kNotInPool,
  // Inside a CIDR but excluded, special-use (address.h), an IPv4 network or broadcast address or
  // an IPv6 Subnet-Router anycast address.
  kExcluded,
  // Held by another owner (Error::holder).
  kAlreadyAllocated,
  // Not an IP address (or, for create(), not a CIDR / address-or-CIDR).
  kInvalidAddress,
};

// "PoolExhausted", "NotInPool", ... (usable as a condition reason).
std::string_view reasonName(Reason reason);

struct Error {
  Reason reason = Reason::kInvalidAddress;
  // The address (or CIDR) text concerned, as given; empty for kPoolExhausted.
  std::string address;
  // Who asked: the allocating, reserving or releasing owner, or the restoring claimant.
  std::string owner;
  // kAlreadyAllocated: who holds the address.
  std::string holder;
  // One sentence for a condition message or an event.
  std::string message;

  bool operator==(const Error&) const = default;
};

// Addresses of one family. total = usable addresses (CIDRs minus exclusions, special-use blocks,
// IPv4 network and broadcast and IPv6 anycast addresses); allocated = held addresses among them;
// free = total - allocated, computed exactly and then saturated; outside = held addresses that are
// not usable (restored conflicts).
struct FamilyCounts {
  static constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

  int64_t total = 0;
  int64_t allocated = 0;
  int64_t free = 0;
  int64_t outside = 0;

  bool operator==(const FamilyCounts&) const = default;
};

// Owner -> the addresses it holds, in text. Sorted by owner: restore's "first claimant".
using Ledger = std::map<std::string, std::vector<std::string>>;

class Pool {
 public:
  // An empty pool (no CIDRs).
  Pool() = default;

  // cidrs in the `cidr` format, exclude in `ip-or-cidr`. The first entry that does not parse is
  // an kInvalidAddress error.
  static Result<Pool, Error> create(const std::vector<std::string>& cidrs,
                                    const std::vector<std::string>& exclude);

  // The n lowest free addresses of `family`, now held by `owner`; nothing if fewer are free.
  Result<std::vector<Address>, Error> allocate(std::string_view owner, Family family, size_t n);
  // One specific address (an explicit address of a policy).
  Result<Address, Error> reserve(std::string_view owner, std::string_view address);
  // True if `owner` held `address` and no longer does; false if nobody held it. An address
  // held by someone else is kAlreadyAllocated and stays theirs.
  Result<bool, Error> release(std::string_view owner, std::string_view address);
  // Every address `owner` held, in order.
  std::vector<Address> releaseAll(std::string_view owner);
  // Replaces all allocations with `ledger`'s; the conflicts, in ledger order (see above).
  std::vector<Error> restore(const Ledger& ledger);

  // True if the pool has a CIDR of `family` (the API omits the family's counts otherwise).
  bool hasFamily(Family family) const { return state(family).present; }
  FamilyCounts counts(Family family) const;
  // Who holds `address`; empty if nobody.
  std::string holderOf(const Address& address) const;
  std::vector<Address> addressesOf(std::string_view owner) const;
  // Everything held, as restore() takes it.
  Ledger ledger() const;

 private:
  using OwnerId = uint32_t;

  struct FamilyState {
    bool present = false;
    RangeSet cidrs;     // union of the CIDRs
    RangeSet excluded;  // union of the exclusions (special-use blocks not included)
    RangeSet usable;
    Uint128 total = 0;  // usable.size()
    // Maximal free intervals, first -> last.
    std::map<Uint128, Uint128> free;
    std::map<Uint128, OwnerId> held;
    Uint128 heldUsable = 0;
    Uint128 heldOutside = 0;
  };

  struct Owner {
    std::string name;
    std::set<Address> addresses;
  };

  FamilyState& state(Family family) { return families_[static_cast<size_t>(family)]; }
  const FamilyState& state(Family family) const { return families_[static_cast<size_t>(family)]; }

  // Why `address` cannot be handed out: kNotInPool or kExcluded, the message naming which rule
  // (an exclusion, a special-use block, network / broadcast, anycast); nothing if it is usable.
  std::optional<Error> checkUsable(const Address& address, std::string_view text,
                                   std::string_view owner) const;
  OwnerId ownerId(std::string_view name);
  void hold(const Address& address, OwnerId owner);
  void unhold(const Address& address);
  // Takes `value` out of the free intervals; it must be free.
  void takeFree(FamilyState& fs, Uint128 value);
  void giveFree(FamilyState& fs, Uint128 value);
  void clearAllocations();

  std::array<FamilyState, 2> families_;
  // Owner records, indexed by OwnerId; ids of owners that hold nothing are reused. A deque:
  // growing it never moves the records.
  std::deque<Owner> owners_;
  std::vector<OwnerId> unusedIds_;
  std::map<std::string, OwnerId, std::less<>> ownerIds_;
};

}  // namespace egress::ipam
