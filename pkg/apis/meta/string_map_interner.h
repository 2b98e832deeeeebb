// File: string_map_interner.h
//
// Makes equal StringMaps share one block. An informer's pods come in groups with the same labels
// (a ReplicaSet's pods differ only in name, uid and status), so after interning, 10,000 pods of
// 2,000 ReplicaSets hold 2,000 label blocks instead of 10,000. An interned block is read-only
// (StringMap copies before any write); the interner holds only weak references, so a block dies
// with its last map, and expired references are swept whenever their number doubles.
//
// Thread-safe: informers of different resources intern from their own threads.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "pkg/apis/meta/string_map.h"

namespace egress::meta {

class StringMapInterner {
 public:
  // The process-wide interner (pod labels from every informer).
  static StringMapInterner& global();

  // Makes `map` share the block of an equal map interned before, or interns its own block (a
  // copy of it, if the block is shared with maps that were not interned). Empty maps hold no
  // block and stay as they are.
  void intern(StringMap& map);

  // Blocks tracked, expired ones not yet swept included (tests, and the memory benchmark).
  size_t tracked() const;

 private:
  static constexpr size_t kMinSweepAt = 64;

  void sweepLocked();

  mutable std::mutex mu_;
  std::unordered_multimap<size_t, std::weak_ptr<StringMap::Block>> blocks_;
  size_t sweepAt_ = kMinSweepAt;
};

}  // namespace egress::meta
