#include "test/unit/ipam/model_check.h"

#include <array>
#include <cstdio>
#include <map>
#include <utility>
#include <vector>

#include "pkg/ipam/pool.h"

namespace egress::ipam::testing {
namespace {

// Offsets 0..255 are the universe a CIDR can cover; 256..511 the block next to it.
constexpr int kUniverse = 256;
constexpr int kSpace = 2 * kUniverse;
constexpr std::array<const char*, 5> kOwners = {"a", "b", "ns/c", "ns/d", "e"};
constexpr std::array<const char*, 7> kInvalid = {
    "", "x", "10.1.2", "10.1.2.1/32", "2001:db8::ab01/128", "010.1.2.1", "2001:db8::ab01%eth0"};

// The model's own formatting: 10.1.2.x / 10.1.3.x and 2001:db8::abxx / 2001:db8::acxx, which
// is already inet_ntop's canonical text.
std::string text(int family, int offset) {
  char buf[64];
  if (family == 0) {
    std::snprintf(buf, sizeof buf, "10.1.%d.%d", 2 + offset / kUniverse, offset % kUniverse);
  } else {
    std::snprintf(buf, sizeof buf, "2001:db8::%x", 0xab00 + offset);
  }
  return buf;
}

// The same address as a value, computed without any parser.
Address address(int family, int offset) {
  if (family == 0) {
    return {Family::kIPv4, Uint128{0x0A010200} + offset};
  }
  return {Family::kIPv6, (Uint128{0x20010db800000000} << 64) + 0xab00 + offset};
}

// An address as the model knows it: its text and, if valid, where it is.
struct Target {
  std::string text;
  int family = 0;
  int offset = -1;  // -1: not an address
};

struct Model {
  std::array<bool, 2> present{};
  std::array<std::array<bool, kUniverse>, 2> inCidr{};
  std::array<std::array<bool, kUniverse>, 2> usable{};
  std::map<std::pair<int, int>, std::string> holder;  // (family, offset) -> owner
  std::vector<std::string> cidrs;
  std::vector<std::string> exclude;

  bool isUsable(int f, int o) const { return o < kUniverse && usable[f][o]; }
  const std::string* holderOf(int f, int o) const {
    auto it = holder.find({f, o});
    return it == holder.end() ? nullptr : &it->second;
  }
  // The reason an address cannot be handed out, or nothing.
  std::optional<Reason> refusal(int f, int o) const {
    if (o >= kUniverse || !inCidr[f][o]) {
      return Reason::kNotInPool;
    }
    if (!usable[f][o]) {
      return Reason::kExcluded;
    }
    return std::nullopt;
  }
  std::vector<Address> addressesOf(const std::string& owner) const {
    std::vector<Address> out;
    for (const auto& [key, who] : holder) {
      if (who == owner) {
        out.push_back(address(key.first, key.second));
      }
    }
    return out;
  }
  Ledger ledger() const {
    Ledger out;
    for (const auto& [key, owner] : holder) {
      out[owner].push_back(text(key.first, key.second));
    }
    return out;
  }
  FamilyCounts counts(int f) const {
    FamilyCounts c;
    for (int o = 0; o < kUniverse; ++o) {
      c.total += usable[f][o] ? 1 : 0;
    }
    for (const auto& [key, owner] : holder) {
      if (key.first == f) {
        (isUsable(f, key.second) ? c.allocated : c.outside) += 1;
      }
    }
    c.free = c.total - c.allocated;
    return c;
  }
};

std::string describe(const Error& e) {
  return "error(" + std::string(reasonName(e.reason)) + " address=" + e.address +
         " owner=" + e.owner + " holder=" + e.holder + (e.message.empty() ? " NO MESSAGE" : "") +
         ")";
}

std::string describe(Reason reason, const std::string& address, const std::string& owner,
                     const std::string& holder = "") {
  return describe(Error{reason, address, owner, holder, "-"});
}

std::string describe(const std::vector<std::string>& texts) {
  std::string out = "[";
  for (const auto& t : texts) {
    out += (out.size() > 1 ? "," : "") + t;
  }
  return out + "]";
}

std::string describe(const Ledger& ledger) {
  std::string out;
  for (const auto& [owner, texts] : ledger) {
    out += owner + ":" + describe(texts) + " ";
  }
  return out;
}

std::string describe(const FamilyCounts& c) {
  return "{total=" + std::to_string(c.total) + " allocated=" + std::to_string(c.allocated) +
         " free=" + std::to_string(c.free) + " outside=" + std::to_string(c.outside) + "}";
}

std::string describeConflicts(const std::vector<Error>& conflicts) {
  std::string out;
  for (const auto& c : conflicts) {
    out += describe(c) + " ";
  }
  return out;
}

std::vector<std::string> texts(const std::vector<Address>& addresses) {
  std::vector<std::string> out;
  for (const auto& a : addresses) {
    out.push_back(a.toString());
  }
  return out;
}

class Checker {
 public:
  explicit Checker(Choices& choices) : c_(choices) {}

