#include "pkg/controller/conditions.h"

#include <utility>

namespace egress::controller {

meta::Condition makeCondition(std::string_view type, bool ok, std::string_view reason,
                              std::string message, int64_t generation) {
  meta::Condition c;
  c.type = std::string(type);
  c.status = std::string(ok ? meta::kConditionTrue : meta::kConditionFalse);
  c.observedGeneration = generation;
  c.reason = std::string(reason);
  c.message = std::move(message);
  return c;
}

bool conditionIsTrue(const std::vector<meta::Condition>& conditions, std::string_view type) {
  const auto* c = meta::findCondition(conditions, type);
  return c != nullptr && c->status == meta::kConditionTrue;
}

std::string conditionReason(const std::vector<meta::Condition>& conditions, std::string_view type) {
  const auto* c = meta::findCondition(conditions, type);
  return c == nullptr ? "" : c->reason;
}

}  // namespace egress::controller
