#include "pkg/apis/meta/condition.h"

#include <algorithm>

namespace egress::meta {

Decoded<Condition> decodeCondition(const rapidjson::Value& v) {
  FieldReader r(v);
  Condition c;
  r.read("type", c.type);
  r.read("status", c.status);
  r.read("observedGeneration", c.observedGeneration);
  r.read("lastTransitionTime", c.lastTransitionTime);
  r.read("reason", c.reason);
  r.read("message", c.message);
  return r.finish(std::move(c));
}

void encodeCondition(JsonWriter& w, const Condition& c) {
  // Only observedGeneration is omitempty in metav1.Condition; the CRD schema requires the rest.
  w.StartObject();
  writeField(w, "type", c.type);
  writeField(w, "status", c.status);
  writeFieldIfSet(w, "observedGeneration", c.observedGeneration);
  writeTimeField(w, "lastTransitionTime", c.lastTransitionTime);
  writeField(w, "reason", c.reason);
  writeField(w, "message", c.message);
  w.EndObject();
}

const Condition* findCondition(const std::vector<Condition>& conditions, std::string_view type) {
  for (const auto& c : conditions) {
    if (c.type == type) {
      return &c;
    }
  }
  return nullptr;
}

Condition* findCondition(std::vector<Condition>& conditions, std::string_view type) {
  return const_cast<Condition*>(
      findCondition(static_cast<const std::vector<Condition>&>(conditions), type));
}

bool setCondition(std::vector<Condition>& conditions, Condition c, Time now) {
  const Time transition =
      truncateToSeconds(c.lastTransitionTime != Time{} ? c.lastTransitionTime : now);
  Condition* existing = findCondition(conditions, c.type);
  if (existing == nullptr) {
    c.lastTransitionTime = transition;
    conditions.push_back(std::move(c));
    return true;
  }
  bool changed = false;
  if (existing->status != c.status) {
    existing->status = std::move(c.status);
    existing->lastTransitionTime = transition;
    changed = true;
  }
  if (existing->reason != c.reason) {
    existing->reason = std::move(c.reason);
    changed = true;
  }
  if (existing->message != c.message) {
    existing->message = std::move(c.message);
    changed = true;
  }
  if (existing->observedGeneration != c.observedGeneration) {
    existing->observedGeneration = c.observedGeneration;
    changed = true;
  }
  return changed;
}

bool removeCondition(std::vector<Condition>& conditions, std::string_view type) {
  auto it = std::find_if(conditions.begin(), conditions.end(),
                         [&](const Condition& c) { return c.type == type; });
  if (it == conditions.end()) {
    return false;
  }
  conditions.erase(it);
  return true;
}

}  // namespace egress::meta
