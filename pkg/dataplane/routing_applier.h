// File: routing_applier.h
//
// Puts egw-agent's policy-routing rules and routes into the kernel over rtnetlink (libmnl),
// without flushing anything: everything it adds carries kRouteProtocol (rtm_protocol,
// FRA_PROTOCOL), it reads back only what carries it, and applies the difference, so routes and
// rules of anyone else are never touched and an agent that restarts finds its own state and
// changes nothing. Links, addresses, neighbours and the FDB are link_applier.h's.
#pragma once

#include <cstdint>
#include <vector>

#include "pkg/base/result.h"
#include "pkg/dataplane/kernel_state.h"
#include "pkg/dataplane/rtnetlink.h"

namespace egress::dataplane {

class RoutingApplier {
 public:
  // The number of netlink changes made (0: the kernel already had exactly this).
  Result<int, std::string> apply(const std::vector<Rule>& rules, const std::vector<Route>& routes);
  // Removes every rule and route egw owns.
  Result<int, std::string> removeAll();

  Result<std::vector<Rule>, std::string> readRules();
  Result<std::vector<Route>, std::string> readRoutes();

 private:
  Result<Ok, std::string> changeRule(const Rule& rule, bool add);
  Result<Ok, std::string> changeRoute(const Route& route, bool add);

  Rtnetlink nl_;
};

}  // namespace egress::dataplane
