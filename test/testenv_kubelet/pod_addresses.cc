#include "test/testenv_kubelet/pod_addresses.h"

#include <cassert>

#include "test/testenv_kubelet/fake_node.h"

namespace egress::testenv {
namespace {

// The second octets of the overflow ranges, after the podCIDRs' 244.
constexpr int kFirstOverflowOctet = 245;
constexpr int kLastOverflowOctet = 255;

bool contains(const ipam::Prefix& p, const ipam::Address& a) {
  return a.family == p.address.family && a.value >= p.first() && a.value <= p.last();
}

}  // namespace

PodAddresses::PodAddresses(int nodes) {
  assert(nodes >= 0 && nodes <= kMaxNodes);
  for (int node = 1; node <= nodes; ++node) {
    std::vector<std::string> cidrs{nodePodCidr(node)};
    for (int octet = kFirstOverflowOctet; octet <= kLastOverflowOctet; ++octet) {
      cidrs.push_back("10." + std::to_string(octet) + "." + std::to_string(node) + ".0/24");
    }
    auto pool = ipam::Pool::create(cidrs, {});
    assert(pool.ok());
    pools_.push_back(std::move(*pool));
    podCidrs_.push_back(*ipam::parseCIDR(nodePodCidr(node)));
  }
}

std::string PodAddresses::observe(int node, const std::string& owner, std::string_view ip) {
  const auto known = nodeOf_.find(owner);
  if (known != nodeOf_.end()) {
    const auto held = pools_[static_cast<size_t>(known->second - 1)].addressesOf(owner);
    if (known->second == node && held.size() == 1 && held[0].toString() == ip) {
      return "";
    }
    release(owner);
  }
  auto reserved = pool(node).reserve(owner, ip);
  if (!reserved) {
    return reserved.error().message;
  }
  nodeOf_.emplace(owner, node);
  return "";
}

std::optional<AssignedAddress> PodAddresses::assign(int node, const std::string& owner) {
  if (auto known = nodeOf_.find(owner); known != nodeOf_.end() && known->second != node) {
    release(owner);  // a pod never moves; this is a new pod under an old key
  }
  ipam::Pool& p = pool(node);
  std::vector<ipam::Address> held = p.addressesOf(owner);
  if (held.empty()) {
    auto allocated = p.allocate(owner, ipam::Family::kIPv4, 1);
    if (!allocated) {
      return std::nullopt;
    }
    held = std::move(*allocated);
    nodeOf_.emplace(owner, node);
  }
  return AssignedAddress{held[0].toString(),
                         !contains(podCidrs_[static_cast<size_t>(node - 1)], held[0])};
}

void PodAddresses::release(const std::string& owner) {
  auto it = nodeOf_.find(owner);
  if (it == nodeOf_.end()) {
    return;
  }
  pool(it->second).releaseAll(owner);
  nodeOf_.erase(it);
}

size_t PodAddresses::held(int node) const {
  return static_cast<size_t>(
      pools_[static_cast<size_t>(node - 1)].counts(ipam::Family::kIPv4).allocated);
}

std::string PodAddresses::addressOf(const std::string& owner) const {
  auto it = nodeOf_.find(owner);
  if (it == nodeOf_.end()) {
    return "";
  }
  const auto held = pools_[static_cast<size_t>(it->second - 1)].addressesOf(owner);
  return held.empty() ? "" : held[0].toString();
}

}  // namespace egress::testenv
