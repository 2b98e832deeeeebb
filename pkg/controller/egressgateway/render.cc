#include "pkg/controller/egressgateway/render.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "pkg/apis/meta/encode.h"
#include "pkg/apis/networking/v1alpha1/zz_generated.codec.h"
#include "pkg/controller/egressgateway/holder_moves.h"
#include "pkg/controller/names.h"

namespace egress::controller {
namespace {

using meta::JsonWriter;

// The gateway container's user and group (the image's nonroot user, as the operator's own).
constexpr int64_t kGatewayUser = 65532;

void writeMap(JsonWriter& w, std::string_view key, const meta::StringMap& m) {
  meta::writeKey(w, key);
  w.StartObject();
  for (const auto& [k, v] : m) {  // StringMap is ordered: deterministic output
    meta::writeField(w, k, v);
  }
  w.EndObject();
}

void writeOwnedMetadata(JsonWriter& w, const v1alpha1::EgressGatewayPolicy& policy,
                        const std::string& name, const std::string& hash) {
  meta::writeKey(w, "metadata");
  w.StartObject();
  meta::writeField(w, "name", name);
  meta::writeField(w, "namespace", policy.metadata.namespace_);
  writeMap(w, "labels", gatewayLabels(policy.metadata.name));
  if (!hash.empty()) {
    meta::StringMap annotations{{std::string(kAppliedHashAnnotation), hash}};
    writeMap(w, "annotations", annotations);
  }
  meta::writeKey(w, "ownerReferences");
  w.StartArray();
  meta::OwnerReference ref{std::string(kApiVersion),
                           std::string(kPolicyKind),
                           policy.metadata.name,
                           policy.metadata.uid,
                           true,
                           true};
  meta::encodeOwnerReference(w, ref);
  w.EndArray();
  w.EndObject();
}

void writeSelector(JsonWriter& w, const std::string& policyName) {
  meta::writeKey(w, "selector");
  w.StartObject();
  writeMap(w, "matchLabels", gatewaySelector(policyName));
  w.EndObject();
}

// The shape's tolerations, and with the agent 10 s ones for not-ready and unreachable nodes
// (the API server would add 300 s ones): a dead node's gateway pod is replaced soon. A
// NoExecute toleration of the policy's own for either taint wins.
std::vector<v1alpha1::Toleration> podTolerations(const GatewayShape& shape) {
  std::vector<v1alpha1::Toleration> out = shape.tolerations;
  if (!shape.agent) {
    return out;
  }
  for (const char* taint : {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}) {
    const bool own = std::any_of(out.begin(), out.end(), [&](const v1alpha1::Toleration& t) {
      return t.key == taint && (t.effect.empty() || t.effect == "NoExecute");
    });
    if (!own) {
      out.push_back({taint, "Exists", "", "NoExecute", kAgentTolerationSeconds});
    }
  }
  return out;
}

std::string deploymentBody(const v1alpha1::EgressGatewayPolicy& policy, const GatewayShape& shape,
                           int32_t replicas, const std::string& hash) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  const std::string name = gatewayName(policy.metadata.name);
  w.StartObject();
  meta::writeField(w, "apiVersion", "apps/v1");
  meta::writeField(w, "kind", "Deployment");
  writeOwnedMetadata(w, policy, name, hash);
  meta::writeKey(w, "spec");
  w.StartObject();
  meta::writeField(w, "replicas", replicas);
  writeSelector(w, policy.metadata.name);
  meta::writeKey(w, "strategy");
  w.StartObject();
  meta::writeField(w, "type", "RollingUpdate");
  meta::writeKey(w, "rollingUpdate");
  w.StartObject();
  meta::writeField(w, "maxSurge", int32_t{0});
  meta::writeField(w, "maxUnavailable", int32_t{1});
  w.EndObject();
  w.EndObject();
  meta::writeKey(w, "template");
  w.StartObject();
  meta::writeKey(w, "metadata");
  w.StartObject();
  writeMap(w, "labels", gatewayLabels(policy.metadata.name));
  w.EndObject();
  meta::writeKey(w, "spec");
  w.StartObject();
  meta::writeField(w, "automountServiceAccountToken", false);
  meta::writeField(w, "enableServiceLinks", false);
  // The pod only marks where an egress IP is held (the node's agent does the work): it needs no
  // privilege at all, and passes the restricted Pod Security Standard.
  meta::writeKey(w, "securityContext");
  w.StartObject();
  meta::writeField(w, "runAsNonRoot", true);
  meta::writeField(w, "runAsUser", int64_t{kGatewayUser});
  meta::writeField(w, "runAsGroup", int64_t{kGatewayUser});
  meta::writeKey(w, "seccompProfile");
  w.StartObject();
  meta::writeField(w, "type", "RuntimeDefault");
  w.EndObject();
  w.EndObject();
  meta::writeField(w, "terminationGracePeriodSeconds", int64_t{5});
  if (!shape.priorityClassName.empty()) {
    meta::writeField(w, "priorityClassName", shape.priorityClassName);
  }
  if (!shape.nodeSelector.empty()) {
    writeMap(w, "nodeSelector", shape.nodeSelector);
  }
  const auto tolerations = podTolerations(shape);
  if (!tolerations.empty()) {
    meta::writeKey(w, "tolerations");
    w.StartArray();
    for (const auto& t : tolerations) {
      v1alpha1::encodeToleration(w, t);
    }
    w.EndArray();
  }
  if (shape.agent) {
    meta::writeKey(w, "readinessGates");
    w.StartArray();
    w.StartObject();
    meta::writeField(w, "conditionType", kIPProgrammedCondition);
    w.EndObject();
    w.EndArray();
  }
  // Spread over nodes, but still schedule when there are fewer nodes than replicas: a gateway
  // on a shared node still carries traffic, a pending one carries none.
  meta::writeKey(w, "topologySpreadConstraints");
  w.StartArray();
  w.StartObject();
  meta::writeField(w, "maxSkew", int32_t{1});
  meta::writeField(w, "topologyKey", "kubernetes.io/hostname");
  meta::writeField(w, "whenUnsatisfiable", "ScheduleAnyway");
  meta::writeKey(w, "labelSelector");
  w.StartObject();
  writeMap(w, "matchLabels", gatewaySelector(policy.metadata.name));
  w.EndObject();
  w.EndObject();
  w.EndArray();
  meta::writeKey(w, "containers");
  w.StartArray();
  w.StartObject();
  meta::writeField(w, "name", "gateway");
  meta::writeField(w, "image", shape.image);
  if (!shape.command.empty()) {
    meta::writeKey(w, "command");
    w.StartArray();
    for (const auto& arg : shape.command) {
      w.String(arg.data(), static_cast<rapidjson::SizeType>(arg.size()));
    }
    w.EndArray();
  }
  meta::writeKey(w, "env");
  w.StartArray();
  for (const auto& [envName, path] :
       {std::pair{"POD_NAME", "metadata.name"}, std::pair{"NODE_NAME", "spec.nodeName"}}) {
    w.StartObject();
    meta::writeField(w, "name", envName);
    meta::writeKey(w, "valueFrom");
    w.StartObject();
    meta::writeKey(w, "fieldRef");
    w.StartObject();
    meta::writeField(w, "fieldPath", path);
    w.EndObject();
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  if (shape.resources) {
    meta::writeKey(w, "resources");
    v1alpha1::encodeResourceRequirements(w, *shape.resources);
  }
  meta::writeKey(w, "securityContext");
  w.StartObject();
  meta::writeField(w, "allowPrivilegeEscalation", false);
  meta::writeField(w, "readOnlyRootFilesystem", true);
  meta::writeKey(w, "capabilities");
  w.StartObject();
  meta::writeKey(w, "drop");
  w.StartArray();
  w.String("ALL");
  w.EndArray();
  w.EndObject();
  w.EndObject();
  w.EndObject();
  w.EndArray();
  w.EndObject();  // template.spec
  w.EndObject();  // template
  w.EndObject();  // spec
  w.EndObject();
  return {buf.GetString(), buf.GetSize()};
}

std::string pdbBody(const v1alpha1::EgressGatewayPolicy& policy, bool policyV1,
                    const std::string& hash) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  meta::writeField(w, "apiVersion", policyV1 ? "policy/v1" : "policy/v1beta1");
  meta::writeField(w, "kind", "PodDisruptionBudget");
  writeOwnedMetadata(w, policy, gatewayName(policy.metadata.name), hash);
  meta::writeKey(w, "spec");
  w.StartObject();
  meta::writeField(w, "maxUnavailable", int32_t{1});
  writeSelector(w, policy.metadata.name);
  w.EndObject();
  w.EndObject();
  return {buf.GetString(), buf.GetSize()};
}

}  // namespace

