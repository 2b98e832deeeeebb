#include "pkg/apis/meta/string_map.h"

#include <algorithm>
#include <cassert>

namespace egress::meta {

namespace {

const std::vector<StringMap::value_type>& emptyEntries() {
  static const std::vector<StringMap::value_type> kEmpty;
  return kEmpty;
}

}  // namespace

StringMap::StringMap(std::initializer_list<value_type> entries) {
  reserve(entries.size());
  for (const auto& [k, v] : entries) {
    insert_or_assign(k, v);
  }
}

const std::vector<StringMap::value_type>& StringMap::entries() const {
  return block_ ? block_->entries : emptyEntries();
}

std::vector<StringMap::value_type>& StringMap::mutableEntries() {
  if (!block_) {
    block_ = std::make_shared<Block>();
  } else if (block_->interned || block_.use_count() != 1) {
    // use_count() is exact enough here: only this map can add a holder to a block nobody else
    // holds, and interned blocks (the interner's weak references can add holders) never get here.
    auto copy = std::make_shared<Block>();
    copy->entries = block_->entries;
    block_ = std::move(copy);
  }
  return block_->entries;
}

StringMap::const_iterator StringMap::lowerBound(std::string_view key) const {
  const auto& e = entries();
  return std::lower_bound(e.begin(), e.end(), key, [](const value_type& entry, std::string_view k) {
    return entry.first < k;
  });
}

StringMap::const_iterator StringMap::find(std::string_view key) const {
  auto it = lowerBound(key);
  return it != entries().end() && it->first == key ? it : entries().end();
}

StringMap::iterator StringMap::find(std::string_view key) {
  const auto index = std::as_const(*this).find(key) - entries().cbegin();
  return mutableEntries().begin() + index;
}

const std::string& StringMap::at(std::string_view key) const {
  auto it = find(key);
  assert(it != end());
  return it->second;
}

std::string& StringMap::operator[](std::string_view key) {
  auto it = lowerBound(key);
  const bool found = it != entries().end() && it->first == key;
  const auto index = it - entries().cbegin();
  auto& e = mutableEntries();
  if (found) {
    return e[index].second;
  }
  return e.emplace(e.begin() + index, std::string(key), std::string())->second;
}

std::pair<StringMap::iterator, bool> StringMap::emplace(std::string key, std::string value) {
  auto it = lowerBound(key);
  const bool found = it != entries().end() && it->first == key;
  const auto index = it - entries().cbegin();
  auto& e = mutableEntries();
  if (found) {
    return {e.begin() + index, false};
  }
  return {e.emplace(e.begin() + index, std::move(key), std::move(value)), true};
}

std::pair<StringMap::iterator, bool> StringMap::insert_or_assign(std::string key,
                                                                 std::string value) {
  auto it = lowerBound(key);
  const bool found = it != entries().end() && it->first == key;
  const auto index = it - entries().cbegin();
  auto& e = mutableEntries();
  if (found) {
    auto pos = e.begin() + index;
    pos->second = std::move(value);
    return {pos, false};
  }
  return {e.emplace(e.begin() + index, std::move(key), std::move(value)), true};
}

size_t StringMap::erase(std::string_view key) {
  auto it = std::as_const(*this).find(key);
  if (it == entries().end()) {
    return 0;
  }
  erase(it);
  return 1;
}

StringMap::iterator StringMap::erase(const_iterator it) {
  // `it` may point into a shared block that the detach below leaves behind: go by position.
  const auto index = it - entries().cbegin();
  auto& e = mutableEntries();
  return e.erase(e.begin() + index);
}

void StringMap::reserve(size_t n) {
  if (n > capacity()) {
    mutableEntries().reserve(n);
  }
}

void StringMap::shrinkToFit() {
  if (!block_) {
    return;
  }
  if (block_->entries.empty()) {
    block_.reset();
  } else if (block_->entries.capacity() != block_->entries.size()) {
    mutableEntries().shrink_to_fit();
  }
}

}  // namespace egress::meta
