#include "pkg/dataplane/rtnetlink.h"

#include <cerrno>
#include <cstring>

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>

namespace egress::dataplane {

using ipam::Address;
using ipam::Family;

Rtnetlink::Rtnetlink(int protocol) {
  nl_ = mnl_socket_open(protocol);
  if (nl_ == nullptr || mnl_socket_bind(nl_, 0, MNL_SOCKET_AUTOPID) < 0) {
    openError_ = std::string("rtnetlink: ") + std::strerror(errno);
    return;
  }
  portid_ = mnl_socket_get_portid(nl_);
}

Rtnetlink::~Rtnetlink() {
  if (nl_ != nullptr) {
    mnl_socket_close(nl_);
  }
}

Result<Ok, std::string> Rtnetlink::request(nlmsghdr* nlh, Callback cb, void* data) {
  lastErrno_ = 0;
  if (!openError_.empty()) {
    lastErrno_ = EBADF;
    return unexpected(openError_);
  }
  nlh->nlmsg_seq = ++seq_;
  if (mnl_socket_sendto(nl_, nlh, nlh->nlmsg_len) < 0) {
    lastErrno_ = errno;
    return unexpected(std::string("rtnetlink send: ") + std::strerror(errno));
  }
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE * 4);
  for (;;) {
    ssize_t n = mnl_socket_recvfrom(nl_, buf.data(), buf.size());
    if (n < 0) {
      lastErrno_ = errno;
      return unexpected(std::string("rtnetlink recv: ") + std::strerror(errno));
    }
    // Message by message: what is left of an earlier request's dump that ended early (a
    // callback's error, an interrupted dump) still arrives, under that request's sequence number,
    // and is skipped rather than taken for this answer's error.
    int left = static_cast<int>(n);
    for (auto* m = reinterpret_cast<nlmsghdr*>(buf.data()); mnl_nlmsg_ok(m, left);
         m = mnl_nlmsg_next(m, &left)) {
      if (m->nlmsg_seq != seq_) {
        continue;
      }
      int ret = mnl_cb_run(m, m->nlmsg_len, seq_, portid_, cb, data);
      if (ret == MNL_CB_ERROR) {
        lastErrno_ = errno;
        const std::string error = std::string("rtnetlink: ") + std::strerror(errno);
        // A dump that ends early here (a callback's error, an interrupted dump) goes on in the
        // kernel, which refuses any other dump on this socket (EBUSY) until it is read to its
        // end: read it now.
        const bool ended = m->nlmsg_type == NLMSG_ERROR || m->nlmsg_type == NLMSG_DONE;
        if ((nlh->nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP && !ended) {
          drain(buf);
        }
        return unexpected(error);
      }
      if (ret == MNL_CB_STOP) {
        return Ok{};
      }
    }
  }
}

void Rtnetlink::drain(std::vector<char>& buf) {
  for (;;) {
    ssize_t n = mnl_socket_recvfrom(nl_, buf.data(), buf.size());
    if (n < 0) {
      return;
    }
    int left = static_cast<int>(n);
    for (auto* m = reinterpret_cast<nlmsghdr*>(buf.data()); mnl_nlmsg_ok(m, left);
         m = mnl_nlmsg_next(m, &left)) {
      if (m->nlmsg_seq == seq_ && (m->nlmsg_type == NLMSG_DONE || m->nlmsg_type == NLMSG_ERROR)) {
        return;
      }
    }
  }
}

nlmsghdr* linkMessage(char* buf, uint16_t type, uint16_t flags, int index) {
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = type;
  nlh->nlmsg_flags = NLM_F_REQUEST | flags;
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = index;
  return nlh;
}

int addressFamily(Family f) {
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

std::string interfaceName(uint32_t index) {
  char name[IF_NAMESIZE];
  return if_indextoname(index, name) != nullptr ? std::string(name) : std::string();
}

int collectAttr(const nlattr* attr, void* data) {
  auto* a = static_cast<Attrs*>(data);
  auto type = static_cast<size_t>(mnl_attr_get_type(attr));
  if (type < a->tb.size()) {
    a->tb[type] = attr;
  }
  return MNL_CB_OK;
}

}  // namespace egress::dataplane
