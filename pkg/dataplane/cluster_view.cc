#include "pkg/dataplane/cluster_view.h"

#include <algorithm>

namespace egress::dataplane {
namespace {

// Non-empty lines of a ConfigMap value (configMapData writes one item per line).
std::vector<std::string_view> lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (!line.empty()) {
      out.push_back(line);
    }
    if (nl == std::string_view::npos) {
      break;
    }
    text.remove_prefix(nl + 1);
  }
  return out;
}

std::string_view value(const meta::StringMap& data, const char* key) {
  auto it = data.find(key);
  return it == data.end() ? std::string_view() : std::string_view(it->second);
}

void problem(std::vector<std::string>* problems, const std::string& where, std::string_view line) {
  if (problems != nullptr) {
    problems->push_back(where + ": cannot parse \"" + std::string(line) + "\"");
  }
}

std::vector<ipam::Prefix> prefixes(const meta::StringMap& data, const char* key,
                                   const std::string& where, std::vector<std::string>* problems) {
  std::vector<ipam::Prefix> out;
  for (auto line : lines(value(data, key))) {
    if (auto p = ipam::parseAddressOrCIDR(line)) {
      out.push_back(*p);
    } else {
      problem(problems, where + " " + key, line);
    }
  }
  return out;
}

}  // namespace

NodeView nodeView(const core::Node& node) {
  NodeView v;
  v.name = node.metadata.name;
  for (const auto& a : node.addresses) {
    if (a.type != "InternalIP") {
      continue;
    }
    auto ip = ipam::parseAddress(a.address);
    if (!ip) {
      continue;
    }
    auto& slot = ip->family == ipam::Family::kIPv4 ? v.ipv4 : v.ipv6;
    if (!slot) {
      slot = *ip;
    }
  }
  return v;
}

std::optional<PolicyView> policyView(const core::ConfigMap& configMap,
                                     std::vector<std::string>* problems) {
  const auto& name = configMap.metadata.name;
  if (!name.starts_with(kConfigMapPrefix)) {
    return std::nullopt;
  }
  PolicyView v;
  v.key = configMap.metadata.namespace_ + "/" + name.substr(kConfigMapPrefix.size());
  const std::string where = "ConfigMap " + configMap.metadata.namespace_ + "/" + name;
  for (auto line : lines(value(configMap.data, "egress-ips"))) {
    if (auto ip = ipam::parseAddress(line)) {
      v.egressIPs.push_back(*ip);
    } else {
      problem(problems, where + " egress-ips", line);
    }
  }
  v.destinations = prefixes(configMap.data, "destination-cidrs", where, problems);
  v.excluded = prefixes(configMap.data, "excluded-cidrs", where, problems);
  for (auto line : lines(value(configMap.data, "sources"))) {
    size_t at = line.find('@');
    auto ip = at == std::string_view::npos ? std::nullopt : ipam::parseAddress(line.substr(0, at));
    if (!ip || at + 1 >= line.size()) {
      problem(problems, where + " sources", line);
      continue;
    }
    v.sources.push_back({*ip, std::string(line.substr(at + 1))});
  }
  return v;
}

std::optional<GatewayPodView> gatewayPodView(const core::Pod& pod) {
  auto it = pod.metadata.annotations.find(std::string(kEgressIPsAnnotation));
  if (it == pod.metadata.annotations.end() || pod.spec.nodeName.empty()) {
    return std::nullopt;
  }
  GatewayPodView v;
  v.key = pod.metadata.namespace_ + "/" + pod.metadata.name;
  v.node = pod.spec.nodeName;
  std::string_view text = it->second;
  while (!text.empty()) {
    size_t comma = text.find(',');
    if (auto ip = ipam::parseAddress(text.substr(0, comma))) {
      v.egressIPs.push_back(*ip);
    }
    if (comma == std::string_view::npos) {
      break;
    }
    text.remove_prefix(comma + 1);
  }
  std::sort(v.egressIPs.begin(), v.egressIPs.end());
  v.ready = core::isPodReady(pod);
  v.terminating = pod.metadata.deletionTimestamp.has_value() || pod.status.phase == "Succeeded" ||
                  pod.status.phase == "Failed";
  return v;
}

std::optional<LeaseView> leaseView(const coordination::Lease& lease) {
  const auto& name = lease.metadata.name;
  if (!name.starts_with(kAgentLeasePrefix) || !lease.spec.renewTime ||
      !lease.spec.leaseDurationSeconds) {
    return std::nullopt;
  }
  return LeaseView{name.substr(kAgentLeasePrefix.size()), *lease.spec.renewTime,
                   std::chrono::seconds(*lease.spec.leaseDurationSeconds)};
}

}  // namespace egress::dataplane
