#include "pkg/dataplane/routing_applier.h"

#include <set>
#include <vector>

#include <libmnl/libmnl.h>
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>
#include <net/if.h>

namespace egress::dataplane {
namespace {

using ipam::Address;
using ipam::Family;

int ruleCallback(const nlmsghdr* nlh, void* data) {
  const auto* frh = static_cast<const fib_rule_hdr*>(mnl_nlmsg_get_payload(nlh));
  Attrs a(FRA_MAX);
  mnl_attr_parse(nlh, sizeof *frh, collectAttr, &a);
  if (a[FRA_PROTOCOL] == nullptr || mnl_attr_get_u8(a[FRA_PROTOCOL]) != kRouteProtocol) {
    return MNL_CB_OK;
  }
  Rule r;
  r.family = frh->family == AF_INET ? Family::kIPv4 : Family::kIPv6;
  r.priority = a[FRA_PRIORITY] != nullptr ? mnl_attr_get_u32(a[FRA_PRIORITY]) : 0;
  r.mark = a[FRA_FWMARK] != nullptr ? mnl_attr_get_u32(a[FRA_FWMARK]) : 0;
  r.mask = a[FRA_FWMASK] != nullptr ? mnl_attr_get_u32(a[FRA_FWMASK]) : 0;
  r.table = a[FRA_TABLE] != nullptr ? mnl_attr_get_u32(a[FRA_TABLE]) : frh->table;
  static_cast<std::vector<Rule>*>(data)->push_back(r);
  return MNL_CB_OK;
}

int routeCallback(const nlmsghdr* nlh, void* data) {
  const auto* rtm = static_cast<const rtmsg*>(mnl_nlmsg_get_payload(nlh));
  if (rtm->rtm_protocol != kRouteProtocol || (rtm->rtm_flags & RTM_F_CLONED) != 0) {
    return MNL_CB_OK;
  }
  if (rtm->rtm_type != RTN_UNICAST && rtm->rtm_type != RTN_UNREACHABLE) {
    return MNL_CB_OK;
  }
  Attrs a(RTA_MAX);
  mnl_attr_parse(nlh, sizeof *rtm, collectAttr, &a);
  const Family f = rtm->rtm_family == AF_INET ? Family::kIPv4 : Family::kIPv6;
  Route r;
  r.table = a[RTA_TABLE] != nullptr ? mnl_attr_get_u32(a[RTA_TABLE]) : rtm->rtm_table;
  r.type = rtm->rtm_type == RTN_UNREACHABLE ? Route::Type::kUnreachable : Route::Type::kUnicast;
  r.dst = ipam::Prefix{getAddress(a[RTA_DST], f).value_or(Address{f, 0}), rtm->rtm_dst_len};
  r.gateway = getAddress(a[RTA_GATEWAY], f);
  if (r.type == Route::Type::kUnicast && a[RTA_OIF] != nullptr) {
    r.dev = interfaceName(mnl_attr_get_u32(a[RTA_OIF]));
  }
  r.onlink = (rtm->rtm_flags & RTNH_F_ONLINK) != 0;
  r.metric = a[RTA_PRIORITY] != nullptr ? mnl_attr_get_u32(a[RTA_PRIORITY]) : 0;
  static_cast<std::vector<Route>*>(data)->push_back(r);
  return MNL_CB_OK;
}

}  // namespace

Result<std::vector<Rule>, std::string> RoutingApplier::readRules() {
  std::vector<Rule> out;
  for (auto f : {Family::kIPv4, Family::kIPv6}) {
    char buf[MNL_SOCKET_BUFFER_SIZE];
    nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_GETRULE;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    auto* frh = static_cast<fib_rule_hdr*>(mnl_nlmsg_put_extra_header(nlh, sizeof(fib_rule_hdr)));
    frh->family = static_cast<uint8_t>(addressFamily(f));
    auto r = nl_.request(nlh, ruleCallback, &out);
    if (!r) {
      return unexpected(r.error());
    }
  }
  return out;
}

Result<std::vector<Route>, std::string> RoutingApplier::readRoutes() {
  std::vector<Route> out;
  for (auto f : {Family::kIPv4, Family::kIPv6}) {
    char buf[MNL_SOCKET_BUFFER_SIZE];
    nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_GETROUTE;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    auto* rtm = static_cast<rtmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(rtmsg)));
    rtm->rtm_family = static_cast<uint8_t>(addressFamily(f));
    auto r = nl_.request(nlh, routeCallback, &out);
    if (!r) {
      return unexpected(r.error());
    }
  }
  return out;
}

