// File: allocator.h
//
// Allocator: the cluster's egress-IP book, over every IPAMPool at once. A Pool (pool.h) knows one
// pool's free space; the Allocator adds what only a view of all of them can decide, with no I/O
// and no Kubernetes types, so the controller's rules can be tested exhaustively here:
//
//   - One address, one holder, cluster-wide. Pools may overlap and an old ledger may hold
//     explicit addresses with no pool at all, so uniqueness is checked against every holding, not
//     per pool. An address one pool would hand out but that is held elsewhere is fenced off in
//     that pool (held by an internal owner) the moment it is met, and never handed out.
//   - Addresses come only from pools. An egress IP is answered for by a node's proxy ARP / NDP,
//     so an address no IPAMPool admitted (through its namespaceSelector) could take over any
//     address of the cluster's network: a new explicit address of a policy without a pool is
//     refused (NoPool). What an existing ledger already holds without a pool stays held (fail
//     closed: dropping it would hand out an address a gateway may still carry).
//   - Reservations (setReserved()) are the cluster's own addresses, which no pool may hand out
//     whatever its spec says: node InternalIPs, the pod and service CIDRs, the API server's
//     address. Every pool treats those overlapping its CIDRs as exclusions, and the special-use
//     blocks of address.h (loopback, link-local, multicast, ...) are never usable in any pool.
//     A new explicit address that is reserved or special-use is refused (AddressReserved, naming
//     why). Reserving an address somebody already holds never takes it away: it stays held by its
//     owner, in its ledger, counted as `outside`, and is never handed to anyone else, exactly as
//     for an exclusion added to a pool's spec.
//   - rebuild() is the start hook's restore: the policies' ledgers (status.pool +
//     status.gateways) in, every conflict out. The older policy (creation time, then name) keeps
//     a doubly claimed address; addresses outside their pool, excluded, reserved or special-use
//     stay held by their owner (fail closed) and are counted as `outside`, the reserved and
//     special-use ones reported as Excluded whatever pool they are in, naming why; a ledger
//     naming a pool that does not exist keeps its addresses held, waiting for the pool.
//     Reservations survive a rebuild: they are the caller's to set, before or after.
//     A ledger is not all that proves use: an address a gateway pod still carries or the
//     published view still names (a release deferred until the pod is gone, which only the
//     previous process knew) comes in as `inUse` and stays held by its owner, beyond its ledger,
//     until a commit() or releaseAll() no longer finds it in use. Without it, a leader change
//     in that window hands the address to another policy while the old pod still sends from it.
//   - Overlapping pools: the older pool (creation time, then name) wins; the newer one makes no
//     new allocations while it overlaps (overlapOf()).
//   - assign() brings one policy to `replicas` ledger entries (one address per family each):
//     explicit addresses first, in order, then the addresses it already holds, in ledger order
//     (sticky: an entry's address never changes while the policy keeps the entry), then new ones,
//     lowest first. Only new holdings are checked against reservations and the no-pool rule: an
//     address the policy already holds stays in its entry. Entries it cannot complete are left
//     out and the reason says why; nothing is released by assign().
//   - Releases are two-phase: commit() is called once the new ledger is written to the API, and
//     only then does what the policy held beyond it become free. A crash between the two leaves
//     the old ledger in the API, whose addresses are then still held by nobody else.
//
// Owners are policy UIDs: a policy deleted and re-created under the same name is another owner,
// which allocates afresh from the pool it names while its predecessor's addresses stay held
// until that one's pods are gone. Each owner also has a name ("namespace/name"), which messages
// use and ownersNamed() finds. Not thread-safe: one controller owns it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/ipam/address.h"
#include "pkg/ipam/pool.h"

namespace egress::ipam {

// One IPAMPool as the allocator needs it.
struct PoolSpec {
  std::string name;
  // Creation time (any monotonic unit, e.g. Unix seconds): the older pool wins an overlap.
  int64_t created = 0;
  std::vector<std::string> cidrs;
  std::vector<std::string> exclude;
  // No new allocations; what is held stays.
  bool disabled = false;
  // Why the pool's spec is invalid (its validation errors); non-empty: no new allocations.
  std::string invalid;

  bool operator==(const PoolSpec&) const = default;
};

// One gateway's addresses: one per family the policy asks for, IPv4 first.
using Entry = std::vector<Address>;

// An address range of the cluster itself that no pool may hand out (Allocator::setReserved).
struct Reservation {
  // A node's InternalIP as a /32 or /128, a cluster CIDR, the API server's address, ...
  Prefix prefix;
  // What it is, completing "explicit address X is ...": "node n1's InternalIP", "a cluster CIDR
  // (OperatorConfig spec.clusterCIDRs)".
  std::string why;

