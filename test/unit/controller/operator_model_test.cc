// The randomized model test of the whole operator: two replicas of the real Manager and main
// controller (leader election included) run on one io_context against an in-memory API server
// (model_api_server.h) with a fake clock, injected 409s, 500s, lost replies and delayed watches.
// Around them a simulated cluster plays kube-controller-manager (Deployments → ReplicaSets →
// pods, garbage collection by owner uid), the scheduler and the kubelets (pods start, become
// Ready, terminate with a grace period), the egw-agents (each answers for the egress IPs the
// published view names its node for, as of a lagging read that now and then stalls for seconds,
// and reports them on its Lease; a lost node's agent answers until its own Lease runs out) and
// the tenants (policies created, scaled and scaled back seconds later, to an invalid 0 too,
// deleted and re-created under the same name on another pool; two policies racing for one pool's
// addresses, the first scaling back the moment its view names a node for the new one; pools
// shrunk and grown back).
// Replicas are partitioned (a leader change), restarted, and crash.
//
// After every tick it checks what the operator promises:
//   - no address in two policies' ledgers;
//   - no address held for two policies at once, where a holder is anything that may send from
//     it: a slice naming a node for it, a live gateway pod annotated with it, an agent answering
//     for it (a ledger alone holds nothing: a ledger entry whose address another policy's agent
//     still answers for is published with no node until that agent lets go);
//   - an address entering a ledger lies in the pool the policy names;
// and once the faults stop and the cluster settles: every policy holds what it asks for unless
// its pool is full (a freed address is reusable), and its ledger's pool is the one it names.
//
// Seeds and steps: EGRESS_MODEL_SEEDS (default 12) seeds from EGRESS_MODEL_SEED (default 1), of
// EGRESS_MODEL_STEPS steps (default 600, 10 simulated minutes) each; `make fuzz` runs it longer,
// from a new first seed each time. A failure names its seed and the actions that led to it;
// EGRESS_MODEL_LOG=info and EGRESS_MODEL_TRACE=<path part> replay it with the replicas' logs and
// the writes they made.
#include <algorithm>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include "pkg/apis/meta/time.h"
#include "pkg/base/clock.h"
#include "pkg/controller/controller.h"
#include "pkg/controllerruntime/manager.h"
#include "pkg/ipam/address.h"
#include "test/unit/controller/model_api_server.h"

namespace egress::controller::model {
namespace {

using namespace std::chrono_literals;
using rapidjson::Value;

constexpr const char* kGroupVersion = "networking.egressgateway.dev/v1alpha1";
constexpr const char* kAgentNs = "egress-agents";
constexpr auto kTick = 500ms;
constexpr int kAgentLeaseSeconds = 6;
const std::vector<std::string> kNamespaces = {"t1", "t2"};
const std::vector<std::string> kPolicyNames = {"web", "api", "db"};
const std::vector<std::string> kPools = {"pool-a", "pool-b"};
// Each pool toggles between its wide and its narrow CIDR (a shrink and a growth).
const std::map<std::string, std::pair<std::string, std::string>> kPoolCidrs = {
    {"pool-a", {"198.51.100.0/29", "198.51.100.0/30"}},
    {"pool-b", {"203.0.113.0/29", "203.0.113.4/30"}}};
constexpr int kNodes = 4;

int envInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

bool inCidr(const std::string& address, const std::string& cidr) {
  auto a = ipam::parseAddress(address);
  auto p = ipam::parseCIDR(cidr);
  return a && p && a->family == p->address.family && a->value >= p->first() &&
         a->value <= p->last();
}

// The uid an object's controller reference names, or "".
std::string controllerUid(const Value& obj) {
  const Value* refs = path(obj, {"metadata", "ownerReferences"});
  if (refs == nullptr || !refs->IsArray()) {
    return "";
  }
  for (const auto& r : refs->GetArray()) {
    if (r.HasMember("controller") && r["controller"].IsBool() && r["controller"].GetBool()) {
      return stringAt(r, {"uid"});
    }
  }
  return "";
}

// A slice's policy (slices are cluster-scoped: no owner reference can name a namespaced policy).
std::string sliceOwner(const Value& slice) {
  return stringAt(slice, {"spec", "policy", "uid"});
}

bool terminating(const Value& obj) {
  return path(obj, {"metadata", "deletionTimestamp"}) != nullptr;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) {
    out += (out.empty() ? "" : ",") + s;
  }
  return out;
}

// One operator process: a Manager (leader election on) hosting the main controller.
struct Replica {
  std::string identity;
  Link link;
  std::unique_ptr<controllerruntime::Manager> manager;
  bool done = false;
  int exitCode = 0;
  bool stopRequested = false;
  int crashAt = -1;  // a partitioned replica's shutdown is a crash: nothing it writes arrives
};

// Which invariants are checked: all by default; EGRESS_MODEL_CHECKS=holders,ledgers,pool,settled
// picks some, to see what else a run finds past the first violation of another.
struct Checks {
  bool holders = true;
  bool ledgers = true;
  bool pool = true;
  bool settled = true;
  static Checks fromEnv() {
    const char* v = std::getenv("EGRESS_MODEL_CHECKS");
    if (v == nullptr || *v == '\0') {
      return {};
    }
    const std::string list = std::string(",") + v + ",";
    auto has = [&](const char* name) {
      return list.find(std::string(",") + name + ",") != std::string::npos;
    };
    return {has("holders"), has("ledgers"), has("pool"), has("settled")};
  }
};

class OperatorModel {
 public:
  explicit OperatorModel(uint64_t seed)
      : seed_(seed),
        random_(seed),
        clock_(ioc_.get_executor()),
        api_(ioc_.get_executor(), clock_, random_) {}

  ~OperatorModel() {
    for (auto& r : replicas_) {
      if (r && !r->done && r->manager) {
        r->manager->requestShutdown();
      }
    }
    for (int i = 0; i < 200 && anyRunning(); ++i) {
      tick(false);
    }
  }

