#include "pkg/controller/reserved.h"

#include <algorithm>

namespace egress::controller {

std::vector<ipam::Reservation> clusterReservations(
    const std::vector<std::shared_ptr<const core::Node>>& nodes,
    const networking::v1alpha1::OperatorConfig* config,
    const std::vector<std::string>& apiServerAddresses) {
  std::vector<ipam::Reservation> out;
  auto host = [](const ipam::Address& a) { return ipam::Prefix{a, ipam::familyBits(a.family)}; };
  for (const auto& n : nodes) {
    for (const auto& a : n->addresses) {
      if (a.type != "InternalIP" && a.type != "ExternalIP") {
        continue;
      }
      if (auto ip = ipam::parseAddress(a.address)) {
        out.push_back({host(*ip), "node " + n->metadata.name + "'s " + a.type});
      }
    }
    for (const auto& cidr : n->podCIDRs) {
      if (auto p = ipam::parseCIDR(cidr)) {
        out.push_back({*p, "in node " + n->metadata.name + "'s pod CIDR " + p->toString()});
      }
    }
  }
  if (config != nullptr) {
    for (const auto& cidr : config->spec.clusterCIDRs) {
      if (auto p = ipam::parseCIDR(cidr)) {
        out.push_back(
            {*p, "in the cluster CIDR " + p->toString() + " (OperatorConfig spec.clusterCIDRs)"});
      }
    }
  }
  for (const auto& text : apiServerAddresses) {
    if (auto ip = ipam::parseAddress(text)) {
      out.push_back({host(*ip), "the API server's address"});
    }
  }
  std::sort(out.begin(), out.end(), [](const ipam::Reservation& a, const ipam::Reservation& b) {
    return std::tie(a.prefix.address, a.prefix.bits, a.why) <
           std::tie(b.prefix.address, b.prefix.bits, b.why);
  });
  return out;
}

}  // namespace egress::controller
