// File: indexer.h
//
// The informer's local cache (client-go's ThreadSafeStore + Indexer): objects by key
// ("namespace/name", or "name" when cluster-scoped), plus secondary indexes computed by index
// functions, the "namespace" index always among them. Objects are immutable shared pointers:
// a reader may keep one as long as it likes, and must never modify it. Everything runs on the
// informer's io_context thread, so there are no locks.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "pkg/apis/meta/object_meta.h"

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

  Indexer() {
    indexers_[kNamespaceIndex] = [](const T& obj) {
      return std::vector<std::string>{obj.metadata.namespace_};
    };
  }

  // Adds indexes, built at once over the current contents. Fails on a name already in use.
  bool addIndexers(const std::map<std::string, IndexFunc<T>>& more) {
    for (const auto& [name, fn] : more) {
      if (indexers_.count(name) != 0) {
        return false;
      }
    }
    for (const auto& [name, fn] : more) {
      indexers_[name] = fn;
      for (const auto& [key, obj] : items_) {
        for (const auto& value : fn(*obj)) {
          indices_[name][value].insert(key);
        }
      }
    }
    return true;
  }

  // Add and Update are one operation: store `obj` under `key`, moving its index entries.
  void put(const std::string& key, Ptr obj) {
    auto it = items_.find(key);
    Ptr old = it == items_.end() ? nullptr : it->second;
    items_[key] = obj;
    updateIndices(old.get(), obj.get(), key);
  }

  void remove(const std::string& key) {
    auto it = items_.find(key);
    if (it == items_.end()) {
      return;
    }
    updateIndices(it->second.get(), nullptr, key);
    items_.erase(it);
  }

  // Swaps in a whole new content and rebuilds every index.
  void replace(std::unordered_map<std::string, Ptr> items) {
    items_ = std::move(items);
    indices_.clear();
    for (const auto& [key, obj] : items_) {
      updateIndices(nullptr, obj.get(), key);
    }
  }

  Ptr get(const std::string& key) const {
    auto it = items_.find(key);
    return it == items_.end() ? nullptr : it->second;
  }
  bool contains(const std::string& key) const { return items_.count(key) != 0; }
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
  const std::unordered_map<std::string, Ptr>& items() const { return items_; }

  // Keys of the objects whose index `name` contains `value`; nullopt for an unknown index.
  std::optional<std::vector<std::string>> indexKeys(const std::string& name,
                                                    const std::string& value) const {
    if (indexers_.count(name) == 0) {
      return std::nullopt;
    }
    std::vector<std::string> out;
    auto idx = indices_.find(name);
    if (idx != indices_.end()) {
      if (auto set = idx->second.find(value); set != idx->second.end()) {
        out.assign(set->second.begin(), set->second.end());
      }
    }
    return out;
  }

  // Objects whose index `name` contains `value` (ByIndex); nullopt for an unknown index.
  std::optional<std::vector<Ptr>> byIndex(const std::string& name, const std::string& value) const {
    auto keys = indexKeys(name, value);
    if (!keys) {
      return std::nullopt;
    }
    std::vector<Ptr> out;
    out.reserve(keys->size());
    for (const auto& k : *keys) {
      out.push_back(items_.at(k));
    }
    return out;
  }

  // The values index `name` currently holds (ListIndexFuncValues).
  std::vector<std::string> indexValues(const std::string& name) const {
    std::vector<std::string> out;
    if (auto idx = indices_.find(name); idx != indices_.end()) {
      for (const auto& [value, keys] : idx->second) {
        out.push_back(value);
      }
    }
    return out;
  }

 private:
  void updateIndices(const T* old, const T* now, const std::string& key) {
    for (const auto& [name, fn] : indexers_) {
      std::vector<std::string> before = old ? fn(*old) : std::vector<std::string>{};
      std::vector<std::string> after = now ? fn(*now) : std::vector<std::string>{};
      // Unchanged single value: nothing to move (the common case on every update).
      if (before.size() == 1 && after.size() == 1 && before[0] == after[0]) {
        continue;
      }
      auto& index = indices_[name];
      for (const auto& v : before) {
        auto set = index.find(v);
        if (set == index.end()) {
          continue;
        }
        set->second.erase(key);
        // Empty sets are dropped: high-cardinality indexes leaked otherwise (k/k#84959).
        if (set->second.empty()) {
          index.erase(set);
        }
      }
      for (const auto& v : after) {
        index[v].insert(key);
      }
    }
  }

  std::unordered_map<std::string, Ptr> items_;
  std::map<std::string, IndexFunc<T>> indexers_;
  std::map<std::string, std::unordered_map<std::string, std::set<std::string>>> indices_;
};

}  // namespace egress::cache
