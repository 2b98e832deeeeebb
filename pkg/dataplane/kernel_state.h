// File: kernel_state.h
//
// The kernel state egw-agent owns on a node, as values: its links (the VXLAN tunnel and the
// device egress-IP host routes point at), their addresses, its policy-routing rules, routes,
// neighbours (tunnel peers and proxy ARP/NDP entries), the tunnel's FDB, the sysctls it needs,
// and its nftables table. desired_state.h computes one; the appliers (routing_applier.h,
// link_applier.h, sysctl_applier.h, nft_applier.h) read the actual one back and apply the
// difference. Every item prints as one canonical line (toString), and identifies the kernel
// object it is (key: what the kernel replaces in place); equal lines mean equal kernel objects,
// so a diff is a set difference of lines.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pkg/dataplane/nft_ruleset.h"
#include "pkg/ipam/address.h"

namespace egress::dataplane {

using Mac = std::array<uint8_t, 6>;
std::string macText(const Mac& mac);

// The main routing table (RT_TABLE_MAIN).
inline constexpr uint32_t kMainTable = 254;
// The metric of the fail-closed route: below every real route, so it wins only alone.
inline constexpr uint32_t kUnreachableMetric = 4294967295U;
// The metric the kernel gives an IPv6 route added with none (IP6_RT_PRIO_USER): desired routes
// carry it explicitly so that what is read back compares equal.
inline constexpr uint32_t kIPv6DefaultMetric = 1024;

struct Link {
  enum class Kind { kVxlan, kIfb };
  std::string name;
  Kind kind = Kind::kVxlan;
  Mac mac{};
  uint32_t mtu = 0;
  // VXLAN only.
  uint32_t vni = 0;
  uint16_t port = 0;
  std::optional<ipam::Address> local;
  std::string underlay;

  std::string key() const { return name; }
  std::string toString() const;

  bool operator==(const Link&) const = default;
};

struct LinkAddress {
  std::string dev;
  ipam::Prefix prefix;

  std::string key() const { return toString(); }
  std::string toString() const;

  bool operator==(const LinkAddress&) const = default;
};

struct Route {
  enum class Type { kUnicast, kUnreachable };
  uint32_t table = kMainTable;
  Type type = Type::kUnicast;
  ipam::Prefix dst;  // 0.0.0.0/0 or ::/0 for default
  std::optional<ipam::Address> gateway;
  std::string dev;  // empty for unreachable
  bool onlink = false;
  uint32_t metric = 0;

  ipam::Family family() const { return dst.address.family; }
  // The kernel's identity of a route: table, family, destination, metric.
  std::string key() const;
  std::string toString() const;

  bool operator==(const Route&) const = default;
};

struct Rule {
  ipam::Family family = ipam::Family::kIPv4;
  uint32_t priority = 0;
  uint32_t mark = 0;
  uint32_t mask = 0;
  uint32_t table = 0;

  std::string key() const { return toString(); }
  std::string toString() const;

  bool operator==(const Rule&) const = default;
};

struct Neighbour {
  std::string dev;
  ipam::Address ip;
  // A proxy entry (NTF_PROXY: answer ARP/NDP for ip on dev) has no address; a peer has one.
  bool proxy = false;
  Mac mac{};

  std::string key() const;
  std::string toString() const;

  bool operator==(const Neighbour&) const = default;
};

struct FdbEntry {
  std::string dev;
  Mac mac{};
  ipam::Address dst;

  std::string key() const { return dev + " " + macText(mac); }
  std::string toString() const;

  bool operator==(const FdbEntry&) const = default;
};

// A kernel parameter under /proc/sys (slash-separated, so interface names may contain dots).
struct Sysctl {
  std::string path;  // "net/ipv4/conf/egw0/rp_filter"
  std::string value;

  std::string key() const { return path; }
  std::string toString() const { return path + " = " + value; }

  bool operator==(const Sysctl&) const = default;
};

struct KernelState {
  std::vector<Link> links;
  std::vector<LinkAddress> addresses;
  std::vector<Rule> rules;
  std::vector<Route> routes;
  std::vector<Neighbour> neighbours;
  std::vector<FdbEntry> fdb;
  std::vector<Sysctl> sysctls;
  NftTable nft;

  // Every item, one line each, in a fixed order: equal states print equal.
  std::string toString() const;
};

}  // namespace egress::dataplane