  bool operator==(const Reservation&) const = default;
};

// What a policy's status says it holds.
struct PolicyLedger {
  std::string owner;  // the policy's uid
  int64_t created = 0;
  // status.pool; "" when it holds only explicit addresses outside any pool.
  std::string pool;
  // status.gateways[].egressIPs, in order.
  std::vector<std::vector<std::string>> entries;
  // "namespace/name"; "" reads as `owner`.
  std::string name;
};

// Addresses something other than a ledger shows in use for an owner (Allocator::rebuild).
struct InUse {
  std::string owner;
  std::string name;
  // What shows it, completing "carried by ...": "EgressPolicySlice ns.web.0".
  std::string source;
  std::vector<std::string> addresses;
};

// Why a policy holds fewer entries than it asked for, as the IPAllocated condition's reason.
enum class Shortfall {
  kNone,
  kNoPool,            // no pool named and no default (explicit addresses need one too)
  kPoolNotFound,      // the named pool does not exist
  kPoolInvalid,       // the pool's spec does not parse
  kPoolDisabled,      // spec.disabled: no new allocations
  kPoolOverlapping,   // a newer pool overlapping an older one: no new allocations
  kNotAllowed,        // the caller forbade new allocations (the pool's namespaceSelector)
  kPoolChanged,       // the spec names another pool than the one the ledger is in
  kPoolExhausted,     // no free address of a family
  kAddressConflict,   // an explicit address is held by another policy
  kAddressNotInPool,  // an explicit address is outside the pool or excluded
  kAddressReserved,   // an explicit address is reserved (setReserved) or special-use
  kInvalidAddress,    // an explicit address is not an IP address
  kAgentsCatchingUp,  // a new leader waits for the agents to report its start (agents.h)
};

// "PoolExhausted", ... ; "" for kNone.
std::string_view shortfallName(Shortfall s);

struct AssignRequest {
  std::string owner;  // the policy's uid
  std::string name;   // "namespace/name"; "" reads as `owner`
  // The resolved pool; "" for none.
  std::string pool;
  // The families of every entry: {kIPv4}, {kIPv6} or {kIPv4, kIPv6}.
  std::vector<Family> families;
  int replicas = 1;
  // spec.egressIP.addresses, in order (both families mixed, as the spec lists them).
  std::vector<std::string> explicitAddresses;
  // False: keep and re-take what is held, make no new allocations (`denied` says why).
  bool allowNew = true;
  Shortfall denied = Shortfall::kNotAllowed;
  std::string deniedMessage;
};

struct Assignment {
  // The ledger to write: complete entries, in order.
  std::string pool;
  std::vector<Entry> entries;
  Shortfall shortfall = Shortfall::kNone;
  // One sentence for the condition and the event; "" when complete.
  std::string message;
  // Addresses this call newly took for the owner (a retry after a failed ledger write lists
  // none: the first try took them).
  std::vector<Address> allocated;
  // Addresses held now that the ledger no longer lists: freed by commit().
  std::vector<Address> surplus;
};

// One address a rebuild could not give to its claimant.
struct RebuildConflict {
  std::string owner;
  std::string address;
  // kAlreadyAllocated: the older policy that keeps it; empty otherwise.
  std::string holder;
  // kAlreadyAllocated (lost to `holder`), kInvalidAddress (not an address: dropped),
  // kNotInPool / kExcluded (kept, held outside the pool; kExcluded also for a reserved or
  // special-use address, in a pool or not, the message naming why).
  Reason reason = Reason::kAlreadyAllocated;
  std::string message;
  // From an InUse, not a ledger: for the log only (the policy's own ledger is not in question).
  bool inUse = false;
};

// A pool's state for its status and metrics.
struct PoolState {
  bool exists = false;
  // The spec did not parse (Pool::create failed): no allocations.
  std::optional<std::string> invalid;
  bool disabled = false;
  FamilyCounts ipv4;
  FamilyCounts ipv6;
  bool hasIPv4 = false;
  bool hasIPv6 = false;
  // The older pool this one overlaps, if any.
  std::string overlaps;
  // Policies whose ledger names this pool.
  int policies = 0;
};

class Allocator {
 public:
  Allocator() = default;

  // Replaces everything: these pools, these ledgers, then what else is in use. Ledgers are taken
  // oldest first; an in-use address nobody holds yet is held by its owner in the owner's ledger
  // pool, else in the pool that contains it, else in none.
  std::vector<RebuildConflict> rebuild(const std::vector<PoolSpec>& pools,
                                       const std::vector<PolicyLedger>& ledgers,
                                       const std::vector<InUse>& inUse = {});

  // A pool was created or its spec changed: its free space is computed afresh and what is held
  // in it is kept (addresses it no longer covers stay held, counted as outside).
  void setPool(const PoolSpec& spec);
  // A pool was deleted: what its policies hold stays held, waiting for a pool of that name.
  void removePool(std::string_view name);

  // Replaces the reservations. A pool whose CIDRs meet a reservation that came or went is built
  // afresh with it as an exclusion and keeps every holding (as setPool() does); the same list
  // again, or a change no pool's CIDRs meet, rebuilds nothing.
  void setReserved(std::vector<Reservation> reserved);
  // The `why` of the first reservation containing `address`; nothing if none does.
  std::optional<std::string> reservedReason(const Address& address) const;