  // Runs `steps` random steps, then lets the cluster settle; "" or the first violation.
  std::string run(int steps) {
    setUpCluster();
    replicas_.push_back(startReplica("a"));
    replicas_.push_back(startReplica("b"));
    api_.faults.conflict = 0.05;
    api_.faults.serverError = 0.02;
    api_.faults.lostReply = 0.03;
    api_.faults.maxWatchDelay = 2000ms;
    // EGRESS_MODEL_TRACE=<text>: log every write whose target contains it (with EGRESS_MODEL_LOG).
    if (const char* traced = std::getenv("EGRESS_MODEL_TRACE")) {
      api_.onWrite = [text = std::string(traced)](const kube::HttpRequest& r, int status,
                                                  bool lost) {
        if (r.target.find(text) != std::string::npos) {
          spdlog::info("model: {} {} -> {}{}: {}", r.method, r.target, status,
                       lost ? " (reply lost)" : "", r.body);
        }
      };
    }
    for (step_ = 0; step_ < steps && violation_.empty(); ++step_) {
      act();
      for (int t = 0; t < 2 && violation_.empty(); ++t) {
        scaleBackOnSight();
        tick(true);
      }
    }
    if (!violation_.empty()) {
      return report();
    }
    settle();
    if (violation_.empty() && checks_.settled) {
      checkSettled();
    }
    return violation_.empty() ? "" : report();
  }

  int policiesCreated() const { return policiesCreated_; }
  int leaderChanges() const { return leaderChanges_; }
  int apiWrites() const { return api_.writes(); }
  int apiFaulted() const { return api_.faulted(); }
  int backOnSight() const { return backOnSight_; }

 private:
  // ---- the cluster around the operator ----------------------------------------------------

  void put(const std::string& resource, const std::string& json) {
    auto doc = parseJson(json);
    if (api_.get(resource, keyOf(doc)) == nullptr) {
      api_.create(resource, std::move(doc));
    } else {
      api_.replace(resource, std::move(doc));
    }
  }

