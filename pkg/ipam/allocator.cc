#include "pkg/ipam/allocator.h"

#include <algorithm>
#include <tuple>
#include <utility>

namespace egress::ipam {

std::string_view shortfallName(Shortfall s) {
  switch (s) {
    case Shortfall::kNone:
      return "";
    case Shortfall::kNoPool:
      return "NoPool";
    case Shortfall::kPoolNotFound:
      return "PoolNotFound";
    case Shortfall::kPoolInvalid:
      return "PoolInvalid";
    case Shortfall::kPoolDisabled:
      return "PoolDisabled";
    case Shortfall::kPoolOverlapping:
      return "PoolOverlapping";
    case Shortfall::kNotAllowed:
      return "PoolNotAllowed";
    case Shortfall::kPoolChanged:
      return "PoolChanged";
    case Shortfall::kPoolExhausted:
      return "PoolExhausted";
    case Shortfall::kAddressConflict:
      return "AddressConflict";
    case Shortfall::kAddressNotInPool:
      return "AddressNotInPool";
    case Shortfall::kAddressReserved:
      return "AddressReserved";
    case Shortfall::kInvalidAddress:
      return "InvalidAddress";
    case Shortfall::kAgentsCatchingUp:
      return "AgentsCatchingUp";
  }
  return "Unknown";
}

namespace {

bool older(int64_t createdA, const std::string& nameA, int64_t createdB, const std::string& nameB) {
  return std::tie(createdA, nameA) < std::tie(createdB, nameB);
}

bool meets(const Prefix& a, const Prefix& b) {
  return a.address.family == b.address.family && a.first() <= b.last() && b.first() <= a.last();
}

bool poolsOverlap(const PoolSpec& a, const PoolSpec& b) {
  for (const auto& ta : a.cidrs) {
    auto pa = parseCIDR(ta);
    for (const auto& tb : b.cidrs) {
      auto pb = parseCIDR(tb);
      if (pa && pb && meets(*pa, *pb)) {
        return true;
      }
    }
  }
  return false;
}

// The first shortfall of an assignment is the one reported; later ones are usually its echo.
void noteShortfall(Assignment& out, Shortfall s, std::string message) {
  if (out.shortfall == Shortfall::kNone) {
    out.shortfall = s;
    out.message = std::move(message);
  }
}

}  // namespace

std::vector<std::string> Allocator::reservedIn(const PoolSpec& spec) const {
  std::vector<std::string> out;
  if (reserved_.empty()) {
    return out;
  }
  std::vector<Prefix> cidrs;
  for (const auto& text : spec.cidrs) {
    if (auto p = parseCIDR(text)) {
      cidrs.push_back(*p);
    }
  }
  for (const Reservation& r : reserved_) {
    if (std::any_of(cidrs.begin(), cidrs.end(),
                    [&](const Prefix& c) { return meets(c, r.prefix); })) {
      out.push_back(r.prefix.toString());
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Allocator::PoolRecord Allocator::makePool(const PoolSpec& spec) const {
  PoolRecord rec{spec, std::nullopt, "", reservedIn(spec)};
  // The spec's own exclusions first: an error names the first of them that does not parse, and
  // the reserved prefixes always do.
  std::vector<std::string> exclude = spec.exclude;
  exclude.insert(exclude.end(), rec.reservedExclude.begin(), rec.reservedExclude.end());
  auto created = Pool::create(spec.cidrs, exclude);
  if (created) {
    rec.pool = std::move(*created);
  } else {
    rec.invalid = created.error().message;
  }
  return rec;
}

std::optional<std::string> Allocator::unusableReason(const Address& a) const {
  if (auto why = reservedReason(a)) {
    return why;
  }
  if (auto special = specialUse(a)) {
    return specialUsePhrase(*special);
  }
  return std::nullopt;
}

Allocator::PoolRecord* Allocator::findPool(std::string_view name) {
  auto it = pools_.find(name);
  return it == pools_.end() ? nullptr : &it->second;
}

const Allocator::PoolRecord* Allocator::findPool(std::string_view name) const {
  auto it = pools_.find(name);
  return it == pools_.end() ? nullptr : &it->second;
}

void Allocator::recomputeOverlaps() {
  overlaps_.clear();
  for (const auto& [name, rec] : pools_) {
    const PoolRecord* oldest = nullptr;
    for (const auto& [otherName, other] : pools_) {
      if (otherName == name ||
          !older(other.spec.created, otherName, rec.spec.created, rec.spec.name) ||
          !poolsOverlap(rec.spec, other.spec)) {
        continue;
      }
      if (oldest == nullptr ||
          older(other.spec.created, otherName, oldest->spec.created, oldest->spec.name)) {
        oldest = &other;
      }
    }
    if (oldest != nullptr) {
      overlaps_.emplace(name, oldest->spec.name);
    }
  }
}

void Allocator::restoreInto(PoolRecord& rec) {
  if (!rec.pool) {
    return;
  }
  Ledger ledger;
  for (const auto& [address, holding] : holders_) {
    if (holding.pool == rec.spec.name) {
      ledger[holding.owner].push_back(address.toString());
    }
  }
  // The holdings are unique by construction; what restore reports here is an address outside
  // the pool's current space, which it keeps held and counts as outside.
  (void)rec.pool->restore(ledger);
}

std::vector<RebuildConflict> Allocator::rebuild(const std::vector<PoolSpec>& pools,
                                                const std::vector<PolicyLedger>& ledgers,
                                                const std::vector<InUse>& inUse) {
  pools_.clear();
  holders_.clear();
  owners_.clear();
  byName_.clear();
  for (const auto& spec : pools) {
    pools_.insert_or_assign(spec.name, makePool(spec));
  }
  recomputeOverlaps();

  std::vector<const PolicyLedger*> order;
  order.reserve(ledgers.size());
  for (const auto& l : ledgers) {
    order.push_back(&l);
  }
  auto nameOf = [](const PolicyLedger* l) -> const std::string& {
    return l->name.empty() ? l->owner : l->name;
  };
  std::sort(order.begin(), order.end(), [&](const PolicyLedger* a, const PolicyLedger* b) {
    return std::tie(a->created, nameOf(a), a->owner) < std::tie(b->created, nameOf(b), b->owner);
  });

  std::vector<RebuildConflict> conflicts;
  for (const PolicyLedger* l : order) {
    OwnerRecord& o = ownerRecord(l->owner, l->name);
    o.committed = true;
    o.pool = l->pool;
    for (const auto& texts : l->entries) {
      Entry entry;
      for (const auto& text : texts) {
        auto a = parseAddress(text);
        if (!a) {
          conflicts.push_back({l->owner, text, "", Reason::kInvalidAddress,
                               "\"" + text + "\" in the ledger is not an IP address"});
          continue;
        }
        auto held = holders_.find(*a);
        if (held != holders_.end() && held->second.owner != l->owner) {
          const std::string& holder = display(held->second.owner);
          conflicts.push_back(
              {l->owner, text, holder, Reason::kAlreadyAllocated,
               text + " is also held by " + holder + ", which is older and keeps it"});
          continue;
        }
        if (held == holders_.end()) {
          holders_.emplace(*a, Holding{l->owner, l->pool});
          o.held.insert(*a);
        }
        entry.push_back(*a);
      }
      if (!entry.empty()) {
        o.entries.push_back(std::move(entry));
      }
    }
  }

  for (const InUse& u : inUse) {
    OwnerRecord& o = ownerRecord(u.owner, u.name);
    for (const auto& text : u.addresses) {
      auto a = parseAddress(text);
      if (!a) {
        continue;  // nothing to keep: not an address
      }
      auto held = holders_.find(*a);
      if (held == holders_.end()) {
        const std::string pool = o.committed && !o.pool.empty() ? o.pool : poolContaining(*a);
        holders_.emplace(*a, Holding{u.owner, pool});
        o.held.insert(*a);
        o.lingering.insert(*a);
      } else if (held->second.owner != u.owner) {
        conflicts.push_back({u.owner, text, "", Reason::kAlreadyAllocated,
                             text + " is carried by " + u.source + " of " + display(u.owner) +
                                 ", but another policy holds it",
                             true});
      }
    }
  }

  for (auto& [name, rec] : pools_) {
    if (!rec.pool) {
      continue;
    }
    Ledger ledger;
    for (const auto& [address, holding] : holders_) {
      if (holding.pool == name) {
        ledger[holding.owner].push_back(address.toString());
      }
    }
    for (auto& e : rec.pool->restore(ledger)) {
      // The pool sees a reservation as one more exclusion, and a reserved address outside its
      // CIDRs as merely not in it: the reservation is the news (a node's address held as an
      // egress IP), so it is what the conflict names.
      auto a = parseAddress(e.address);
      auto why = a && (e.reason == Reason::kNotInPool || e.reason == Reason::kExcluded)
                     ? unusableReason(*a)
                     : std::nullopt;
      if (why) {
        conflicts.push_back({e.owner, e.address, "", Reason::kExcluded,
                             e.address + " is " + *why + " (pool " + name + "); it stays held by " +
                                 display(e.owner)});
      } else {
        conflicts.push_back(
            {e.owner, e.address, "", e.reason,
             e.message + " (pool " + name + "); it stays held by " + display(e.owner)});
      }
    }
  }
  // Holdings no Pool restored (no pool, a missing or an invalid one): no Pool reports them, so
  // the reserved and special-use ones are reported here. They stay held all the same.
  for (const auto& [address, holding] : holders_) {
    const PoolRecord* rec = findPool(holding.pool);
    if (rec != nullptr && rec->pool) {
      continue;
    }
    if (auto why = unusableReason(address)) {
      const std::string text = address.toString();
      conflicts.push_back({holding.owner, text, "", Reason::kExcluded,
                           text + " is " + *why + "; it stays held by " + display(holding.owner)});
    }
  }
  return conflicts;
}

void Allocator::setPool(const PoolSpec& spec) {
  auto [it, inserted] = pools_.insert_or_assign(spec.name, makePool(spec));
  restoreInto(it->second);
  recomputeOverlaps();
}

void Allocator::removePool(std::string_view name) {
  if (auto it = pools_.find(name); it != pools_.end()) {
    pools_.erase(it);
    recomputeOverlaps();
  }
}

void Allocator::setReserved(std::vector<Reservation> reserved) {
  if (reserved == reserved_) {
    return;
  }
  reserved_ = std::move(reserved);
  for (auto& [name, rec] : pools_) {
    // Node churn far from every pool (the usual case) rebuilds nothing.
    if (reservedIn(rec.spec) == rec.reservedExclude) {
      continue;
    }
    rec = makePool(rec.spec);
    restoreInto(rec);
  }
}

std::optional<std::string> Allocator::reservedReason(const Address& address) const {
  for (const Reservation& r : reserved_) {
    if (address.family == r.prefix.address.family && address.value >= r.prefix.first() &&
        address.value <= r.prefix.last()) {
      return r.why;
    }
  }
  return std::nullopt;
}

bool Allocator::take(const std::string& owner, const std::string& pool, const Address& a) {
  auto [it, inserted] = holders_.emplace(a, Holding{owner, pool});
  if (!inserted) {
    return it->second.owner == owner;
  }
  owners_[owner].held.insert(a);
  return true;
}

void Allocator::free(const Address& a) {
  auto it = holders_.find(a);
  if (it == holders_.end()) {
    return;
  }
  const Holding h = it->second;
  holders_.erase(it);
  if (auto o = owners_.find(h.owner); o != owners_.end()) {
    o->second.held.erase(a);
    o->second.lingering.erase(a);
  }
  const std::string text = a.toString();
  for (auto& [name, rec] : pools_) {
    if (!rec.pool) {
      continue;
    }
    // The holder's own pool, and any pool that fenced the address off while it was held.
    (void)rec.pool->release(name == h.pool ? h.owner : std::string(kFence), text);
  }
}

std::optional<Address> Allocator::allocateOne(PoolRecord& rec, const std::string& owner,
                                              Family family) {
  for (;;) {
    auto got = rec.pool->allocate(owner, family, 1);
    if (!got) {
      return std::nullopt;
    }
    const Address a = got->front();
    auto held = holders_.find(a);
    if (held == holders_.end()) {
      holders_.emplace(a, Holding{owner, rec.spec.name});
      owners_[owner].held.insert(a);
      return a;
    }
    // Free in this pool but held elsewhere (an overlapping pool, or an explicit address with no
    // pool): fence it off here so it is never offered again, and look further.
    const std::string text = a.toString();
    (void)rec.pool->release(owner, text);
    (void)rec.pool->reserve(kFence, text);
  }
}

Assignment Allocator::assign(const AssignRequest& req) {
  Assignment out;
  out.pool = req.pool;
  OwnerRecord& o = ownerRecord(req.owner, req.name);
  PoolRecord* rec = req.pool.empty() ? nullptr : findPool(req.pool);
  const std::string overlapped = [&] {
    auto it = overlaps_.find(req.pool);
    return it == overlaps_.end() ? std::string() : it->second;
  }();

  // Why the pool cannot make a new allocation now, if it cannot.
  auto newAllocationBlocked = [&]() -> std::optional<std::pair<Shortfall, std::string>> {
    if (!req.allowNew) {
      return std::make_pair(req.denied, req.deniedMessage);
    }
    if (rec == nullptr) {
      return std::make_pair(Shortfall::kPoolNotFound, "IPAMPool " + req.pool + " does not exist");
    }
    if (!rec->pool || !rec->spec.invalid.empty()) {
      return std::make_pair(Shortfall::kPoolInvalid,
                            "IPAMPool " + req.pool + " is invalid: " +
                                (rec->spec.invalid.empty() ? rec->invalid : rec->spec.invalid));
    }
    if (rec->spec.disabled) {
      return std::make_pair(Shortfall::kPoolDisabled,
                            "IPAMPool " + req.pool + " is disabled: it makes no new allocations");
    }
    if (!overlapped.empty()) {
      return std::make_pair(Shortfall::kPoolOverlapping,
                            "IPAMPool " + req.pool + " overlaps the older pool " + overlapped +
                                " and makes no new allocations until it no longer does");
    }
    return std::nullopt;
  };

  // The explicit addresses per family, in spec order.
  std::map<Family, std::vector<Address>> explicitByFamily;
  std::set<Address> explicitSet;
  for (const auto& text : req.explicitAddresses) {
    auto a = parseAddress(text);
    if (!a) {
      noteShortfall(out, Shortfall::kInvalidAddress, "\"" + text + "\" is not an IP address");
      continue;
    }
    explicitByFamily[a->family].push_back(*a);
    explicitSet.insert(*a);
  }

  // What the owner holds and may keep, per family: its committed ledger's addresses in order,
  // then anything else it holds (taken by an assignment whose ledger write failed).
  std::map<Family, std::vector<Address>> kept;
  std::set<Address> seen;
  auto keep = [&](const Address& a) {
    auto h = holders_.find(a);
    if (h == holders_.end() || h->second.owner != req.owner || h->second.pool != req.pool ||
        explicitSet.count(a) != 0 || o.lingering.count(a) != 0 || !seen.insert(a).second) {
      return;
    }
    kept[a.family].push_back(a);
  };
  for (const auto& entry : o.entries) {
    for (const auto& a : entry) {
      keep(a);
    }
  }
  for (const auto& a : o.held) {
    keep(a);
  }

  std::map<Family, size_t> nextKept;
  std::set<Family> exhausted;
  for (int i = 0; i < req.replicas; ++i) {
    Entry entry;
    for (Family f : req.families) {
      const auto& ex = explicitByFamily[f];
      if (static_cast<size_t>(i) < ex.size()) {
        const Address& a = ex[i];
        const std::string text = a.toString();
        auto h = holders_.find(a);
        if (h != holders_.end()) {
          if (h->second.owner == req.owner && o.lingering.count(a) != 0 && !req.allowNew) {
            // Held only because a pod showed it in use: entering the ledger is a new holding.
            noteShortfall(out, req.denied, req.deniedMessage);
          } else if (h->second.owner == req.owner) {
            o.lingering.erase(a);
            entry.push_back(a);
          } else {
            noteShortfall(out, Shortfall::kAddressConflict,
                          "explicit address " + text + " is held by " + display(h->second.owner));
          }
          continue;
        }
        // From here on it would be a new holding: the cluster's own and special-use addresses
        // are refused whatever the pool, and without a pool nothing new is taken.
        if (auto why = unusableReason(a)) {
          noteShortfall(out, Shortfall::kAddressReserved,
                        "explicit address " + text + " is " + *why);
          continue;
        }
        if (req.pool.empty()) {
          if (!req.allowNew) {
            noteShortfall(out, req.denied, req.deniedMessage);
          } else {
            noteShortfall(out, Shortfall::kNoPool,
                          "explicit address " + text +
                              " has no pool: addresses come only from an IPAMPool "
                              "(spec.egressIP.pool or the OperatorConfig's defaultPool) whose "
                              "namespaceSelector admits the policy's namespace");
          }
          continue;
        }
        if (auto blocked = newAllocationBlocked()) {
          noteShortfall(out, blocked->first, blocked->second);
          continue;
        }
        auto reserved = rec->pool->reserve(req.owner, text);
        if (!reserved) {
          const auto& e = reserved.error();
          const bool conflict = e.reason == Reason::kAlreadyAllocated;
          noteShortfall(out, conflict ? Shortfall::kAddressConflict : Shortfall::kAddressNotInPool,
                        conflict ? "explicit address " + text + " is already in use"
                                 : "explicit address " + e.message);
          continue;
        }
        take(req.owner, req.pool, a);
        out.allocated.push_back(a);
        entry.push_back(a);
        continue;
      }
      auto& k = kept[f];
      if (nextKept[f] < k.size()) {
        entry.push_back(k[nextKept[f]++]);
        continue;
      }
      if (req.pool.empty()) {
        noteShortfall(out, Shortfall::kNoPool,
                      "no pool: name one in spec.egressIP.pool or set the OperatorConfig's "
                      "defaultPool");
        continue;
      }
      if (auto blocked = newAllocationBlocked()) {
        noteShortfall(out, blocked->first, blocked->second);
        continue;
      }
      std::optional<Address> a;
      if (exhausted.count(f) == 0) {
        a = allocateOne(*rec, req.owner, f);
      }
      if (!a) {
        exhausted.insert(f);
        noteShortfall(
            out, Shortfall::kPoolExhausted,
            "IPAMPool " + req.pool + " has no free " + std::string(familyName(f)) + " address");
        continue;
      }
      out.allocated.push_back(*a);
      entry.push_back(*a);
    }
    if (!entry.empty()) {
      std::sort(entry.begin(), entry.end());
      out.entries.push_back(std::move(entry));
    }
  }

  std::set<Address> listed;
  for (const auto& e : out.entries) {
    listed.insert(e.begin(), e.end());
  }
  for (const auto& a : o.held) {
    if (listed.count(a) == 0) {
      out.surplus.push_back(a);
    }
  }
  o.waitingPool = exhausted.empty() ? "" : req.pool;
  o.waitingFamilies = std::move(exhausted);
  return out;
}

std::vector<Address> Allocator::commit(const std::string& owner, const std::string& pool,
                                       const std::vector<Entry>& entries,
                                       const std::set<Address>& inUse) {
  OwnerRecord& o = owners_[owner];
  o.committed = true;
  o.pool = pool;
  o.entries = entries;
  std::set<Address> listed;
  for (const auto& e : entries) {
    listed.insert(e.begin(), e.end());
  }
  std::vector<Address> released;
  for (const auto& a : std::set<Address>(o.held)) {
    if (listed.count(a) == 0 && inUse.count(a) == 0) {
      free(a);
      released.push_back(a);
    }
  }
  return released;
}

std::vector<Address> Allocator::releaseAll(const std::string& owner) {
  auto it = owners_.find(owner);
  if (it == owners_.end()) {
    return {};
  }
  std::vector<Address> released(it->second.held.begin(), it->second.held.end());
  for (const auto& a : released) {
    free(a);
  }
  if (auto o = owners_.find(owner); o != owners_.end()) {
    unindexName(owner, o->second.name);
    owners_.erase(o);
  }
  return released;
}

PoolState Allocator::poolState(std::string_view name) const {
  PoolState s;
  const PoolRecord* rec = findPool(name);
  if (rec == nullptr) {
    return s;
  }
  s.exists = true;
  s.disabled = rec->spec.disabled;
  if (!rec->spec.invalid.empty()) {
    s.invalid = rec->spec.invalid;
  }
  if (!rec->pool) {
    s.invalid = rec->invalid;
  } else {
    s.hasIPv4 = rec->pool->hasFamily(Family::kIPv4);
    s.hasIPv6 = rec->pool->hasFamily(Family::kIPv6);
    s.ipv4 = rec->pool->counts(Family::kIPv4);
    s.ipv6 = rec->pool->counts(Family::kIPv6);
  }
  if (auto it = overlaps_.find(name); it != overlaps_.end()) {
    s.overlaps = it->second;
  }
  for (const auto& [owner, o] : owners_) {
    if (o.committed && o.pool == name && !o.entries.empty()) {
      ++s.policies;
    }
  }
  return s;
}

const PoolSpec* Allocator::poolSpec(std::string_view name) const {
  const PoolRecord* rec = findPool(name);
  return rec == nullptr ? nullptr : &rec->spec;
}

std::vector<std::string> Allocator::poolNames() const {
  std::vector<std::string> names;
  for (const auto& [name, rec] : pools_) {
    names.push_back(name);
  }
  return names;
}

std::optional<std::string> Allocator::committedPool(const std::string& owner) const {
  auto it = owners_.find(owner);
  if (it == owners_.end() || !it->second.committed) {
    return std::nullopt;
  }
  return it->second.pool;
}

std::vector<Entry> Allocator::committedEntries(const std::string& owner) const {
  auto it = owners_.find(owner);
  return it == owners_.end() ? std::vector<Entry>{} : it->second.entries;
}

std::string Allocator::holderOf(const Address& address) const {
  auto it = holders_.find(address);
  return it == holders_.end() ? "" : it->second.owner;
}

std::vector<std::string> Allocator::waitingFor(const std::vector<Address>& freed) const {
  std::vector<std::string> out;
  for (const auto& [owner, record] : owners_) {
    const OwnerRecord& r = record;  // clang before 16 cannot capture a structured binding
    if (r.waitingPool.empty()) {
      continue;
    }
    if (std::any_of(freed.begin(), freed.end(), [&](const Address& a) {
          return r.waitingFamilies.contains(a.family) && inPool(r.waitingPool, a);
        })) {
      out.push_back(owner);
    }
  }
  return out;
}

std::vector<std::string> Allocator::owners() const {
  std::vector<std::string> out;
  for (const auto& [owner, o] : owners_) {
    out.push_back(owner);
  }
  return out;
}

std::vector<std::string> Allocator::ownersNamed(std::string_view name) const {
  std::vector<std::string> out;
  if (auto it = byName_.find(name); it != byName_.end()) {
    out.assign(it->second.begin(), it->second.end());
  }
  return out;
}

std::string Allocator::ownerName(const std::string& owner) const {
  return display(owner);
}

std::set<Address> Allocator::heldBy(const std::string& owner) const {
  auto it = owners_.find(owner);
  return it == owners_.end() ? std::set<Address>{} : it->second.held;
}

Allocator::OwnerRecord& Allocator::ownerRecord(const std::string& owner, const std::string& name) {
  OwnerRecord& o = owners_[owner];
  // Sticky: a uid's policy never changes its name, so a second name is a lie of some source.
  if (!name.empty() && o.name.empty()) {
    o.name = name;
    byName_[name].insert(owner);
  }
  return o;
}

void Allocator::unindexName(const std::string& owner, const std::string& name) {
  auto it = byName_.find(name);
  if (it == byName_.end()) {
    return;
  }
  it->second.erase(owner);
  if (it->second.empty()) {
    byName_.erase(it);
  }
}

const std::string& Allocator::display(const std::string& owner) const {
  auto it = owners_.find(owner);
  return it == owners_.end() || it->second.name.empty() ? owner : it->second.name;
}

bool Allocator::inPool(std::string_view pool, const Address& a) const {
  const PoolRecord* rec = findPool(pool);
  if (rec == nullptr) {
    return false;
  }
  return std::any_of(rec->spec.cidrs.begin(), rec->spec.cidrs.end(), [&](const std::string& t) {
    auto p = parseCIDR(t);
    return p && p->address.family == a.family && a.value >= p->first() && a.value <= p->last();
  });
}

std::string Allocator::poolContaining(const Address& a) const {
  for (const auto& [name, rec] : pools_) {
    if (inPool(name, a)) {
      return name;
    }
  }
  return "";
}

}  // namespace egress::ipam
