#include "test/e2e/fault_invariants.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <thread>

#include "test/e2e/testenv/environment.h"

namespace egress::e2e {

using namespace std::chrono_literals;
using testenv::controlPlane;

namespace {

// One LIST of `resource` across every namespace, as JSON.
rapidjson::Document listAll(const std::string& resource) {
  auto got = controlPlane().kubectl({"get", resource, "-A", "-o", "json"});
  return parseJson(got.ok() ? got.output : "{}");
}

template <typename F>
void forItems(const rapidjson::Document& doc, F f) {
  if (const auto* items = at(doc, {"items"}); items != nullptr && items->IsArray()) {
    for (const auto& item : items->GetArray()) {
      f(item, str(*at(item, {"metadata"}), "namespace"), str(*at(item, {"metadata"}), "name"));
    }
  }
}

std::string label(const rapidjson::Value& item, const char* key) {
  const auto* labels = at(item, {"metadata", "labels"});
  return labels == nullptr ? "" : str(*labels, key);
}

// The policy's selector as the test writes it (policyYaml): matchLabels app=<value>.
std::string selectedApp(const rapidjson::Value& policy) {
  const auto* m = at(policy, {"spec", "podSelector", "matchLabels"});
  return m == nullptr ? "" : str(*m, "app");
}

// What the operator's caches should say, from fresh LISTs.
struct Listed {
  std::map<std::string, PolicyView> policies;
  std::map<std::string, std::set<std::string>> sources;  // ns/policy -> "ip@node" of its pods
  std::map<std::string, int> selected;                   // ns/policy -> matching live pods
  // ns/policy -> the first address of each entry its status names a live gateway pod for
  std::map<std::string, std::set<std::string>> held;
  std::map<std::string, std::set<std::string>> sliceSources;  // ns/policy -> its slices' "ip@node"
  std::map<std::string, int> available;                       // ns/policy -> Deployment available
};

Listed listEverything() {
  Listed l;
  const auto policyDoc = listAll("egp");
  std::map<std::string, std::vector<std::string>> appsByNs;  // ns -> [(policy key, app)]
  std::map<std::string, std::string> appOf;
  forItems(policyDoc,
           [&](const rapidjson::Value& item, const std::string& ns, const std::string& name) {
             l.policies[ns + "/" + name] = viewOf(item);
             appOf[ns + "/" + name] = selectedApp(item);
             l.sources[ns + "/" + name];
             l.selected[ns + "/" + name] = 0;
           });
  std::map<std::string, std::string> liveGateways;  // pod uid -> ns/policy
  forItems(listAll("pods"),
           [&](const rapidjson::Value& item, const std::string& ns, const std::string& name) {
             const bool deleting = at(item, {"metadata", "deletionTimestamp"}) != nullptr;
             if (const std::string policy = label(item, kPolicyLabel); !policy.empty()) {
               if (!deleting) {
                 liveGateways.emplace(str(*at(item, {"metadata"}), "uid"), ns + "/" + policy);
               }
               return;
             }
             const std::string app = label(item, "app");
             for (const auto& [key, want] : appOf) {
               if (deleting || want.empty() || want != app || key.rfind(ns + "/", 0) != 0) {
                 continue;
               }
               ++l.selected[key];
               const std::string ip = str(*at(item, {"status"}), "podIP");
               const std::string node = str(*at(item, {"spec"}), "nodeName");
               if (!ip.empty() && !node.empty()) {
                 l.sources[key].insert(ip + "@" + node);
               }
             }
             (void)name;
           });
  for (const auto& [key, p] : l.policies) {
    for (size_t i = 0; i < p.ledger.size() && i < p.ledgerPodUIDs.size(); ++i) {
      auto pod = liveGateways.find(p.ledgerPodUIDs[i]);
      if (pod != liveGateways.end() && pod->second == key && !p.ledger[i].empty()) {
        l.held[key].insert(p.ledger[i].front());
      }
    }
  }
  forItems(listAll("egresspolicyslices"), [&](const rapidjson::Value& item, const std::string&,
                                              const std::string&) {
    const auto* policy = at(item, {"spec", "policy"});
    if (policy == nullptr) {
      return;
    }
    const std::string key = str(*policy, "namespace") + "/" + str(*policy, "name");
    auto& into = l.sliceSources[key];
    const auto* sources = at(item, {"spec", "sources"});
    if (sources == nullptr || !sources->IsArray()) {
      return;
    }
    for (const auto& src : sources->GetArray()) {
      const auto* ips = at(src, {"ips"});
      if (ips == nullptr || !ips->IsArray()) {
        continue;
      }
      for (const auto& ip : ips->GetArray()) {
        into.insert(std::string(ip.IsString() ? ip.GetString() : "?") + "@" + str(src, "node"));
      }
    }
  });
  forItems(listAll("deployments"), [&](const rapidjson::Value& item, const std::string& ns,
                                       const std::string& name) {
    if (name.rfind("egw-", 0) == 0) {
      const auto* a = at(item, {"status", "availableReplicas"});
      l.available[ns + "/" + name.substr(4)] = a != nullptr && a->IsInt() ? a->GetInt() : 0;
    }
  });
  return l;
}

std::string joined(const std::set<std::string>& lines) {
  std::string out;
  for (const auto& s : lines) {
    out += s + "\n";
  }
  return out;
}

// Every disagreement between the LISTs and the operator's view; empty when they agree.
std::vector<std::string> disagreements(const Listed& l, const std::string& metrics,
                                       const std::string& pool) {
  std::vector<std::string> out;
  size_t inPool = 0;
  int ready = 0;
  for (const auto& [key, p] : l.policies) {
    const auto slash = key.find('/');
    const std::string ns = key.substr(0, slash);
    const std::string name = key.substr(slash + 1);
    if (p.pool == pool) {
      inPool += p.egressIPs.size();
    }
    ready += p.conditionIs("Ready", "True") ? 1 : 0;
    const auto slices = l.sliceSources.find(key);
    if (slices == l.sliceSources.end() || slices->second != l.sources.at(key)) {
      out.push_back(key + ": EgressPolicySlice sources differ from the LISTed pods: " +
                    (slices == l.sliceSources.end() ? "(no slice)" : joined(slices->second)) +
                    " against " + joined(l.sources.at(key)));
    }
    if (p.selectedPods != l.selected.at(key)) {
      out.push_back(key + ": status.selectedPods " + std::to_string(p.selectedPods) + ", LIST " +
                    std::to_string(l.selected.at(key)));
    }
    const double gauge =
        metricSum(metrics, "egress_selected_pods", {{"namespace", ns}, {"policy", name}});
    if (gauge != l.selected.at(key)) {
      out.push_back(key + ": egress_selected_pods " + std::to_string(gauge));
    }
    std::set<std::string> ledger;
    for (const auto& e : p.ledger) {
      ledger.insert(e.empty() ? "" : e.front());
    }
    const auto held = l.held.find(key);
    if ((held == l.held.end() ? std::set<std::string>{} : held->second) != ledger) {
      out.push_back(key + ": the status does not name a live gateway pod for every ledger entry");
    }
    const auto av = l.available.find(key);
    if (av == l.available.end() || av->second != static_cast<int>(p.ledger.size())) {
      out.push_back(key + ": Deployment available " +
                    (av == l.available.end() ? "missing" : std::to_string(av->second)) +
                    ", ledger " + std::to_string(p.ledger.size()));
    }
  }
  const double allocated =
      metricSum(metrics, "egress_ipam_pool_addresses", {{"pool", pool}, {"state", "allocated"}});
  if (allocated != static_cast<double>(inPool)) {
    out.push_back("egress_ipam_pool_addresses allocated " + std::to_string(allocated) + ", LIST " +
                  std::to_string(inPool));
  }
  if (poolField(pool, ".status.ipv4.allocated") != std::to_string(inPool)) {
    out.push_back("pool status allocated " + poolField(pool, ".status.ipv4.allocated"));
  }
  if (metricSum(metrics, "egress_policies") != static_cast<double>(l.policies.size()) ||
      metricSum(metrics, "egress_policies", {{"state", "ready"}}) != ready) {
    out.push_back("egress_policies differs from the LIST (" + std::to_string(l.policies.size()) +
                  " policies, " + std::to_string(ready) + " ready)");
  }
  return out;
}

// The writes a window of `seconds` may hold: the Lease renewals in it, one more for a renewal at
// its edge.
double renewalAllowance(double leaseRenewalsPerSecond, double seconds) {
  return leaseRenewalsPerSecond > 0 ? std::ceil(leaseRenewalsPerSecond * seconds) + 1 : 0;
}

}  // namespace

bool quiesce(const Operator& op, double leaseRenewalsPerSecond, std::chrono::seconds quiet,
             std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  double writes = op.writes();
  double reconciles = op.reconciles("egressgateway");
  auto since = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(500ms);
    const double w = op.writes();
    const double r = op.reconciles("egressgateway");
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
    if (r != reconciles || w - writes > renewalAllowance(leaseRenewalsPerSecond, elapsed)) {
      writes = w;
      reconciles = r;
      since = std::chrono::steady_clock::now();
    } else if (elapsed >= static_cast<double>(quiet.count())) {
      return true;
    }
  }
  return false;
}

