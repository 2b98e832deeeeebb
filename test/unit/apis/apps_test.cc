#include <string>

#include <gtest/gtest.h>

#include "pkg/apis/apps/deployment.h"
#include "test/unit/apis/testing.h"

namespace egress::apps {
namespace {

using egress::testing::errorOf;
using egress::testing::readTestdata;
using egress::testing::utc;
using meta::parseAndDecode;

TEST(Deployment, DecodesARealDeployment) {
  auto d = parseAndDecode(readTestdata("deployment.json"), decodeDeployment);
  ASSERT_TRUE(d) << d.error().toString();
  EXPECT_EQ(d->metadata.name, "egress-gw-prod");
  EXPECT_EQ(d->metadata.generation, 7);
  ASSERT_NE(meta::controllerOf(d->metadata), nullptr);
  EXPECT_EQ(meta::controllerOf(d->metadata)->kind, "EgressGateway");
  EXPECT_EQ(d->spec.replicas, 3);
  EXPECT_FALSE(d->spec.paused);
  EXPECT_EQ(d->spec.selector.matchLabels.at("egress.example.com/gateway"), "prod");
  EXPECT_EQ(d->spec.selector.toQueryString(),
            "egress.example.com/gateway=prod,tier in (edge,gateway)");
  EXPECT_EQ(d->status.observedGeneration, 7);
  EXPECT_EQ(d->status.replicas, 3);
  EXPECT_EQ(d->status.updatedReplicas, 3);
  EXPECT_EQ(d->status.readyReplicas, 3);
  EXPECT_EQ(d->status.availableReplicas, 3);
  EXPECT_EQ(d->status.unavailableReplicas, 0);
  ASSERT_EQ(d->status.conditions.size(), 2u);
  const DeploymentCondition* progressing = findDeploymentCondition(*d, "Progressing");
  ASSERT_NE(progressing, nullptr);
  EXPECT_EQ(progressing->reason, "NewReplicaSetAvailable");
  EXPECT_EQ(progressing->lastTransitionTime, utc(2026, 11, 2, 10));
  EXPECT_TRUE(deploymentRolledOut(*d));
  EXPECT_EQ(deploymentRolloutStatus(*d).message,
            "deployment \"egress-gw-prod\" successfully rolled out");
}

TEST(Deployment, ReplicasAbsentVersusZero) {
  auto absent = parseAndDecode(R"({"spec":{"selector":{}}})", decodeDeployment);
  ASSERT_TRUE(absent) << absent.error().toString();
  EXPECT_FALSE(absent->spec.replicas.has_value());
  EXPECT_TRUE(absent->spec.selector.empty());
  auto zero = parseAndDecode(R"({"spec":{"replicas":0,"paused":true}})", decodeDeployment);
  ASSERT_TRUE(zero) << zero.error().toString();
  EXPECT_EQ(zero->spec.replicas, 0);
  EXPECT_TRUE(zero->spec.paused);
}

TEST(Deployment, WrongTypesCarryThePath) {
  EXPECT_EQ(errorOf(parseAndDecode(R"({"spec":{"replicas":"3"}})", decodeDeployment)),
            "spec.replicas: expected integer");
  EXPECT_EQ(errorOf(parseAndDecode(R"({"spec":{"replicas":3.5}})", decodeDeployment)),
            "spec.replicas: expected integer");
  EXPECT_EQ(errorOf(parseAndDecode(
                R"({"spec":{"selector":{"matchExpressions":[{"key":"a","operator":"Within"}]}}})",
                decodeDeployment)),
            "spec.selector.matchExpressions[0].operator: unknown operator \"Within\"");
  EXPECT_EQ(
      errorOf(parseAndDecode(R"({"status":{"conditions":[{"type":"Available","reason":false}]}})",
                             decodeDeployment)),
      "status.conditions[0].reason: expected string");
  EXPECT_EQ(errorOf(parseAndDecode(R"({"metadata":{"generation":-1.0}})", decodeDeployment)),
            "metadata.generation: expected integer");
}

// A deployment that has fully rolled out 3 replicas at generation 2.
Deployment rolledOut() {
  Deployment d;
  d.metadata.name = "gw";
  d.metadata.generation = 2;
  d.spec.replicas = 3;
  d.status.observedGeneration = 2;
  d.status.replicas = 3;
  d.status.updatedReplicas = 3;
  d.status.readyReplicas = 3;
  d.status.availableReplicas = 3;
  d.status.conditions = {{"Progressing", "True", {}, "NewReplicaSetAvailable", ""}};
  return d;
}

TEST(DeploymentRolledOut, KubectlRolloutStatusSemantics) {
  EXPECT_TRUE(deploymentRolledOut(rolledOut()));

  Deployment d = rolledOut();
  d.metadata.generation = 3;  // spec changed, controller has not seen it yet
  EXPECT_FALSE(deploymentRolledOut(d));
  EXPECT_EQ(deploymentRolloutStatus(d).message,
            "Waiting for deployment spec update to be observed...");

  d = rolledOut();
  d.status.observedGeneration = 5;  // observed ahead of what we read: fine
  EXPECT_TRUE(deploymentRolledOut(d));

  d = rolledOut();
  d.status.updatedReplicas = 2;
  EXPECT_FALSE(deploymentRolledOut(d));
  EXPECT_EQ(deploymentRolloutStatus(d).message,
            "Waiting for deployment \"gw\" rollout to finish: 2 out of 3 new replicas have been "
            "updated...");

  d = rolledOut();
  d.status.replicas = 4;  // an old pod is still terminating (surge)
  EXPECT_FALSE(deploymentRolledOut(d));
  EXPECT_EQ(deploymentRolloutStatus(d).message,
            "Waiting for deployment \"gw\" rollout to finish: 1 old replicas are pending "
            "termination...");

  d = rolledOut();
  d.status.availableReplicas = 1;
  EXPECT_FALSE(deploymentRolledOut(d));
  EXPECT_EQ(deploymentRolloutStatus(d).message,
            "Waiting for deployment \"gw\" rollout to finish: 1 of 3 updated replicas are "
            "available...");

  d = rolledOut();
  d.status.conditions[0] = {"Progressing", "False", {}, "ProgressDeadlineExceeded", "timed out"};
  d.status.availableReplicas = 1;
  const RolloutStatus stuck = deploymentRolloutStatus(d);
  EXPECT_EQ(stuck.stage, RolloutStage::kDeadlineExceeded);
  EXPECT_EQ(stuck.message, "deployment \"gw\" exceeded its progress deadline");

  d = rolledOut();
  d.spec.replicas = 0;  // scaled to zero
  d.status = {2, 0, 0, 0, 0, 0, {}};
  EXPECT_TRUE(deploymentRolledOut(d));

  d = rolledOut();
  d.spec.replicas.reset();  // not defaulted (never from a server): no replica target to check
  d.status.updatedReplicas = 3;
  EXPECT_TRUE(deploymentRolledOut(d));
}

}  // namespace
}  // namespace egress::apps
