// File: range_set.h
//
// RangeSet: a set of 128-bit values stored as sorted, disjoint, non-adjacent closed intervals,
// built once from a pool's CIDRs and exclusions. Its size is the number of intervals, never the
// number of values, so an IPv6 /64 (or ::/0) costs one interval. Membership is a binary search.
#pragma once

#include <vector>

#include "pkg/ipam/address.h"

namespace egress::ipam {

// The closed interval [first, last]; first <= last.
struct Range {
  Uint128 first = 0;
  Uint128 last = 0;

  bool operator==(const Range&) const = default;
};

class RangeSet {
 public:
  RangeSet() = default;
  // Any order, overlapping or adjacent ranges allowed: they are merged.
  explicit RangeSet(std::vector<Range> ranges);

  // The values in this set and not in `other`.
  RangeSet minus(const RangeSet& other) const;
  bool contains(Uint128 value) const;
  // The number of values, saturating at kUint128Max (::/0 holds one more).
  Uint128 size() const;
  bool empty() const { return ranges_.empty(); }

  const std::vector<Range>& ranges() const { return ranges_; }

 private:
  std::vector<Range> ranges_;
};

}  // namespace egress::ipam
