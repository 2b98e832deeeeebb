// File: lru_cache.h
//
// A string-keyed map that holds at most `capacity` entries and forgets the least recently used
// one to make room (k8s.io/utils/lru, with which client-go's event correlator bounds the memory
// it keeps per object). Lookups and insertions count as uses. Not thread-safe.
#pragma once

#include <cstddef>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace egress::controllerruntime {

template <class V>
class LruCache {
 public:
  // A capacity of 0 is taken as 1: a cache that can hold nothing would make every lookup miss.
  explicit LruCache(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  LruCache(const LruCache&) = delete;
  LruCache& operator=(const LruCache&) = delete;

  // The value, now the most recently used; nullptr if absent. Valid until the next add().
  V* get(std::string_view key) {
    auto it = index_.find(key);
    if (it == index_.end()) {
      return nullptr;
    }
    entries_.splice(entries_.begin(), entries_, it->second);
    return &it->second->second;
  }

  // Inserts or replaces; the entry becomes the most recently used. Evicts the least recently
  // used entry when that makes the cache exceed its capacity.
  void add(std::string key, V value) {
    if (V* existing = get(key)) {
      *existing = std::move(value);
      return;
    }
    entries_.emplace_front(std::move(key), std::move(value));
    // The index's keys view the strings in the list, whose nodes never move.
    index_.emplace(entries_.front().first, entries_.begin());
    if (entries_.size() > capacity_) {
      index_.erase(entries_.back().first);
      entries_.pop_back();
    }
  }

  size_t size() const { return entries_.size(); }

 private:
  using Entries = std::list<std::pair<std::string, V>>;
  size_t capacity_;
  Entries entries_;  // most recently used first
  std::unordered_map<std::string_view, typename Entries::iterator> index_;
};

}  // namespace egress::controllerruntime
