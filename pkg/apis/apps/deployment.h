// File: deployment.h
//
// apps/v1 Deployment as the operator reads it: the gateway Deployment's desired and observed
// replica counts, and whether a rollout has finished -- the operator reports a gateway Ready only
// once its pods all run the current template.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/label_selector.h"
#include "pkg/apis/meta/object_meta.h"
#include "pkg/apis/meta/time.h"

namespace egress::apps {

struct DeploymentSpec {
  std::optional<int32_t> replicas;  // the server defaults it to 1
  meta::LabelSelector selector;
  bool paused = false;

  bool operator==(const DeploymentSpec&) const = default;
};

struct DeploymentCondition {
  std::string type;  // Available, Progressing, ReplicaFailure
  std::string status;
  meta::Time lastTransitionTime{};
  std::string reason;
  std::string message;

  bool operator==(const DeploymentCondition&) const = default;
};

struct DeploymentStatus {
  int64_t observedGeneration = 0;
  int32_t replicas = 0;
  int32_t updatedReplicas = 0;
  int32_t readyReplicas = 0;
  int32_t availableReplicas = 0;
  int32_t unavailableReplicas = 0;
  std::vector<DeploymentCondition> conditions;

  bool operator==(const DeploymentStatus&) const = default;
};

struct Deployment {
  meta::ObjectMeta metadata;
  DeploymentSpec spec;
  DeploymentStatus status;

  bool operator==(const Deployment&) const = default;
};

meta::Decoded<Deployment> decodeDeployment(const rapidjson::Value& v);

const DeploymentCondition* findDeploymentCondition(const Deployment& d, std::string_view type);

// How far a rollout got, in the order `kubectl rollout status` checks it.
enum class RolloutStage {
  kNotObserved,  // the controller has not observed the current generation yet
  // The Progressing condition says ProgressDeadlineExceeded: waiting longer will not help.
  kDeadlineExceeded,
  kUpdating,            // fewer updated replicas than spec.replicas
  kOldReplicasPending,  // every replica updated, but old ones are still to be scaled down
  kBecomingAvailable,   // every replica runs the current template; not all are available yet
  kDone,
};

struct RolloutStatus {
  RolloutStage stage = RolloutStage::kNotObserved;
  std::string message;  // as `kubectl rollout status` prints it
};

// `kubectl rollout status` (DeploymentStatusViewer): done once the controller has observed the
// current generation, the progress deadline has not been exceeded, and updatedReplicas has
// reached spec.replicas with no old replicas left and all updated ones available.
RolloutStatus deploymentRolloutStatus(const Deployment& d);
bool deploymentRolledOut(const Deployment& d);

}  // namespace egress::apps
