#include "pkg/apis/meta/string_map_interner.h"

#include <algorithm>
#include <functional>
#include <string>

namespace egress::meta {

namespace {

size_t hashEntries(const std::vector<StringMap::value_type>& entries) {
  std::hash<std::string> h;
  size_t seed = entries.size();
  for (const auto& [k, v] : entries) {
    // boost::hash_combine's mixing: order matters, and "a=bc" differs from "ab=c".
    seed ^= h(k) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
    seed ^= h(v) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
  }
  return seed;
}

}  // namespace

StringMapInterner& StringMapInterner::global() {
  static StringMapInterner interner;
  return interner;
}

void StringMapInterner::intern(StringMap& map) {
  if (!map.block_ || map.block_->interned) {
    return;
  }
  if (map.block_->entries.empty()) {
    map.block_.reset();
    return;
  }
  const size_t hash = hashEntries(map.block_->entries);
  std::lock_guard lock(mu_);
  auto [first, last] = blocks_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    if (auto block = it->second.lock(); block && block->entries == map.block_->entries) {
      map.block_ = std::move(block);
      return;
    }
  }
  if (map.block_.use_count() != 1) {
    // Other maps hold this block and may write it in place; the interned block must be ours.
    auto copy = std::make_shared<StringMap::Block>();
    copy->entries = map.block_->entries;
    map.block_ = std::move(copy);
  }
  map.block_->entries.shrink_to_fit();
  map.block_->interned = true;
  blocks_.emplace(hash, map.block_);
  if (blocks_.size() >= sweepAt_) {
    sweepLocked();
  }
}

void StringMapInterner::sweepLocked() {
  std::erase_if(blocks_, [](const auto& entry) { return entry.second.expired(); });
  sweepAt_ = std::max(kMinSweepAt, 2 * blocks_.size());
}

size_t StringMapInterner::tracked() const {
  std::lock_guard lock(mu_);
  return blocks_.size();
}

}  // namespace egress::meta
