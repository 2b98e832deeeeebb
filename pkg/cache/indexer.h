// File: indexer.h
//
// The informer's local cache (client-go's ThreadSafeStore + Indexer): objects by key
// ("namespace/name", or "name" when cluster-scoped), plus secondary indexes computed by index
// functions, the "namespace" index always among them. Objects are immutable shared pointers:
// a reader may keep one as long as it likes, and must never modify it. Everything runs on the
// informer's io_context thread, so there are no locks.
//
// Objects whose current version did not decode are kept too, apart from the typed objects, as
// undecodable entries (key, resourceVersion, error): get() and list() do not return them, so a
// reader that must not act on a partial view checks undecodable() and fails closed.
//
// The namespace index costs no memory: objects are kept in key order, and the objects of
// namespace "ns" are exactly the keys that start with "ns/" (a key is "namespace/name" or, for a
// cluster-scoped object, "name"; neither part can contain '/'), one contiguous range. client-go
// keeps a set of keys per namespace instead: at 10,000 pods that was 64 bytes per pod, a
// fourteenth of what a cached pod costs the operator. The price is a get() by binary search
// instead of a hash lookup. Callers must store objects under objectKey() of their metadata (the
// informers do), or the namespace index misses them.
//
// Updates are cheap when nothing indexed changed: a custom index evaluates its function once, on
// the new object, and compares the result with the values it stored for the key. Index entries
// refer to the stored keys instead of copying them.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pkg/apis/meta/object_meta.h"
#include "pkg/cache/undecodable.h"

namespace egress::cache {

inline constexpr const char* kNamespaceIndex = "namespace";

// MetaNamespaceKeyFunc.
inline std::string objectKey(const meta::ObjectMeta& m) {
  return m.namespace_.empty() ? m.name : m.namespace_ + "/" + m.name;
}

// SplitMetaNamespaceKey: "ns/name" or "name"; nullopt for anything else.
std::optional<std::pair<std::string, std::string>> splitKey(const std::string& key);

template <class T>
using IndexFunc = std::function<std::vector<std::string>(const T&)>;

template <class T>
class Indexer {
 public:
  using Ptr = std::shared_ptr<const T>;
  using Items = std::map<std::string, Ptr, std::less<>>;

  // Adds indexes, built at once over the current contents. Fails on a name already in use.
  bool addIndexers(const std::map<std::string, IndexFunc<T>>& more) {
    for (const auto& [name, fn] : more) {
      if (name == kNamespaceIndex || custom_.count(name) != 0) {
        return false;
      }
    }
    for (const auto& [name, fn] : more) {
      auto& index = custom_[name];
      index.fn = fn;
      for (const auto& [key, obj] : items_) {
        updateCustom(index, key, *obj);
      }
    }
    return true;
  }

  // Add and Update are one operation: store `obj` under `key` (replacing an undecodable entry),
  // moving its index entries.
  void put(const std::string& key, Ptr obj) {
    if (!undecodable_.empty()) {
      undecodable_.erase(key);
    }
    auto [it, inserted] = items_.try_emplace(key);
    it->second = std::move(obj);
    const std::string_view k = it->first;
    const T& now = *it->second;
    for (auto& [name, index] : custom_) {
      updateCustom(index, k, now);
    }
  }

  // The object under `key` has a version that does not decode: its typed object (if any)
  // leaves the cache and the indexes, and the entry takes its place.
  void putUndecodable(const std::string& key, UndecodablePtr entry) {
    removeTyped(key);
    undecodable_[key] = std::move(entry);
  }

  void remove(const std::string& key) {
    if (!undecodable_.empty()) {
      undecodable_.erase(key);
    }
    removeTyped(key);
  }

  Ptr get(const std::string& key) const {
    auto it = items_.find(key);
    return it == items_.end() ? nullptr : it->second;
  }
  // A typed object is cached under `key`.
  bool contains(const std::string& key) const { return items_.count(key) != 0; }
  // Anything is known under `key`: a typed object or an undecodable entry.
  bool hasKey(const std::string& key) const {
    return contains(key) || undecodable_.count(key) != 0;
  }
  size_t size() const { return items_.size(); }

  std::vector<Ptr> list() const {
    std::vector<Ptr> out;
    out.reserve(items_.size());
    for (const auto& [key, obj] : items_) {
      out.push_back(obj);
    }
    return out;
  }
  std::vector<std::string> listKeys() const {
    std::vector<std::string> out;
    out.reserve(items_.size());
    for (const auto& [key, obj] : items_) {
      out.push_back(key);
    }
    return out;
  }
  const Items& items() const { return items_; }

  // The undecodable entry under `key`, or null.
  UndecodablePtr undecodable(const std::string& key) const {
    auto it = undecodable_.find(key);
    return it == undecodable_.end() ? nullptr : it->second;
  }
  // Every undecodable entry, by key.
  const std::map<std::string, UndecodablePtr>& undecodable() const { return undecodable_; }

