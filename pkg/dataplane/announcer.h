// File: announcer.h
//
// Tells the uplink's segment that this node now holds an egress IP: a gratuitous ARP request and
// reply (AF_PACKET) for IPv4, an unsolicited neighbour advertisement with the override flag to
// all-nodes (raw ICMPv6) for IPv6, both with the uplink's MAC. Without it the upstream router's
// neighbour entry keeps pointing at the old holder (the measured outage was over 42 s). The
// agent calls it at 0, 1 and 2 s after a takeover; it counts what it sent (the GARP metric).
#pragma once

#include <cstdint>
#include <string>

#include "pkg/base/result.h"
#include "pkg/ipam/address.h"

namespace egress::dataplane {

class Announcer {
 public:
  Announcer() = default;
  ~Announcer();
  Announcer(const Announcer&) = delete;
  Announcer& operator=(const Announcer&) = delete;

  // The number of packets sent for `ip` on `dev` (2 for IPv4, 1 for IPv6).
  Result<int, std::string> announce(const std::string& dev, const ipam::Address& ip);
  // Every packet sent so far.
  uint64_t sent() const { return sent_; }

 private:
  Result<int, std::string> arp(const std::string& dev, const ipam::Address& ip);
  Result<int, std::string> neighbourAdvertisement(const std::string& dev, const ipam::Address& ip);

  // The sockets (send-only: they receive nothing), opened at the first announcement and kept:
  // closing an AF_PACKET socket waits
  // for an RCU grace period (packet_release's synchronize_net), measured at 12 ms here, so a
  // socket per address made a round for a hundred held addresses take a second, during which
  // the sync that sent it programmed nothing else.
  int arpSocket_ = -1;
  int naSocket_ = -1;
  uint64_t sent_ = 0;
};

}  // namespace egress::dataplane
