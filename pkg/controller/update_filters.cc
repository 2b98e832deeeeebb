#include "pkg/controller/update_filters.h"

#include <algorithm>

namespace egress::controller {

bool poolUpdateMattersToPolicies(const v1alpha1::IPAMPool& oldPool,
                                 const v1alpha1::IPAMPool& newPool) {
  const auto& o = oldPool.metadata;
  const auto& n = newPool.metadata;
  if (o.uid != n.uid || o.generation != n.generation || o.labels != n.labels ||
      o.deletionTimestamp.has_value() != n.deletionTimestamp.has_value() ||
      !(oldPool.spec == newPool.spec)) {
    return true;
  }
  const auto& oc = oldPool.status.conditions;
  const auto& nc = newPool.status.conditions;
  return !std::equal(oc.begin(), oc.end(), nc.begin(), nc.end(),
                     [](const meta::Condition& a, const meta::Condition& b) {
                       return a.type == b.type && a.status == b.status && a.reason == b.reason;
                     });
}

bool operatorConfigUpdateMattersToPolicies(const v1alpha1::OperatorConfig& oldConfig,
                                           const v1alpha1::OperatorConfig& newConfig) {
  const auto& o = oldConfig.metadata;
  const auto& n = newConfig.metadata;
  return o.uid != n.uid || o.generation != n.generation ||
         o.deletionTimestamp.has_value() != n.deletionTimestamp.has_value() ||
         !(oldConfig.spec == newConfig.spec);
}

bool podUpdateMattersToPolicies(const core::Pod& oldPod, const core::Pod& newPod) {
  const auto& o = oldPod.metadata;
  const auto& n = newPod.metadata;
  return o.uid != n.uid || !(o.labels == n.labels) || o.ownerReferences != n.ownerReferences ||
         o.deletionTimestamp.has_value() != n.deletionTimestamp.has_value() ||
         !(oldPod.spec == newPod.spec) || !(oldPod.status == newPod.status);
}

}  // namespace egress::controller