  Assignment assign(const AssignRequest& request);
  // The owner's ledger `entries` (in `pool`) is now written: frees what it held beyond them,
  // except addresses still `inUse` (a gateway pod still carries them: they are freed by a later
  // commit, once no pod does).
  std::vector<Address> commit(const std::string& owner, const std::string& pool,
                              const std::vector<Entry>& entries, const std::set<Address>& inUse);
  std::vector<Address> commit(const std::string& owner, const std::string& pool,
                              const std::vector<Entry>& entries) {
    return commit(owner, pool, entries, {});
  }
  // The owner is gone: frees everything it held.
  std::vector<Address> releaseAll(const std::string& owner);

  PoolState poolState(std::string_view name) const;
  // The spec the pool was last set with; null if the allocator has no such pool.
  const PoolSpec* poolSpec(std::string_view name) const;
  std::vector<std::string> poolNames() const;
  // The pool whose ledger `owner` last committed (or was rebuilt with); nullopt if none.
  std::optional<std::string> committedPool(const std::string& owner) const;
  // The entries last committed for `owner`.
  std::vector<Entry> committedEntries(const std::string& owner) const;
  // Who holds `address`; "" if nobody.
  std::string holderOf(const Address& address) const;
  // Owners whose last assign() fell short for want of free addresses in a pool whose CIDRs
  // contain one of `freed`, of that address's family: that release may let them complete (a
  // freed IPv6 address does nothing for a policy short of IPv4 ones, nor one of another pool).
  // By the addresses, not by whose they were: an address held with no ledger (rebuild() found it
  // in use) has no pool of its owner's to go by.
  std::vector<std::string> waitingFor(const std::vector<Address>& freed) const;
  // The name of the first pool (by name) whose CIDRs contain `a`; "" if none does.
  std::string poolContaining(const Address& a) const;
  // Every owner that holds something or has a committed ledger.
  std::vector<std::string> owners() const;
  // The owners (uids) known under `name`, holding something or with a committed ledger.
  std::vector<std::string> ownersNamed(std::string_view name) const;
  // The name `owner` was last seen with; the owner itself if none.
  std::string ownerName(const std::string& owner) const;
  // Everything `owner` holds, in its ledger or beyond it.
  std::set<Address> heldBy(const std::string& owner) const;

 private:
  // Who fences an address in a pool when it is held outside that pool. Not a valid policy key.
  static constexpr std::string_view kFence = "\x01held-elsewhere";

  struct PoolRecord {
    PoolSpec spec;
    std::optional<Pool> pool;  // nullopt: the spec does not parse
    std::string invalid;
    // The reserved prefixes meeting the spec's CIDRs that `pool` excludes, sorted, as text.
    std::vector<std::string> reservedExclude;
  };
  struct Holding {
    std::string owner;
    std::string pool;  // the pool it is held in (may not exist); "" = no pool
  };
  struct OwnerRecord {
    std::string name;  // "namespace/name"
    std::string pool;  // committed pool
    bool committed = false;
    std::vector<Entry> entries;  // committed ledger
    std::set<Address> held;
    // Held beyond the ledger only because rebuild() found them in use: never taken back into
    // an entry by assign() (a tenant-editable source must not grow a ledger), freed by commit().
    std::set<Address> lingering;
    std::string waitingPool;           // set while short of free addresses there
    std::set<Family> waitingFamilies;  // ... of these families
  };

  // A record for `spec`, its Pool built with the spec's exclusions plus the reservations.
  PoolRecord makePool(const PoolSpec& spec) const;
  // The reserved prefixes meeting `spec`'s CIDRs, sorted, as text.
  std::vector<std::string> reservedIn(const PoolSpec& spec) const;
  // Why `a` may not become anybody's new holding: a reservation's `why` or "a link-local
  // address"; nothing if it may.
  std::optional<std::string> unusableReason(const Address& a) const;
  PoolRecord* findPool(std::string_view name);
  const PoolRecord* findPool(std::string_view name) const;
  void recomputeOverlaps();
  // Holds `a` for `owner` in `pool` ("" = none); false if someone else holds it.
  bool take(const std::string& owner, const std::string& pool, const Address& a);
  void free(const Address& a);
  // The lowest free address of `family` in `rec` that nobody else holds, now owner's.
  std::optional<Address> allocateOne(PoolRecord& rec, const std::string& owner, Family family);
  // Restores every holding in `rec`'s Pool.
  void restoreInto(PoolRecord& rec);
  // The owner's record, its name set if `name` is not empty.
  OwnerRecord& ownerRecord(const std::string& owner, const std::string& name);
  // How messages call `owner`.
  const std::string& display(const std::string& owner) const;
  void unindexName(const std::string& owner, const std::string& name);
  // Whether pool `pool`'s CIDRs contain `a`.
  bool inPool(std::string_view pool, const Address& a) const;

  std::map<std::string, PoolRecord, std::less<>> pools_;
  std::map<std::string, std::string, std::less<>> overlaps_;  // newer pool -> older pool
  std::map<Address, Holding> holders_;
  std::map<std::string, OwnerRecord, std::less<>> owners_;
  // name -> the owners known under it (a policy and its re-created successor).
  std::map<std::string, std::set<std::string>, std::less<>> byName_;
  std::vector<Reservation> reserved_;
};

}  // namespace egress::ipam
