// File: fnv1a.h
//
// FNV-1a, 64 bits: a fast hash of a string that is the same on every machine and in every
// build (std::hash promises neither), for values that are compared across processes: the
// nftables table's digest, a node's mark index.
#pragma once

#include <cstdint>
#include <string_view>

namespace egress {

constexpr uint64_t fnv1a(std::string_view text) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace egress
