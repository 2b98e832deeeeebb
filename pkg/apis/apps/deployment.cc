#include "pkg/apis/apps/deployment.h"

namespace egress::apps {
namespace {

meta::Decoded<DeploymentCondition> decodeDeploymentCondition(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  DeploymentCondition c;
  r.read("type", c.type);
  r.read("status", c.status);
  r.read("lastTransitionTime", c.lastTransitionTime);
  r.read("reason", c.reason);
  r.read("message", c.message);
  return r.finish(std::move(c));
}

meta::Decoded<DeploymentSpec> decodeDeploymentSpec(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  DeploymentSpec s;
  r.read("replicas", s.replicas);
  r.object("selector", s.selector, meta::decodeLabelSelector);
  r.read("paused", s.paused);
  return r.finish(std::move(s));
}

meta::Decoded<DeploymentStatus> decodeDeploymentStatus(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  DeploymentStatus s;
  r.read("observedGeneration", s.observedGeneration);
  r.read("replicas", s.replicas);
  r.read("updatedReplicas", s.updatedReplicas);
  r.read("readyReplicas", s.readyReplicas);
  r.read("availableReplicas", s.availableReplicas);
  r.read("unavailableReplicas", s.unavailableReplicas);
  r.list("conditions", s.conditions, decodeDeploymentCondition);
  return r.finish(std::move(s));
}

std::string str(int32_t v) {
  return std::to_string(v);
}

}  // namespace

meta::Decoded<Deployment> decodeDeployment(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  Deployment d;
  r.object("metadata", d.metadata, meta::decodeObjectMeta);
  r.object("spec", d.spec, decodeDeploymentSpec);
  r.object("status", d.status, decodeDeploymentStatus);
  return r.finish(std::move(d));
}

const DeploymentCondition* findDeploymentCondition(const Deployment& d, std::string_view type) {
  for (const auto& c : d.status.conditions) {
    if (c.type == type) {
      return &c;
    }
  }
  return nullptr;
}

RolloutStatus deploymentRolloutStatus(const Deployment& d) {
  const std::string name = "deployment \"" + d.metadata.name + "\"";
  if (d.metadata.generation > d.status.observedGeneration) {
    return {RolloutStage::kNotObserved, "Waiting for deployment spec update to be observed..."};
  }
  const DeploymentCondition* progressing = findDeploymentCondition(d, "Progressing");
  if (progressing != nullptr && progressing->reason == "ProgressDeadlineExceeded") {
    return {RolloutStage::kDeadlineExceeded, name + " exceeded its progress deadline"};
  }
  const auto& s = d.status;
  if (d.spec.replicas && s.updatedReplicas < *d.spec.replicas) {
    return {RolloutStage::kUpdating,
            "Waiting for " + name + " rollout to finish: " + str(s.updatedReplicas) + " out of " +
                str(*d.spec.replicas) + " new replicas have been updated..."};
  }
  if (s.replicas > s.updatedReplicas) {
    return {RolloutStage::kOldReplicasPending,
            "Waiting for " + name + " rollout to finish: " + str(s.replicas - s.updatedReplicas) +
                " old replicas are pending termination..."};
  }
  if (s.availableReplicas < s.updatedReplicas) {
    return {RolloutStage::kBecomingAvailable,
            "Waiting for " + name + " rollout to finish: " + str(s.availableReplicas) + " of " +
                str(s.updatedReplicas) + " updated replicas are available..."};
  }
  return {RolloutStage::kDone, name + " successfully rolled out"};
}

bool deploymentRolledOut(const Deployment& d) {
  return deploymentRolloutStatus(d).stage == RolloutStage::kDone;
}

}  // namespace egress::apps