  void setUpCluster() {
    for (const auto& ns : {"t1", "t2", "egress-system", kAgentNs}) {
      put("namespaces",
          std::string(R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")") + ns +
              R"("}})");
    }
    for (int n = 0; n < kNodes; ++n) {
      Node node;
      node.name = "node-" + std::to_string(n);
      nodes_.push_back(std::move(node));
      writeNode(n);
    }
    put("operatorconfigs", std::string(R"({"apiVersion":")") + kGroupVersion +
                               R"(","kind":"OperatorConfig","metadata":{"name":"default"},)"
                               R"("spec":{"gatewayImage":"example.invalid/gw:1",)"
                               R"("clusterCIDRs":["10.244.0.0/16","10.96.0.0/12"],)"
                               R"("dataplane":{"agent":true}}})");
    for (const auto& pool : kPools) {
      writePool(pool, false);
    }
    // Two source pods per namespace, selected by the policy named like their app label.
    for (const auto& ns : kNamespaces) {
      for (const auto& app : {"web", "api"}) {
        const std::string name = std::string(app) + "-src";
        const std::string ip = "10.244.0." + std::to_string(++podIps_);
        put("pods",
            R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
                R"(","namespace":")" + ns + R"(","labels":{"app":")" + app +
                R"("}},"spec":{"nodeName":"node-0","containers":[{"name":"c","image":"x"}]},)"
                R"("status":{"phase":"Running","podIP":")" +
                ip + R"(","podIPs":[{"ip":")" + ip +
                R"("}],"conditions":[{"type":"Ready","status":"True"}]}})");
      }
    }
  }

  void writeNode(int n) {
    const auto& node = nodes_[n];
    put("nodes", R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + node.name +
                     R"("},"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.)" +
                     std::to_string(n + 10) + R"("}],"conditions":[{"type":"Ready","status":")" +
                     (node.alive ? "True" : "Unknown") + R"("}]}})");
  }

  void writePool(const std::string& pool, bool narrow) {
    const auto& cidrs = kPoolCidrs.at(pool);
    everInPool_[pool].insert(narrow ? cidrs.second : cidrs.first);
    narrow_[pool] = narrow;
    auto doc =
        parseJson(std::string(R"({"apiVersion":")") + kGroupVersion +
                  R"(","kind":"IPAMPool","metadata":{"name":")" + pool +
                  R"("},"spec":{"cidrs":[")" + (narrow ? cidrs.second : cidrs.first) + R"("]}})");
    if (const Value* old = api_.get("ipampools", pool)) {
      auto& a = doc.GetAllocator();
      doc["metadata"].AddMember("uid", Value(stringAt(*old, {"metadata", "uid"}).c_str(), a), a);
      doc["metadata"].AddMember("creationTimestamp",
                                Value(stringAt(*old, {"metadata", "creationTimestamp"}).c_str(), a),
                                a);
      if (const Value* status = path(*old, {"status"})) {
        doc.AddMember("status", Value(*status, a), a);
      }
      api_.replace("ipampools", std::move(doc));
    } else {
      api_.create("ipampools", std::move(doc));
    }
  }

  std::string policyJson(const std::string& ns, const std::string& name, const std::string& pool,
                         int replicas) {
    return std::string(R"({"apiVersion":")") + kGroupVersion +
           R"(","kind":"EgressGatewayPolicy","metadata":{"name":")" + name + R"(","namespace":")" +
           ns + R"("},"spec":{"podSelector":{"matchLabels":{"app":")" + name +
           R"("}},"destinationCIDRs":["192.0.2.0/24"],"egressIP":{"pool":")" + pool +
           R"("},"gateway":{"replicas":)" + std::to_string(replicas) + "}}}";
  }

  void createPolicy(const std::string& ns, const std::string& name) {
    const std::string& pool = kPools[pick(kPools.size())];
    const int replicas = 1 + static_cast<int>(pick(3));
    const std::string uid =
        api_.create("egressgatewaypolicies", parseJson(policyJson(ns, name, pool, replicas)));
    specPool_[uid] = pool;
    ++policiesCreated_;
    log("create " + ns + "/" + name + " (" + uid + ") on " + pool + " x" +
        std::to_string(replicas));
  }

  // The tenants, the nodes and the operator's processes: one random change.
  void act() {
    const std::string& ns = kNamespaces[pick(kNamespaces.size())];
    const std::string& name = kPolicyNames[pick(kPolicyNames.size())];
    const std::string key = ns + "/" + name;
    const Value* policy = api_.get("egressgatewaypolicies", key);
    const int dice = static_cast<int>(pick(100));
    if (dice < 14) {
      if (policy == nullptr) {
        createPolicy(ns, name);
      }
    } else if (dice < 22) {
      if (policy != nullptr) {
        log("delete " + key);
        api_.remove("egressgatewaypolicies", key);
      }
    } else if (dice < 28) {
      if (policy != nullptr) {
        log("delete and re-create " + key);
        api_.remove("egressgatewaypolicies", key);
        createPolicy(ns, name);
      }
    } else if (dice < 42) {
      if (policy != nullptr) {
        const int replicas = static_cast<int>(pick(4));
        // Now and then scaled back one to four seconds later (a typo fixed, an autoscaler's
        // flap): the second change meets writes of the first (its ledger, then its gateways'
        // view once their pods run) whose watch events are still on their way.
        if (pick(3) == 0) {
          const Value* now = path(*policy, {"spec", "gateway", "replicas"});
          later_.push_back({key, now != nullptr && now->IsInt() ? now->GetInt() : 1,
                            step_ + 1 + static_cast<int>(pick(4))});
        }
        scale(key, replicas);
      }
    } else if (dice < 47) {
      const std::string& pool = kPools[pick(kPools.size())];
      log(std::string(narrow_[pool] ? "grow " : "shrink ") + pool);
      writePool(pool, !narrow_[pool]);
    } else if (dice < 50) {
      // A gateway pod deleted (kubectl delete pod, an eviction): its ReplicaSet replaces it.
      std::vector<std::string> gateways;
      for (const Value* pod : api_.list("pods")) {
        if (podPolicy_.contains(stringAt(*pod, {"metadata", "uid"})) && !terminating(*pod)) {
          gateways.push_back(keyOf(*pod));
        }
      }
      if (!gateways.empty()) {
        const std::string pod = gateways[pick(gateways.size())];
        log("delete pod " + pod);
        deleteObject("pods", pod);
      }
    } else if (dice < 54) {
      const size_t n = pick(nodes_.size());
      nodes_[n].alive = !nodes_[n].alive;
      nodes_[n].changed = clock_.now();
      log(nodes_[n].name + (nodes_[n].alive ? " back" : " lost"));
      writeNode(static_cast<int>(n));
    } else if (dice < 57) {
      // A partition: the replica's requests and watches fail; a leader loses its Lease.
      auto& r = replicas_[pick(replicas_.size())];
      if (!r->link.partitioned && !r->stopRequested && otherReplicaConnected(*r)) {
        log("partition " + r->identity);
        r->link.partitioned = true;
        api_.breakWatches(r->link);
        r->crashAt = step_ + 10 + static_cast<int>(pick(30));
      }
    } else if (dice < 60) {
      auto& r = replicas_[pick(replicas_.size())];
      if (!r->stopRequested && !r->link.partitioned) {
        log("restart " + r->identity);
        r->stopRequested = true;
        r->manager->requestShutdown();
      }
    } else if (dice < 68) {
      race();
    }
    std::erase_if(later_, [&](const Rescale& r) {
      if (r.step != step_) {
        return false;
      }
      if (api_.get("egressgatewaypolicies", r.key) != nullptr) {
        scale(r.key, r.replicas);
      }
      return true;
    });
    // A partitioned replica crashes in the end (kubelet restarts it, healed).
    for (auto& r : replicas_) {
      if (r->link.partitioned && step_ >= r->crashAt && !r->stopRequested) {
        log("crash " + r->identity);
        r->stopRequested = true;
        r->manager->requestShutdown();
      }
    }
  }

  // Two tenants race for one pool's addresses: one policy scales up (perhaps taking the pool's
  // last address), a second later another on that pool scales up too (and may wait for an
  // address, its new gateway idle), and one to four seconds after that the first scales back.
  // The address the first one's new gateway took may have just entered the published view, its
  // watch event still on its way to the operator's cache, when the scale-back lets it go; the
  // second policy is there to take it at once.
  void race() {
    const std::string& pool = kPools[pick(kPools.size())];
    std::vector<std::string> keys;
    for (const Value* p : api_.list("egressgatewaypolicies")) {
      if (specPool_[stringAt(*p, {"metadata", "uid"})] == pool && !terminating(*p)) {
        keys.push_back(keyOf(*p));
      }
    }
    if (keys.size() < 2) {
      return;
    }
    const size_t first = pick(keys.size());
    const size_t second = (first + 1 + pick(keys.size() - 1)) % keys.size();
    const int replicas = replicasOf(keys[first]);
    log("race on " + pool + ": " + keys[first] + " up and back, then " + keys[second] + " up");
    const std::string uid =
        stringAt(*api_.get("egressgatewaypolicies", keys[first]), {"metadata", "uid"});
    const auto before = viewAddresses(uid);
    scale(keys[first], replicas + 1);
    later_.push_back({keys[second], replicasOf(keys[second]) + 1, step_ + 1});
    if (pick(2) == 0) {
      later_.push_back({keys[first], replicas, step_ + 2 + static_cast<int>(pick(4))});
    } else {
      // Back the moment its view names a node for a new address (an autoscaler that reacts to
      // the new gateway): the view's watch event may still be on its way to the operator.
      onSight_.push_back({keys[first], uid, replicas, before, step_ + 30});
    }
  }

  // The addresses the published view of policy `uid` names a node for, as the API server has it.
  std::set<std::string> viewAddresses(const std::string& uid) const {
    std::set<std::string> out;
    forEachHolding([&](const std::string& owner, const std::string&, const std::string& ip) {
      if (owner == uid) {
        out.insert(ip);
      }
    });
    return out;
  }

  // Every (policy uid, node, address) the published view names a node for, as the API server
  // has it now.
  void forEachHolding(const std::function<void(const std::string& owner, const std::string& node,
                                               const std::string& ip)>& fn) const {
    for (const Value* slice : api_.list("egresspolicyslices")) {
      const Value* ips = path(*slice, {"spec", "gateway", "egressIPs"});
      if (ips == nullptr || !ips->IsArray()) {
        continue;
      }
      for (const auto& e : ips->GetArray()) {
        const std::string node = stringAt(e, {"node"});
        if (!node.empty()) {
          for (const auto& ip : stringsAt(e, {"ips"})) {
            fn(sliceOwner(*slice), node, ip);
          }
        }
      }
    }
  }

  // The racers waiting for their view to name a new address scale back once it does (or give up
  // after a while).
  void scaleBackOnSight() {
    std::erase_if(onSight_, [&](const OnSight& w) {
      const Value* policy = api_.get("egressgatewaypolicies", w.key);
      if (policy == nullptr || stringAt(*policy, {"metadata", "uid"}) != w.uid) {
        return true;
      }
      const auto now = viewAddresses(w.uid);
      const bool named = std::any_of(now.begin(), now.end(),
                                     [&](const std::string& a) { return !w.before.contains(a); });
      if (named || step_ >= w.giveUp) {
        log(named ? "its view names a new address: back" : "no new address named: back");
        backOnSight_ += named ? 1 : 0;
        scale(w.key, w.replicas);
        return true;
      }
      return false;
    });
  }

  int replicasOf(const std::string& key) const {
    const Value* policy = api_.get("egressgatewaypolicies", key);
    const Value* v = policy != nullptr ? path(*policy, {"spec", "gateway", "replicas"}) : nullptr;
    return v != nullptr && v->IsInt() ? v->GetInt() : 1;
  }

  void scale(const std::string& key, int replicas) {
    auto doc = parseJson(toJson(*api_.get("egressgatewaypolicies", key)));
    doc["spec"]["gateway"]["replicas"].SetInt(replicas);
    log("scale " + key + " to " + std::to_string(replicas));
    api_.replace("egressgatewaypolicies", std::move(doc));
  }

  bool otherReplicaConnected(const Replica& r) const {
    for (const auto& o : replicas_) {
      if (o.get() != &r && !o->link.partitioned && !o->stopRequested) {
        return true;
      }
    }
    return false;
  }

  // kube-controller-manager, the scheduler, the kubelets and the agents, once per tick.
  void simulateCluster() {
    collectGarbage();
    runDeployments();
    runKubelets();
    runAgents();
  }

  std::set<std::string> liveUids() const {
    std::set<std::string> out;
    for (const char* r : {"egressgatewaypolicies", "deployments", "replicasets", "pods"}) {
      for (const Value* obj : api_.list(r)) {
        out.insert(stringAt(*obj, {"metadata", "uid"}));
      }
    }
    return out;
  }

  // Background deletion: an object whose controller is gone is deleted (pods gracefully).
  void collectGarbage() {
    const auto live = liveUids();
    for (const char* r :
         {"deployments", "replicasets", "pods", "poddisruptionbudgets", "egresspolicyslices"}) {
      std::vector<std::string> orphans;
      for (const Value* obj : api_.list(r)) {
        const std::string owner = controllerUid(*obj);
        if (!owner.empty() && !live.contains(owner)) {
          orphans.push_back(keyOf(*obj));
        }
      }
      for (const auto& key : orphans) {
        deleteObject(r, key);
      }
    }
  }

  void deleteObject(const std::string& resource, const std::string& key) {
    if (resource != "pods") {
      api_.remove(resource, key);
      return;
    }
    const Value* pod = api_.get("pods", key);
    if (pod == nullptr || terminating(*pod)) {
      return;
    }
    auto doc = parseJson(toJson(*pod));
    auto& a = doc.GetAllocator();
    doc["metadata"].AddMember("deletionTimestamp",
                              Value(meta::formatRfc3339(clock_.wallNow()).c_str(), a), a);
    api_.replace("pods", std::move(doc));
    // Up to the default terminationGracePeriodSeconds of 30 s.
    goneAt_[key] = clock_.now() + std::chrono::milliseconds(500 * (1 + pick(60)));
  }

  bool nodeAlive(const std::string& node) const {
    for (const auto& n : nodes_) {
      if (n.name == node) {
        return n.alive;
      }
    }
    return false;
  }

  void runDeployments() {
    std::vector<const Value*> deployments = api_.list("deployments");
    for (const Value* d : deployments) {
      const std::string ns = stringAt(*d, {"metadata", "namespace"});
      const std::string dname = stringAt(*d, {"metadata", "name"});
      const std::string duid = stringAt(*d, {"metadata", "uid"});
      const Value* tmpl = path(*d, {"spec", "template"});
      if (tmpl == nullptr || terminating(*d)) {
        continue;
      }
      const std::string tmplJson = toJson(*tmpl);
      const std::string hash = std::to_string(std::hash<std::string>()(tmplJson) % 100000);
      const std::string rsName = dname + "-" + hash;
      const Value* replicasV = path(*d, {"spec", "replicas"});
      const int replicas = replicasV != nullptr && replicasV->IsInt() ? replicasV->GetInt() : 1;
      // As the deployment controller: the ReplicaSet and its pods carry the template's labels
      // plus pod-template-hash, the suffix of the ReplicaSet's name.
      auto labelsDoc = parseJson(toJson(*path(*tmpl, {"metadata", "labels"})));
      labelsDoc.AddMember("pod-template-hash", Value(hash.c_str(), labelsDoc.GetAllocator()),
                          labelsDoc.GetAllocator());
      const std::string labels = toJson(labelsDoc);
      // Old ReplicaSets scale to zero at once (Recreate, as far as the model cares).
      std::string rsUid;
      for (const Value* rs : api_.list("replicasets")) {
        if (controllerUid(*rs) != duid) {
          continue;
        }
        if (stringAt(*rs, {"metadata", "name"}) == rsName) {
          rsUid = stringAt(*rs, {"metadata", "uid"});
        }
      }
      if (rsUid.empty()) {
        rsUid = api_.create(
            "replicasets",
            parseJson(
                R"({"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":")" + rsName +
                R"(","namespace":")" + ns + R"(","labels":)" + labels +
                R"(,"ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":")" +
                dname + R"(","uid":")" + duid + R"(","controller":true}]},"spec":{"replicas":)" +
                std::to_string(replicas) + R"(,"template":)" + tmplJson + "}}"));
      }
      int total = 0;
      int updated = 0;
      int ready = 0;
      std::vector<std::string> mine;
      for (const Value* rs : api_.list("replicasets")) {
        if (controllerUid(*rs) != duid) {
          continue;
        }
        const std::string uid = stringAt(*rs, {"metadata", "uid"});
        const bool current = uid == rsUid;
        std::vector<std::pair<std::string, std::string>> live;  // creationTimestamp+name, key
        for (const Value* pod : api_.list("pods")) {
          if (controllerUid(*pod) == uid && !terminating(*pod)) {
            live.emplace_back(stringAt(*pod, {"metadata", "name"}), keyOf(*pod));
            ++total;
            if (current) {
              ++updated;
              ready += podReady(*pod) ? 1 : 0;
            }
          }
        }
        const int want = current ? replicas : 0;
        std::sort(live.begin(), live.end());  // names carry a counter: newest last
        for (int i = static_cast<int>(live.size()) - 1; i >= want; --i) {
          deleteObject("pods", live[i].second);
        }
        for (int i = static_cast<int>(live.size()); i < want; ++i) {
          createPod(ns, stringAt(*rs, {"metadata", "name"}), uid, *path(*rs, {"spec", "template"}),
                    toJson(*path(*rs, {"metadata", "labels"})), duid);
          ++total;
          ++updated;
        }
      }
      // Deployment status, as the deployment controller writes it.
      auto doc = parseJson(toJson(*api_.get("deployments", ns + "/" + dname)));
      auto& a = doc.GetAllocator();
      const int64_t generation = doc["metadata"]["generation"].GetInt64();
      const std::string status = R"({"observedGeneration":)" + std::to_string(generation) +
                                 R"(,"replicas":)" + std::to_string(total) +
                                 R"(,"updatedReplicas":)" + std::to_string(updated) +
                                 R"(,"readyReplicas":)" + std::to_string(ready) +
                                 R"(,"availableReplicas":)" + std::to_string(ready) + "}";
      auto statusDoc = parseJson(status);
      if (!doc.HasMember("status") || toJson(doc["status"]) != toJson(statusDoc)) {
        doc.RemoveMember("status");
        doc.AddMember("status", Value(statusDoc, a), a);
        api_.replace("deployments", std::move(doc));
      }
    }
  }

  void createPod(const std::string& ns, const std::string& rsName, const std::string& rsUid,
                 const Value& tmpl, const std::string& labels, const std::string& deploymentUid) {
    const std::string name = rsName + "-" + std::to_string(++podCounter_);
    std::vector<std::string> alive;
    for (const auto& n : nodes_) {
      if (n.alive) {
        alive.push_back(n.name);
      }
    }
    const std::string node = alive.empty() ? "" : alive[pick(alive.size())];
    const Value* spec = path(tmpl, {"spec"});
    auto doc =
        parseJson(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
                  R"(","namespace":")" + ns + R"(","labels":)" + labels +
                  R"(,"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":")" +
                  rsName + R"(","uid":")" + rsUid + R"(","controller":true}]},"spec":)" +
                  (spec != nullptr ? toJson(*spec) : "{}") + R"(,"status":{"phase":"Pending"}})");
    auto& a = doc.GetAllocator();
    if (!node.empty()) {
      doc["spec"].RemoveMember("nodeName");
      doc["spec"].AddMember("nodeName", Value(node.c_str(), a), a);
    }
    const std::string uid = api_.create("pods", std::move(doc));
    // Which policy a gateway pod serves: its Deployment's controller.
    for (const Value* d : api_.list("deployments")) {
      if (stringAt(*d, {"metadata", "uid"}) == deploymentUid) {
        podPolicy_[uid] = controllerUid(*d);
      }
    }
  }

  static bool conditionTrue(const Value& pod, const std::string& type) {
    const Value* conds = path(pod, {"status", "conditions"});
    if (conds == nullptr || !conds->IsArray()) {
      return false;
    }
    for (const auto& c : conds->GetArray()) {
      if (stringAt(c, {"type"}) == type) {
        return stringAt(c, {"status"}) == "True";
      }
    }
    return false;
  }

  static bool podReady(const Value& pod) { return conditionTrue(pod, "Ready"); }

  void runKubelets() {
    std::vector<std::string> gone;
    std::vector<rapidjson::Document> updates;
    for (const Value* pod : api_.list("pods")) {
      const std::string key = keyOf(*pod);
      const std::string node = stringAt(*pod, {"spec", "nodeName"});
      if (node.empty() || !nodeAlive(node)) {
        continue;  // unscheduled, or its kubelet is gone: nothing changes
      }
      if (terminating(*pod)) {
        auto it = goneAt_.find(key);
        if (it == goneAt_.end() || clock_.now() >= it->second) {
          gone.push_back(key);
        }
        continue;
      }
      // Running once scheduled; Ready when its containers are and its readiness gate (the
      // agent's, which the operator sets) is True.
      const bool gated = path(*pod, {"spec", "readinessGates"}) != nullptr;
      const bool ready = !gated || conditionTrue(*pod, "egressgateway.dev/ip-programmed");
      const std::string phase = stringAt(*pod, {"status", "phase"});
      if (phase == "Running" && podReady(*pod) == ready) {
        continue;
      }
      auto doc = parseJson(toJson(*pod));
      auto& a = doc.GetAllocator();
      std::string ip = stringAt(*pod, {"status", "podIP"});
      if (ip.empty()) {
        ++podIps_;
        ip = "10.244." + std::to_string(1 + podIps_ / 250) + "." + std::to_string(podIps_ % 250);
      }
      std::string conditions =
          R"([{"type":"ContainersReady","status":"True"},{"type":"Ready","status":")" +
          std::string(ready ? "True" : "False") + R"("})";
      if (const Value* old = path(*pod, {"status", "conditions"});
          old != nullptr && old->IsArray()) {
        for (const auto& c : old->GetArray()) {
          const std::string type = stringAt(c, {"type"});
          if (type != "Ready" && type != "ContainersReady") {
            conditions += "," + toJson(c);
          }
        }
      }
      conditions += "]";
      auto status = parseJson(R"({"phase":"Running","podIP":")" + ip + R"(","podIPs":[{"ip":")" +
                              ip + R"("}],"conditions":)" + conditions + "}");
      doc.RemoveMember("status");
      doc.AddMember("status", Value(status, a), a);
      updates.push_back(std::move(doc));
    }
    for (auto& doc : updates) {
      api_.replace("pods", std::move(doc));
    }
    for (const auto& key : gone) {
      api_.remove("pods", key);
      goneAt_.erase(key);
    }
    // Pods of a node lost for long are evicted (they stay, terminating, until it returns).
    for (const auto& n : nodes_) {
      if (!n.alive && clock_.now() - n.changed > 40s) {
        for (const Value* pod : api_.list("pods")) {
          if (stringAt(*pod, {"spec", "nodeName"}) == n.name && !terminating(*pod)) {
            deleteObject("pods", keyOf(*pod));
          }
        }
      }
    }
  }

  // Each agent: a lagging read of the slices it is named in, answering for those addresses and
  // reporting them on its Lease; a lost node's agent answers until its Lease runs out, then
  // fences itself.
  void runAgents() {
    for (auto& n : nodes_) {
      if (!n.alive) {
        if (clock_.now() >= n.renewed + std::chrono::seconds(kAgentLeaseSeconds)) {
          n.answers.clear();
        }
        continue;
      }
      if (clock_.now() >= n.stalledUntil && pick(60) == 0) {
        // Its watch stalls (a slow link, a busy agent) for two to ten seconds; its Lease is
        // renewed meanwhile, reporting what it last read.
        n.stalledUntil = clock_.now() + std::chrono::seconds(2 + pick(9));
      }
      if (clock_.now() >= n.stalledUntil && pick(2) == 0) {
        // A read of the store now: it reflects every write so far.
        n.observedSlices = std::to_string(api_.resourceVersion());
        std::map<std::string, std::string> answers;
        forEachHolding(
            [&](const std::string& owner, const std::string& node, const std::string& ip) {
              if (node == n.name) {
                answers[ip] = owner;
              }
            });
        n.answers = std::move(answers);
      }
      std::vector<std::string> held;
      for (const auto& [ip, owner] : n.answers) {
        held.push_back(ip);
      }
      const std::string programmed = join(held);
      // A newer observed version alone waits for the next renewal, as egw-agent's does.
      if (programmed != n.reported || clock_.now() >= n.renewed + 2s) {
        n.reported = programmed;
        n.renewed = clock_.now();
        put("leases", std::string(R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease",)") +
                          R"("metadata":{"name":"egw-agent-)" + n.name + R"(","namespace":")" +
                          kAgentNs + R"(","annotations":{"egressgateway.dev/programmed":")" +
                          programmed + R"(","egressgateway.dev/observed-slices":")" +
                          n.observedSlices + R"("}},"spec":{"holderIdentity":")" + n.name +
                          R"(","leaseDurationSeconds":)" + std::to_string(kAgentLeaseSeconds) +
                          R"(,"renewTime":")" + meta::formatRfc3339Micro(clock_.wallNow()) +
                          R"("}})");
      }
    }
  }

  // ---- the operator's processes ------------------------------------------------------------

  std::unique_ptr<Replica> startReplica(const std::string& name) {
    auto r = std::make_unique<Replica>();
    r->identity = name + "-" + std::to_string(++generation_);
    controllerruntime::ManagerOptions options;
    options.leaderElect = true;
    options.leaderElectionNamespace = "egress-system";
    options.metricsBindAddress = "0";
    options.healthProbeBindAddress = "0";
    options.gracefulShutdownTimeout = 5s;
    controllerruntime::ManagerDeps deps;
    deps.clock = &clock_;
    kube::RestConfig config;
    config.server = "http://model.invalid";
    config.qps = -1;
    deps.restConfig = config;
    deps.transport = api_.transport(r->link);
    deps.listerWatchers = api_.listerWatchers(r->link);
    deps.identity = r->identity;
    deps.handleSignals = false;
    deps.random = [this] { return std::uniform_real_distribution<double>(0, 1)(random_); };
    auto manager =
        controllerruntime::Manager::create(ioc_.get_executor(), options, std::move(deps));
    if (!manager) {
      violation_ = "Manager::create: " + manager.error();
      return r;
    }
    r->manager = std::move(*manager);
    auto& m = *r->manager;
    MainController::Options mc{2,          m.clock(),         ioc_.get_executor(),
                               m.client(), m.eventRecorder(), &m.registry(),
                               true,       kAgentNs,          {}};
    m.add(std::make_unique<MainController>(std::move(mc)));
    Replica* raw = r.get();
    net::co_spawn(ioc_, m.run(), [raw](const std::exception_ptr& e, int code) {
      if (e) {
        std::rethrow_exception(e);
      }
      raw->done = true;
      raw->exitCode = code;
    });
    log("start " + r->identity);
    return r;
  }

  bool anyRunning() const {
    for (const auto& r : replicas_) {
      if (r && r->manager && !r->done) {
        return true;
      }
    }
    return false;
  }

  // A replica that exited is replaced (the Deployment's pod restarts), healed.
  void replaceExited() {
    for (auto& r : replicas_) {
      if (r->done) {
        const std::string name = r->identity.substr(0, 1);
        log(r->identity + " exited with " + std::to_string(r->exitCode));
        r = startReplica(name);
      }
    }
  }

  std::string leader() const {
    const Value* lease = api_.get("leases", "egress-system/egress-gateway-operator");
    return lease == nullptr ? "" : stringAt(*lease, {"spec", "holderIdentity"});
  }

  void poll() {
    for (int i = 0; i < 10000; ++i) {
      api_.deliver();
      if (ioc_.poll() == 0) {
        api_.deliver();
        if (ioc_.poll() == 0) {
          return;
        }
      }
    }
  }

  void tick(bool checking) {
    poll();
    simulateCluster();
    poll();
    clock_.advance(kTick);
    poll();
    if (!replicas_.empty() && checking) {
      replaceExited();
    }
    const std::string now = leader();
    if (now != leader_) {
      if (!leader_.empty()) {
        ++leaderChanges_;
      }
      log("leader " + now);
      leader_ = now;
    }
    if (checking) {
      checkInvariants();
    }
  }

  // ---- what the operator promises ----------------------------------------------------------

  void checkInvariants() {
    std::map<std::string, std::set<std::string>> users;  // address → policy uids holding it
    std::map<std::string, std::string> ledgerOwner;
    for (const Value* p : api_.list("egressgatewaypolicies")) {
      const std::string uid = stringAt(*p, {"metadata", "uid"});
      std::set<std::string> now;
      const Value* gateways = path(*p, {"status", "gateways"});
      if (gateways != nullptr && gateways->IsArray()) {
        for (const auto& g : gateways->GetArray()) {
          for (const auto& ip : stringsAt(g, {"egressIPs"})) {
            now.insert(ip);
          }
        }
      }
      for (const auto& ip : now) {
        auto [it, fresh] = ledgerOwner.emplace(ip, keyOf(*p));
        if (!fresh && checks_.ledgers) {
          fail("address " + ip + " is in the ledgers of " + it->second + " and " + keyOf(*p));
          return;
        }
        if (checks_.pool && !ledgers_[uid].contains(ip)) {
          // New in this ledger: from the pool the policy names, as it is or was lately.
          const std::string pool = specPool_[uid];
          bool inside = false;
          for (const auto& cidr : everInPool_[pool]) {
            inside = inside || inCidr(ip, cidr);
          }
          if (!inside) {
            fail("address " + ip + " entered the ledger of " + keyOf(*p) + " (" + uid +
                 "), which names pool " + pool);
            return;
          }
        }
      }
      ledgers_[uid] = std::move(now);
    }
    forEachHolding([&](const std::string& owner, const std::string&, const std::string& ip) {
      users[ip].insert(owner);
    });
    for (const Value* pod : api_.list("pods")) {
      const std::string annotation =
          stringAt(*pod, {"metadata", "annotations", "egressgateway.dev/egress-ips"});
      if (annotation.empty()) {
        continue;
      }
      const std::string owner = podPolicy_[stringAt(*pod, {"metadata", "uid"})];
      std::stringstream in(annotation);
      for (std::string ip; std::getline(in, ip, ',');) {
        users[ip].insert(owner);
      }
    }
    for (const auto& n : nodes_) {
      for (const auto& [ip, owner] : n.answers) {
        users[ip].insert(owner);
      }
    }
    for (const auto& [ip, uids] : users) {
      if (checks_.holders && uids.size() > 1) {
        std::string who;
        for (const auto& u : uids) {
          who += " " + u;
        }
        fail("address " + ip + " is held for more than one policy:" + who + evidence(ip));
        return;
      }
    }
  }

  // Every policy's and pool's status, the slices and the agents, for a failure's message.
  std::string state() {
    std::string out;
    for (const char* r : {"egressgatewaypolicies", "ipampools", "egresspolicyslices"}) {
      for (const Value* obj : api_.list(r)) {
        const Value* status = path(*obj, {"status"});
        const Value* spec = path(*obj, {"spec"});
        out += "\n  " + std::string(r) + " " + keyOf(*obj) + " " +
               stringAt(*obj, {"metadata", "uid"}) + " spec " + (spec ? toJson(*spec) : "-") +
               " status " + (status ? toJson(*status) : "-");
      }
    }
    for (const auto& n : nodes_) {
      out += "\n  agent " + n.name + (n.alive ? "" : " (lost)") + ": " + n.reported;
    }
    out += ioc_.stopped() ? "\n  io_context stopped" : "";
    for (const auto& r : replicas_) {
      out += "\n  replica " + r->identity + (r->link.partitioned ? " partitioned" : "") +
             (r->stopRequested ? " stopping" : "") + (r->done ? " done" : "");
    }
    if (const Value* lease = api_.get("leases", "egress-system/egress-gateway-operator")) {
      out += "\n  leader lease " + toJson(*lease);
    }
    return out;
  }

  std::string evidence(const std::string& ip) {
    std::string out;
    for (const Value* p : api_.list("egressgatewaypolicies")) {
      if (toJson(*p).find('"' + ip + '"') != std::string::npos) {
        out += "\n  ledger of " + keyOf(*p) + " (" + stringAt(*p, {"metadata", "uid"}) + ")";
      }
    }
    for (const Value* s : api_.list("egresspolicyslices")) {
      if (toJson(*s).find('"' + ip + '"') != std::string::npos) {
        out += "\n  slice " + keyOf(*s) + " of " + sliceOwner(*s) + ": " +
               toJson(*path(*s, {"spec", "gateway"}));
      }
    }
    for (const auto& n : nodes_) {
      if (n.answers.contains(ip)) {
        out +=
            "\n  agent " + n.name + (n.alive ? "" : " (lost)") + " answers for " + n.answers.at(ip);
      }
    }
    return out;
  }

  // Faults off, every node back, both replicas connected: the cluster settles.
  void settle() {
    log("settle");
    api_.faults = Faults{};
    for (size_t n = 0; n < nodes_.size(); ++n) {
      if (!nodes_[n].alive) {
        nodes_[n].alive = true;
        nodes_[n].changed = clock_.now();
        writeNode(static_cast<int>(n));
      }
    }
    for (auto& r : replicas_) {
      if (r->link.partitioned && !r->stopRequested) {
        r->stopRequested = true;
        r->manager->requestShutdown();
      }
    }
    for (int t = 0; t < 360 && violation_.empty(); ++t) {
      tick(true);
    }
  }

  void checkSettled() {
    std::map<std::string, std::set<std::string>> heldInPool;
    for (const Value* p : api_.list("egressgatewaypolicies")) {
      const std::string uid = stringAt(*p, {"metadata", "uid"});
      for (const auto& ip : ledgers_[uid]) {
        for (const auto& pool : kPools) {
          const auto& cidrs = kPoolCidrs.at(pool);
          if (inCidr(ip, narrow_[pool] ? cidrs.second : cidrs.first)) {
            heldInPool[pool].insert(ip);
          }
        }
      }
    }
    for (const Value* p : api_.list("egressgatewaypolicies")) {
      const std::string uid = stringAt(*p, {"metadata", "uid"});
      const std::string pool = specPool_[uid];
      const std::string statusPool = stringAt(*p, {"status", "pool"});
      if (!ledgers_[uid].empty() && statusPool != pool) {
        fail(keyOf(*p) + " (" + uid + ") names pool " + pool + " but its ledger is of pool " +
             statusPool);
        return;
      }
      const Value* want = path(*p, {"spec", "gateway", "replicas"});
      const size_t replicas = want != nullptr && want->IsInt() ? want->GetInt() : 1;
      const Value* gateways = path(*p, {"status", "gateways"});
      const size_t entries = gateways != nullptr && gateways->IsArray() ? gateways->Size() : 0;
      const Value* poolObj = api_.get("ipampools", pool);
      const Value* total =
          poolObj == nullptr ? nullptr : path(*poolObj, {"status", "ipv4", "total"});
      if (entries < replicas && total != nullptr &&
          static_cast<size_t>(total->GetInt64()) > heldInPool[pool].size()) {
        fail(keyOf(*p) + " (" + uid + ") holds " + std::to_string(entries) + " of " +
             std::to_string(replicas) + " entries while " + pool + " has " +
             std::to_string(total->GetInt64() - heldInPool[pool].size()) +
             " addresses nobody holds" + state());
        return;
      }
    }
  }

  // ---- bookkeeping ---------------------------------------------------------------------------

  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(random_); }

  void log(const std::string& what) {
    spdlog::info("model: step {}: {}", step_, what);
    trace_.push_back("step " + std::to_string(step_) + ": " + what);
    if (trace_.size() > 60) {
      trace_.pop_front();
    }
  }

  void fail(const std::string& what) {
    if (violation_.empty()) {
      violation_ =
          "seed " + std::to_string(seed_) + ", step " + std::to_string(step_) + ": " + what;
    }
  }

  std::string report() const {
    std::string out = violation_ + "\nlast actions:";
    for (const auto& t : trace_) {
      out += "\n  " + t;
    }
    return out;
  }

  struct Node {
    std::string name;
    bool alive = true;
    Clock::TimePoint changed{};
    Clock::TimePoint renewed{};
    std::string reported = "-";
    std::map<std::string, std::string> answers;  // address → policy uid
    std::string observedSlices;                  // the store's version its answers reflect
    Clock::TimePoint stalledUntil{};             // no read of the slices before then
  };

  uint64_t seed_;
  Checks checks_ = Checks::fromEnv();
  std::mt19937_64 random_;
  net::io_context ioc_;
  // Without outstanding work, poll() would stop the io_context (both replicas gone at once).
  net::executor_work_guard<net::io_context::executor_type> work_ = net::make_work_guard(ioc_);
  FakeClock clock_;
  ApiServer api_;
  std::vector<std::unique_ptr<Replica>> replicas_;
  std::vector<Node> nodes_;
  std::map<std::string, std::string> specPool_;              // policy uid → pool
  std::map<std::string, std::set<std::string>> ledgers_;     // policy uid → last ledger
  std::map<std::string, std::set<std::string>> everInPool_;  // pool → cidrs it ever had
  std::map<std::string, bool> narrow_;
  std::map<std::string, std::string> podPolicy_;    // pod uid → policy uid
  std::map<std::string, Clock::TimePoint> goneAt_;  // terminating pod → removal
  struct Rescale {
    std::string key;
    int replicas = 0;
    int step = 0;
  };
  std::vector<Rescale> later_;  // tenants' changes due at a later step
  struct OnSight {
    std::string key;
    std::string uid;
    int replicas = 0;
    std::set<std::string> before;  // what its view named before it scaled up
    int giveUp = 0;
  };
  std::vector<OnSight> onSight_;
  std::deque<std::string> trace_;
  std::string violation_;
  std::string leader_;
  int step_ = 0;
  int generation_ = 0;
  int podCounter_ = 0;
  int podIps_ = 0;
  int policiesCreated_ = 0;
  int leaderChanges_ = 0;
  int backOnSight_ = 0;
};

