#include "pkg/ipam/pool.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace egress::ipam {
namespace {

int64_t saturate(Uint128 n) {
  return n > static_cast<Uint128>(FamilyCounts::kMax) ? FamilyCounts::kMax
                                                      : static_cast<int64_t>(n);
}

std::string decimal(Uint128 n) {
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(n % 10)));
    n /= 10;
  } while (n != 0);
  return digits;
}

Error makeError(Reason reason, std::string_view address, std::string_view owner,
                std::string message) {
  return Error{reason, std::string(address), std::string(owner), "", std::move(message)};
}

Error invalidAddress(std::string_view text, std::string_view owner) {
  return makeError(Reason::kInvalidAddress, text, owner,
                   "\"" + std::string(text) + "\" is not an IP address");
}

Error alreadyAllocated(std::string_view text, std::string_view owner, const std::string& holder) {
  Error e = makeError(Reason::kAlreadyAllocated, text, owner,
                      std::string(text) + " is already allocated to " + holder);
  e.holder = holder;
  return e;
}

// The addresses a CIDR contributes before exclusions and special-use blocks: all of it, but an
// IPv4 network and broadcast address when the prefix is shorter than /31, and an IPv6 all-zeros
// address (Subnet-Router anycast) when it is shorter than /127. IPv6 has no broadcast address.
Range usableRange(const Prefix& p) {
  Range r{p.first(), p.last()};
  if (p.address.family == Family::kIPv4 && p.bits < 31) {
    ++r.first;
    --r.last;
  } else if (p.address.family == Family::kIPv6 && p.bits < 127) {
    ++r.first;
  }
  return r;
}

RangeSet specialUseRanges(Family family) {
  std::vector<Range> ranges;
  for (const Prefix& p : specialUsePrefixes(family)) {
    ranges.push_back({p.first(), p.last()});
  }
  return RangeSet(std::move(ranges));
}

}  // namespace

std::string_view reasonName(Reason reason) {
  switch (reason) {
    case Reason::kPoolExhausted:
      return "PoolExhausted";
    case Reason::kNotInPool:
      return "NotInPool";
    case Reason::kExcluded:
      return "Excluded";
    case Reason::kAlreadyAllocated:
      return "AlreadyAllocated";
    case Reason::kInvalidAddress:
      return "InvalidAddress";
  }
  return "Unknown";
}

Result<Pool, Error> Pool::create(const std::vector<std::string>& cidrs,
                                 const std::vector<std::string>& exclude) {
  std::array<std::vector<Range>, 2> whole, usable, excluded;
  for (const auto& text : cidrs) {
    auto p = parseCIDR(text);
    if (!p) {
      return makeError(Reason::kInvalidAddress, text, "", "\"" + text + "\" is not a CIDR");
    }
    const auto f = static_cast<size_t>(p->address.family);
    whole[f].push_back({p->first(), p->last()});
    usable[f].push_back(usableRange(*p));
  }
  for (const auto& text : exclude) {
    auto p = parseAddressOrCIDR(text);
    if (!p) {
      return makeError(Reason::kInvalidAddress, text, "",
                       "\"" + text + "\" is not an IP address or CIDR");
    }
    excluded[static_cast<size_t>(p->address.family)].push_back({p->first(), p->last()});
  }
  Pool pool;
  for (size_t f = 0; f < 2; ++f) {
    FamilyState& fs = pool.families_[f];
    fs.present = !whole[f].empty();
    fs.cidrs = RangeSet(std::move(whole[f]));
    fs.excluded = RangeSet(std::move(excluded[f]));
    fs.usable = RangeSet(std::move(usable[f]))
                    .minus(fs.excluded)
                    .minus(specialUseRanges(static_cast<Family>(f)));
    fs.total = fs.usable.size();
  }
  pool.clearAllocations();
  return pool;
}