  std::optional<std::string> run(int steps) {
    int last = 0;
    for (int step = 0; step < steps && !c_.exhausted(); ++step) {
      op_.clear();
      const std::string got = step == 0 ? rebuild() : stepPool();
      if (got != want_) {
        return fail(step, "pool: " + got + "\n  model: " + want_);
      }
      for (int f = 0; f < 2; ++f) {
        const auto family = static_cast<Family>(f);
        const auto pc = pool_.counts(family);
        const auto mc = model_.counts(f);
        if (pc != mc || pool_.hasFamily(family) != model_.present[f]) {
          return fail(step, std::string(familyName(family)) + " counts: pool " + describe(pc) +
                                " present=" + std::to_string(pool_.hasFamily(family)) + ", model " +
                                describe(mc) + " present=" + std::to_string(model_.present[f]));
        }
      }
      // Every owner's addresses each step (cheap: no text), the whole ledger now and then.
      for (const char* owner : kOwners) {
        if (pool_.addressesOf(owner) != model_.addressesOf(owner)) {
          return fail(step, std::string("addresses of ") + owner + ": pool " +
                                describe(texts(pool_.addressesOf(owner))) + ", model " +
                                describe(texts(model_.addressesOf(owner))));
        }
      }
      if (step % 64 == 63) {
        if (auto difference = compareLedgers(step)) {
          return difference;
        }
      }
      last = step;
    }
    return compareLedgers(last);
  }

 private:
  std::optional<std::string> compareLedgers(int step) const {
    if (pool_.ledger() != model_.ledger()) {
      return fail(step, "ledger: pool " + describe(pool_.ledger()) + "\n  model " +
                            describe(model_.ledger()));
    }
    return std::nullopt;
  }

  std::string fail(int step, const std::string& what) const {
    std::string spec = "cidrs=" + describe(model_.cidrs) + " exclude=" + describe(model_.exclude);
    return "step " + std::to_string(step) + " (" + op_ + ") with " + spec + ":\n  " + what;
  }

  const char* owner() { return kOwners[c_.below(kOwners.size())]; }

  Target target() {
    const int f = static_cast<int>(c_.below(2));
    const uint32_t kind = c_.below(10);
    if (kind == 0) {
      return {kInvalid[c_.below(kInvalid.size())], 0, -1};
    }
    if (kind == 1) {
      const int o = kUniverse + static_cast<int>(c_.below(kUniverse));
      return {text(f, o), f, o};
    }
    // Mostly an address of a CIDR, where the interesting answers are.
    std::vector<int> candidates;
    for (int o = 0; o < kUniverse; ++o) {
      if (kind < 4 || model_.inCidr[f][o]) {
        candidates.push_back(o);
      }
    }
    if (candidates.empty()) {
      candidates.push_back(static_cast<int>(c_.below(kUniverse)));
    }
    const int o = candidates[c_.below(static_cast<uint32_t>(candidates.size()))];
    return {text(f, o), f, o};
  }

  // Half the time an address somebody holds, so releases and conflicts are not all misses;
  // `holder` is set to who holds it.
  Target heldOrRandom(std::string* holder = nullptr) {
    if (!model_.holder.empty() && c_.below(2) == 0) {
      auto it = model_.holder.begin();
      std::advance(it, c_.below(static_cast<uint32_t>(model_.holder.size())));
      if (holder != nullptr) {
        *holder = it->second;
      }
      return {text(it->first.first, it->first.second), it->first.first, it->first.second};
    }
    return target();
  }

  // "a.b.c.d/len" with host bits possibly set, within the universe; the model clears them.
  std::pair<std::string, std::pair<int, int>> randomPrefix(int f, int minLen) {
    const int maxLen = f == 0 ? 32 : 128;
    // Small prefixes are likelier, so pools run out.
    const int len = maxLen - static_cast<int>(c_.below(1 + c_.below(maxLen - minLen + 1)));
    const int size = 1 << (maxLen - len);
    const int o = static_cast<int>(c_.below(kUniverse));
    return {text(f, o) + "/" + std::to_string(len), {o & ~(size - 1), size}};
  }

