#include "pkg/dataplane/conntrack_cleaner.h"

#include <algorithm>
#include <cerrno>
#include <vector>

#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <linux/netlink.h>
#include <sys/socket.h>

namespace egress::dataplane {

using ipam::Address;
using ipam::Family;

namespace {

nlmsghdr* conntrackMessage(char* buf, uint8_t type, uint16_t flags, Family f) {
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | type;
  nlh->nlmsg_flags = NLM_F_REQUEST | flags;
  auto* nfg = static_cast<nfgenmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(nfgenmsg)));
  nfg->nfgen_family = static_cast<uint8_t>(addressFamily(f));
  nfg->version = NFNETLINK_V0;
  nfg->res_id = 0;
  return nlh;
}

struct Dump {
  Family family;
  const std::set<Address>& ips;
  // The reply tuples (CTA_TUPLE_REPLY's payload) of the entries to delete.
  std::vector<std::vector<char>> replies;
};

int onEntry(const nlmsghdr* nlh, void* data) {
  auto& d = *static_cast<Dump*>(data);
  Attrs top(CTA_MAX);
  mnl_attr_parse(nlh, sizeof(nfgenmsg), collectAttr, &top);
  const nlattr* reply = top[CTA_TUPLE_REPLY];
  if (reply == nullptr) {
    return MNL_CB_OK;
  }
  Attrs tuple(CTA_TUPLE_MAX);
  mnl_attr_parse_nested(reply, collectAttr, &tuple);
  if (tuple[CTA_TUPLE_IP] == nullptr) {
    return MNL_CB_OK;
  }
  Attrs ip(CTA_IP_MAX);
  mnl_attr_parse_nested(tuple[CTA_TUPLE_IP], collectAttr, &ip);
  const auto dst =
      getAddress(ip[d.family == Family::kIPv4 ? CTA_IP_V4_DST : CTA_IP_V6_DST], d.family);
  if (dst && d.ips.contains(*dst)) {
    const auto* p = static_cast<const char*>(mnl_attr_get_payload(reply));
    d.replies.emplace_back(p, p + mnl_attr_get_payload_len(reply));
  }
  return MNL_CB_OK;
}

}  // namespace

ConntrackCleaner::ConntrackCleaner() : nl_(NETLINK_NETFILTER) {}

Result<size_t, std::string> ConntrackCleaner::forget(const std::set<Address>& ips) {
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  size_t deleted = 0;
  std::string errors;
  for (Family f : {Family::kIPv4, Family::kIPv6}) {
    if (std::none_of(ips.begin(), ips.end(), [f](const Address& a) { return a.family == f; })) {
      continue;
    }
    Dump d{f, ips, {}};
    auto dumped =
        nl_.request(conntrackMessage(buf.data(), IPCTNL_MSG_CT_GET, NLM_F_DUMP, f), onEntry, &d);
    if (!dumped.ok()) {
      errors += (errors.empty() ? "" : "; ") + ("conntrack dump: " + dumped.error());
      continue;  // the other family still
    }
    for (const auto& reply : d.replies) {
      nlmsghdr* nlh = conntrackMessage(buf.data(), IPCTNL_MSG_CT_DELETE, NLM_F_ACK, f);
      mnl_attr_put(nlh, CTA_TUPLE_REPLY | NLA_F_NESTED, reply.size(), reply.data());
      auto r = nl_.request(nlh, nullptr, nullptr);
      if (r.ok()) {
        ++deleted;
      } else if (nl_.lastErrno() != ENOENT) {
        errors += (errors.empty() ? "" : "; ") + ("conntrack delete: " + r.error());
        break;
      }
    }
  }
  if (!errors.empty()) {
    return unexpected(errors + " (" + std::to_string(deleted) + " deleted)");
  }
  return deleted;
}

}  // namespace egress::dataplane