Result<std::vector<Address>, Error> Pool::allocate(std::string_view owner, Family family,
                                                   size_t n) {
  FamilyState& fs = state(family);
  const Uint128 free = fs.total - fs.heldUsable;
  if (free < n) {
    const std::string fam(familyName(family));
    return makeError(Reason::kPoolExhausted, "", owner,
                     fs.present ? "the pool has " + decimal(free) + " free " + fam +
                                      " addresses, " + std::to_string(n) + " requested"
                                : "the pool has no " + fam + " CIDR");
  }
  std::vector<Address> out;
  out.reserve(std::min<size_t>(n, 1024));  // n is the caller's; a bad one must not throw here
  if (n == 0) {
    return out;
  }
  const OwnerId id = ownerId(owner);
  for (size_t i = 0; i < n; ++i) {
    const Address a{family, fs.free.begin()->first};
    takeFree(fs, a.value);
    hold(a, id);
    out.push_back(a);
  }
  return out;
}

Result<Address, Error> Pool::reserve(std::string_view owner, std::string_view text) {
  auto a = parseAddress(text);
  if (!a) {
    return invalidAddress(text, owner);
  }
  if (auto refused = checkUsable(*a, text, owner)) {
    return std::move(*refused);
  }
  FamilyState& fs = state(a->family);
  if (auto it = fs.held.find(a->value); it != fs.held.end()) {
    if (owners_[it->second].name != owner) {
      return alreadyAllocated(text, owner, owners_[it->second].name);
    }
    return *a;
  }
  takeFree(fs, a->value);
  hold(*a, ownerId(owner));
  return *a;
}

Result<bool, Error> Pool::release(std::string_view owner, std::string_view text) {
  auto a = parseAddress(text);
  if (!a) {
    return invalidAddress(text, owner);
  }
  FamilyState& fs = state(a->family);
  auto it = fs.held.find(a->value);
  if (it == fs.held.end()) {
    return false;
  }
  if (owners_[it->second].name != owner) {
    return alreadyAllocated(text, owner, owners_[it->second].name);
  }
  unhold(*a);
  return true;
}

std::vector<Address> Pool::releaseAll(std::string_view owner) {
  auto it = ownerIds_.find(owner);
  if (it == ownerIds_.end()) {
    return {};
  }
  // Copied: the last unhold() retires the owner record.
  const std::set<Address> addresses = owners_[it->second].addresses;
  for (const Address& a : addresses) {
    unhold(a);
  }
  return {addresses.begin(), addresses.end()};
}

std::vector<Error> Pool::restore(const Ledger& ledger) {
  clearAllocations();
  std::vector<Error> conflicts;
  for (const auto& [owner, texts] : ledger) {
    for (const std::string& text : texts) {
      auto a = parseAddress(text);
      if (!a) {
        conflicts.push_back(invalidAddress(text, owner));
        continue;
      }
      FamilyState& fs = state(a->family);
      auto held = fs.held.find(a->value);
      if (held != fs.held.end() && owners_[held->second].name == owner) {
        continue;  // listed twice by the same owner
      }
      if (auto refused = checkUsable(*a, text, owner)) {
        conflicts.push_back(std::move(*refused));
      }
      if (held != fs.held.end()) {
        conflicts.push_back(alreadyAllocated(text, owner, owners_[held->second].name));
        continue;
      }
      if (fs.usable.contains(a->value)) {
        takeFree(fs, a->value);
      }
      hold(*a, ownerId(owner));
    }
  }
  return conflicts;
}

FamilyCounts Pool::counts(Family family) const {
  const FamilyState& fs = state(family);
  return FamilyCounts{saturate(fs.total), saturate(fs.heldUsable),
                      saturate(fs.total - fs.heldUsable), saturate(fs.heldOutside)};
}

std::string Pool::holderOf(const Address& address) const {
  const FamilyState& fs = state(address.family);
  auto it = fs.held.find(address.value);
  return it == fs.held.end() ? "" : owners_[it->second].name;
}

std::vector<Address> Pool::addressesOf(std::string_view owner) const {
  auto it = ownerIds_.find(owner);
  if (it == ownerIds_.end()) {
    return {};
  }
  const auto& addresses = owners_[it->second].addresses;
  return {addresses.begin(), addresses.end()};
}

Ledger Pool::ledger() const {
  Ledger out;
  for (const auto& [name, id] : ownerIds_) {
    auto& texts = out[name];
    for (const Address& a : owners_[id].addresses) {
      texts.push_back(a.toString());
    }
  }
  return out;
}

