// File: conditions.h
//
// Building the conditions the operator reports (metav1.Condition), the same way for every kind.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "pkg/apis/meta/condition.h"

namespace egress::controller {

// A condition of `type` whose status is True when `ok`, observed at `generation`.
meta::Condition makeCondition(std::string_view type, bool ok, std::string_view reason,
                              std::string message, int64_t generation);

// The condition of `type` is present and True.
bool conditionIsTrue(const std::vector<meta::Condition>& conditions, std::string_view type);
// The reason of the condition of `type`; "" if there is none.
std::string conditionReason(const std::vector<meta::Condition>& conditions, std::string_view type);

}  // namespace egress::controller
