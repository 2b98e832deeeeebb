#include "pkg/dataplane/announcer.h"

#include <array>
#include <cerrno>
#include <cstring>

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace egress::dataplane {
namespace {

std::string errnoText(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

Result<std::array<uint8_t, 6>, std::string> hardwareAddress(int fd, const std::string& dev) {
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, dev.c_str(), IFNAMSIZ - 1);
  if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
    return unexpected(errnoText("MAC of " + dev));
  }
  std::array<uint8_t, 6> mac{};
  std::memcpy(mac.data(), ifr.ifr_hwaddr.sa_data, 6);
  return mac;
}

void putBytes(uint8_t* out, const ipam::Address& a) {
  const int n = a.family == ipam::Family::kIPv4 ? 4 : 16;
  for (int i = 0; i < n; ++i) {
    out[i] = static_cast<uint8_t>(a.value >> (8 * (n - 1 - i)));
  }
}

}  // namespace

Result<int, std::string> Announcer::announce(const std::string& dev, const ipam::Address& ip) {
  auto sent = ip.family == ipam::Family::kIPv4 ? arp(dev, ip) : neighbourAdvertisement(dev, ip);
  if (sent) {
    sent_ += static_cast<uint64_t>(*sent);
  }
  return sent;
}

Announcer::~Announcer() {
  for (int fd : {arpSocket_, naSocket_}) {
    if (fd >= 0) {
      close(fd);
    }
  }
}

Result<int, std::string> Announcer::arp(const std::string& dev, const ipam::Address& ip) {
  const unsigned index = if_nametoindex(dev.c_str());
  if (index == 0) {
    return unexpected("gratuitous ARP: no device " + dev);
  }
  if (arpSocket_ < 0) {
    // Protocol 0: a send-only socket. With ETH_P_ARP it would also receive every ARP frame of
    // every device, and, never read, keep its queue full.
    arpSocket_ = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (arpSocket_ < 0) {
      return unexpected(errnoText("gratuitous ARP: AF_PACKET socket"));
    }
  }
  const int fd = arpSocket_;
  auto mac = hardwareAddress(fd, dev);
  if (!mac) {
    return unexpected(mac.error());
  }
  sockaddr_ll to{};
  to.sll_family = AF_PACKET;
  to.sll_protocol = htons(ETH_P_ARP);
  to.sll_ifindex = static_cast<int>(index);
  to.sll_halen = 6;
  std::memset(to.sll_addr, 0xff, 6);
  int sent = 0;
  // A request (what most hosts update their cache from) and a reply (what the rest do).
  for (uint16_t op : {uint16_t{1}, uint16_t{2}}) {
    std::array<uint8_t, 28> p{};
    p[1] = 1;     // Ethernet
    p[2] = 0x08;  // IPv4
    p[4] = 6;
    p[5] = 4;
    p[7] = static_cast<uint8_t>(op);
    std::memcpy(&p[8], mac->data(), 6);
    putBytes(&p[14], ip);
    if (op == 2) {
      std::memcpy(&p[18], mac->data(), 6);
    }
    putBytes(&p[24], ip);
    if (sendto(fd, p.data(), p.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to) < 0) {
      return unexpected(errnoText("gratuitous ARP for " + ip.toString() + " on " + dev));
    }
    ++sent;
  }
  return sent;
}

Result<int, std::string> Announcer::neighbourAdvertisement(const std::string& dev,
                                                           const ipam::Address& ip) {
  const unsigned index = if_nametoindex(dev.c_str());
  if (index == 0) {
    return unexpected("unsolicited NA: no device " + dev);
  }
  if (naSocket_ < 0) {
    naSocket_ = socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMPV6);
    if (naSocket_ < 0) {
      return unexpected(errnoText("unsolicited NA: raw ICMPv6 socket"));
    }
    // Send-only: a raw ICMPv6 socket receives every ICMPv6 packet unless its filter blocks them.
    icmp6_filter none;
    ICMP6_FILTER_SETBLOCKALL(&none);
    if (setsockopt(naSocket_, IPPROTO_ICMPV6, ICMP6_FILTER, &none, sizeof none) < 0) {
      auto error = errnoText("unsolicited NA: ICMP6_FILTER");
      close(naSocket_);
      naSocket_ = -1;
      return unexpected(error);
    }
  }
  const int fd = naSocket_;
  auto mac = hardwareAddress(fd, dev);
  if (!mac) {
    return unexpected(mac.error());
  }
  // RFC 4861 7.1.2: a receiver drops an NA whose hop limit is not 255.
  int hops = 255;
  int ifindex = static_cast<int>(index);
  if (setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &hops, sizeof hops) < 0 ||
      setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &ifindex, sizeof ifindex) < 0) {
    return unexpected(errnoText("unsolicited NA: socket options"));
  }
  std::array<uint8_t, 32> p{};
  p[0] = 136;   // neighbour advertisement; the kernel fills in the checksum
  p[4] = 0x20;  // override, not solicited, not a router
  putBytes(&p[8], ip);
  p[24] = 2;  // target link-layer address option, 8 bytes
  p[25] = 1;
  std::memcpy(&p[26], mac->data(), 6);
  sockaddr_in6 to{};
  to.sin6_family = AF_INET6;
  inet_pton(AF_INET6, "ff02::1", &to.sin6_addr);
  to.sin6_scope_id = index;
  if (sendto(fd, p.data(), p.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to) < 0) {
    return unexpected(errnoText("unsolicited NA for " + ip.toString() + " on " + dev));
  }
  return 1;
}

}  // namespace egress::dataplane
