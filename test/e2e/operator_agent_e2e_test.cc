// End-to-end: the operator's side of the data plane (issue 13), the egress-operator binary as
// its own process against the real control plane. With OperatorConfig spec.dataplane.agent the
// gateway Deployment's pods carry the agent's readiness gate and 10 s not-ready/unreachable
// tolerations, and the API server keeps them (its DefaultTolerationSeconds admission adds no
// 300 s ones); switched off again, the Deployment is what it was without the switch.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "test/e2e/operator_helpers.h"
#include "test/e2e/testenv/environment.h"
#include "test/testutil/temp_dir.h"

namespace egress::e2e {
namespace {

using namespace std::chrono_literals;
using testenv::controlPlane;

constexpr const char* kGate = "egressgateway.dev/ip-programmed";

class OperatorAgentE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(installCrds(), ""); }

  void SetUp() override {
    static int counter = 0;
    const std::string suffix = std::to_string(::getpid() % 10000) + "-" + std::to_string(++counter);
    ns_ = "egw-agent-op-" + suffix;
    pool_ = "e2e-agent-op-" + suffix;
    ASSERT_EQ(controlPlane().createNamespace(ns_), "");
  }
  void TearDown() override {
    operator_.reset();
    controlPlane().kubectl({"delete", "namespace", ns_, "--timeout=180s"});
    controlPlane().kubectl({"delete", "ipampool", pool_, "--ignore-not-found"});
    controlPlane().kubectl({"delete", "operatorconfig", "default", "--ignore-not-found"});
  }

  ::testing::AssertionResult apply(const std::string& yaml) {
    return applyYaml(tmp_.path() + "/apply-" + std::to_string(++applied_) + ".yaml", yaml);
  }
  std::string configYaml(bool agent) const {
    return operatorConfigYaml("") + "  dataplane:\n    agent: " + (agent ? "true" : "false") + "\n";
  }
  // A JSON document of `kubectl get ARGS -o json`; an empty object if that fails.
  rapidjson::Document getJson(std::vector<std::string> args) const {
    args.insert(args.end(), {"-o", "json"});
    auto out = controlPlane().kubectl(args);
    return parseJson(out.ok() ? out.output : "{}");
  }

  testutil::TempDir tmp_;
  std::string ns_;
  std::string pool_;
  std::unique_ptr<Operator> operator_;
  int applied_ = 0;
};

// The readiness gates' condition types of a pod spec (a Deployment's template or a pod).
std::vector<std::string> gates(const rapidjson::Value& spec) {
  std::vector<std::string> out;
  if (const auto* g = at(spec, {"readinessGates"}); g != nullptr && g->IsArray()) {
    for (const auto& item : g->GetArray()) {
      out.push_back(str(item, "conditionType"));
    }
  }
  return out;
}

// "key/effect/seconds" of every NoExecute toleration of `spec` whose key is a node condition's.
std::vector<std::string> nodeConditionTolerations(const rapidjson::Value& spec) {
  std::vector<std::string> out;
  if (const auto* ts = at(spec, {"tolerations"}); ts != nullptr && ts->IsArray()) {
    for (const auto& t : ts->GetArray()) {
      const std::string key = str(t, "key");
      if (key.rfind("node.kubernetes.io/", 0) != 0) {
        continue;
      }
      const auto* seconds = at(t, {"tolerationSeconds"});
      out.push_back(key + "/" + str(t, "effect") + "/" +
                    (seconds != nullptr && seconds->IsInt64() ? std::to_string(seconds->GetInt64())
                                                              : std::string("forever")));
    }
  }
  return out;
}

TEST_F(OperatorAgentE2E, WithTheAgentSwitchGatewayPodsCarryTheGateAndTenSecondTolerations) {
  ASSERT_TRUE(apply(poolYaml(pool_, {"198.51.100.32/28"})));
  ASSERT_TRUE(apply(configYaml(true)));
  ASSERT_TRUE(apply(policyYaml(ns_, "web", pool_, 2, "web")));
  operator_ = std::make_unique<Operator>(tmp_.path(), "operator", std::vector<std::string>{});
  ASSERT_TRUE(operator_->process().error().empty()) << operator_->process().error();

  const std::vector<std::string> wanted{"node.kubernetes.io/not-ready/NoExecute/10",
                                        "node.kubernetes.io/unreachable/NoExecute/10"};
  auto templateSpec = [&] {
    auto d = getJson({"get", "deployment", "-n", ns_, "egw-web"});
    rapidjson::Document spec;
    if (const auto* s = at(d, {"spec", "template", "spec"})) {
      spec.CopyFrom(*s, spec.GetAllocator());
    }
    return spec;
  };
  ASSERT_TRUE(
      eventually([&] { return gates(templateSpec()) == std::vector<std::string>{kGate}; }, 120s))
      << operator_->process().log();
  EXPECT_EQ(nodeConditionTolerations(templateSpec()), wanted);

  // The pods as the API server admitted them: our tolerations, not its 300 s defaults.
  auto podSpecs = [&] {
    std::vector<rapidjson::Document> out;
    auto list = getJson({"get", "pods", "-n", ns_, "-l", std::string(kPolicyLabel) + "=web"});
    if (const auto* items = at(list, {"items"}); items != nullptr && items->IsArray()) {
      for (const auto& item : items->GetArray()) {
        if (const auto* s = at(item, {"spec"})) {
          rapidjson::Document spec;
          spec.CopyFrom(*s, spec.GetAllocator());
          out.push_back(std::move(spec));
        }
      }
    }
    return out;
  };
  ASSERT_TRUE(eventually([&] { return podSpecs().size() == 2; }, 120s));
  for (const auto& spec : podSpecs()) {
    EXPECT_EQ(gates(spec), std::vector<std::string>{kGate});
    EXPECT_EQ(nodeConditionTolerations(spec), wanted);
  }

  // Switched off: the Deployment is re-applied without the gate and the tolerations.
  ASSERT_TRUE(apply(configYaml(false)));
  EXPECT_TRUE(eventually([&] { return gates(templateSpec()).empty(); }, 60s))
      << operator_->process().log();
  EXPECT_TRUE(nodeConditionTolerations(templateSpec()).empty());
}

}  // namespace
}  // namespace egress::e2e
