// File: render.h
//
// The objects a policy's gateway consists of, as the server-side apply bodies the
// DeploymentProcessor sends (pure functions: inputs in, JSON out, deterministic to the byte, so
// equal inputs give equal digests and an unchanged gateway is never applied again):
//
//   Deployment egw-<policy>   one pod per ledger entry; maxSurge 0 / maxUnavailable 1 (the
//                             ledger holds exactly one entry per replica, so a rollout must free
//                             one before it starts another); spread over nodes; the policy's
//                             nodeSelector, tolerations, resources and priorityClassName; the
//                             pod only holds a place on a node (egw-agent carries its egress
//                             IPs, from the view); non-root, no capabilities, RuntimeDefault
//                             seccomp (restricted Pod Security). With the agent: the readiness
//                             gate kIPProgrammedCondition and 10 s NoExecute tolerations of
//                             not-ready and unreachable nodes.
//   PodDisruptionBudget       maxUnavailable 1, when the gateway has more than one replica.
// (What the data plane programs is not here but in the cluster-scoped EgressPolicySlices, which
// no tenant can write: view.h.)
//
// Every object carries the operator's labels, a controller owner reference to the policy (the
// garbage collector deletes them with it) and kAppliedHashAnnotation, the digest of the body.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pkg/apis/core/pod.h"
#include "pkg/apis/meta/object_meta.h"
#include "pkg/apis/networking/v1alpha1/types.h"
#include "pkg/ipam/allocator.h"

namespace egress::controller {

namespace v1alpha1 = networking::v1alpha1;

// The gateway's shape after the OperatorConfig's defaults: the policy's own settings win.
struct GatewayShape {
  std::string image;
  std::vector<std::string> command;  // empty: the image's entrypoint
  int32_t replicas = 2;              // desired (spec); the Deployment runs one pod per ledger entry
  meta::StringMap nodeSelector;
  std::vector<v1alpha1::Toleration> tolerations;
  std::optional<v1alpha1::ResourceRequirements> resources;
  std::string priorityClassName;
  // OperatorConfig spec.dataplane.agent: the pods carry the agent's readiness gate and 10 s
  // not-ready/unreachable tolerations.
  bool agent = false;
};

// Replicas: the policy's, else the OperatorConfig's gatewayDefaults, else 2; the same for every
// other field (a policy that sets a field replaces the default's value whole).
GatewayShape gatewayShape(const v1alpha1::EgressGatewayPolicy& policy,
                          const v1alpha1::OperatorConfig* config);

// The families every ledger entry holds, from spec.egressIP.ipFamily.
std::vector<ipam::Family> policyFamilies(const v1alpha1::EgressGatewayPolicy& policy);

// "203.0.113.5" or "203.0.113.5,2001:db8::5": how an entry is named in Events and logs.
std::string entryText(const ipam::Entry& entry);

// An apply body and its digest.
struct Rendered {
  std::string name;
  std::string body;
  std::string hash;
};

Rendered renderDeployment(const v1alpha1::EgressGatewayPolicy& policy, const GatewayShape& shape,
                          int32_t replicas);

Rendered renderPodDisruptionBudget(const v1alpha1::EgressGatewayPolicy& policy, bool policyV1);

// The labels of every object of policy `name`, and the pod selector of its Deployment.
meta::StringMap gatewayLabels(const std::string& policyName);
meta::StringMap gatewaySelector(const std::string& policyName);

// FNV-1a, 64 bits, as 16 hex digits.
std::string digest(std::string_view text);

}  // namespace egress::controller
