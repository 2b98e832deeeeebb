#include "pkg/apis/networking/v1alpha1/validation.h"

#include <string>

#include "pkg/apis/networking/v1alpha1/zz_generated.validation.h"
#include "pkg/apis/validation/formats.h"

namespace egress::networking::v1alpha1 {
namespace {

using validation::FieldErrors;

std::string at(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
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

}  // namespace

FieldErrors validate(const IPAMPool& pool) {
  FieldErrors errs;
  validateIPAMPoolSpecFields(pool.spec, "spec", errs);
  std::vector<std::optional<validation::IPPrefix>> cidrs;
  for (size_t i = 0; i < pool.spec.cidrs.size(); ++i) {
    cidrs.push_back(validation::parseIPOrCIDR(pool.spec.cidrs[i]));
    // The API server takes "203.0.113.5/24" (Go's ParseCIDR does); a pool means the network.
    if (cidrs[i] && validation::hasHostBits(pool.spec.cidrs[i])) {
      errs.push_back({at("spec.cidrs", i), "\"" + pool.spec.cidrs[i] +
                                               "\" has host bits set; did you mean \"" +
                                               validation::formatPrefix(*cidrs[i]) + "\"?"});
    }
    for (size_t j = 0; j < i && cidrs[i]; ++j) {
      if (cidrs[j] && cidrs[j]->overlaps(*cidrs[i])) {
        errs.push_back({at("spec.cidrs", i), "\"" + pool.spec.cidrs[i] + "\" overlaps " +
                                                 at("spec.cidrs", j) + " \"" + pool.spec.cidrs[j] +
                                                 "\""});
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
                      "\"" + pool.spec.exclude[i] + "\" is not inside any of spec.cidrs"});
    }
  }
  return errs;
}

FieldErrors validate(const EgressGatewayPolicy& policy) {
  FieldErrors errs;
  const auto& spec = policy.spec;
  validateEgressGatewayPolicySpecFields(spec, "spec", errs);
  validateSelector(spec.podSelector, "spec.podSelector", errs);
  if (spec.namespaceSelector) {
    validateSelector(*spec.namespaceSelector, "spec.namespaceSelector", errs);
  }
  // The CEL rules of EgressIPSpec, in order.
  const auto& eip = spec.egressIP;
  if (!eip.pool && eip.addresses.empty()) {
    errs.push_back({"spec.egressIP", "set pool, addresses or both"});
  }
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
  return errs;
}

FieldErrors validate(const OperatorConfig& config) {
  FieldErrors errs;
  if (config.metadata.name != "default") {
    errs.push_back({"metadata.name", "the OperatorConfig must be named default"});
  }
  validateOperatorConfigSpecFields(config.spec, "spec", errs);
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
