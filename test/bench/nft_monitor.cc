#include "test/bench/nft_monitor.h"

#include <cerrno>
#include <cstring>
#include <future>

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

namespace egress::bench {
namespace {

// The attributes of a netlink message or nest, in order.
template <class F>
void forEachAttribute(const char* data, size_t len, F f) {
  while (len >= sizeof(nlattr)) {
    const auto* a = reinterpret_cast<const nlattr*>(data);
    if (a->nla_len < sizeof(nlattr) || a->nla_len > len) {
      return;
    }
    f(a->nla_type & NLA_TYPE_MASK, data + NLA_HDRLEN, a->nla_len - NLA_HDRLEN);
    const size_t step = NLA_ALIGN(a->nla_len);
    if (step >= len) {
      return;
    }
    data += step;
    len -= step;
  }
}

}  // namespace

std::string addressKey(const std::string& ip) {
  unsigned char buf[16];
  if (inet_pton(AF_INET, ip.c_str(), buf) == 1) {
    return std::string(reinterpret_cast<char*>(buf), 4);
  }
  if (inet_pton(AF_INET6, ip.c_str(), buf) == 1) {
    return std::string(reinterpret_cast<char*>(buf), 16);
  }
  return "";
}

std::string NftMonitor::start(const std::string& ns) {
  std::promise<std::string> opened;
  auto result = opened.get_future();
  thread_ = std::thread([this, ns, &opened] {
    // A thread's network namespace is its own to change: this one stays in `ns`.
    const int target = open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
    if (target < 0 || setns(target, CLONE_NEWNET) != 0) {
      opened.set_value("cannot enter network namespace " + ns + ": " + std::strerror(errno));
      if (target >= 0) {
        close(target);
      }
      return;
    }
    close(target);
    const int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
    sockaddr_nl local{};
    local.nl_family = AF_NETLINK;
    const int group = NFNLGRP_NFTABLES;
    // A table replaced whole is one notification per element: room for the largest.
    const int buffer = 256 << 20;
    const timeval tick{0, 200000};
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 ||
        setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof group) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buffer, sizeof buffer) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tick, sizeof tick) != 0) {
      opened.set_value(std::string("the nftables monitor socket: ") + std::strerror(errno));
      if (fd >= 0) {
        close(fd);
      }
      return;
    }
    opened.set_value("");
    loop(fd);
    close(fd);
  });
  std::string error = result.get();
  if (!error.empty()) {
    thread_.join();
  }
  return error;
}

void NftMonitor::stop() {
  stopping_ = true;
  if (thread_.joinable()) {
    thread_.join();
  }
}

void NftMonitor::watch(const std::string& key) {
  std::lock_guard lock(mu_);
  watching_.insert(key);
}

std::optional<NftMonitor::Clock::time_point> NftMonitor::added(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = added_.find(key);
  if (it == added_.end()) {
    return std::nullopt;
  }
  return it->second;
}

std::vector<NftMonitor::Transaction> NftMonitor::transactionsSince(Clock::time_point since) const {
  std::lock_guard lock(mu_);
  std::vector<Transaction> out;
  for (const auto& t : done_) {
    if (t.at >= since) {
      out.push_back(t);
    }
  }
  return out;
}

void NftMonitor::loop(int fd) {
  std::vector<char> buf(1 << 20);
  while (!stopping_) {
    const ssize_t n = recv(fd, buf.data(), buf.size(), 0);
    const auto at = Clock::now();
    if (n < 0) {
      if (errno == ENOBUFS) {
        ++overflows_;
      }
      continue;  // EAGAIN: the tick, to look at stopping_
    }
    parse(buf.data(), static_cast<size_t>(n), at);
  }
}

void NftMonitor::parse(const char* data, size_t len, Clock::time_point at) {
  std::lock_guard lock(mu_);
  for (auto* h = reinterpret_cast<const nlmsghdr*>(data); NLMSG_OK(h, len);
       h = NLMSG_NEXT(h, len)) {
    if (NFNL_SUBSYS_ID(h->nlmsg_type) != NFNL_SUBSYS_NFTABLES) {
      continue;
    }
    const int msg = NFNL_MSG_TYPE(h->nlmsg_type);
    if (msg == NFT_MSG_NEWGEN) {
      // The end of one transaction's notifications.
      if (open_.added + open_.removed + open_.objects > 0) {
        open_.at = at;
        done_.push_back(std::move(open_));
      }
      open_ = Transaction{};
      continue;
    }
    const size_t header = NLMSG_ALIGN(sizeof(nfgenmsg));
    if (h->nlmsg_len < NLMSG_HDRLEN + header) {
      continue;
    }
    const char* attrs = static_cast<const char*>(NLMSG_DATA(h)) + header;
    const size_t attrsLen = h->nlmsg_len - NLMSG_HDRLEN - header;
    if (msg != NFT_MSG_NEWSETELEM && msg != NFT_MSG_DELSETELEM) {
      // Every other object's message names its table in attribute 1 (NFTA_TABLE_NAME,
      // NFTA_CHAIN_TABLE, NFTA_RULE_TABLE, NFTA_SET_TABLE, NFTA_OBJ_TABLE, ...).
      std::string table;
      forEachAttribute(attrs, attrsLen, [&](int type, const char* p, size_t n) {
        if (type == 1 && table.empty()) {
          table.assign(p, strnlen(p, n));
        }
      });
      if (table == table_) {
        ++open_.objects;
        open_.bytes += h->nlmsg_len;
      }
      continue;
    }
    std::string table;
    std::vector<std::string> keys;
    forEachAttribute(attrs, attrsLen, [&](int type, const char* p, size_t n) {
      if (type == NFTA_SET_ELEM_LIST_TABLE) {
        table.assign(p, strnlen(p, n));
      } else if (type == NFTA_SET_ELEM_LIST_ELEMENTS) {
        forEachAttribute(p, n, [&](int, const char* elem, size_t elemLen) {
          std::string key;
          forEachAttribute(elem, elemLen, [&](int t, const char* k, size_t kn) {
            if (t == NFTA_SET_ELEM_KEY) {
              forEachAttribute(k, kn, [&](int v, const char* value, size_t vn) {
                if (v == NFTA_DATA_VALUE) {
                  key.assign(value, vn);
                }
              });
            }
          });
          keys.push_back(std::move(key));
        });
      }
    });
    if (table != table_) {
      continue;
    }
    open_.bytes += h->nlmsg_len;
    if (msg == NFT_MSG_DELSETELEM) {
      open_.removed += static_cast<int>(keys.size());
      continue;
    }
    open_.added += static_cast<int>(keys.size());
    for (auto& key : keys) {
      if (watching_.contains(key) && !added_.contains(key)) {
        added_[key] = at;
        open_.watched.push_back(key);
      }
    }
  }
}

}  // namespace egress::bench
