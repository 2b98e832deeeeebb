// File: condition.h
//
// metav1.Condition, the status conditions the operator reports on its own resources, and
// setCondition() with meta.SetStatusCondition's rules: lastTransitionTime moves only when the
// status flips, so "Ready since" stays meaningful across reconciles that merely refresh the
// message; and the caller learns whether anything changed, so an unchanged status is not
// written back (every write wakes every watcher).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/encode.h"
#include "pkg/apis/meta/time.h"

namespace egress::meta {

inline constexpr std::string_view kConditionTrue = "True";
inline constexpr std::string_view kConditionFalse = "False";
inline constexpr std::string_view kConditionUnknown = "Unknown";

struct Condition {
  std::string type;    // CamelCase, e.g. "Ready"
  std::string status;  // kConditionTrue / kConditionFalse / kConditionUnknown
  int64_t observedGeneration = 0;
  Time lastTransitionTime{};
  std::string reason;  // CamelCase, machine-readable
  std::string message;

  bool operator==(const Condition&) const = default;
};

Decoded<Condition> decodeCondition(const rapidjson::Value& v);
void encodeCondition(JsonWriter& w, const Condition& c);

// The condition of `type`; nullptr if there is none.
const Condition* findCondition(const std::vector<Condition>& conditions, std::string_view type);
Condition* findCondition(std::vector<Condition>& conditions, std::string_view type);

// Adds `c` or updates the condition of its type; returns whether anything changed. A new
// condition, or a status change, takes c.lastTransitionTime if set (non-epoch), else `now`;
// otherwise the existing lastTransitionTime is kept. The time is truncated to seconds, which is
// all metav1.Time keeps, so the in-memory status equals what a round trip through the server
// returns.
bool setCondition(std::vector<Condition>& conditions, Condition c, Time now);

// Removes the condition of `type`; returns whether there was one.
bool removeCondition(std::vector<Condition>& conditions, std::string_view type);

}  // namespace egress::meta
