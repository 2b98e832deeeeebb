// File: string_map.h
//
// Labels, annotations, ConfigMap data and matchLabels: a sorted flat map from string to string.
// A std::map costs a 32-byte tree node and an allocation per entry; here the entries sit in one
// vector, sorted by key, so a pod's three labels are one allocation of 192 bytes instead of three
// of 112 (and informers hold tens of thousands of these). Iteration is in key order, as with
// std::map, so encoding stays deterministic. Lookups are binary searches; inserts shift the tail,
// which is cheap at the sizes labels have.
//
// The API is std::map's subset the code uses. Iterators give `pair<string, string>`: change
// `second` freely, never `first` (that would break the order).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace egress::meta {

class StringMap {
 public:
  using value_type = std::pair<std::string, std::string>;
  using iterator = std::vector<value_type>::iterator;
  using const_iterator = std::vector<value_type>::const_iterator;

  StringMap() = default;
  // A repeated key keeps its last value (as a JSON object's duplicate keys do in encoding/json).
  StringMap(std::initializer_list<value_type> entries);

  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  iterator begin() { return entries_.begin(); }
  iterator end() { return entries_.end(); }
  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }

  iterator find(std::string_view key);
  const_iterator find(std::string_view key) const;
  bool contains(std::string_view key) const { return find(key) != end(); }
  size_t count(std::string_view key) const { return contains(key) ? 1 : 0; }
  // The value of `key`; the key must be present (std::map::at throws; this asserts).
  const std::string& at(std::string_view key) const;

  // Inserts `key` with an empty value when absent.
  std::string& operator[](std::string_view key);
  // Inserts when absent, else leaves the value alone; true when inserted.
  std::pair<iterator, bool> emplace(std::string key, std::string value);
  std::pair<iterator, bool> insert(value_type entry) {
    return emplace(std::move(entry.first), std::move(entry.second));
  }
  // Inserts or overwrites; true when inserted.
  std::pair<iterator, bool> insert_or_assign(std::string key, std::string value);

  size_t erase(std::string_view key);
  iterator erase(const_iterator it) { return entries_.erase(it); }
  void clear() { entries_.clear(); }
  void reserve(size_t n) { entries_.reserve(n); }
  size_t capacity() const { return entries_.capacity(); }
  void swap(StringMap& other) noexcept { entries_.swap(other.entries_); }
  // Gives back the spare capacity (decoders call it: a cached object never grows).
  void shrinkToFit() { entries_.shrink_to_fit(); }

  bool operator==(const StringMap&) const = default;

 private:
  const_iterator lowerBound(std::string_view key) const;

  std::vector<value_type> entries_;
};

}  // namespace egress::meta
