#include "pkg/controller/egressgateway/render.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "pkg/controller/names.h"
#include "test/unit/controller/policy_info_builder.h"

namespace egress::controller {
namespace {

using testing::entry;
using ::testing::HasSubstr;
using ::testing::Not;

v1alpha1::EgressGatewayPolicy policy(const std::string& family = "IPv4") {
  return testing::billingPolicy(family);
}

rapidjson::Document parse(const std::string& body) {
  rapidjson::Document d;
  d.Parse(body.c_str());
  EXPECT_FALSE(d.HasParseError()) << body;
  return d;
}

TEST(Render, TheDeploymentRunsOnePodPerEntryWithNoSurgeAndOwnsNothingElse) {
  auto p = policy();
  v1alpha1::OperatorConfig config;
  config.spec.gatewayImage = "img:1";
  GatewayShape shape = gatewayShape(p, &config);
  EXPECT_EQ(shape.replicas, 2);
  auto r = renderDeployment(p, shape, 3);
  auto d = parse(r.body);
  EXPECT_EQ(r.name, "egw-billing");
  EXPECT_EQ(d["spec"]["replicas"].GetInt(), 3);
  EXPECT_EQ(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"].GetInt(), 0);
  EXPECT_EQ(d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"].GetInt(), 1);
  EXPECT_STREQ(d["metadata"]["ownerReferences"][0]["uid"].GetString(), "uid-1");
  EXPECT_TRUE(d["metadata"]["ownerReferences"][0]["controller"].GetBool());
  EXPECT_STREQ(
      d["metadata"]["annotations"][std::string(kAppliedHashAnnotation).c_str()].GetString(),
      r.hash.c_str());
  EXPECT_STREQ(d["spec"]["template"]["spec"]["containers"][0]["image"].GetString(), "img:1");
  // The pod is told nothing of its egress IPs: the agent carries them, from the view.
  EXPECT_THAT(r.body, Not(HasSubstr("egress-ips")));
  EXPECT_FALSE(d["spec"]["template"]["spec"].HasMember("volumes"));
  EXPECT_STREQ(d["spec"]["selector"]["matchLabels"]["egressgateway.dev/policy"].GetString(),
               "billing");
}

// The OperatorConfig's gatewayCommand (the project's image: egw-gateway) or, without one, the
// image's own entrypoint (an image of the user's, as before there was a default).
TEST(Render, TheGatewayRunsTheConfiguredCommandOrTheImagesEntrypoint) {
  auto p = policy();
  v1alpha1::OperatorConfig config;
  config.spec.gatewayImage = "egress-gateway-operator:0.1.0";
  config.spec.gatewayCommand = {"/usr/local/bin/egw-gateway"};
  auto d = parse(renderDeployment(p, gatewayShape(p, &config), 1).body);
  const auto& c = d["spec"]["template"]["spec"]["containers"][0];
  ASSERT_TRUE(c.HasMember("command"));
  ASSERT_EQ(c["command"].Size(), 1U);
  EXPECT_STREQ(c["command"][0].GetString(), "/usr/local/bin/egw-gateway");
  config.spec.gatewayImage = "registry.example/mine:1";
  config.spec.gatewayCommand.clear();
  auto mine = parse(renderDeployment(p, gatewayShape(p, &config), 1).body);
  EXPECT_FALSE(mine["spec"]["template"]["spec"]["containers"][0].HasMember("command"));
}

TEST(Render, BodiesAreDeterministicAndTheirDigestFollowsEveryInput) {
  auto p = policy();
  GatewayShape shape;
  shape.image = "img:1";
  auto a = renderDeployment(p, shape, 2);
  EXPECT_EQ(renderDeployment(p, shape, 2).body, a.body);
  EXPECT_NE(renderDeployment(p, shape, 1).hash, a.hash);
  shape.nodeSelector["zone"] = "a";
  EXPECT_NE(renderDeployment(p, shape, 2).hash, a.hash);
  shape.image = "img:2";
  EXPECT_NE(renderDeployment(p, shape, 2).hash, a.hash);
  const auto b = renderDeployment(p, shape, 2);
  shape.command = {"/usr/local/bin/egw-gateway"};
  EXPECT_NE(renderDeployment(p, shape, 2).hash, b.hash);
}

// A policy with a toleration of its own.
v1alpha1::EgressGatewayPolicy tolerantPolicy() {
  auto p = policy();
  p.spec.gateway.tolerations = {{"dedicated", "Equal", "egress", "NoSchedule", std::nullopt}};
  return p;
}

// An OperatorConfig with spec.dataplane.agent `agent` (nullopt: no spec.dataplane).
v1alpha1::OperatorConfig agentConfig(std::optional<bool> agent) {
  v1alpha1::OperatorConfig config;
  config.spec.gatewayImage = "img:1";
  if (agent) {
    config.spec.dataplane = v1alpha1::DataplaneSpec{*agent};
  }
  return config;
}

// The switch off (absent or false) renders exactly what it did before the switch existed.
TEST(Render, WithoutTheAgentTheDeploymentHasNoReadinessGateAndOnlyThePolicysTolerations) {
  const auto p = tolerantPolicy();
  const auto absentConfig = agentConfig(std::nullopt);
  const auto offConfig = agentConfig(false);
  const auto absent = renderDeployment(p, gatewayShape(p, &absentConfig), 2);
  const auto off = renderDeployment(p, gatewayShape(p, &offConfig), 2);
  EXPECT_EQ(off.body, absent.body);
  auto d = parse(off.body);
  const auto& spec = d["spec"]["template"]["spec"];
  EXPECT_FALSE(spec.HasMember("readinessGates"));
  ASSERT_EQ(spec["tolerations"].Size(), 1u);
  EXPECT_STREQ(spec["tolerations"][0]["key"].GetString(), "dedicated");
}

TEST(Render, WithTheAgentPodsCarryItsReadinessGateAndTenSecondNotReadyTolerations) {
  const auto p = tolerantPolicy();
  const auto offConfig = agentConfig(std::nullopt);
  const auto onConfig = agentConfig(true);
  const auto off = renderDeployment(p, gatewayShape(p, &offConfig), 2);
  const auto shape = gatewayShape(p, &onConfig);
  EXPECT_TRUE(shape.agent);
  const auto on = renderDeployment(p, shape, 2);
  EXPECT_NE(on.hash, off.hash);  // switching it on re-applies the Deployment
  auto d = parse(on.body);
  const auto& spec = d["spec"]["template"]["spec"];
  ASSERT_TRUE(spec.HasMember("readinessGates"));
  ASSERT_EQ(spec["readinessGates"].Size(), 1u);
  EXPECT_STREQ(spec["readinessGates"][0]["conditionType"].GetString(),
               "egressgateway.dev/ip-programmed");
  ASSERT_EQ(spec["tolerations"].Size(), 3u);
  EXPECT_STREQ(spec["tolerations"][0]["key"].GetString(), "dedicated");
  int index = 1;
  for (const char* taint : {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}) {
    const auto& t = spec["tolerations"][index++];
    EXPECT_STREQ(t["key"].GetString(), taint);
    EXPECT_STREQ(t["operator"].GetString(), "Exists");
    EXPECT_STREQ(t["effect"].GetString(), "NoExecute");
    EXPECT_EQ(t["tolerationSeconds"].GetInt64(), 10);
  }
}

// A policy that tolerates a not-ready node its own way keeps its way.
TEST(Render, APolicysOwnNoExecuteTolerationOfATaintWinsOverTheAgents) {
  auto p = policy();
  p.spec.gateway.tolerations = {
      {"node.kubernetes.io/unreachable", "Exists", "", "NoExecute", int64_t{60}}};
  const auto config = agentConfig(true);
  auto d = parse(renderDeployment(p, gatewayShape(p, &config), 1).body);
  const auto& tolerations = d["spec"]["template"]["spec"]["tolerations"];
  ASSERT_EQ(tolerations.Size(), 2u);
  EXPECT_STREQ(tolerations[0]["key"].GetString(), "node.kubernetes.io/unreachable");
  EXPECT_EQ(tolerations[0]["tolerationSeconds"].GetInt64(), 60);
  EXPECT_STREQ(tolerations[1]["key"].GetString(), "node.kubernetes.io/not-ready");
  EXPECT_EQ(tolerations[1]["tolerationSeconds"].GetInt64(), 10);
}

TEST(Render, ThePolicysGatewaySettingsWinOverTheOperatorConfigsDefaults) {
  auto p = policy();
  v1alpha1::OperatorConfig config;
  config.spec.gatewayImage = "img:1";
  v1alpha1::GatewaySpec defaults;
  defaults.replicas = 3;
  defaults.nodeSelector["role"] = "egress";
  defaults.priorityClassName = "high";
  config.spec.gatewayDefaults = defaults;
  auto shape = gatewayShape(p, &config);
  EXPECT_EQ(shape.replicas, 3);
  EXPECT_EQ(shape.nodeSelector.at("role"), "egress");
  p.spec.gateway.replicas = 1;
  p.spec.gateway.nodeSelector["role"] = "edge";
  shape = gatewayShape(p, &config);
  EXPECT_EQ(shape.replicas, 1);
  EXPECT_EQ(shape.nodeSelector.at("role"), "edge");
  EXPECT_EQ(shape.priorityClassName, "high");
  EXPECT_EQ(gatewayShape(policy(), nullptr).replicas, 2);
}

// Restricted Pod Security admits the gateway pods: they hold nothing but their place.
TEST(Render, TheGatewayPodRunsWithoutAnyPrivilege) {
  auto p = policy();
  v1alpha1::OperatorConfig config;
  config.spec.gatewayImage = "img:1";
  auto d = parse(renderDeployment(p, gatewayShape(p, &config), 1).body);
  const auto& pod = d["spec"]["template"]["spec"];
  EXPECT_TRUE(pod["securityContext"]["runAsNonRoot"].GetBool());
  EXPECT_EQ(pod["securityContext"]["runAsUser"].GetInt64(), 65532);
  EXPECT_STREQ(pod["securityContext"]["seccompProfile"]["type"].GetString(), "RuntimeDefault");
  EXPECT_FALSE(pod["automountServiceAccountToken"].GetBool());
  const auto& c = pod["containers"][0]["securityContext"];
  EXPECT_FALSE(c["allowPrivilegeEscalation"].GetBool());
  EXPECT_TRUE(c["readOnlyRootFilesystem"].GetBool());
  ASSERT_EQ(c["capabilities"]["drop"].Size(), 1u);
  EXPECT_STREQ(c["capabilities"]["drop"][0].GetString(), "ALL");
}

TEST(Render, TheBudgetUsesTheServersPolicyVersion) {
  auto v1 = parse(renderPodDisruptionBudget(policy(), true).body);
  EXPECT_STREQ(v1["apiVersion"].GetString(), "policy/v1");
  EXPECT_EQ(v1["spec"]["maxUnavailable"].GetInt(), 1);
  auto beta = parse(renderPodDisruptionBudget(policy(), false).body);
  EXPECT_STREQ(beta["apiVersion"].GetString(), "policy/v1beta1");
}

TEST(Render, EntryTextListsTheFamiliesInOrder) {
  EXPECT_EQ(entryText(entry({"203.0.113.5", "2001:db8::5"})), "203.0.113.5,2001:db8::5");
}

TEST(Render, DigestIsFnv1a64) {
  EXPECT_EQ(digest(""), "cbf29ce484222325");
  EXPECT_EQ(digest("a"), "af63dc4c8601ec8c");
}

}  // namespace
}  // namespace egress::controller
