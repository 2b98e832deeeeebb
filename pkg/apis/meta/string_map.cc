#include "pkg/apis/meta/string_map.h"

#include <algorithm>
#include <cassert>

namespace egress::meta {

StringMap::StringMap(std::initializer_list<value_type> entries) {
  entries_.reserve(entries.size());
  for (const auto& [k, v] : entries) {
    insert_or_assign(k, v);
  }
}

StringMap::const_iterator StringMap::lowerBound(std::string_view key) const {
  return std::lower_bound(entries_.begin(), entries_.end(), key,
                          [](const value_type& e, std::string_view k) { return e.first < k; });
}

StringMap::const_iterator StringMap::find(std::string_view key) const {
  auto it = lowerBound(key);
  return it != entries_.end() && it->first == key ? it : entries_.end();
}

StringMap::iterator StringMap::find(std::string_view key) {
  auto it = std::as_const(*this).find(key);
  return entries_.begin() + (it - entries_.cbegin());
}

const std::string& StringMap::at(std::string_view key) const {
  auto it = find(key);
  assert(it != entries_.end());
  return it->second;
}

std::string& StringMap::operator[](std::string_view key) {
  auto it = lowerBound(key);
  if (it != entries_.end() && it->first == key) {
    return entries_[it - entries_.cbegin()].second;
  }
  return entries_.emplace(it, std::string(key), std::string())->second;
}

std::pair<StringMap::iterator, bool> StringMap::emplace(std::string key, std::string value) {
  auto it = lowerBound(key);
  if (it != entries_.end() && it->first == key) {
    return {entries_.begin() + (it - entries_.cbegin()), false};
  }
  return {entries_.emplace(it, std::move(key), std::move(value)), true};
}

std::pair<StringMap::iterator, bool> StringMap::insert_or_assign(std::string key,
                                                                 std::string value) {
  auto it = lowerBound(key);
  if (it != entries_.end() && it->first == key) {
    auto pos = entries_.begin() + (it - entries_.cbegin());
    pos->second = std::move(value);
    return {pos, false};
  }
  return {entries_.emplace(it, std::move(key), std::move(value)), true};
}

size_t StringMap::erase(std::string_view key) {
  auto it = find(key);
  if (it == entries_.end()) {
    return 0;
  }
  entries_.erase(it);
  return 1;
}

}  // namespace egress::meta
