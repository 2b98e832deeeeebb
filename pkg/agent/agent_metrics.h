// File: agent_metrics.h
//
// What egw-agent reports on /metrics (the Manager's registry): how many policies and egress IPs
// it has programmed, how many syncs failed, when the last one succeeded, how many gratuitous
// ARP / unsolicited NA packets it sent, and whether it is fenced (its own Lease is stale).
#pragma once

#include <cstddef>
#include <cstdint>

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

 private:
  prometheus::Gauge* policies_;
  prometheus::Gauge* held_;
  prometheus::Counter* syncErrors_;
  prometheus::Gauge* lastSync_;
  prometheus::Counter* changes_;
  prometheus::Counter* garps_;
  prometheus::Gauge* fenced_;
  prometheus::Counter* forgotten_;
};

}  // namespace egress::agent
