#include "pkg/controller/egressgateway/holder_moves.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace egress::controller {

bool agentEnabled(const v1alpha1::OperatorConfig* config) {
  return config != nullptr && config->spec.dataplane && config->spec.dataplane->agent;
}

std::vector<HolderMove> staleHolderMoves(const EgressGatewayPolicyInfo& info,
                                         const std::vector<std::string>& holders,
                                         const std::function<bool(const std::string&)>& nodeFresh) {
  const std::set<std::string> holding(holders.begin(), holders.end());
  std::vector<const EgressPodInfo*> candidates;
  for (const auto& [name, p] : info.egressPods) {
    if (!p.terminating && (p.ready || p.containersReady) && holding.count(name) == 0 &&
        !p.pod->spec.nodeName.empty() && nodeFresh(p.pod->spec.nodeName)) {
      candidates.push_back(&p);
    }
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const EgressPodInfo* a, const EgressPodInfo* b) {
              return std::tie(a->pod->metadata.creationTimestamp, a->pod->metadata.name) <
                     std::tie(b->pod->metadata.creationTimestamp, b->pod->metadata.name);
            });
  std::vector<HolderMove> out;
  size_t next = 0;
  for (size_t i = 0; i < holders.size() && next < candidates.size(); ++i) {
    if (holders[i].empty()) {
      continue;
    }
    const EgressPodInfo& holder = info.egressPods.at(holders[i]);
    if (nodeFresh(holder.pod->spec.nodeName)) {
      continue;
    }
    out.push_back({i, holders[i], candidates[next++]->pod->metadata.name});
  }
  return out;
}

}  // namespace egress::controller
