#include "pkg/dataplane/cluster_view.h"

#include <algorithm>
#include <map>

namespace egress::dataplane {
namespace {

using networking::v1alpha1::EgressPolicySlice;

// Where problems go, and the policy they concern.
struct Problems {
  std::vector<Problem>* out;
  std::string uid;
  std::string key;

  void add(ProblemKind kind, std::string message) const {
    if (out != nullptr) {
      out->push_back({kind, uid, key, std::move(message)});
    }
  }
};

std::string policyKey(const EgressPolicySlice& slice) {
  return slice.spec.policy.namespace_ + "/" + slice.spec.policy.name;
}

std::vector<ipam::Address> addresses(const std::vector<std::string>& texts,
                                     const std::string& where, const Problems& problems) {
  std::vector<ipam::Address> out;
  for (const auto& text : texts) {
    if (auto ip = ipam::parseAddress(text)) {
      out.push_back(*ip);
    } else {
      problems.add(ProblemKind::kUnparsable, where + ": cannot parse address \"" + text + "\"");
    }
  }
  return out;
}

std::vector<ipam::Prefix> prefixes(const std::vector<std::string>& texts, const std::string& where,
                                   const Problems& problems) {
  std::vector<ipam::Prefix> out;
  for (const auto& text : texts) {
    if (auto p = ipam::parseAddressOrCIDR(text)) {
      out.push_back(*p);
    } else {
      problems.add(ProblemKind::kUnparsable, where + ": cannot parse CIDR \"" + text + "\"");
    }
  }
  return out;
}

// The Node addresses a NodeView keeps.
bool isViewAddress(const std::string& type) {
  return type == "InternalIP" || type == "ExternalIP";
}

// What neither transform keeps of an object's metadata: the agent reads none of it. Assigned,
// not cleared: a cleared container keeps its capacity.
void stripMetadata(meta::ObjectMeta& m) {
  m.labels = meta::StringMap();
  m.annotations = meta::StringMap();
  m.ownerReferences = {};
  m.finalizers = {};
}

// Every sync runs this over every source of the cluster: no string or vector is made per source
// unless its address is bad.
void addSources(const EgressPolicySlice& slice, PolicyView& v, const Problems& problems) {
  for (const auto& s : slice.spec.sources) {
    for (const auto& text : s.ips) {
      if (auto ip = ipam::parseAddress(text)) {
        v.sources.push_back({*ip, s.node});
      } else {
        problems.add(ProblemKind::kUnparsable, "EgressPolicySlice " + slice.metadata.name +
                                                   " source " + s.pod +
                                                   ": cannot parse address \"" + text + "\"");
      }
    }
  }
}

}  // namespace

void stripNode(core::Node& node) {
  stripMetadata(node.metadata);
  node.taints = {};
  node.conditions = {};
  std::erase_if(node.addresses, [](const core::NodeAddress& a) { return !isViewAddress(a.type); });
}

void stripSlice(EgressPolicySlice& slice) {
  stripMetadata(slice.metadata);
  for (auto& s : slice.spec.sources) {
    if (std::all_of(s.ips.begin(), s.ips.end(),
                    [](const std::string& text) { return ipam::parseAddress(text).has_value(); })) {
      s.pod = std::string();
    }
  }
}

NodeView nodeView(const core::Node& node) {
  NodeView v;
  v.name = node.metadata.name;
  for (const auto& a : node.addresses) {
    if (!isViewAddress(a.type)) {
      continue;
    }
    auto ip = ipam::parseAddress(a.address);
    if (!ip) {
      continue;
    }
    v.addresses.push_back(*ip);
    if (a.type != "InternalIP") {
      continue;
    }
    auto& slot = ip->family == ipam::Family::kIPv4 ? v.ipv4 : v.ipv6;
    if (!slot) {
      slot = *ip;
    }
  }
  for (const auto& text : node.podCIDRs) {
    if (auto p = ipam::parseCIDR(text)) {
      v.podCIDRs.push_back(*p);
    }
  }
  return v;
}

std::vector<ipam::Prefix> poolCIDRs(
    const std::vector<std::shared_ptr<const networking::v1alpha1::IPAMPool>>& pools) {
  std::vector<ipam::Prefix> out;
  for (const auto& pool : pools) {
    for (const auto& text : pool->spec.cidrs) {
      if (auto p = ipam::parseCIDR(text)) {
        out.push_back(*p);
      }
    }
  }
  return out;
}

std::vector<ipam::Prefix> clusterCIDRs(
    const std::vector<std::shared_ptr<const networking::v1alpha1::OperatorConfig>>& configs) {
  std::vector<ipam::Prefix> out;
  for (const auto& config : configs) {
    if (config->metadata.name != "default") {
      continue;
    }
    for (const auto& text : config->spec.clusterCIDRs) {
      if (auto p = ipam::parseCIDR(text)) {
        out.push_back(*p);
      }
    }
  }
  return out;
}

std::vector<PolicyView> policyViews(
    const std::vector<std::shared_ptr<const EgressPolicySlice>>& slices,
    std::vector<Problem>* problems) {
  // By uid, each group in name order: the head is then the first slice with a gateway, whatever
  // order the informer lists them in.
  std::map<std::string, std::vector<const EgressPolicySlice*>> byUID;
  for (const auto& s : slices) {
    if (s->spec.policy.uid.empty()) {
      Problems{problems, "", ""}.add(
          ProblemKind::kInvalidSlice,
          "EgressPolicySlice " + s->metadata.name + ": no policy uid, ignored");
      continue;
    }
    byUID[s->spec.policy.uid].push_back(s.get());
  }
  std::vector<PolicyView> out;
  for (auto& [uid, group] : byUID) {
    std::sort(group.begin(), group.end(),
              [](const EgressPolicySlice* a, const EgressPolicySlice* b) {
                return a->metadata.name < b->metadata.name;
              });
    const Problems policyProblems{problems, uid, policyKey(*group.front())};
    const EgressPolicySlice* head = nullptr;
    for (const auto* s : group) {
      if (!s->spec.gateway) {
        continue;
      }
      if (head == nullptr) {
        head = s;
      } else {
        policyProblems.add(ProblemKind::kInvalidSlice,
                           "EgressPolicySlice " + s->metadata.name + ": a second gateway for uid " +
                               uid + " (" + head->metadata.name + "'s is used), ignored");
      }
    }
    if (head == nullptr) {
      policyProblems.add(ProblemKind::kInvalidSlice, "EgressPolicySlices of uid " + uid + " (" +
                                                         group.front()->metadata.name +
                                                         " ...): none has a gateway, ignored");
      continue;
    }
    PolicyView v;
    v.key = policyKey(*head);
    v.uid = uid;
    const Problems headProblems{problems, uid, v.key};
    const std::string where = "EgressPolicySlice " + head->metadata.name;
    const auto& gw = *head->spec.gateway;
    for (const auto& e : gw.egressIPs) {
      v.slots.push_back(
          {addresses(e.ips, where + " egressIPs", headProblems), e.node, e.pod, e.podUID});
    }
    v.destinations = prefixes(gw.destinationCIDRs, where + " destinationCIDRs", headProblems);
    v.excluded = prefixes(gw.excludedCIDRs, where + " excludedCIDRs", headProblems);
    for (const auto* s : group) {
      addSources(*s, v, headProblems);
    }
    out.push_back(std::move(v));
  }
  std::sort(out.begin(), out.end(), [](const PolicyView& a, const PolicyView& b) {
    return a.key != b.key ? a.key < b.key : a.uid < b.uid;
  });
  return out;
}

std::optional<std::string> agentLeaseNode(std::string_view leaseName) {
  if (!leaseName.starts_with(kAgentLeasePrefix) || leaseName.size() == kAgentLeasePrefix.size()) {
    return std::nullopt;
  }
  return std::string(leaseName.substr(kAgentLeasePrefix.size()));
}

std::string programmedAnnotation(const std::vector<ipam::Address>& held) {
  std::vector<std::string> texts;
  for (const auto& e : held) {
    texts.push_back(e.toString());
  }
  std::sort(texts.begin(), texts.end());
  texts.erase(std::unique(texts.begin(), texts.end()), texts.end());
  std::string out;
  for (const auto& t : texts) {
    out += (out.empty() ? "" : ",") + t;
  }
  return out;
}

}  // namespace egress::dataplane
