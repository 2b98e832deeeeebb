#include "pkg/apis/policy/pod_disruption_budget.h"

namespace egress::policy {
namespace {

meta::Decoded<PodDisruptionBudgetSpec> decodePdbSpec(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  PodDisruptionBudgetSpec s;
  r.object("minAvailable", s.minAvailable, meta::decodeIntOrString);
  r.object("maxUnavailable", s.maxUnavailable, meta::decodeIntOrString);
  r.object("selector", s.selector, meta::decodeLabelSelector);
  return r.finish(s);
}

meta::Decoded<PodDisruptionBudgetStatus> decodePdbStatus(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  PodDisruptionBudgetStatus s;
  r.read("observedGeneration", s.observedGeneration);
  r.read("disruptionsAllowed", s.disruptionsAllowed);
  r.read("currentHealthy", s.currentHealthy);
  r.read("desiredHealthy", s.desiredHealthy);
  r.read("expectedPods", s.expectedPods);
  return r.finish(s);
}

}  // namespace

meta::Decoded<PodDisruptionBudget> decodePodDisruptionBudget(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  PodDisruptionBudget pdb;
  r.object("metadata", pdb.metadata, meta::decodeObjectMeta);
  r.object("spec", pdb.spec, decodePdbSpec);
  r.object("status", pdb.status, decodePdbStatus);
  return r.finish(std::move(pdb));
}

}  // namespace egress::policy
