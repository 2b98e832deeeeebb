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
// The store keeps no key strings: an object's key is its metadata's namespace and name, so the
// store is an ordered set of the objects themselves, by (namespace, name), and a lookup by key
// splits the key at its '/'. A std::map from key to object costs a key string and a bigger tree
// node per object: with the operator's pod transform, a cached pod of make bench's shape held 666
// bytes of heap that way and holds 611 this way. client-go's threadSafeMap keys a Go map by the
// string instead. put() takes the object alone and stores it under objectKey() of its metadata.
//
// The namespace index costs no memory either: in (namespace, name) order the objects of one
// namespace are one contiguous range. client-go keeps a set of keys per namespace instead: at
// 10,000 pods that was 64 bytes per pod. The price is a get() by binary search instead of a hash
// lookup. The order of list() and of iteration is (namespace, name), cluster-scoped objects
// (namespace "") first.
//
// Updates are cheap when nothing indexed changed: a custom index evaluates its function once, on
// the new object, and compares the result with the values it stored for the key.
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
      for (const auto& item : items_) {
        updateCustom(index, objectKey(item.obj->metadata), *item.obj);
      }
    }
    return true;
  }

  // Add and Update are one operation: store `obj` under its key (replacing an undecodable entry),
  // moving its index entries.
  void put(Ptr obj) {
    const std::string key = objectKey(obj->metadata);
    if (!undecodable_.empty()) {
      undecodable_.erase(key);
    }
    auto [it, inserted] = items_.insert(Item{obj});
    if (!inserted) {
      it->obj = std::move(obj);  // the same key: the order holds
    }
    for (auto& [name, index] : custom_) {
      updateCustom(index, key, *it->obj);
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

  Ptr get(std::string_view key) const {
    auto it = items_.find(splitAtSlash(key));
    return it == items_.end() ? nullptr : it->obj;
  }
  // A typed object is cached under `key`.
  bool contains(std::string_view key) const {
    return items_.find(splitAtSlash(key)) != items_.end();
  }
  // Anything is known under `key`: a typed object or an undecodable entry.
  bool hasKey(const std::string& key) const {
    return contains(key) || undecodable_.count(key) != 0;
  }
  size_t size() const { return items_.size(); }

  std::vector<Ptr> list() const {
    std::vector<Ptr> out;
    out.reserve(items_.size());
    forEach([&](const Ptr& obj) { out.push_back(obj); });
    return out;
  }
  std::vector<std::string> listKeys() const {
    std::vector<std::string> out;
    out.reserve(items_.size());
    forEach([&](const Ptr& obj) { out.push_back(objectKey(obj->metadata)); });
    return out;
  }
  // Calls f(const Ptr&) for each typed object, in (namespace, name) order.
  template <class F>
  void forEach(F&& f) const {
    for (const auto& item : items_) {
      f(item.obj);
    }
  }

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
      forEachInNamespace(value, [&](const Ptr& obj) { out.push_back(objectKey(obj->metadata)); });
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
      forEachInNamespace(value, [&](const Ptr& obj) { out.push_back(obj); });
      return out;
    }
    const auto* keysByValue = index(name);
    if (keysByValue == nullptr) {
      return std::nullopt;
    }
    if (auto set = keysByValue->find(value); set != keysByValue->end()) {
      out.reserve(set->second.size());
      for (const auto& k : set->second) {
        out.push_back(items_.find(splitAtSlash(k))->obj);
      }
    }
    return out;
  }

  // The values index `name` currently holds (ListIndexFuncValues).
  std::vector<std::string> indexValues(const std::string& name) const {
    std::vector<std::string> out;
    if (name == kNamespaceIndex) {
      // One step per namespace: from a namespace's first object straight past its last.
      for (auto it = items_.begin(); it != items_.end();) {
        out.push_back(it->obj->metadata.namespace_);
        it = items_.upper_bound(NamespaceOnly{out.back()});
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
  // A stored object; the set orders by its key, which a replacement (put) keeps.
  struct Item {
    mutable Ptr obj;
  };
  // What a key names: (namespace, name); namespace "" for a cluster-scoped object.
  struct KeyParts {
    std::string_view ns;
    std::string_view name;
  };
  // A probe that compares equal to every object of one namespace (equal_range by namespace).
  struct NamespaceOnly {
    std::string_view ns;
  };
  static KeyParts parts(const Item& item) {
    return {item.obj->metadata.namespace_, item.obj->metadata.name};
  }
  static KeyParts parts(const KeyParts& k) { return k; }
  struct ByKey {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      const KeyParts x = parts(a);
      const KeyParts y = parts(b);
      if (const int c = x.ns.compare(y.ns); c != 0) {
        return c < 0;
      }
      return x.name < y.name;
    }
    bool operator()(const Item& a, const NamespaceOnly& b) const {
      return a.obj->metadata.namespace_ < b.ns;
    }
    bool operator()(const NamespaceOnly& a, const Item& b) const {
      return a.ns < b.obj->metadata.namespace_;
    }
  };
  using Items = std::set<Item, ByKey>;

  // "ns/name" or "name" (cluster-scoped). A key that names nothing storable matches nothing:
  // with a second '/' it is (ns, "x/y"), and a name cannot contain '/'; "/name" is ("/", name),
  // and neither can a namespace.
  static KeyParts splitAtSlash(std::string_view key) {
    const auto slash = key.find('/');
    if (slash == std::string_view::npos) {
      return {std::string_view(), key};
    }
    if (slash == 0) {
      return {key.substr(0, 1), key.substr(1)};
    }
    return {key.substr(0, slash), key.substr(slash + 1)};
  }

  using KeySet = std::set<std::string, std::less<>>;
  using KeysByValue = std::unordered_map<std::string, KeySet>;

  struct CustomIndex {
    IndexFunc<T> fn;
    KeysByValue keysByValue;
    // Each object's values as last computed: an update compares the new object's values with
    // these instead of recomputing the old object's, and a removal computes nothing. Objects
    // with no values have no entry: most objects an index is built for carry none (the
    // operator's gateway-pods-by-policy index over every pod of the cluster), and an empty
    // entry would cost each of them about 64 bytes.
    std::map<std::string, std::vector<std::string>, std::less<>> valuesByKey;
  };

  // Calls f(const Ptr&) for each object in namespace `ns` ("" for the cluster-scoped ones), in
  // name order.
  template <class F>
  void forEachInNamespace(const std::string& ns, F&& f) const {
    auto [first, last] = items_.equal_range(NamespaceOnly{ns});
    for (auto it = first; it != last; ++it) {
      f(it->obj);
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
    if (auto k = set->second.find(key); k != set->second.end()) {
      set->second.erase(k);
    }
    if (set->second.empty()) {
      keysByValue.erase(set);
    }
  }

  static void updateCustom(CustomIndex& index, const std::string& key, const T& now) {
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
    auto it = items_.find(splitAtSlash(key));
    if (it == items_.end()) {
      return;
    }
    for (auto& [name, index] : custom_) {
      if (auto cached = index.valuesByKey.find(key); cached != index.valuesByKey.end()) {
        for (const auto& v : cached->second) {
          eraseKey(index.keysByValue, v, key);
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
