// File: agent_metrics.h
//
// What egw-agent reports on /metrics (the Manager's registry): how many policies and egress IPs
// it has programmed, how many syncs failed, when the last one succeeded, how many gratuitous
// ARP / unsolicited NA packets it sent, whether it is fenced (no majority of the agents hears it),
// and what the tunnel filter dropped, by reason, what left with each egress IP this node holds, by
// policy, and how many problems stop it from programming what it was given, by kind.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "pkg/dataplane/nft_ruleset.h"
#include "pkg/dataplane/problem.h"

namespace egress::agent {

class AgentMetrics {
 public:
  explicit AgentMetrics(prometheus::Registry& registry);

  void syncSucceeded(int policies, int heldIPs, double unixSeconds, int changes);
  void syncFailed();
  void announced(int packets);
  void setFenced(bool fenced);
  void forgotConnections(size_t entries);
  // The problems of the last sync, by kind (a kind not in `byKind` has none).
  void setProblems(const std::map<dataplane::ProblemKind, int>& byKind);
  // The table's named counters as the kernel has them now (nft_ruleset.h): what each counted
  // since the last call is added, the tunnel filter's by reason, the egress IPs' by the policy
  // and address tableApplied() last named. Read it just before the table may be replaced.
  void kernelCounts(const std::map<std::string, dataplane::NftCount>& counters);
  // The table as applied (`replaced`: made anew, its counters at 0): the egress IPs it counts
  // for, by policy. Series of addresses no longer held here go.
  void tableApplied(const std::vector<dataplane::NftEgressIP>& egressIPs, bool replaced);

 private:
  prometheus::Gauge* policies_;
  prometheus::Gauge* held_;
  prometheus::Counter* syncErrors_;
  prometheus::Gauge* lastSync_;
  prometheus::Counter* changes_;
  prometheus::Counter* garps_;
  prometheus::Gauge* fenced_;
  prometheus::Counter* forgotten_;
  struct EgressSeries {
    std::string policy;  // "namespace/policy"
    prometheus::Counter* packets = nullptr;
    prometheus::Counter* bytes = nullptr;
  };

  std::map<dataplane::ProblemKind, prometheus::Gauge*> problems_;
  prometheus::Family<prometheus::Counter>* tunnelDrops_;
  prometheus::Family<prometheus::Counter>* egressPackets_;
  prometheus::Family<prometheus::Counter>* egressBytes_;
  std::map<std::string, EgressSeries> egress_;  // by counter name
  std::map<std::string, dataplane::NftCount> lastCounts_;
};

}  // namespace egress::agent
