#include "pkg/ipam/range_set.h"

#include <algorithm>

namespace egress::ipam {

RangeSet::RangeSet(std::vector<Range> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.first < b.first; });
  for (const Range& r : ranges) {
    // Merge when r overlaps or touches the last range; a last range that ends at the top of the
    // space absorbs everything after it (last + 1 would wrap).
    if (!ranges_.empty() &&
        (ranges_.back().last == kUint128Max || r.first <= ranges_.back().last + 1)) {
      ranges_.back().last = std::max(ranges_.back().last, r.last);
    } else {
      ranges_.push_back(r);
    }
  }
}

RangeSet RangeSet::minus(const RangeSet& other) const {
  RangeSet out;
  auto cut = other.ranges_.begin();
  for (Range r : ranges_) {
    // Cuts that end before r cannot touch r or any later range.
    while (cut != other.ranges_.end() && cut->last < r.first) {
      ++cut;
    }
    bool left = true;  // something of r remains
    for (auto c = cut; c != other.ranges_.end() && c->first <= r.last; ++c) {
      if (c->first > r.first) {
        out.ranges_.push_back({r.first, c->first - 1});
      }
      if (c->last >= r.last) {
        left = false;
        break;
      }
      r.first = c->last + 1;
    }
    if (left) {
      out.ranges_.push_back(r);
    }
  }
  return out;
}

bool RangeSet::contains(Uint128 value) const {
  // The first range starting after `value`; the one before it is the only candidate.
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), value,
                             [](Uint128 v, const Range& r) { return v < r.first; });
  return it != ranges_.begin() && std::prev(it)->last >= value;
}

Uint128 RangeSet::size() const {
  Uint128 total = 0;
  for (const Range& r : ranges_) {
    const Uint128 span = r.last - r.first;  // size - 1, which always fits
    if (span == kUint128Max || kUint128Max - total <= span) {
      return kUint128Max;
    }
    total += span + 1;
  }
  return total;
}

}  // namespace egress::ipam
