// File: pod_disruption_budget.h
//
// policy/v1 PodDisruptionBudget: the operator keeps one per gateway so node drains cannot take
// all gateway pods down at once, and reads its status to report whether a disruption is allowed.
#pragma once

#include <cstdint>
#include <optional>

#include <rapidjson/document.h>

#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/int_or_string.h"
#include "pkg/apis/meta/label_selector.h"
#include "pkg/apis/meta/object_meta.h"

namespace egress::policy {

struct PodDisruptionBudgetSpec {
  // At most one of the two is set.
  std::optional<meta::IntOrString> minAvailable;
  std::optional<meta::IntOrString> maxUnavailable;
  // policy/v1: null selects no pods, empty selects every pod in the namespace.
  std::optional<meta::LabelSelector> selector;

  bool operator==(const PodDisruptionBudgetSpec&) const = default;
};

struct PodDisruptionBudgetStatus {
  int64_t observedGeneration = 0;
  int32_t disruptionsAllowed = 0;
  int32_t currentHealthy = 0;
  int32_t desiredHealthy = 0;
  int32_t expectedPods = 0;

  bool operator==(const PodDisruptionBudgetStatus&) const = default;
};

struct PodDisruptionBudget {
  meta::ObjectMeta metadata;
  PodDisruptionBudgetSpec spec;
  PodDisruptionBudgetStatus status;

  bool operator==(const PodDisruptionBudget&) const = default;
};

meta::Decoded<PodDisruptionBudget> decodePodDisruptionBudget(const rapidjson::Value& v);

}  // namespace egress::policy
