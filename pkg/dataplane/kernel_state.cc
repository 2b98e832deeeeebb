#include "pkg/dataplane/kernel_state.h"

#include <cstdio>

namespace egress::dataplane {
namespace {

template <typename T>
void appendAll(std::string& out, const char* what, const std::vector<T>& items) {
  for (const auto& i : items) {
    out += what;
    out += ' ';
    out += i.toString();
    out += '\n';
  }
}

}  // namespace

std::string macText(const Mac& mac) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
                mac[4], mac[5]);
  return buf;
}

std::string Link::toString() const {
  if (kind == Kind::kIfb) {
    return name + " ifb";  // its MAC and MTU are the kernel's: nothing is sent through it
  }
  return name + " vxlan mac " + macText(mac) + " mtu " + std::to_string(mtu) + " vni " +
         std::to_string(vni) + " port " + std::to_string(port) + " local " +
         (local ? local->toString() : "-") + " dev " + underlay;
}

std::string LinkAddress::toString() const {
  return prefix.toString() + " dev " + dev;
}

std::string Route::key() const {
  return "table " + std::to_string(table) + " " + dst.toString() + " metric " +
         std::to_string(metric);
}

std::string Route::toString() const {
  std::string out = type == Type::kUnreachable ? "unreachable " : "";
  out += dst.toString();
  if (gateway) {
    out += " via " + gateway->toString();
  }
  if (!dev.empty()) {
    out += " dev " + dev;
  }
  if (onlink) {
    out += " onlink";
  }
  return out + " table " + std::to_string(table) + " metric " + std::to_string(metric);
}

std::string Rule::toString() const {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s pref %u fwmark 0x%x/0x%x lookup %u",
                family == ipam::Family::kIPv4 ? "ipv4" : "ipv6", priority, mark, mask, table);
  return buf;
}

std::string Neighbour::key() const {
  return (proxy ? "proxy " : "") + ip.toString() + " dev " + dev;
}

std::string Neighbour::toString() const {
  return proxy ? key() : ip.toString() + " dev " + dev + " lladdr " + macText(mac);
}

std::string FdbEntry::toString() const {
  return key() + " dst " + dst.toString();
}

std::string KernelState::toString() const {
  std::string out;
  appendAll(out, "link", links);
  appendAll(out, "addr", addresses);
  appendAll(out, "rule", rules);
  appendAll(out, "route", routes);
  appendAll(out, "neigh", neighbours);
  appendAll(out, "fdb", fdb);
  appendAll(out, "sysctl", sysctls);
  out += nft.toString();
  return out;
}

}  // namespace egress::dataplane
