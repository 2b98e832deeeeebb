#include "pkg/agent/agent_metrics.h"

#include "pkg/dataplane/nft_ruleset.h"

namespace egress::agent {
namespace {

prometheus::Gauge* gauge(prometheus::Registry& r, const char* name, const char* help) {
  return &prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
}

prometheus::Counter* counter(prometheus::Registry& r, const char* name, const char* help) {
  return &prometheus::BuildCounter().Name(name).Help(help).Register(r).Add({});
}

}  // namespace

AgentMetrics::AgentMetrics(prometheus::Registry& r)
    : policies_(gauge(r, "egw_agent_programmed_policies",
                      "Policies whose rules this node's kernel has, as of the last sync.")),
      held_(gauge(r, "egw_agent_held_egress_ips",
                  "Egress IPs this node holds (SNAT, proxy ARP/NDP, host route).")),
      syncErrors_(counter(r, "egw_agent_sync_errors_total",
                          "Syncs that failed to compute or apply the desired kernel state.")),
      lastSync_(gauge(r, "egw_agent_last_successful_sync_timestamp_seconds",
                      "Unix time of the last sync that left the kernel as desired.")),
      changes_(counter(r, "egw_agent_kernel_changes_total",
                       "Kernel objects added, changed or removed by syncs (0 per sync at rest).")),
      garps_(counter(r, "egw_agent_garps_sent_total",
                     "Gratuitous ARP and unsolicited neighbour advertisement packets sent.")),
      fenced_(gauge(r, "egw_agent_fenced",
                    "1 while this agent's own Lease is stale and it holds nothing.")),
      forgotten_(counter(r, "egw_agent_conntrack_entries_deleted_total",
                         "Conntrack entries of egress IPs this node released, deleted.")),
      tunnelDrops_(&prometheus::BuildCounter()
                        .Name("egw_agent_tunnel_dropped_packets_total")
                        .Help("Packets the tunnel filter dropped: to the tunnel port from an "
                              "address that is no node's (not-a-node), to a node's tunnel port "
                              "from a pod (from-a-pod), or delivered by the tunnel with a source "
                              "that is no source pod of the sending node (forged-source).")
                        .Register(r)) {
  for (const char* reason : {"not-a-node", "from-a-pod", "forged-source"}) {
    tunnelDrops_->Add({{"reason", reason}});
  }
}

void AgentMetrics::tunnelDrops(const std::map<std::string, uint64_t>& counters) {
  static const std::map<std::string, std::string> kReasons = {
      {dataplane::kTunnelNotNode, "not-a-node"},
      {dataplane::kTunnelFromPod, "from-a-pod"},
      {dataplane::kTunnelForged, "forged-source"}};
  for (const auto& [name, reason] : kReasons) {
    auto it = counters.find(name);
    if (it == counters.end()) {
      continue;
    }
    uint64_t& last = lastTunnelCounts_[name];
    const uint64_t added = it->second >= last ? it->second - last : it->second;
    last = it->second;
    tunnelDrops_->Add({{"reason", reason}}).Increment(static_cast<double>(added));
  }
}

void AgentMetrics::syncSucceeded(int policies, int heldIPs, double unixSeconds, int changes) {
  policies_->Set(policies);
  held_->Set(heldIPs);
  lastSync_->Set(unixSeconds);
  changes_->Increment(changes);
}

void AgentMetrics::syncFailed() {
  syncErrors_->Increment();
}

void AgentMetrics::announced(int packets) {
  garps_->Increment(packets);
}

void AgentMetrics::forgotConnections(size_t entries) {
  forgotten_->Increment(static_cast<double>(entries));
}

void AgentMetrics::setFenced(bool fenced) {
  fenced_->Set(fenced ? 1 : 0);
}

}  // namespace egress::agent
