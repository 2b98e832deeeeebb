// File: pod_addresses.h
//
// The pod IPs of the test kubelet's nodes: which pod holds which address. Node <i>'s pods get
// addresses from its podCIDR 10.244.<i>.0/24 (254 usable), lowest free first, and an address is
// never handed out again while the pod holding it exists (until release()). A node whose
// podCIDR is full -- more than 254 pods, which its pod capacity of 250 keeps the scheduler from
// doing, but a pod created with spec.nodeName set skips the scheduler -- falls back to the
// overflow ranges 10.245.<i>.0/24 ... 10.255.<i>.0/24, outside its podCIDR: assign() says so,
// and the kubelet logs it. Each node's allocation is a pkg/ipam Pool.
//
// A pod is an owner by its key (namespace/name); the kubelet releases a key when its pod is
// deleted, and when a key shows up with a new UID (deleted and created again while the watch was
// away). After a restart the kubelet observe()s the addresses its pods already show, before it
// assigns any, so a new pod never gets the address of one made Running by an earlier run.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/ipam/pool.h"

namespace egress::testenv {

struct AssignedAddress {
  std::string ip;
  // Outside the node's podCIDR (it was full).
  bool overflow = false;
};

class PodAddresses {
 public:
  // Nodes 1..nodes (at most kMaxNodes).
  explicit PodAddresses(int nodes);

  // Records that pod `owner` on `node` shows `ip`. "" when recorded; else why not (the address
  // is outside the node's ranges, or another pod holds it), and the pod holds nothing: it gets
  // an address of its own when it is next made Running. An owner that held another address
  // holds only `ip` afterwards (what the pod shows is the truth).
  std::string observe(int node, const std::string& owner, std::string_view ip);
  // The address `owner` holds on `node`, else the lowest free one, now held by it; nullopt when
  // every range of the node is full.
  std::optional<AssignedAddress> assign(int node, const std::string& owner);
  // The owner's pod is gone: its address may be handed out again. No-op for an unknown owner.
  void release(const std::string& owner);

  // Addresses held on `node`.
  size_t held(int node) const;
  // The address `owner` holds, or "".
  std::string addressOf(const std::string& owner) const;

 private:
  ipam::Pool& pool(int node) { return pools_[static_cast<size_t>(node - 1)]; }

  std::vector<ipam::Pool> pools_;
  std::vector<ipam::Prefix> podCidrs_;
  // Which node's pool each owner holds an address in.
  std::map<std::string, int, std::less<>> nodeOf_;
};

}  // namespace egress::testenv
