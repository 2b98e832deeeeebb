// File: rtnetlink.h
//
// One rtnetlink socket (libmnl) and the attribute helpers the appliers share: a request is sent
// and every reply message handed to a callback until the dump ends or the kernel acks. The
// appliers (routing_applier.h, link_applier.h) each own one; it is not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pkg/base/result.h"
#include "pkg/ipam/address.h"

struct mnl_socket;
struct nlattr;
struct nlmsghdr;

namespace egress::dataplane {

// Unassigned in iproute2's rt_protos (kernel 0-4, routing daemons 8-192): the tag on every
// route, rule, address and neighbour egw-agent adds (rtm_protocol, FRA_PROTOCOL, IFA_PROTO,
// NDA_PROTOCOL), so that it reads back, diffs and removes only its own.
inline constexpr uint8_t kRouteProtocol = 240;

class Rtnetlink {
 public:
  using Callback = int (*)(const nlmsghdr*, void*);

  // `protocol` is the netlink family: NETLINK_ROUTE (0) for the appliers, NETLINK_NETFILTER
  // for conntrack_cleaner.h (the request/ack loop is the same).
  explicit Rtnetlink(int protocol = 0);
  ~Rtnetlink();
  Rtnetlink(const Rtnetlink&) = delete;
  Rtnetlink& operator=(const Rtnetlink&) = delete;

  // Sends `nlh` (its sequence number is set here) and runs `cb` (may be null) on every reply.
  Result<Ok, std::string> request(nlmsghdr* nlh, Callback cb, void* data);
  // The errno of the last request that failed (the kernel's answer, or the socket's), 0 after
  // one that succeeded: callers that accept some answers (ENOENT, EEXIST) test it, not the text.
  int lastErrno() const { return lastErrno_; }

 private:
  // Reads and drops the rest of the current dump, up to its end.
  void drain(std::vector<char>& buf);

  mnl_socket* nl_ = nullptr;
  uint32_t portid_ = 0;
  uint32_t seq_ = 0;
  int lastErrno_ = 0;
  std::string openError_;
};

// A link message (type RTM_*LINK, `flags` besides NLM_F_REQUEST) for interface `index` (0: none)
// at the start of `buf`; its ifinfomsg follows the header.
nlmsghdr* linkMessage(char* buf, uint16_t type, uint16_t flags, int index);

int addressFamily(ipam::Family f);
void putAddress(nlmsghdr* nlh, uint16_t type, const ipam::Address& a);
std::optional<ipam::Address> getAddress(const nlattr* attr, ipam::Family f);
// The interface's name, or "" when the index is unknown.
std::string interfaceName(uint32_t index);

// The attributes of one message by type (attributes past `max` are ignored).
struct Attrs {
  std::vector<const nlattr*> tb;
  explicit Attrs(size_t max) : tb(max + 1, nullptr) {}
  const nlattr* operator[](size_t t) const { return t < tb.size() ? tb[t] : nullptr; }
};
// mnl_attr_parse's callback filling an Attrs.
int collectAttr(const nlattr* attr, void* data);

// One canonical line per item: the sets the appliers diff.
template <typename T>
std::set<std::string> linesOf(const std::vector<T>& items) {
  std::set<std::string> out;
  for (const auto& i : items) {
    out.insert(i.toString());
  }
  return out;
}

}  // namespace egress::dataplane