TEST(OperatorModel, NoAddressIsEverHeldTwiceAndEveryFreedAddressIsReused) {
  // EGRESS_MODEL_LOG=debug (or info, ...) shows the replicas' own logs.
  const char* level = std::getenv("EGRESS_MODEL_LOG");
  spdlog::set_level(level != nullptr ? spdlog::level::from_str(level) : spdlog::level::off);
  const int seeds = envInt("EGRESS_MODEL_SEEDS", 12);
  const int first = envInt("EGRESS_MODEL_SEED", 1);
  const int steps = envInt("EGRESS_MODEL_STEPS", 600);
  for (int seed = first; seed < first + seeds; ++seed) {
    OperatorModel model(static_cast<uint64_t>(seed));
    const std::string violation = model.run(steps);
    EXPECT_EQ(violation, "");
    // The run did what it is for: policies came and went, leaders changed, faults were met.
    EXPECT_GT(model.policiesCreated(), 3) << "seed " << seed;
    EXPECT_GT(model.apiFaulted(), 0) << "seed " << seed;
    std::printf(
        "seed %d: %d policies created, %d leader changes, %d writes (%d faulted), %d scaled back "
        "as their view named a new address\n",
        seed, model.policiesCreated(), model.leaderChanges(), model.apiWrites(), model.apiFaulted(),
        model.backOnSight());
    if (!violation.empty()) {
      break;
    }
  }
}

}  // namespace
}  // namespace egress::controller::model