std::optional<Error> Pool::checkUsable(const Address& address, std::string_view text,
                                       std::string_view owner) const {
  const FamilyState& fs = state(address.family);
  if (fs.usable.contains(address.value)) {
    return std::nullopt;
  }
  if (!fs.cidrs.contains(address.value)) {
    return makeError(Reason::kNotInPool, text, owner,
                     std::string(text) + " is not in any CIDR of the pool");
  }
  if (fs.excluded.contains(address.value)) {
    return makeError(Reason::kExcluded, text, owner,
                     std::string(text) + " is excluded from the pool");
  }
  if (auto special = specialUse(address)) {
    return makeError(Reason::kExcluded, text, owner,
                     std::string(text) + " is " + specialUsePhrase(*special));
  }
  // In a CIDR, not excluded, not special, not usable: an address its CIDR does not contribute.
  if (address.family == Family::kIPv6) {
    return makeError(Reason::kExcluded, text, owner,
                     std::string(text) + " is the Subnet-Router anycast address of its CIDR");
  }
  return makeError(Reason::kExcluded, text, owner,
                   std::string(text) + " is the network or broadcast address of its CIDR");
}

Pool::OwnerId Pool::ownerId(std::string_view name) {
  if (auto it = ownerIds_.find(name); it != ownerIds_.end()) {
    return it->second;
  }
  OwnerId id;
  if (unusedIds_.empty()) {
    id = static_cast<OwnerId>(owners_.size());
    owners_.emplace_back();
  } else {
    id = unusedIds_.back();
    unusedIds_.pop_back();
  }
  owners_[id].name = std::string(name);
  ownerIds_.emplace(owners_[id].name, id);
  return id;
}

void Pool::hold(const Address& address, OwnerId owner) {
  FamilyState& fs = state(address.family);
  fs.held.emplace(address.value, owner);
  owners_[owner].addresses.insert(address);
  ++(fs.usable.contains(address.value) ? fs.heldUsable : fs.heldOutside);
}

void Pool::unhold(const Address& address) {
  FamilyState& fs = state(address.family);
  auto it = fs.held.find(address.value);
  const OwnerId id = it->second;
  fs.held.erase(it);
  Owner& owner = owners_[id];
  owner.addresses.erase(address);
  if (owner.addresses.empty()) {
    ownerIds_.erase(owner.name);
    owner.name.clear();
    owner.name.shrink_to_fit();
    unusedIds_.push_back(id);
  }
  if (fs.usable.contains(address.value)) {
    --fs.heldUsable;
    giveFree(fs, address.value);
  } else {
    --fs.heldOutside;
  }
}

void Pool::takeFree(FamilyState& fs, Uint128 value) {
  // The interval holding `value`: the last one starting at or before it.
  auto it = std::prev(fs.free.upper_bound(value));
  const Uint128 last = it->second;
  if (it->first == value) {
    if (value == last) {
      fs.free.erase(it);
    } else {
      // Re-key the node in place: no allocation.
      auto node = fs.free.extract(it);
      node.key() = value + 1;
      fs.free.insert(std::move(node));
    }
    return;
  }
  it->second = value - 1;
  if (value != last) {
    fs.free.emplace_hint(std::next(it), value + 1, last);
  }
}

void Pool::giveFree(FamilyState& fs, Uint128 value) {
  auto next = fs.free.upper_bound(value);
  const bool joinsNext = next != fs.free.end() && next->first == value + 1;
  if (next != fs.free.begin()) {
    auto prev = std::prev(next);
    if (prev->second + 1 == value) {
      prev->second = joinsNext ? next->second : value;
      if (joinsNext) {
        fs.free.erase(next);
      }
      return;
    }
  }
  if (joinsNext) {
    auto node = fs.free.extract(next);
    node.key() = value;
    fs.free.insert(std::move(node));
    return;
  }
  fs.free.emplace_hint(next, value, value);
}

// Everything free again: the free intervals are the usable ranges.
void Pool::clearAllocations() {
  for (FamilyState& fs : families_) {
    fs.held.clear();
    fs.heldUsable = 0;
    fs.heldOutside = 0;
    fs.free.clear();
    for (const Range& r : fs.usable.ranges()) {
      fs.free.emplace_hint(fs.free.end(), r.first, r.last);
    }
  }
  owners_.clear();
  unusedIds_.clear();
  ownerIds_.clear();
}

}  // namespace egress::ipam
