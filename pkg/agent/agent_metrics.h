// File: agent_metrics.h
//
// What egw-agent reports on /metrics (the Manager's registry): how many policies and egress IPs
// it has programmed, how many syncs failed, when the last one succeeded, how many gratuitous
// ARP / unsolicited NA packets it sent, whether it is fenced (its own Lease is stale), and what
// the tunnel filter dropped, by reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace egress::agent {

class AgentMetrics {
 public:
  explicit AgentMetrics(prometheus::Registry& registry);

  void syncSucceeded(int policies, int heldIPs, double unixSeconds, int changes);
  void syncFailed();
  void announced(int packets);
  void setFenced(bool fenced);
  void forgotConnections(size_t entries);
  // The tunnel filter's counters as the kernel has them now (name -> packets, nft_ruleset.h):
  // what they counted since the last call is added. A table replaced since starts its counters
  // at 0; that is seen as a count below the last and taken whole.
  void tunnelDrops(const std::map<std::string, uint64_t>& counters);

 private:
  prometheus::Gauge* policies_;
  prometheus::Gauge* held_;
  prometheus::Counter* syncErrors_;
  prometheus::Gauge* lastSync_;
  prometheus::Counter* changes_;
  prometheus::Counter* garps_;
  prometheus::Gauge* fenced_;
  prometheus::Counter* forgotten_;
  prometheus::Family<prometheus::Counter>* tunnelDrops_;
  std::map<std::string, uint64_t> lastTunnelCounts_;
};

}  // namespace egress::agent