GatewayShape gatewayShape(const v1alpha1::EgressGatewayPolicy& policy,
                          const v1alpha1::OperatorConfig* config) {
  GatewayShape shape;
  const v1alpha1::GatewaySpec* defaults =
      config != nullptr && config->spec.gatewayDefaults ? &*config->spec.gatewayDefaults : nullptr;
  const auto& own = policy.spec.gateway;
  if (config != nullptr) {
    shape.image = config->spec.gatewayImage;
    shape.command = config->spec.gatewayCommand;
  }
  if (own.replicas) {
    shape.replicas = *own.replicas;
  } else if (defaults != nullptr && defaults->replicas) {
    shape.replicas = *defaults->replicas;
  }
  shape.nodeSelector =
      !own.nodeSelector.empty() || defaults == nullptr ? own.nodeSelector : defaults->nodeSelector;
  shape.tolerations =
      !own.tolerations.empty() || defaults == nullptr ? own.tolerations : defaults->tolerations;
  shape.resources = own.resources || defaults == nullptr ? own.resources : defaults->resources;
  shape.priorityClassName = !own.priorityClassName.empty() || defaults == nullptr
                                ? own.priorityClassName
                                : defaults->priorityClassName;
  shape.agent = agentEnabled(config);
  return shape;
}

std::vector<ipam::Family> policyFamilies(const v1alpha1::EgressGatewayPolicy& policy) {
  const auto& f = policy.spec.egressIP.ipFamily;
  if (f == "IPv6") {
    return {ipam::Family::kIPv6};
  }
  if (f == "DualStack") {
    return {ipam::Family::kIPv4, ipam::Family::kIPv6};
  }
  return {ipam::Family::kIPv4};
}

