#include "pkg/controller/egressgateway/holder_moves.h"

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>

namespace egress::controller {

bool agentEnabled(const v1alpha1::OperatorConfig* config) {
  return config != nullptr && config->spec.dataplane && config->spec.dataplane->agent;
}

bool olderPod(const EgressPodInfo& a, const EgressPodInfo& b) {
  return std::tie(a.pod->metadata.creationTimestamp, a.pod->metadata.name) <
         std::tie(b.pod->metadata.creationTimestamp, b.pod->metadata.name);
}

namespace {

// The policy's pods that hold no entry, are not being deleted and pass `accept`, oldest first.
std::vector<const EgressPodInfo*> idlePods(
    const EgressGatewayPolicyInfo& info, const std::vector<std::string>& holders,
    const std::function<bool(const EgressPodInfo&)>& accept) {
  const std::set<std::string> holding(holders.begin(), holders.end());
  std::vector<const EgressPodInfo*> out;
  for (const auto& [name, p] : info.egressPods) {
    if (!p.terminating && holding.count(name) == 0 && accept(p)) {
      out.push_back(&p);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const EgressPodInfo* a, const EgressPodInfo* b) { return olderPod(*a, *b); });
  return out;
}

}  // namespace

std::vector<HolderMove> newHolders(const EgressGatewayPolicyInfo& info,
                                   const std::vector<std::string>& holders) {
  const auto waiting =
      idlePods(info, holders, [](const EgressPodInfo& p) { return !p.pod->spec.nodeName.empty(); });
  std::vector<HolderMove> out;
  size_t next = 0;
  for (size_t i = 0; i < holders.size() && next < waiting.size(); ++i) {
    if (holders[i].empty()) {
      out.push_back({i, "", waiting[next++]->pod->metadata.name});
    }
  }
  return out;
}

std::vector<HolderMove> reportedHolderMoves(
    const EgressGatewayPolicyInfo& info, const std::vector<ipam::Entry>& ledger,
    const std::vector<std::string>& holders,
    const std::map<ipam::Address, std::set<std::string>>& reported) {
  std::vector<HolderMove> out;
  for (size_t i = 0; i < ledger.size() && i < holders.size(); ++i) {
    // The one live node that reports every address of the entry.
    std::optional<std::string> node;
    bool one = !ledger[i].empty();
    for (const auto& a : ledger[i]) {
      auto it = reported.find(a);
      if (it == reported.end() || it->second.size() != 1 ||
          (node && *node != *it->second.begin())) {
        one = false;
        break;
      }
      node = *it->second.begin();
    }
    if (!one || !node) {
      continue;
    }
    if (!holders[i].empty() && info.egressPods.at(holders[i]).pod->spec.nodeName == *node) {
      continue;
    }
    const EgressPodInfo* to = nullptr;
    for (const auto& [name, p] : info.egressPods) {
      if (p.terminating || p.pod->spec.nodeName != *node) {
        continue;
      }
      const bool holding = std::find(holders.begin(), holders.end(), name) != holders.end();
      const bool toHolds = to != nullptr && std::find(holders.begin(), holders.end(),
                                                      to->pod->metadata.name) != holders.end();
      if (to == nullptr || (holding && !toHolds) || (holding == toHolds && olderPod(p, *to))) {
        to = &p;
      }
    }
    if (to != nullptr) {
      out.push_back({i, holders[i], to->pod->metadata.name, true});
    }
  }
  return out;
}

std::vector<HolderMove> staleHolderMoves(const EgressGatewayPolicyInfo& info,
                                         const std::vector<std::string>& holders,
                                         const std::function<bool(const std::string&)>& nodeFresh) {
  const auto candidates = idlePods(info, holders, [&](const EgressPodInfo& p) {
    return (p.ready || p.containersReady) && !p.pod->spec.nodeName.empty() &&
           nodeFresh(p.pod->spec.nodeName);
  });
  std::vector<HolderMove> out;
  size_t next = 0;
  for (size_t i = 0; i < holders.size() && next < candidates.size(); ++i) {
    if (!holders[i].empty() && !nodeFresh(info.egressPods.at(holders[i]).pod->spec.nodeName)) {
      out.push_back({i, holders[i], candidates[next++]->pod->metadata.name});
    }
  }
  return out;
}

}  // namespace egress::controller
