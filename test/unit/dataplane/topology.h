// File: topology.h
//
// The three-node cluster of packets/topology.sh as a ClusterView, for the data plane's tests: three
// nodes on 192.168.50.0/24 (dual-stack InternalIPs), policy default/web selecting p1@n1 and p3@n3,
// its one slot with egress IP .200 held by n1 (its gateway pod egw-web-a), every agent live, the
// egress IPs in the pools 192.168.50.192/26 and fd00:50::200/120. Tests
// change the values (a holder, a liveness) instead of faking informers and clocks.
#pragma once

#include <string>

#include "pkg/dataplane/cluster_view.h"

namespace egress::dataplane::testing {

inline ipam::Address ip(const char* text) {
  return *ipam::parseAddress(text);
}
inline ipam::Prefix cidr(const char* text) {
  return *ipam::parseAddressOrCIDR(text);
}

inline ClusterView topology(const std::string& self) {
  ClusterView v;
  v.self = self;
  for (int i = 1; i <= 3; ++i) {
    NodeView n;
    n.name = "n" + std::to_string(i);
    n.ipv4 = ip(("192.168.50.1" + std::to_string(i)).c_str());
    n.ipv6 = ip(("fd00:50::1" + std::to_string(i)).c_str());
    n.addresses = {*n.ipv4, *n.ipv6};
    v.nodes.push_back(n);
  }
  // The egress IPs' pools (the agent refuses an address in none).
  v.poolCIDRs = {cidr("192.168.50.192/26"), cidr("fd00:50::200/120")};
  PolicyView p;
  p.key = "default/web";
  p.uid = "uid-web";
  p.slots = {{{ip("192.168.50.200")}, "n1", "egw-web-a", "uid-egw-web-a"}};
  p.destinations = {cidr("192.168.50.96/28")};
  p.excluded = {cidr("10.244.0.0/16"), cidr("192.168.50.101/32")};
  p.sources = {{ip("10.244.1.2"), "n1"}, {ip("10.244.3.2"), "n3"}};
  v.policies = {p};
  for (const char* n : {"n1", "n2", "n3"}) {
    v.leases.push_back({n, true, true, {}});
  }
  return v;
}

// Marks `node`'s agent live or not (this node's own entry: whether this agent is fresh).
inline void setLive(ClusterView& v, const std::string& node, bool fresh) {
  for (auto& l : v.leases) {
    if (l.node == node) {
      l.fresh = fresh;
    }
  }
}

// The same cluster dual-stack: n1 holds the slot's 192.168.50.200 and fd00:50::200.
inline ClusterView dualStackTopology(const std::string& self) {
  auto v = topology(self);
  auto& p = v.policies[0];
  p.slots[0].ips.push_back(ip("fd00:50::200"));
  p.destinations.push_back(cidr("0.0.0.0/0"));
  p.destinations.push_back(cidr("fd00:50::/64"));
  p.excluded.push_back(cidr("fd00:244::/32"));
  p.excluded.push_back(cidr("fd00:50::101/128"));
  p.sources.push_back({ip("fd00:244:3::2"), "n3"});
  return v;
}

}  // namespace egress::dataplane::testing