  void newSpec() {
    model_ = Model{};
    std::array<std::array<bool, kUniverse>, 2> excluded{};
    for (int f = 0; f < 2; ++f) {
      const int n = static_cast<int>(c_.below(4));
      for (int i = 0; i < n; ++i) {
        const auto [cidr, range] = randomPrefix(f, f == 0 ? 24 : 120);
        const auto [net, size] = range;
        model_.cidrs.push_back(cidr);
        model_.present[f] = true;
        // Shorter than /31 (IPv4): no network or broadcast address; shorter than /127 (IPv6):
        // no Subnet-Router anycast address. The universe holds no special-use address.
        const bool withoutEnds = size > 2;
        for (int o = net; o < net + size; ++o) {
          model_.inCidr[f][o] = true;
          const bool first = o == net;
          const bool last = o == net + size - 1;
          if (!withoutEnds || !(first || (f == 0 && last))) {
            model_.usable[f][o] = true;
          }
        }
      }
    }
    const int n = static_cast<int>(c_.below(4));
    for (int i = 0; i < n; ++i) {
      const int f = static_cast<int>(c_.below(2));
      const uint32_t kind = c_.below(8);
      if (kind == 0) {  // beyond the universe
        model_.exclude.push_back(text(f, kUniverse + static_cast<int>(c_.below(kUniverse))));
      } else if (kind == 1) {  // the universe and its neighbour
        model_.exclude.push_back(f == 0 ? "10.1.2.0/23" : "2001:db8::aa00/119");
        excluded[f].fill(true);
      } else if (kind < 5) {
        const int o = static_cast<int>(c_.below(kUniverse));
        model_.exclude.push_back(text(f, o));
        excluded[f][o] = true;
      } else {
        const auto [cidr, range] = randomPrefix(f, f == 0 ? 27 : 123);
        model_.exclude.push_back(cidr);
        for (int o = range.first; o < range.first + range.second; ++o) {
          excluded[f][o] = true;
        }
      }
    }
    for (int f = 0; f < 2; ++f) {
      for (int o = 0; o < kUniverse; ++o) {
        model_.usable[f][o] = model_.usable[f][o] && !excluded[f][o];
      }
    }
  }

  // A new spec, a new Pool, and the old ledger restored into both.
  std::string rebuild() {
    const Ledger ledger = model_.ledger();
    newSpec();
    auto pool = Pool::create(model_.cidrs, model_.exclude);
    if (!pool) {
      want_ = "(the pool is created)";
      return describe(pool.error());
    }
    pool_ = std::move(*pool);
    return restore(ledger);
  }

  std::string restore(const Ledger& ledger) {
    op_ += "restore " + describe(ledger);
    std::string got = describeConflicts(pool_.restore(ledger));
    model_.holder.clear();
    want_.clear();
    for (const auto& [owner, addresses] : ledger) {
      for (const auto& t : addresses) {
        const Target tg = find(t);
        if (tg.offset < 0) {
          want_ += describe(Reason::kInvalidAddress, t, owner) + " ";
          continue;
        }
        const std::string* h = model_.holderOf(tg.family, tg.offset);
        if (h != nullptr && *h == owner) {
          continue;
        }
        if (auto r = model_.refusal(tg.family, tg.offset)) {
          want_ += describe(*r, t, owner) + " ";
        }
        if (h != nullptr) {
          want_ += describe(Reason::kAlreadyAllocated, t, owner, *h) + " ";
        } else {
          model_.holder[{tg.family, tg.offset}] = owner;
        }
      }
    }
    return got;
  }

  // The model's view of a text it produced.
  static Target find(const std::string& t) {
    static const auto* const index = [] {
      auto* m = new std::map<std::string, std::pair<int, int>>;
      for (int f = 0; f < 2; ++f) {
        for (int o = 0; o < kSpace; ++o) {
          (*m)[text(f, o)] = {f, o};
        }
      }
      return m;
    }();
    auto it = index->find(t);
    return it == index->end() ? Target{t, 0, -1} : Target{t, it->second.first, it->second.second};
  }

