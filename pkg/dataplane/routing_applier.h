// File: routing_applier.h
//
// Puts egw-agent's policy-routing rules and routes into the kernel over rtnetlink (libmnl),
// without flushing anything: everything it adds carries kRouteProtocol (rtm_protocol,
// FRA_PROTOCOL), it reads back only what carries it, and applies the difference, so routes and
// rules of anyone else are never touched and an agent that restarts finds its own state and
// changes nothing. Links, neighbours and the FDB are not this class's (they follow).
#pragma once

#include <cstdint>
#include <vector>

#include "pkg/base/result.h"
#include "pkg/dataplane/kernel_state.h"

struct mnl_socket;
struct nlmsghdr;

namespace egress::dataplane {

// Unassigned in iproute2's rt_protos (kernel 0-4, routing daemons 8-192).
inline constexpr uint8_t kRouteProtocol = 240;

class RoutingApplier {
 public:
  RoutingApplier();
  ~RoutingApplier();
  RoutingApplier(const RoutingApplier&) = delete;
  RoutingApplier& operator=(const RoutingApplier&) = delete;

  // The number of netlink changes made (0: the kernel already had exactly this).
  Result<int, std::string> apply(const std::vector<Rule>& rules, const std::vector<Route>& routes);
  // Removes every rule and route egw owns.
  Result<int, std::string> removeAll();

  Result<std::vector<Rule>, std::string> readRules();
  Result<std::vector<Route>, std::string> readRoutes();

 private:
  // Sends one request and runs `cb` on every reply message until the dump's end or the ack.
  Result<Ok, std::string> request(nlmsghdr* nlh, int (*cb)(const nlmsghdr*, void*), void* data);
  Result<Ok, std::string> changeRule(const Rule& rule, bool add);
  Result<Ok, std::string> changeRoute(const Route& route, bool add);

  mnl_socket* nl_ = nullptr;
  uint32_t portid_ = 0;
  uint32_t seq_ = 0;
  std::string openError_;
};

}  // namespace egress::dataplane