std::string entryText(const ipam::Entry& entry) {
  std::string out;
  for (const auto& a : entry) {
    out += (out.empty() ? "" : ",") + a.toString();
  }
  return out;
}

Rendered renderDeployment(const v1alpha1::EgressGatewayPolicy& policy, const GatewayShape& shape,
                          int32_t replicas) {
  Rendered r;
  r.name = gatewayName(policy.metadata.name);
  r.hash = digest(deploymentBody(policy, shape, replicas, ""));
  r.body = deploymentBody(policy, shape, replicas, r.hash);
  return r;
}

Rendered renderPodDisruptionBudget(const v1alpha1::EgressGatewayPolicy& policy, bool policyV1) {
  Rendered r;
  r.name = gatewayName(policy.metadata.name);
  r.hash = digest(pdbBody(policy, policyV1, ""));
  r.body = pdbBody(policy, policyV1, r.hash);
  return r;
}

meta::StringMap gatewayLabels(const std::string& policyName) {
  return {{std::string(kManagedByLabel), std::string(kManagedByValue)},
          {std::string(kNameLabel), std::string(kNameValue)},
          {std::string(kPolicyLabel), policyName}};
}

meta::StringMap gatewaySelector(const std::string& policyName) {
  return {{std::string(kNameLabel), std::string(kNameValue)},
          {std::string(kPolicyLabel), policyName}};
}

std::string digest(std::string_view text) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

}  // namespace egress::controller
