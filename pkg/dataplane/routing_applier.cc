#include "pkg/dataplane/routing_applier.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <vector>

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>

namespace egress::dataplane {
namespace {

using ipam::Address;
using ipam::Family;

int afOf(Family f) {
  return f == Family::kIPv4 ? AF_INET : AF_INET6;
}

void putAddress(nlmsghdr* nlh, uint16_t type, const Address& a) {
  if (a.family == Family::kIPv4) {
    uint32_t v = htonl(static_cast<uint32_t>(a.value));
    mnl_attr_put(nlh, type, sizeof v, &v);
    return;
  }
  uint8_t b[16];
  for (int i = 0; i < 16; ++i) {
    b[i] = static_cast<uint8_t>(a.value >> (8 * (15 - i)));
  }
  mnl_attr_put(nlh, type, sizeof b, b);
}

std::optional<Address> getAddress(const nlattr* attr, Family f) {
  if (attr == nullptr) {
    return std::nullopt;
  }
  const auto* b = static_cast<const uint8_t*>(mnl_attr_get_payload(attr));
  const size_t len = mnl_attr_get_payload_len(attr);
  if (len != (f == Family::kIPv4 ? 4U : 16U)) {
    return std::nullopt;
  }
  Address a{f, 0};
  for (size_t i = 0; i < len; ++i) {
    a.value = (a.value << 8) | b[i];
  }
  return a;
}

// Collects the attributes of one message by type (attributes past `max` are ignored).
struct Attrs {
  std::vector<const nlattr*> tb;
  explicit Attrs(size_t max) : tb(max + 1, nullptr) {}
  const nlattr* operator[](size_t t) const { return t < tb.size() ? tb[t] : nullptr; }
};

int collect(const nlattr* attr, void* data) {
  auto* a = static_cast<Attrs*>(data);
  auto type = static_cast<size_t>(mnl_attr_get_type(attr));
  if (type < a->tb.size()) {
    a->tb[type] = attr;
  }
  return MNL_CB_OK;
}

int ruleCallback(const nlmsghdr* nlh, void* data) {
  const auto* frh = static_cast<const fib_rule_hdr*>(mnl_nlmsg_get_payload(nlh));
  Attrs a(FRA_MAX);
  mnl_attr_parse(nlh, sizeof *frh, collect, &a);
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
  mnl_attr_parse(nlh, sizeof *rtm, collect, &a);
  const Family f = rtm->rtm_family == AF_INET ? Family::kIPv4 : Family::kIPv6;
  Route r;
  r.table = a[RTA_TABLE] != nullptr ? mnl_attr_get_u32(a[RTA_TABLE]) : rtm->rtm_table;
  r.type = rtm->rtm_type == RTN_UNREACHABLE ? Route::Type::kUnreachable : Route::Type::kUnicast;
  r.dst = ipam::Prefix{getAddress(a[RTA_DST], f).value_or(Address{f, 0}), rtm->rtm_dst_len};
  r.gateway = getAddress(a[RTA_GATEWAY], f);
  if (r.type == Route::Type::kUnicast && a[RTA_OIF] != nullptr) {
    char name[IF_NAMESIZE];
    if (if_indextoname(mnl_attr_get_u32(a[RTA_OIF]), name) != nullptr) {
      r.dev = name;
    }
  }
  r.onlink = (rtm->rtm_flags & RTNH_F_ONLINK) != 0;
  r.metric = a[RTA_PRIORITY] != nullptr ? mnl_attr_get_u32(a[RTA_PRIORITY]) : 0;
  static_cast<std::vector<Route>*>(data)->push_back(r);
  return MNL_CB_OK;
}

template <typename T>
std::set<std::string> linesOf(const std::vector<T>& items) {
  std::set<std::string> out;
  for (const auto& i : items) {
    out.insert(i.toString());
  }
  return out;
}

}  // namespace

RoutingApplier::RoutingApplier() {
  nl_ = mnl_socket_open(NETLINK_ROUTE);
  if (nl_ == nullptr || mnl_socket_bind(nl_, 0, MNL_SOCKET_AUTOPID) < 0) {
    openError_ = std::string("rtnetlink: ") + std::strerror(errno);
    return;
  }
  portid_ = mnl_socket_get_portid(nl_);
}

RoutingApplier::~RoutingApplier() {
  if (nl_ != nullptr) {
    mnl_socket_close(nl_);
  }
}

Result<Ok, std::string> RoutingApplier::request(nlmsghdr* nlh, int (*cb)(const nlmsghdr*, void*),
                                                void* data) {
  if (!openError_.empty()) {
    return unexpected(openError_);
  }
  nlh->nlmsg_seq = ++seq_;
  if (mnl_socket_sendto(nl_, nlh, nlh->nlmsg_len) < 0) {
    return unexpected(std::string("rtnetlink send: ") + std::strerror(errno));
  }
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE * 4);
  for (;;) {
    ssize_t n = mnl_socket_recvfrom(nl_, buf.data(), buf.size());
    if (n < 0) {
      return unexpected(std::string("rtnetlink recv: ") + std::strerror(errno));
    }
    int ret = mnl_cb_run(buf.data(), static_cast<size_t>(n), seq_, portid_, cb, data);
    if (ret == MNL_CB_ERROR) {
      return unexpected(std::string("rtnetlink: ") + std::strerror(errno));
    }
    if (ret == MNL_CB_STOP) {
      return Ok{};
    }
  }
}

Result<std::vector<Rule>, std::string> RoutingApplier::readRules() {
  std::vector<Rule> out;
  for (auto f : {Family::kIPv4, Family::kIPv6}) {
    char buf[MNL_SOCKET_BUFFER_SIZE];
    nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_GETRULE;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    auto* frh = static_cast<fib_rule_hdr*>(mnl_nlmsg_put_extra_header(nlh, sizeof(fib_rule_hdr)));
    frh->family = static_cast<uint8_t>(afOf(f));
    auto r = request(nlh, ruleCallback, &out);
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
    rtm->rtm_family = static_cast<uint8_t>(afOf(f));
    auto r = request(nlh, routeCallback, &out);
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
  frh->family = static_cast<uint8_t>(afOf(rule.family));
  frh->action = FR_ACT_TO_TBL;
  frh->table = rule.table < 256 ? static_cast<uint8_t>(rule.table) : uint8_t{RT_TABLE_UNSPEC};
  mnl_attr_put_u32(nlh, FRA_PRIORITY, rule.priority);
  mnl_attr_put_u32(nlh, FRA_FWMARK, rule.mark);
  mnl_attr_put_u32(nlh, FRA_FWMASK, rule.mask);
  mnl_attr_put_u32(nlh, FRA_TABLE, rule.table);
  mnl_attr_put_u8(nlh, FRA_PROTOCOL, kRouteProtocol);
  auto r = request(nlh, nullptr, nullptr);
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
  rtm->rtm_family = static_cast<uint8_t>(afOf(route.family()));
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
  auto r = request(nlh, nullptr, nullptr);
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