Result<Ok, std::string> RoutingApplier::changeRule(const Rule& rule, bool add) {
  char buf[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = add ? RTM_NEWRULE : RTM_DELRULE;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | (add ? unsigned{NLM_F_CREATE | NLM_F_EXCL} : 0U);
  auto* frh = static_cast<fib_rule_hdr*>(mnl_nlmsg_put_extra_header(nlh, sizeof(fib_rule_hdr)));
  frh->family = static_cast<uint8_t>(addressFamily(rule.family));
  frh->action = FR_ACT_TO_TBL;
  frh->table = rule.table < 256 ? static_cast<uint8_t>(rule.table) : uint8_t{RT_TABLE_UNSPEC};
  mnl_attr_put_u32(nlh, FRA_PRIORITY, rule.priority);
  mnl_attr_put_u32(nlh, FRA_FWMARK, rule.mark);
  mnl_attr_put_u32(nlh, FRA_FWMASK, rule.mask);
  mnl_attr_put_u32(nlh, FRA_TABLE, rule.table);
  mnl_attr_put_u8(nlh, FRA_PROTOCOL, kRouteProtocol);
  auto r = nl_.request(nlh, nullptr, nullptr);
  if (!r) {
    return unexpected((add ? "add rule " : "delete rule ") + rule.toString() + ": " + r.error());
  }
  return Ok{};
}

Result<Ok, std::string> RoutingApplier::changeRoute(const Route& route, bool add) {
  char buf[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = add ? RTM_NEWROUTE : RTM_DELROUTE;
  // Replace: a route of the same key (table, destination, metric) changes in place, no gap.
  nlh->nlmsg_flags =
      NLM_F_REQUEST | NLM_F_ACK | (add ? unsigned{NLM_F_CREATE | NLM_F_REPLACE} : 0U);
  auto* rtm = static_cast<rtmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(rtmsg)));
  const bool unreachable = route.type == Route::Type::kUnreachable;
  rtm->rtm_family = static_cast<uint8_t>(addressFamily(route.family()));
  rtm->rtm_dst_len = static_cast<uint8_t>(route.dst.bits);
  rtm->rtm_table = route.table < 256 ? static_cast<uint8_t>(route.table) : uint8_t{RT_TABLE_UNSPEC};
  rtm->rtm_protocol = kRouteProtocol;
  rtm->rtm_scope =
      !unreachable && !route.gateway ? uint8_t{RT_SCOPE_LINK} : uint8_t{RT_SCOPE_UNIVERSE};
  rtm->rtm_type = unreachable ? uint8_t{RTN_UNREACHABLE} : uint8_t{RTN_UNICAST};
  rtm->rtm_flags = route.onlink ? unsigned{RTNH_F_ONLINK} : 0U;
  mnl_attr_put_u32(nlh, RTA_TABLE, route.table);
  if (route.dst.bits > 0) {
    putAddress(nlh, RTA_DST, route.dst.address);
  }
  if (route.gateway) {
    putAddress(nlh, RTA_GATEWAY, *route.gateway);
  }
  if (!route.dev.empty()) {
    unsigned idx = if_nametoindex(route.dev.c_str());
    if (idx == 0) {
      return unexpected("route " + route.toString() + ": no device " + route.dev);
    }
    mnl_attr_put_u32(nlh, RTA_OIF, idx);
  }
  mnl_attr_put_u32(nlh, RTA_PRIORITY, route.metric);
  auto r = nl_.request(nlh, nullptr, nullptr);
  if (!r) {
    return unexpected((add ? "add route " : "delete route ") + route.toString() + ": " + r.error());
  }
  return Ok{};
}

Result<int, std::string> RoutingApplier::apply(const std::vector<Rule>& rules,
                                               const std::vector<Route>& routes) {
  auto haveRules = readRules();
  auto haveRoutes = readRoutes();
  if (!haveRules) {
    return unexpected(haveRules.error());
  }
  if (!haveRoutes) {
    return unexpected(haveRoutes.error());
  }
  int changes = 0;
  const auto ruleLines = linesOf(*haveRules);
  const auto routeLines = linesOf(*haveRoutes);
  std::set<std::string> wantedRouteKeys;
  // Routes before the rules that point at their tables: a new rule never meets an empty table.
  for (const auto& r : routes) {
    wantedRouteKeys.insert(r.key());
    if (!routeLines.contains(r.toString())) {
      auto done = changeRoute(r, true);
      if (!done) {
        return unexpected(done.error());
      }
      ++changes;
    }
  }
  for (const auto& r : rules) {
    if (!ruleLines.contains(r.toString())) {
      auto done = changeRule(r, true);
      if (!done) {
        return unexpected(done.error());
      }
      ++changes;
    }
  }
  const auto wantedRules = linesOf(rules);
  for (const auto& r : *haveRules) {
    if (!wantedRules.contains(r.toString())) {
      auto done = changeRule(r, false);
      if (!done) {
        return unexpected(done.error());
      }
      ++changes;
    }
  }
  for (const auto& r : *haveRoutes) {
    if (!wantedRouteKeys.contains(r.key())) {
      auto done = changeRoute(r, false);
      if (!done) {
        return unexpected(done.error());
      }
      ++changes;
    }
  }
  return changes;
}

Result<int, std::string> RoutingApplier::removeAll() {
  return apply({}, {});
}

}  // namespace egress::dataplane
