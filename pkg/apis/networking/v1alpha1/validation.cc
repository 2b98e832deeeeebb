#include "pkg/apis/networking/v1alpha1/validation.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pkg/apis/networking/v1alpha1/zz_generated.validation.h"
#include "pkg/apis/validation/formats.h"
#include "pkg/apis/validation/names.h"

namespace egress::networking::v1alpha1 {
namespace {

using validation::FieldError;
using validation::FieldErrors;

std::string at(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

std::string key(const std::string& path, const std::string& k) {
  return path + "[" + k + "]";
}

std::string quoted(const std::string& s) {
  return "\"" + s + "\"";
}

// field.Invalid, as the API server prints it.
FieldError invalid(std::string path, const std::string& value, const std::string& message) {
  return {std::move(path), "Invalid value: " + quoted(value) + ": " + message};
}

// Whether the schema checks already reported `path`: one problem per field is enough (a key
// too long for the schema is not also reported as too long a name).
bool reported(const FieldErrors& errs, const std::string& path) {
  return std::any_of(errs.begin(), errs.end(), [&](const FieldError& e) { return e.path == path; });
}

// apimachinery's ValidateLabelSelector: In/NotIn need values, Exists/DoesNotExist take none
// (LabelSelector::matches would otherwise treat a malformed requirement as "no match").
void validateSelector(const meta::LabelSelector& s, const std::string& path, FieldErrors& errs) {
  for (size_t i = 0; i < s.matchExpressions.size(); ++i) {
    const auto& r = s.matchExpressions[i];
    const std::string p = at(path + ".matchExpressions", i);
    if (r.key.empty()) {
      errs.push_back({p + ".key", "Required value"});
    }
    const bool needsValues =
        r.op == meta::SelectorOperator::In || r.op == meta::SelectorOperator::NotIn;
    if (needsValues && r.values.empty()) {
      errs.push_back({p + ".values", "must be specified when `operator` is 'In' or 'NotIn'"});
    } else if (!needsValues && !r.values.empty()) {
      errs.push_back(
          {p + ".values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"});
    }
  }
}

// The CIDRs of a list, each parsed (nullopt where the field checks failed). The API server
// takes "203.0.113.5/24" (Go's ParseCIDR does), but every CIDR of our API means a network.
std::vector<std::optional<validation::IPPrefix>> networks(const std::vector<std::string>& cidrs,
                                                          const std::string& path,
                                                          FieldErrors& errs) {
  std::vector<std::optional<validation::IPPrefix>> out;
  for (size_t i = 0; i < cidrs.size(); ++i) {
    out.push_back(validation::parseIPOrCIDR(cidrs[i]));
    if (out[i] && validation::hasHostBits(cidrs[i])) {
      errs.push_back({at(path, i), quoted(cidrs[i]) + " has host bits set; did you mean " +
                                       quoted(validation::formatPrefix(*out[i])) + "?"});
    }
  }
  return out;
}

// A policy's destination (or excluded) CIDRs: networks of its IP family.
void validateDestinations(const std::vector<std::string>& cidrs, const std::string& path,
                          const std::string& family, FieldErrors& errs) {
  const auto nets = networks(cidrs, path, errs);
  for (size_t i = 0; i < cidrs.size(); ++i) {
    if (!nets[i]) {
      continue;  // reported by the field checks
    }
    if (family == "IPv4" && nets[i]->v6) {
      errs.push_back(
          {at(path, i), quoted(cidrs[i]) + ": ipFamily IPv4 (the default) takes IPv4 CIDRs only"});
    } else if (family == "IPv6" && !nets[i]->v6) {
      errs.push_back({at(path, i), quoted(cidrs[i]) + ": ipFamily IPv6 takes IPv6 CIDRs only"});
    }
  }
}

// core/v1 ValidateTolerations, with its messages. Unlike the API server, which reports a bad
// value at .operator, each error names the field it is about.
void validateTolerations(const std::vector<Toleration>& tolerations, const std::string& path,
                         FieldErrors& errs) {
  for (size_t i = 0; i < tolerations.size(); ++i) {
    const Toleration& t = tolerations[i];
    const std::string p = at(path, i);
    if (!t.key.empty() && !reported(errs, p + ".key")) {
      for (const auto& msg : validation::qualifiedNameErrors(t.key)) {
        errs.push_back(invalid(p + ".key", t.key, msg));
      }
    }
    if (t.key.empty() && t.operator_ != "Exists") {
      errs.push_back(invalid(p + ".operator", t.operator_,
                             "operator must be Exists when `key` is empty, which means \"match "
                             "all values and all keys\""));
    }
    if (t.tolerationSeconds && t.effect != "NoExecute") {
      errs.push_back(invalid(p + ".effect", t.effect,
                             "effect must be 'NoExecute' when `tolerationSeconds` is set"));
    }
    if ((t.operator_.empty() || t.operator_ == "Equal") && !reported(errs, p + ".value")) {
      const auto msgs = validation::labelValueErrors(t.value);
      if (!msgs.empty()) {
        std::string joined;
        for (const auto& msg : msgs) {
          joined += (joined.empty() ? "" : ";") + msg;
        }
        errs.push_back(invalid(p + ".value", t.value, joined));
      }
    } else if (t.operator_ == "Exists" && !t.value.empty()) {
      errs.push_back(
          invalid(p + ".value", t.value, "value must be empty when `operator` is 'Exists'"));
    }
  }
}

// k8s.io/kubernetes pkg/apis/core/helper: native resources have no domain or a kubernetes.io
// one; everything else (example.com/gpu) is an extended resource, counted in whole units and
// never overcommitted, and so are huge pages.
bool isNativeResource(const std::string& name) {
  return name.find('/') == std::string::npos || name.find("kubernetes.io/") != std::string::npos;
}

bool isHugePages(const std::string& name) {
  return name.starts_with("hugepages-");
}

// core/v1 ValidateResourceRequirements of a container, with its messages: resource names,
// non-negative quantities (whole for extended resources), and requests within their limits
// (equal to them where overcommit is not allowed).
void validateResources(const ResourceRequirements& r, const std::string& path, FieldErrors& errs) {
  for (const auto& [field, quantities] :
       {std::pair{".limits", &r.limits}, std::pair{".requests", &r.requests}}) {
    for (const auto& [name, q] : *quantities) {
      const std::string p = key(path + field, name);
      const auto nameErrors = validation::qualifiedNameErrors(name);
      for (const auto& msg : nameErrors) {
        errs.push_back(invalid(p, name, msg));
      }
      const bool standard =
          name == "cpu" || name == "memory" || name == "ephemeral-storage" || isHugePages(name);
      if (nameErrors.empty() && name.find('/') == std::string::npos && !standard) {
        errs.push_back(invalid(p, name, "must be a standard resource for containers"));
      }
      auto value = q.value();
      if (!value) {
        continue;  // reported by the field checks
      }
      if (value->sign() < 0) {
        errs.push_back(invalid(p, q.text(), "must be greater than or equal to 0"));
      }
      if (!isNativeResource(name) && !value->isInteger()) {
        errs.push_back(invalid(p, q.text(), "must be an integer"));
      }
    }
  }
  for (const auto& [name, request] : r.requests) {
    const bool overcommit = isNativeResource(name) && !isHugePages(name);
    const auto limit = r.limits.find(name);
    if (limit == r.limits.end()) {
      if (!overcommit) {
        errs.push_back({key(path + ".limits", name),
                        "Required value: Limit must be set for non overcommitable resources"});
      }
      continue;
    }
    const auto requested = request.value();
    const auto limited = limit->second.value();
    if (!requested || !limited) {
      continue;
    }
    if (!overcommit && *requested != *limited) {
      errs.push_back(invalid(key(path + ".requests", name), request.text(),
                             "must be equal to " + name + " limit of " + limit->second.text()));
    } else if (*requested > *limited) {
      errs.push_back(
          invalid(key(path + ".requests", name), request.text(),
                  "must be less than or equal to " + name + " limit of " + limit->second.text()));
    }
  }
}

// What the API server would refuse in the gateway pods' spec.
void validateGateway(const GatewaySpec& g, const std::string& path, FieldErrors& errs) {
  for (const auto& [k, v] : g.nodeSelector) {
    const std::string p = key(path + ".nodeSelector", k);
    for (const auto& msg : validation::qualifiedNameErrors(k)) {
      errs.push_back(invalid(p, k, msg));
    }
    for (const auto& msg : validation::labelValueErrors(v)) {
      errs.push_back(invalid(p, v, msg));
    }
  }
  validateTolerations(g.tolerations, path + ".tolerations", errs);
  if (g.resources) {
    validateResources(*g.resources, path + ".resources", errs);
  }
}

}  // namespace

FieldErrors validate(const IPAMPool& pool) {
  FieldErrors errs;
  validateIPAMPoolSpecFields(pool.spec, "spec", errs);
  if (pool.spec.namespaceSelector) {
    validateSelector(*pool.spec.namespaceSelector, "spec.namespaceSelector", errs);
  }
  const auto cidrs = networks(pool.spec.cidrs, "spec.cidrs", errs);
  for (size_t i = 0; i < cidrs.size(); ++i) {
    for (size_t j = 0; j < i && cidrs[i]; ++j) {
      if (cidrs[j] && cidrs[j]->overlaps(*cidrs[i])) {
        errs.push_back({at("spec.cidrs", i), quoted(pool.spec.cidrs[i]) + " overlaps " +
                                                 at("spec.cidrs", j) + " " +
                                                 quoted(pool.spec.cidrs[j])});
      }
    }
  }
  for (size_t i = 0; i < pool.spec.exclude.size(); ++i) {
    auto ex = validation::parseIPOrCIDR(pool.spec.exclude[i]);
    if (!ex) {
      continue;  // reported by the field checks
    }
    bool inside = false;
    for (const auto& c : cidrs) {
      inside = inside || (c && c->contains(*ex));
    }
    if (!inside) {
      errs.push_back({at("spec.exclude", i),
                      quoted(pool.spec.exclude[i]) + " is not inside any of spec.cidrs"});
    }
  }
  return errs;
}

FieldErrors validate(const EgressGatewayPolicy& policy) {
  FieldErrors errs;
  const auto& spec = policy.spec;
  validateEgressGatewayPolicySpecFields(spec, "spec", errs);
  validateSelector(spec.podSelector, "spec.podSelector", errs);
  // The CEL rules of EgressIPSpec on families, in order.
  const auto& eip = spec.egressIP;
  size_t v6 = 0;
  for (const auto& a : eip.addresses) {
    v6 += a.find(':') != std::string::npos ? 1 : 0;
  }
  const std::string family = eip.ipFamily.empty() ? "IPv4" : eip.ipFamily;
  if (family == "IPv4" && v6 != 0) {
    errs.push_back({"spec.egressIP", "ipFamily IPv4 (the default) takes IPv4 addresses only"});
  } else if (family == "IPv6" && v6 != eip.addresses.size()) {
    errs.push_back({"spec.egressIP", "ipFamily IPv6 takes IPv6 addresses only"});
  } else if (family == "DualStack" && v6 * 2 != eip.addresses.size()) {
    errs.push_back({"spec.egressIP", "ipFamily DualStack takes as many IPv4 as IPv6 addresses"});
  }
  validateDestinations(spec.destinationCIDRs, "spec.destinationCIDRs", family, errs);
  validateDestinations(spec.excludedCIDRs, "spec.excludedCIDRs", family, errs);
  validateGateway(spec.gateway, "spec.gateway", errs);
  return errs;
}

FieldErrors validate(const OperatorConfig& config) {
  FieldErrors errs;
  if (config.metadata.name != "default") {
    errs.push_back({"metadata.name", "the OperatorConfig must be named default"});
  }
  validateOperatorConfigSpecFields(config.spec, "spec", errs);
  networks(config.spec.clusterCIDRs, "spec.clusterCIDRs", errs);
  if (config.spec.gatewayDefaults) {
    validateGateway(*config.spec.gatewayDefaults, "spec.gatewayDefaults", errs);
  }
  return errs;
}

FieldErrors validateUpdate(const EgressGatewayPolicy& old, const EgressGatewayPolicy& updated) {
  FieldErrors errs = validate(updated);
  // The transition rule on EgressIPSpec: once set, the pool stays (unsetting it is a change too).
  if (old.spec.egressIP.pool && old.spec.egressIP.pool != updated.spec.egressIP.pool) {
    errs.push_back({"spec.egressIP.pool", "pool is immutable"});
  }
  return errs;
}

}  // namespace egress::networking::v1alpha1
