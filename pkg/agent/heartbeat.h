// File: heartbeat.h
//
// The message egw-agents send each other, node to node, over UDP (peer_quorum.h has the protocol
// it carries). One datagram per peer per round; binary, big-endian, versioned:
//
//   "EGWH" version:u8 flags:u8                     flags bit 0: the sender is leaving (a
//                                                  restart): it asks for grants of restart_ms
//   sender:name incarnation:u64 seq:u64
//   window_ms:u32                                  how long its dead votes stand
//   grant_ms:u32                                   how long its grant to the recipient stands
//                                                  (0: no grant)
//   restart_ms:u32                                 with bit 0: the grant it asks for
//   echo_incarnation:u64 echo_seq:u64              the recipient's latest seq the sender had
//   dead:u16 { name }                              nodes the sender holds dead
//   claims:u16 { family:u8 (4|6) address:4|16 }    egress IPs the sender holds
//   name = length:u8 bytes (1..253, a Node name)
//
// Nothing in it is trusted because it parses: the receiver takes it only from a member's node
// address, and only its echo of the receiver's own random incarnation and a recent seq gives it
// any weight (peer_quorum.h), so a sender that cannot read the node-to-node traffic cannot
// forge one that counts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/base/result.h"
#include "pkg/ipam/address.h"

namespace egress::agent {

// The largest UDP payload over IPv4.
inline constexpr size_t kMaxHeartbeatBytes = 65507;

struct Heartbeat {
  std::string sender;
  uint64_t incarnation = 0;
  uint64_t seq = 0;
  // How long after the sender wrote them its dead votes stand, and its grant to the recipient
  // (0: none).
  uint32_t windowMs = 0;
  uint32_t grantMs = 0;
  // The sender is stopping to restart and asks for grants of restartMs, so that its peers let
  // its node hold its addresses until its successor is back.
  bool leaving = false;
  uint32_t restartMs = 0;
  // The recipient's incarnation and latest seq the sender had received when it wrote this
  // (0, 0: none yet).
  uint64_t echoIncarnation = 0;
  uint64_t echoSeq = 0;
  std::vector<std::string> dead;
  std::vector<ipam::Address> claims;

  friend bool operator==(const Heartbeat&, const Heartbeat&) = default;
};

// An error when a name is empty or longer than 253 bytes, a list has more than 65535 items, or
// the whole is larger than kMaxHeartbeatBytes.
Result<std::string, std::string> encodeHeartbeat(const Heartbeat& hb);
// An error naming what is wrong: not one (magic), another version, truncated, trailing bytes.
Result<Heartbeat, std::string> decodeHeartbeat(std::string_view bytes);

}  // namespace egress::agent