  Ledger randomLedger() {
    Ledger ledger;
    const uint32_t owners = c_.below(4);
    for (uint32_t i = 0; i < owners; ++i) {
      auto& list = ledger[owner()];
      const uint32_t n = c_.below(5);
      for (uint32_t j = 0; j < n; ++j) {
        list.push_back(heldOrRandom().text);
      }
    }
    return ledger;
  }

  // Runs one random operation on the pool; sets want_ to the model's result and returns the
  // pool's, both as text. Restores are rare: they reset the free space, and the states worth
  // checking build up over many allocations and releases.
  std::string stepPool() {
    const uint32_t op = c_.below(100);
    if (op < 35) {
      const char* who = owner();
      const int f = static_cast<int>(c_.below(2));
      return allocate(who, f, c_.below(3) == 0 ? c_.below(17) : c_.below(5));
    }
    if (op < 55) {
      return reserve(owner(), target());
    }
    if (op < 85) {
      std::string holder;
      const Target t = heldOrRandom(&holder);
      const char* who = owner();
      return release(holder.empty() || c_.below(4) == 0 ? who : holder, t);
    }
    if (op < 90) {
      return releaseAll(owner());
    }
    if (op < 95) {
      return restore(randomLedger());
    }
    if (op < 97) {
      op_ += "rebuild, ";
      return rebuild();
    }
    return restore(model_.ledger());
  }

  std::string allocate(const std::string& who, int f, uint32_t n) {
    op_ = "allocate " + who + " " + std::string(familyName(static_cast<Family>(f))) + " " +
          std::to_string(n);
    auto r = pool_.allocate(who, static_cast<Family>(f), n);
    std::vector<int> free;
    for (int o = 0; o < kUniverse; ++o) {
      if (model_.usable[f][o] && model_.holderOf(f, o) == nullptr) {
        free.push_back(o);
      }
    }
    if (free.size() < n) {
      want_ = describe(Reason::kPoolExhausted, "", who);
    } else {
      std::vector<std::string> got;
      for (uint32_t i = 0; i < n; ++i) {
        model_.holder[{f, free[i]}] = who;
        got.push_back(text(f, free[i]));
      }
      want_ = describe(got);
    }
    return r ? describe(texts(*r)) : describe(r.error());
  }

  std::string reserve(const std::string& who, const Target& t) {
    op_ = "reserve " + who + " " + t.text;
    auto r = pool_.reserve(who, t.text);
    if (t.offset < 0) {
      want_ = describe(Reason::kInvalidAddress, t.text, who);
    } else if (auto refusal = model_.refusal(t.family, t.offset)) {
      want_ = describe(*refusal, t.text, who);
    } else if (const std::string* h = model_.holderOf(t.family, t.offset); h && *h != who) {
      want_ = describe(Reason::kAlreadyAllocated, t.text, who, *h);
    } else {
      model_.holder[{t.family, t.offset}] = who;
      want_ = describe(std::vector<std::string>{t.text});
    }
    return r ? describe(std::vector<std::string>{r->toString()}) : describe(r.error());
  }

  std::string release(const std::string& who, const Target& t) {
    op_ = "release " + who + " " + t.text;
    auto r = pool_.release(who, t.text);
    const std::string* h = t.offset < 0 ? nullptr : model_.holderOf(t.family, t.offset);
    if (t.offset < 0) {
      want_ = describe(Reason::kInvalidAddress, t.text, who);
    } else if (h == nullptr) {
      want_ = "released=0";
    } else if (*h != who) {
      want_ = describe(Reason::kAlreadyAllocated, t.text, who, *h);
    } else {
      model_.holder.erase({t.family, t.offset});
      want_ = "released=1";
    }
    return r ? "released=" + std::to_string(*r) : describe(r.error());
  }

  std::string releaseAll(const std::string& who) {
    op_ = "releaseAll " + who;
    std::string got = describe(texts(pool_.releaseAll(who)));
    std::vector<std::string> gone;
    for (auto it = model_.holder.begin(); it != model_.holder.end();) {
      if (it->second == who) {
        gone.push_back(text(it->first.first, it->first.second));
        it = model_.holder.erase(it);
      } else {
        ++it;
      }
    }
    want_ = describe(gone);
    return got;
  }

  Choices& c_;
  Pool pool_;
  Model model_;
  std::string want_;
  std::string op_;
};

}  // namespace

std::optional<std::string> checkAgainstModel(Choices& choices, int steps) {
  return Checker(choices).run(steps);
}

}  // namespace egress::ipam::testing