std::map<std::string, PolicyView> clusterPolicies() {
  std::map<std::string, PolicyView> out;
  forItems(listAll("egp"), [&](const rapidjson::Value& item, const std::string& ns,
                               const std::string& name) { out[ns + "/" + name] = viewOf(item); });
  return out;
}

std::string InvariantReport::summary() const {
  std::ostringstream s;
  s << "policies=" << policies << " addresses=" << addresses
    << " seconds_to_ready=" << secondsToReady << " case_reconciles=" << caseReconciles
    << " quiet_reconciles=" << quietReconciles << " quiet_writes=" << quietWrites;
  return s.str();
}

InvariantReport checkInvariants(const std::map<std::string, PolicyView>& before, Operator& leader,
                                const std::vector<Operator*>& alive, double reconcilesBefore,
                                std::chrono::steady_clock::time_point faultEnded,
                                const InvariantBounds& bounds) {
  InvariantReport r;
  // Every policy Ready again within the bound.
  std::map<std::string, PolicyView> now;
  const bool ready = eventually(
      [&] {
        now = clusterPolicies();
        return !now.empty() && std::all_of(now.begin(), now.end(), [](const auto& kv) {
          return kv.second.conditionIs("Ready", "True");
        });
      },
      bounds.ready);
  r.secondsToReady =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - faultEnded).count();
  EXPECT_TRUE(ready) << [&] {
    std::string s;
    for (const auto& [k, p] : now) {
      if (!p.conditionIs("Ready", "True")) {
        s += k + ": " + p.reason("Ready") + " " +
             (p.messages.count("Ready") != 0 ? p.messages.at("Ready") : "") + "\n";
      }
    }
    const std::string log = leader.process().log();
    return s + "--- leader log (tail)\n" + log.substr(log.size() > 4000 ? log.size() - 4000 : 0);
  }();

  // The operator's caches agree with fresh LISTs (once its batched recounts have landed).
  std::vector<std::string> differ;
  const bool agree = eventually(
      [&] {
        differ = disagreements(listEverything(), leader.metrics(), bounds.pool);
        return differ.empty();
      },
      60s);
  EXPECT_TRUE(agree) << [&] {
    std::string s;
    for (size_t i = 0; i < differ.size() && i < 20; ++i) {
      s += differ[i] + "\n";
    }
    return s;
  }();

  now = clusterPolicies();
  r.policies = now.size();
  r.addresses = addressCount(now);
  EXPECT_EQ(allAddresses(now).size(), r.addresses) << "an address is held by two policies";
  for (const auto& [key, p] : before) {
    auto it = now.find(key);
    if (p.ledger.empty() || it == now.end()) {
      continue;  // a policy the case deleted on purpose is checked by the case
    }
    // Entries may be added (a scale-up); none held before may go.
    for (const auto& entry : p.ledger) {
      EXPECT_NE(std::find(it->second.ledger.begin(), it->second.ledger.end(), entry),
                it->second.ledger.end())
          << key << " lost " << (entry.empty() ? "" : entry.front());
    }
  }
  for (Operator* op : alive) {
    EXPECT_FALSE(op->process().reap(0s)) << op->logFile() << " exited:\n" << op->process().log();
  }

  // No hot loop: once converged, the leader neither writes nor keeps reconciling.
  EXPECT_TRUE(quiesce(leader, bounds.leaseRenewalsPerSecond, 5s, 60s))
      << "the leader never stopped writing\n"
      << leader.metrics();
  const double writes = leader.writes();
  const double reconciles = leader.reconciles("egressgateway");
  std::this_thread::sleep_for(bounds.quiet);
  r.quietWrites = leader.writes() - writes;
  r.quietReconciles = leader.reconciles("egressgateway") - reconciles;
  r.caseReconciles = leader.reconciles("egressgateway") - reconcilesBefore;
  EXPECT_LE(r.quietWrites, renewalAllowance(bounds.leaseRenewalsPerSecond,
                                            static_cast<double>(bounds.quiet.count())))
      << "writes in " << bounds.quiet.count() << " s after converging, Lease renewals allowed";
  EXPECT_LE(r.quietReconciles, bounds.maxQuietReconciles)
      << "reconciles in " << bounds.quiet.count() << " s after converging";
  if (bounds.maxCaseReconciles > 0) {
    EXPECT_LE(r.caseReconciles, bounds.maxCaseReconciles) << "reconciles over the case";
  }
  return r;
}

}  // namespace egress::e2e
