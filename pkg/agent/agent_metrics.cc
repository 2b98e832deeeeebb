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
                    "1 while no majority of the agents hears this one (a dry run: while its own "
                    "Lease is stale): it holds nothing.")),
      forgotten_(counter(r, "egw_agent_conntrack_entries_deleted_total",
                         "Conntrack entries of egress IPs this node released, deleted.")),
      tunnelDrops_(&prometheus::BuildCounter()
                        .Name("egw_agent_tunnel_dropped_packets_total")
                        .Help("Packets the tunnel filter dropped: to the tunnel port from an "
                              "address that is no node's (not-a-node), to a node's tunnel port "
                              "from a pod (from-a-pod), or delivered by the tunnel with a source "
                              "that is no source pod of the sending node (forged-source).")
                        .Register(r)),
      egressPackets_(&prometheus::BuildCounter()
                          .Name("egw_agent_egress_packets_total")
                          .Help("Packets that left this node with an egress IP it holds, by the "
                                "policy the address is of (the kernel's count, from when the "
                                "agent's table was made).")
                          .Register(r)),
      egressBytes_(&prometheus::BuildCounter()
                        .Name("egw_agent_egress_bytes_total")
                        .Help("Bytes (IP packets, headers included) that left this node with an "
                              "egress IP it holds, by the policy the address is of.")
                        .Register(r)) {
  for (const char* reason : {"not-a-node", "from-a-pod", "forged-source"}) {
    tunnelDrops_->Add({{"reason", reason}});
  }
  auto& problems = prometheus::BuildGauge()
                       .Name("egw_agent_problems")
                       .Help(
                           "Problems in what this agent was given that stop it from programming "
                           "part of it, by kind, as of the last sync (each is logged once and "
                           "reported to the policy it concerns).")
                       .Register(r);
  for (auto kind : dataplane::kProblemKinds) {
    problems_[kind] = &problems.Add({{"kind", std::string(dataplane::problemLabel(kind))}});
  }
}

void AgentMetrics::setProblems(const std::map<dataplane::ProblemKind, int>& byKind) {
  for (auto& [kind, g] : problems_) {
    auto it = byKind.find(kind);
    g->Set(it == byKind.end() ? 0 : it->second);
  }
}

void AgentMetrics::kernelCounts(const std::map<std::string, dataplane::NftCount>& counters) {
  static const std::map<std::string, std::string> kReasons = {
      {dataplane::kTunnelNotNode, "not-a-node"},
      {dataplane::kTunnelFromPod, "from-a-pod"},
      {dataplane::kTunnelForged, "forged-source"}};
  // Since the last call; a count below the last is a table made since (tableApplied missed it,
  // e.g. another process replaced it): taken whole.
  auto added = [&](const std::string& name, const dataplane::NftCount& now) {
    dataplane::NftCount& last = lastCounts_[name];
    const bool reset = now.packets < last.packets || now.bytes < last.bytes;
    const dataplane::NftCount delta =
        reset ? now : dataplane::NftCount{now.packets - last.packets, now.bytes - last.bytes};
    last = now;
    return delta;
  };
  for (const auto& [name, count] : counters) {
    // Every counter's reading is the next one's baseline, those without a series yet too: an
    // agent that restarts keeps an unchanged table, whose counts before it started are not its
    // own to report.
    const auto delta = added(name, count);
    if (auto reason = kReasons.find(name); reason != kReasons.end()) {
      tunnelDrops_->Add({{"reason", reason->second}}).Increment(static_cast<double>(delta.packets));
    } else if (auto series = egress_.find(name); series != egress_.end()) {
      series->second.packets->Increment(static_cast<double>(delta.packets));
      series->second.bytes->Increment(static_cast<double>(delta.bytes));
    }
  }
}

void AgentMetrics::tableApplied(const std::vector<dataplane::NftEgressIP>& egressIPs,
                                bool replaced) {
  if (replaced) {
    lastCounts_.clear();
  }
  std::map<std::string, EgressSeries> now;
  for (const auto& e : egressIPs) {
    if (!e.held) {
      continue;
    }
    const std::string name = dataplane::egressCounter(e.ip);
    if (auto had = egress_.find(name); had != egress_.end() && had->second.policy == e.policy) {
      now.emplace(name, had->second);
      egress_.erase(had);
      continue;
    }
    const auto slash = e.policy.find('/');
    const std::map<std::string, std::string> labels = {
        {"policy_namespace", e.policy.substr(0, slash)},
        {"policy", slash == std::string::npos ? "" : e.policy.substr(slash + 1)},
        {"egress_ip", e.ip.toString()}};
    now.emplace(name,
                EgressSeries{e.policy, &egressPackets_->Add(labels), &egressBytes_->Add(labels)});
  }
  for (const auto& [name, gone] : egress_) {
    egressPackets_->Remove(gone.packets);
    egressBytes_->Remove(gone.bytes);
    lastCounts_.erase(name);
  }
  egress_ = std::move(now);
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
