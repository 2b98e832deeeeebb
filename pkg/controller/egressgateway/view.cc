#include "pkg/controller/egressgateway/view.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "pkg/apis/meta/encode.h"
#include "pkg/apis/networking/v1alpha1/zz_generated.codec.h"
#include "pkg/controller/egressgateway/status.h"
#include "pkg/controller/names.h"

namespace egress::controller {
namespace {

bool familyWanted(const std::vector<ipam::Family>& families, ipam::Family f) {
  return std::find(families.begin(), families.end(), f) != families.end();
}

meta::StringMap sliceLabels(const v1alpha1::PolicyReference& policy) {
  return {{std::string(kManagedByLabel), std::string(kManagedByValue)},
          {std::string(kNameLabel), std::string(kNameValue)},
          {std::string(kPolicyNamespaceLabel), policy.namespace_},
          {std::string(kPolicyLabel), policy.name}};
}

// The index in a slice's name "<ns>.<policy>.<index>" of policy `ref`; nullopt for a name that
// is not one of this policy's.
std::optional<size_t> sliceIndex(const std::string& name, const v1alpha1::PolicyReference& ref) {
  const std::string prefix = ref.namespace_ + "." + ref.name + ".";
  if (!name.starts_with(prefix) || name.size() == prefix.size()) {
    return std::nullopt;
  }
  size_t index = 0;
  const char* first = name.data() + prefix.size();
  const char* last = name.data() + name.size();
  auto [end, ec] = std::from_chars(first, last, index);
  if (ec != std::errc() || end != last || (*first == '0' && last - first > 1)) {
    return std::nullopt;
  }
  return index;
}

}  // namespace

std::vector<std::optional<ViewHolder>> viewHolders(
    const EgressGatewayPolicyInfo& info, const LedgerPlan& plan,
    const std::map<ipam::Address, std::set<std::string>>& claims) {
  const auto& ledger = plan.entries;
  const auto& names = plan.holders;
  std::vector<std::optional<ViewHolder>> out(ledger.size());
  for (size_t i = 0; i < ledger.size(); ++i) {
    auto it = info.egressPods.find(names[i]);
    if (names[i].empty() || it == info.egressPods.end()) {
      continue;
    }
    const auto& pod = *it->second.pod;
    // A pod being deleted no longer holds: its address is refused (or its sources move to the
    // policy's other addresses) until the entry has a new holder.
    if (it->second.terminating || pod.spec.nodeName.empty()) {
      continue;
    }
    const bool elsewhere = std::any_of(ledger[i].begin(), ledger[i].end(), [&](const auto& a) {
      auto c = claims.find(a);
      return c != claims.end() &&
             std::any_of(c->second.begin(), c->second.end(),
                         [&](const std::string& node) { return node != pod.spec.nodeName; });
    });
    if (elsewhere) {
      continue;
    }
    out[i] = ViewHolder{pod.metadata.name, pod.metadata.uid, pod.spec.nodeName};
  }
  return out;
}

v1alpha1::SliceGateway sliceGateway(const v1alpha1::EgressGatewayPolicy& policy,
                                    const std::vector<ipam::Entry>& ledger,
                                    const std::vector<std::optional<ViewHolder>>& holders,
                                    const std::vector<std::string>& clusterCIDRs) {
  v1alpha1::SliceGateway g;
  for (size_t i = 0; i < ledger.size(); ++i) {
    v1alpha1::SliceEgressIP e;
    for (const auto& a : ledger[i]) {
      e.ips.push_back(a.toString());
    }
    if (i < holders.size() && holders[i]) {
      e.node = holders[i]->node;
      e.pod = holders[i]->pod;
      e.podUID = holders[i]->podUID;
    }
    g.egressIPs.push_back(std::move(e));
  }
  const auto families = policyFamilies(policy);
  auto canonical = [&](const std::string& text) -> std::optional<std::string> {
    auto p = ipam::parseCIDR(text);
    if (!p || !familyWanted(families, p->address.family)) {
      return std::nullopt;
    }
    return p->toString();
  };
  std::set<std::string> dst;
  for (const auto& c : policy.spec.destinationCIDRs) {
    if (auto p = canonical(c)) {
      dst.insert(*p);
    }
  }
  if (policy.spec.destinationCIDRs.empty()) {
    // Everything outside the cluster: the whole family, minus the exclusions below.
    if (familyWanted(families, ipam::Family::kIPv4)) {
      dst.insert("0.0.0.0/0");
    }
    if (familyWanted(families, ipam::Family::kIPv6)) {
      dst.insert("::/0");
    }
  }
  std::set<std::string> exc;
  for (const auto* list : {&policy.spec.excludedCIDRs, &clusterCIDRs}) {
    for (const auto& c : *list) {
      if (auto p = canonical(c)) {
        exc.insert(*p);
      }
    }
  }
  g.destinationCIDRs.assign(dst.begin(), dst.end());
  g.excludedCIDRs.assign(exc.begin(), exc.end());
  return g;
}

std::vector<v1alpha1::SliceSource> sliceSources(const v1alpha1::EgressGatewayPolicy& policy,
                                                const std::vector<PodPtr>& sourcePods) {
  const auto families = policyFamilies(policy);
  std::map<std::string, v1alpha1::SliceSource> byName;
  for (const auto& pod : sourcePods) {
    const auto& phase = pod->status.phase;
    if (phase == "Succeeded" || phase == "Failed" || pod->spec.hostNetwork ||
        pod->spec.nodeName.empty()) {
      continue;
    }
    v1alpha1::SliceSource s;
    s.pod = pod->metadata.name;
    s.node = pod->spec.nodeName;
    for (const auto& text : pod->status.podIPs) {
      auto a = ipam::parseAddress(text);
      if (a && familyWanted(families, a->family)) {
        s.ips.push_back(a->toString());
      }
    }
    if (!s.ips.empty() && s.ips.size() <= 2) {
      byName.emplace(s.pod, std::move(s));
    }
  }
  std::vector<v1alpha1::SliceSource> out;
  out.reserve(byName.size());
  for (auto& [name, s] : byName) {
    out.push_back(std::move(s));
  }
  return out;
}

SlicePlan planSlices(const v1alpha1::EgressGatewayPolicy& policy,
                     const v1alpha1::SliceGateway& gateway,
                     const std::vector<v1alpha1::SliceSource>& sources,
                     const std::vector<SlicePtr>& existing, size_t perSlice) {
  SlicePlan plan;
  v1alpha1::PolicyReference ref{policy.metadata.namespace_, policy.metadata.name,
                                policy.metadata.uid};
  // The slices there are, by index; any other object indexed under this policy (none that the
  // operator wrote) is removed.
  std::map<size_t, SlicePtr> have;
  for (const auto& s : existing) {
    auto index = sliceIndex(s->metadata.name, ref);
    if (!index || have.contains(*index)) {
      plan.remove.push_back(s);
      continue;
    }
    have.emplace(*index, s);
  }
  // Where each pod is now (the lowest index, should one be listed twice).
  std::map<std::string, size_t> placed;
  for (const auto& [index, s] : have) {
    for (const auto& src : s->spec.sources) {
      placed.emplace(src.pod, index);
    }
  }
  std::map<size_t, std::vector<v1alpha1::SliceSource>> buckets;
  buckets[0];
  for (const auto& [index, s] : have) {
    buckets[index];
  }
  std::vector<const v1alpha1::SliceSource*> pending;
  for (const auto& src : sources) {
    auto it = placed.find(src.pod);
    if (it != placed.end() && buckets[it->second].size() < perSlice) {
      buckets[it->second].push_back(src);
    } else {
      pending.push_back(&src);
    }
  }
  // Mostly empty (more than twice the slices the sources need, plus one): repack, once, rather
  // than keep a trail of near-empty objects after a large policy shrank.
  const size_t needed = std::max<size_t>(1, (sources.size() + perSlice - 1) / perSlice);
  size_t used = 0;
  for (const auto& [index, list] : buckets) {
    used += list.empty() ? 0 : 1;
  }
  if (used > 2 * needed + 1) {
    buckets.clear();
    pending.clear();
    for (const auto& src : sources) {
      pending.push_back(&src);
    }
    buckets[0];
  }
  size_t next = 0;
  for (const auto* src : pending) {
    while (buckets[next].size() >= perSlice) {
      ++next;
    }
    buckets[next].push_back(*src);
  }
  for (const auto& [index, s] : have) {
    auto b = buckets.find(index);
    if (b == buckets.end() || (index != 0 && b->second.empty())) {
      plan.remove.push_back(s);
    }
  }
  for (auto& [index, list] : buckets) {
    if (index != 0 && list.empty()) {
      continue;
    }
    std::sort(list.begin(), list.end(),
              [](const v1alpha1::SliceSource& a, const v1alpha1::SliceSource& b) {
                return a.pod < b.pod;
              });
    v1alpha1::EgressPolicySlice want;
    want.metadata.name = sliceName(ref.namespace_, ref.name, index);
    want.metadata.labels = sliceLabels(ref);
    want.spec.policy = ref;
    if (index == 0) {
      want.spec.gateway = gateway;
    }
    want.spec.sources = std::move(list);
    auto it = have.find(index);
    if (it == have.end() || !(it->second->spec == want.spec) ||
        it->second->metadata.labels != want.metadata.labels) {
      plan.write.push_back(std::move(want));
    }
  }
  return plan;
}

std::set<ipam::Address> sliceAddresses(const v1alpha1::EgressPolicySlice& slice) {
  std::set<ipam::Address> out;
  if (slice.spec.gateway) {
    for (const auto& e : slice.spec.gateway->egressIPs) {
      for (const auto& text : e.ips) {
        if (auto a = ipam::parseAddress(text)) {
          out.insert(*a);
        }
      }
    }
  }
  return out;
}

Rendered renderSlice(const v1alpha1::EgressPolicySlice& slice) {
  rapidjson::StringBuffer buf;
  meta::JsonWriter w(buf);
  w.StartObject();
  meta::writeField(w, "apiVersion", kApiVersion);
  meta::writeField(w, "kind", "EgressPolicySlice");
  meta::writeKey(w, "metadata");
  w.StartObject();
  meta::writeField(w, "name", slice.metadata.name);
  meta::writeKey(w, "labels");
  w.StartObject();
  for (const auto& [k, v] : slice.metadata.labels) {
    meta::writeField(w, k, v);
  }
  w.EndObject();
  w.EndObject();
  meta::writeKey(w, "spec");
  v1alpha1::encodeEgressPolicySliceSpec(w, slice.spec);
  w.EndObject();
  Rendered r;
  r.name = slice.metadata.name;
  r.body = {buf.GetString(), buf.GetSize()};
  r.hash = digest(r.body);
  return r;
}

}  // namespace egress::controller
