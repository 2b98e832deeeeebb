#include "pkg/controller/names.h"

namespace egress::controller {

std::string gatewayName(std::string_view policy) {
  return "egw-" + std::string(policy);
}

std::string sliceName(std::string_view ns, std::string_view policy, size_t index) {
  return std::string(ns) + "." + std::string(policy) + "." + std::to_string(index);
}

kube::Resource policiesResource() {
  return {std::string(kGroup), "v1alpha1", "egressgatewaypolicies", true};
}
kube::Resource poolsResource() {
  return {std::string(kGroup), "v1alpha1", "ipampools", false};
}
kube::Resource operatorConfigsResource() {
  return {std::string(kGroup), "v1alpha1", "operatorconfigs", false};
}
kube::Resource podsResource() {
  return {"", "v1", "pods", true};
}
kube::Resource namespacesResource() {
  return {"", "v1", "namespaces", false};
}
kube::Resource nodesResource() {
  return {"", "v1", "nodes", false};
}
kube::Resource deploymentsResource() {
  return {"apps", "v1", "deployments", true};
}
kube::Resource replicaSetsResource() {
  return {"apps", "v1", "replicasets", true};
}
kube::Resource slicesResource() {
  return {std::string(kGroup), "v1alpha1", "egresspolicyslices", false};
}
kube::Resource agentLeasesResource() {
  return {"coordination.k8s.io", "v1", "leases", true};
}
kube::Resource podDisruptionBudgetsResource(bool policyV1) {
  return {"policy", policyV1 ? "v1" : "v1beta1", "poddisruptionbudgets", true};
}

}  // namespace egress::controller
