#include "test/e2e/testenv/egress_objects.h"

#include <atomic>
#include <fstream>

#include "test/e2e/testenv/environment.h"

namespace egress::testenv {

std::string policyYaml(const std::string& ns, const std::string& name, const std::string& pool,
                       int replicas, const std::string& app,
                       const std::vector<std::string>& addresses) {
  std::string y =
      "apiVersion: networking.egressgateway.dev/v1alpha1\nkind: EgressGatewayPolicy\n"
      "metadata:\n  name: " +
      name + "\n  namespace: " + ns +
      "\nspec:\n  podSelector:\n    matchLabels:\n      app: " + app +
      "\n  destinationCIDRs: [192.0.2.0/24]\n  egressIP:" +
      (pool.empty() && addresses.empty() ? " {}\n" : "\n");
  if (!pool.empty()) {
    y += "    pool: " + pool + "\n";
  }
  if (!addresses.empty()) {
    y += "    addresses:\n";
    for (const auto& a : addresses) {
      y += "      - " + a + "\n";
    }
  }
  y += "  gateway:\n    replicas: " + std::to_string(replicas) + "\n";
  return y;
}

std::string poolYaml(const std::string& name, const std::vector<std::string>& cidrs,
                     const std::vector<std::string>& exclude) {
  std::string y =
      "apiVersion: networking.egressgateway.dev/v1alpha1\nkind: IPAMPool\nmetadata:\n"
      "  name: " +
      name + "\nspec:\n  cidrs:\n";
  for (const auto& c : cidrs) {
    y += "    - " + c + "\n";
  }
  if (!exclude.empty()) {
    y += "  exclude:\n";
    for (const auto& e : exclude) {
      y += "    - " + e + "\n";
    }
  }
  return y;
}

std::string operatorConfigYaml(const std::string& defaultPool) {
  return "apiVersion: networking.egressgateway.dev/v1alpha1\nkind: OperatorConfig\nmetadata:\n"
         "  name: default\nspec:\n  gatewayImage: " +
         std::string(kGatewayImage) + "\n" +
         (defaultPool.empty() ? "" : "  defaultPool: " + defaultPool + "\n") +
         "  clusterCIDRs: [10.244.0.0/16, 10.96.0.0/12]\n";
}

std::string podYaml(const std::string& ns, const std::string& name, const std::string& app) {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  namespace: " + ns +
         "\n  labels:\n    app: " + app +
         "\nspec:\n  containers:\n    - name: c\n      image: example.invalid/app:1\n";
}

std::string installCrds() {
  auto apply = controlPlane().kubectl({"apply", "-f", sourceDir() + "/manifests/"});
  if (!apply.ok()) {
    return "kubectl apply -f manifests/: " + apply.output;
  }
  auto wait = controlPlane().kubectl({"wait", "--for", "condition=established", "--timeout=60s",
                                      "crd/ipampools.networking.egressgateway.dev",
                                      "crd/egressgatewaypolicies.networking.egressgateway.dev",
                                      "crd/operatorconfigs.networking.egressgateway.dev"});
  return wait.ok() ? "" : "waiting for the CRDs: " + wait.output;
}

::testing::AssertionResult applyYaml(const std::string& dir, const std::string& yaml) {
  static std::atomic<int> applied{0};
  const std::string file = dir + "/apply-" + std::to_string(++applied) + ".yaml";
  std::ofstream(file) << yaml;
  auto r = controlPlane().kubectl({"apply", "-f", file});
  if (!r.ok()) {
    return ::testing::AssertionFailure() << "kubectl apply -f " << file << ": " << r.output;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace egress::testenv
