// AgentMetrics' per-policy egress counters: the kernel's counts since the last read are added
// under the policy and address the applied table names, a replaced table's counters start over
// without losing or double-counting, and an address no longer held here takes its series along.
#include "pkg/agent/agent_metrics.h"

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include "pkg/ipam/address.h"

namespace egress::agent {
namespace {

dataplane::NftEgressIP held(const std::string& ip, const std::string& policy) {
  return {*ipam::parseAddress(ip), 1, true, policy};
}

std::string name(const std::string& ip) {
  return dataplane::egressCounter(*ipam::parseAddress(ip));
}

class AgentMetricsTest : public ::testing::Test {
 protected:
  // The value of `metric` with exactly these labels; -1 when there is no such series.
  double value(const std::string& metric, const std::map<std::string, std::string>& labels) {
    for (const auto& family : registry_.Collect()) {
      if (family.name != metric) {
        continue;
      }
      for (const auto& m : family.metric) {
        std::map<std::string, std::string> got;
        for (const auto& l : m.label) {
          got[l.name] = l.value;
        }
        if (got == labels) {
          return m.counter.value;
        }
      }
    }
    return -1;
  }
  double bytes(const std::string& ip, const std::string& ns, const std::string& policy) {
    return value("egw_agent_egress_bytes_total",
                 {{"policy_namespace", ns}, {"policy", policy}, {"egress_ip", ip}});
  }
  double packets(const std::string& ip, const std::string& ns, const std::string& policy) {
    return value("egw_agent_egress_packets_total",
                 {{"policy_namespace", ns}, {"policy", policy}, {"egress_ip", ip}});
  }

  prometheus::Registry registry_;
  AgentMetrics metrics_{registry_};
};

TEST_F(AgentMetricsTest, WhatLeavesWithAHeldEgressIPIsCountedUnderItsPolicy) {
  metrics_.tableApplied({held("192.0.2.10", "team-a/web"),
                         held("2001:db8::10", "team-a/web"),
                         {*ipam::parseAddress("192.0.2.11"), 2, false, "team-b/api"}},
                        true);
  EXPECT_EQ(bytes("192.0.2.10", "team-a", "web"), 0);
  EXPECT_EQ(bytes("2001:db8::10", "team-a", "web"), 0);
  EXPECT_EQ(bytes("192.0.2.11", "team-b", "api"), -1) << "held elsewhere: counted there";

  metrics_.kernelCounts({{name("192.0.2.10"), {10, 1500}}, {name("2001:db8::10"), {1, 80}}});
  metrics_.kernelCounts({{name("192.0.2.10"), {25, 4000}}, {name("2001:db8::10"), {1, 80}}});
  EXPECT_EQ(packets("192.0.2.10", "team-a", "web"), 25);
  EXPECT_EQ(bytes("192.0.2.10", "team-a", "web"), 4000);
  EXPECT_EQ(bytes("2001:db8::10", "team-a", "web"), 80);
}

TEST_F(AgentMetricsTest, AReplacedTableStartsItsCountersOverAndNothingIsLostOrCountedTwice) {
  metrics_.tableApplied({held("192.0.2.10", "team-a/web")}, true);
  metrics_.kernelCounts({{name("192.0.2.10"), {10, 1000}}});
  // Read just before the table is replaced (the agent's order), then the new table's counts.
  metrics_.kernelCounts({{name("192.0.2.10"), {12, 1200}}});
  metrics_.tableApplied({held("192.0.2.10", "team-a/web"), held("192.0.2.20", "team-a/web")}, true);
  metrics_.kernelCounts({{name("192.0.2.10"), {3, 300}}, {name("192.0.2.20"), {1, 60}}});
  EXPECT_EQ(bytes("192.0.2.10", "team-a", "web"), 1500);
  EXPECT_EQ(packets("192.0.2.10", "team-a", "web"), 15);
  EXPECT_EQ(bytes("192.0.2.20", "team-a", "web"), 60);
  // Unchanged table (same digest): counting goes on from the last read.
  metrics_.tableApplied({held("192.0.2.10", "team-a/web"), held("192.0.2.20", "team-a/web")},
                        false);
  metrics_.kernelCounts({{name("192.0.2.10"), {4, 400}}, {name("192.0.2.20"), {1, 60}}});
  EXPECT_EQ(bytes("192.0.2.10", "team-a", "web"), 1600);
  EXPECT_EQ(bytes("192.0.2.20", "team-a", "web"), 60);
  // A table someone else replaced: a count below the last is taken whole.
  metrics_.kernelCounts({{name("192.0.2.10"), {1, 50}}});
  EXPECT_EQ(bytes("192.0.2.10", "team-a", "web"), 1650);
}

// A restarted agent keeps an unchanged table (same digest): what its counters held before the
// agent started is not counted again (a counter's reset, to Prometheus, is the process's start).
TEST_F(AgentMetricsTest, AnAgentRestartedOnAnUnchangedTableCountsOnlyWhatLeavesAfterward) {
  metrics_.kernelCounts({{name("192.0.2.10"), {1000, 900000}}});
  metrics_.tableApplied({held("192.0.2.10", "team-a/web")}, false);
  EXPECT_EQ(bytes("192.0.2.10", "team-a", "web"), 0);
  metrics_.kernelCounts({{name("192.0.2.10"), {1002, 900300}}});
  EXPECT_EQ(bytes("192.0.2.10", "team-a", "web"), 300);
  EXPECT_EQ(packets("192.0.2.10", "team-a", "web"), 2);
}

TEST_F(AgentMetricsTest, AnAddressNoLongerHeldHereTakesItsSeriesAlong) {
  metrics_.tableApplied({held("192.0.2.10", "team-a/web")}, true);
  metrics_.kernelCounts({{name("192.0.2.10"), {2, 200}}});
  metrics_.tableApplied({}, true);
  EXPECT_EQ(bytes("192.0.2.10", "team-a", "web"), -1);
  // Counted again from 0 when it comes back, by the new table.
  metrics_.tableApplied({held("192.0.2.10", "team-c/batch")}, true);
  metrics_.kernelCounts({{name("192.0.2.10"), {1, 100}}});
  EXPECT_EQ(bytes("192.0.2.10", "team-c", "batch"), 100);
  EXPECT_EQ(bytes("192.0.2.10", "team-a", "web"), -1);
}

TEST_F(AgentMetricsTest, TheTunnelFiltersDropsStillCountPacketsByReason) {
  metrics_.tableApplied({}, true);
  metrics_.kernelCounts({{dataplane::kTunnelForged, {3, 300}}});
  metrics_.kernelCounts({{dataplane::kTunnelForged, {5, 500}}});
  EXPECT_EQ(value("egw_agent_tunnel_dropped_packets_total", {{"reason", "forged-source"}}), 5);
  EXPECT_EQ(value("egw_agent_tunnel_dropped_packets_total", {{"reason", "not-a-node"}}), 0);
}

}  // namespace
}  // namespace egress::agent