  // Keys of the objects whose index `name` contains `value`; nullopt for an unknown index.
  std::optional<std::vector<std::string>> indexKeys(const std::string& name,
                                                    const std::string& value) const {
    std::vector<std::string> out;
    if (name == kNamespaceIndex) {
      forEachInNamespace(value, [&](const auto& entry) { out.push_back(entry.first); });
      return out;
    }
    const auto* keysByValue = index(name);
    if (keysByValue == nullptr) {
      return std::nullopt;
    }
    if (auto set = keysByValue->find(value); set != keysByValue->end()) {
      out.assign(set->second.begin(), set->second.end());
    }
    return out;
  }

  // Objects whose index `name` contains `value` (ByIndex); nullopt for an unknown index.
  std::optional<std::vector<Ptr>> byIndex(const std::string& name, const std::string& value) const {
    std::vector<Ptr> out;
    if (name == kNamespaceIndex) {
      forEachInNamespace(value, [&](const auto& entry) { out.push_back(entry.second); });
      return out;
    }
    const auto* keysByValue = index(name);
    if (keysByValue == nullptr) {
      return std::nullopt;
    }
    if (auto set = keysByValue->find(value); set != keysByValue->end()) {
      out.reserve(set->second.size());
      for (const auto& k : set->second) {
        out.push_back(items_.find(k)->second);
      }
    }
    return out;
  }

  // The values index `name` currently holds (ListIndexFuncValues).
  std::vector<std::string> indexValues(const std::string& name) const {
    std::vector<std::string> out;
    if (name == kNamespaceIndex) {
      // One step per namespace: from a namespace's first key straight past its last.
      for (auto it = items_.begin(); it != items_.end();) {
        const auto slash = it->first.find('/');
        if (slash == std::string::npos) {  // cluster-scoped: namespace ""
          if (out.empty() || !out.front().empty()) {
            out.insert(out.begin(), std::string());
          }
          ++it;
          continue;
        }
        out.push_back(it->first.substr(0, slash));
        it = items_.lower_bound(out.back() + kPastNamespace);
      }
      return out;
    }
    if (const auto* keysByValue = index(name)) {
      for (const auto& [value, keys] : *keysByValue) {
        out.push_back(value);
      }
    }
    return out;
  }

 private:
  // Views of items_' keys: a node-based map keeps them in place while the item is stored.
  using KeySet = std::set<std::string_view>;
  using KeysByValue = std::unordered_map<std::string, KeySet>;

  struct CustomIndex {
    IndexFunc<T> fn;
    KeysByValue keysByValue;
    // Each object's values as last computed: an update compares the new object's values with
    // these instead of recomputing the old object's, and a removal computes nothing. Objects
    // with no values have no entry: most objects an index is built for carry none (the
    // operator's gateway-pods-by-policy index over every pod of the cluster), and an empty
    // entry would cost each of them about 64 bytes.
    std::unordered_map<std::string_view, std::vector<std::string>> valuesByKey;
  };

  // '/' + 1: "ns" + kPastNamespace sorts after every "ns/..." key and before any other.
  static constexpr char kPastNamespace = '/' + 1;

  // Calls f(entry of items_) for each object in namespace `ns`, in key order.
  template <class F>
  void forEachInNamespace(const std::string& ns, F&& f) const {
    if (ns.empty()) {
      for (const auto& entry : items_) {
        if (entry.first.find('/') == std::string::npos) {
          f(entry);
        }
      }
      return;
    }
    const std::string prefix = ns + "/";
    for (auto it = items_.lower_bound(prefix);
         it != items_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      f(*it);
    }
  }

  const KeysByValue* index(const std::string& name) const {
    auto it = custom_.find(name);
    return it == custom_.end() ? nullptr : &it->second.keysByValue;
  }

  // Empty sets are dropped: high-cardinality indexes leaked otherwise (k/k#84959).
  static void eraseKey(KeysByValue& keysByValue, const std::string& value, std::string_view key) {
    auto set = keysByValue.find(value);
    if (set == keysByValue.end()) {
      return;
    }
    set->second.erase(key);
    if (set->second.empty()) {
      keysByValue.erase(set);
    }
  }

  static void updateCustom(CustomIndex& index, std::string_view key, const T& now) {
    std::vector<std::string> after = index.fn(now);
    auto cached = index.valuesByKey.find(key);
    if (cached != index.valuesByKey.end()) {
      if (cached->second == after) {
        return;
      }
      for (const auto& v : cached->second) {
        eraseKey(index.keysByValue, v, key);
      }
    }
    for (const auto& v : after) {
      index.keysByValue[v].insert(key);
    }
    if (after.empty()) {
      if (cached != index.valuesByKey.end()) {
        index.valuesByKey.erase(cached);
      }
    } else if (cached != index.valuesByKey.end()) {
      cached->second = std::move(after);
    } else {
      index.valuesByKey.emplace(key, std::move(after));
    }
  }

  void removeTyped(const std::string& key) {
    auto it = items_.find(key);
    if (it == items_.end()) {
      return;
    }
    const std::string_view k = it->first;
    for (auto& [name, index] : custom_) {
      if (auto cached = index.valuesByKey.find(k); cached != index.valuesByKey.end()) {
        for (const auto& v : cached->second) {
          eraseKey(index.keysByValue, v, k);
        }
        index.valuesByKey.erase(cached);
      }
    }
    items_.erase(it);
  }

  Items items_;
  std::map<std::string, CustomIndex> custom_;
  std::map<std::string, UndecodablePtr> undecodable_;
};

}  // namespace egress::cache
