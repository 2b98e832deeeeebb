// File: string_map.h
//
// Labels, annotations, ConfigMap data and matchLabels: a sorted flat map from string to string,
// copy-on-write. A std::map costs a 32-byte tree node and an allocation per entry; here the
// entries sit in one vector, sorted by key, so a pod's three labels are one allocation instead of
// three. The vector lives in a shared block: copying a map (an informer's object into a lister's
// answer, a cached pod into a reconciler's working copy) shares it, and the first non-const access
// of a shared block copies it (detaches). StringMapInterner (string_map_interner.h) goes further
// and makes equal maps across objects share one block: the pods of one ReplicaSet carry the same
// labels, and an informer holds tens of thousands of pods. An empty map holds no block.
//
// Iteration is in key order, as with std::map, so encoding stays deterministic. Lookups are binary
// searches; inserts shift the tail, which is cheap at the sizes labels have.
//
// The API is std::map's subset the code uses. Iterators give `pair<string, string>`: change
// `second` freely, never `first` (that would break the order). A non-const iterator belongs to
// this map's own block: do not keep one across a copy of the map (the copy shares the block the
// iterator would then write into). Read through a const reference where you only read: a non-const
// begin() or find() on a shared map copies it.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace egress::meta {

class StringMapInterner;

class StringMap {
 public:
  using value_type = std::pair<std::string, std::string>;
  using iterator = std::vector<value_type>::iterator;
  using const_iterator = std::vector<value_type>::const_iterator;

  StringMap() = default;
  // A repeated key keeps its last value (as a JSON object's duplicate keys do in encoding/json).
  StringMap(std::initializer_list<value_type> entries);

  bool empty() const { return size() == 0; }
  size_t size() const { return block_ ? block_->entries.size() : 0; }
  iterator begin() { return mutableEntries().begin(); }
  iterator end() { return mutableEntries().end(); }
  const_iterator begin() const { return entries().begin(); }
  const_iterator end() const { return entries().end(); }

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
  iterator erase(const_iterator it);
  // Drops this map's hold on its block (a shared block stays with its other holders).
  void clear() { block_.reset(); }
  void reserve(size_t n);
  size_t capacity() const { return block_ ? block_->entries.capacity() : 0; }
  void swap(StringMap& other) noexcept { block_.swap(other.block_); }
  // Gives back the spare capacity, and the block itself when empty (decoders call it: a cached
  // object never grows).
  void shrinkToFit();

  // True when both maps hold the same block (not merely equal entries): what interning achieves.
  bool sharesStorageWith(const StringMap& other) const {
    return block_ != nullptr && block_ == other.block_;
  }

  bool operator==(const StringMap& other) const {
    return block_ == other.block_ || entries() == other.entries();
  }

 private:
  friend class StringMapInterner;

  struct Block {
    std::vector<value_type> entries;
    // Set once, while the interner holds this block's only reference, before it hands the block
    // to anyone: an interned block is never written in place, even by a sole holder, since the
    // interner finds blocks by their contents.
    bool interned = false;
  };

  const std::vector<value_type>& entries() const;
  // This map's own block, made or copied first when there is none or it is shared.
  std::vector<value_type>& mutableEntries();
  const_iterator lowerBound(std::string_view key) const;

  std::shared_ptr<Block> block_;
};

}  // namespace egress::meta
