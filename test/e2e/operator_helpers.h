// File: operator_helpers.h
//
// What the operator's e2e tests share: an egress-operator process (Operator: its /metrics, its
// readiness, its writes), the YAML of the objects they apply, and reading back what a user sees
// (policies' status, gateway pods, ConfigMaps, Events, pools) through kubectl against the test
// binary's control plane. operator_e2e_test and helm_e2e_test run the same scenarios with them.
#pragma once

#include <chrono>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "test/e2e/testenv/child_process.h"

namespace egress::e2e {

inline constexpr const char* kImage = "example.invalid/egress-gateway:e2e";
inline constexpr const char* kPolicyLabel = "egressgateway.dev/policy";

// Polls `check` every 250 ms until it holds or `timeout` passes; the last check's result.
bool eventually(const std::function<bool()>& check, std::chrono::seconds timeout);

// The sum of the samples of `name` whose labels include every pair of `labels`, in Prometheus
// text format; the labels' values may list alternatives separated by '|'.
double metricSum(const std::string& text, const std::string& name,
                 const std::map<std::string, std::string>& labels = {});

// How an Operator process is started.
struct OperatorLaunch {
  // Prepended to the operator's argv (e.g. a private mount namespace that execs the operator
  // with the arguments that follow); empty: the binary itself.
  std::vector<std::string> wrapper;
  // Pass --kubeconfig with the control plane's admin kubeconfig. Off: the operator finds its
  // configuration itself (the in-cluster path, for helm_e2e_test).
  bool adminKubeconfig = true;
};

// One egress-operator process with loopback metrics and probe ports of its own.
class Operator {
 public:
  Operator(const std::string& dir, const std::string& name, std::vector<std::string> extraArgs,
           const OperatorLaunch& launch = {});

  testenv::ChildProcess& process() { return *process_; }
  const std::string& logFile() const { return logFile_; }
  // host:port of /metrics, as a scrape configuration names a target.
  std::string metricsTarget() const;
  std::string metrics() const;
  bool ready() const;
  // API writes this process made (every verb but GET), from its rest_client_requests_total.
  double writes() const;
  // Waits until this process has made no write for `quiet` (batched pool and summary recounts
  // land a second or two after the policies they count); false if it never goes quiet.
  bool settle(std::chrono::seconds quiet, std::chrono::seconds timeout) const;
  double reconciles(const std::string& controller) const;

 private:
  int metricsPort_;
  int probePort_;
  std::string logFile_;
  std::unique_ptr<testenv::ChildProcess> process_;
};

// How a reaped process ended, as a shell says it: its exit code, or 128 + the signal.
std::optional<int> exitCode(const std::optional<int>& waitStatus);

rapidjson::Document parseJson(const std::string& text);
// The string member `name` of object `v`; "" if absent or not a string.
std::string str(const rapidjson::Value& v, const char* name);
// The member at `path` below `v`; nullptr if any step is missing.
const rapidjson::Value* at(const rapidjson::Value& v, std::initializer_list<const char*> path);
// The strings of array `v` (nullptr: none).
std::vector<std::string> strings(const rapidjson::Value* v);

// A policy as the test reads it back.
struct PolicyView {
  std::string name;
  std::string pool;
  std::vector<std::string> egressIPs;
  std::vector<std::vector<std::string>> ledger;  // status.gateways[].egressIPs
  std::vector<std::string> ledgerPods;           // status.gateways[].pod
  std::vector<std::string> ledgerPodUIDs;        // status.gateways[].podUID
  int selectedPods = 0;
  std::map<std::string, std::pair<std::string, std::string>> conditions;  // type -> status, reason
  std::map<std::string, std::string> messages;

  bool conditionIs(const std::string& type, const std::string& status) const;
  std::string reason(const std::string& type) const;
};

PolicyView viewOf(const rapidjson::Value& item);
// Every policy of namespace `ns`, by name.
std::map<std::string, PolicyView> policies(const std::string& ns);
std::set<std::string> allAddresses(const std::map<std::string, PolicyView>& ps);
size_t addressCount(const std::map<std::string, PolicyView>& ps);

// A gateway pod as the test reads it back.
struct PodView {
  // The entry its policy's status records it (by uid) as holding, comma-separated ("" for
  // none): the holder record the data-plane view follows.
  std::string holds;
  std::string node;
  bool deleting = false;
};
// The gateway pods of `policy`, by name.
std::map<std::string, PodView> gatewayPods(const std::string& ns, const std::string& policy);

// A pool's status field through jsonpath, "" read as "0".
std::string poolField(const std::string& pool, const std::string& path);
// A policy's data-plane view as its EgressPolicySlices say it, each list sorted: the sources of
// every slice ("ip@node"), and from the first slice the destinations, the exclusions and the
// egress IPs with their holder node ("ip@node", "ip@" for none). `slices` counts the objects.
struct SliceView {
  size_t slices = 0;
  std::vector<std::string> sources;
  std::vector<std::string> destinations;
  std::vector<std::string> excluded;
  std::vector<std::string> egressIPs;
};
SliceView policySlices(const std::string& ns, const std::string& policy);
// kubectl `args` succeeds.
bool exists(const std::vector<std::string>& args);
// Every Event's reason and message about `name` in `ns`.
std::vector<std::pair<std::string, std::string>> eventsAbout(const std::string& ns,
                                                             const std::string& name);
bool hasEvent(const std::string& ns, const std::string& name, const std::string& reason,
              const std::string& fragment = "");

std::string policyYaml(const std::string& ns, const std::string& name, const std::string& pool,
                       int replicas, const std::string& app,
                       const std::vector<std::string>& addresses = {});
std::string poolYaml(const std::string& name, const std::vector<std::string>& cidrs,
                     const std::vector<std::string>& exclude = {});
std::string operatorConfigYaml(const std::string& defaultPool);
std::string podYaml(const std::string& ns, const std::string& name, const std::string& app);

// kubectl apply -f manifests/ and waits until the three CRDs are established; "" or what failed.
std::string installCrds();
// Writes `yaml` (one document or several, separated by ---) to `file` and kubectl-applies it.
::testing::AssertionResult applyYaml(const std::string& file, const std::string& yaml);

// Waits until every policy of `ns` in `names` is Ready=True; on failure says what is not, with
// the tail of each operator's log.
::testing::AssertionResult allReady(const std::string& ns, const std::vector<std::string>& names,
                                    std::chrono::seconds timeout,
                                    const std::vector<std::unique_ptr<Operator>>& operators);

// Scenario 1's check of Ready policies `ps` in `ns`: each policy's ledger came from `pool`,
// every gateway pod holds a distinct entry of it, and its Deployment has one available pod per
// entry.
void expectGatewaysHoldTheirLedgers(const std::string& ns,
                                    const std::map<std::string, PolicyView>& ps,
                                    const std::string& pool);

}  // namespace egress::e2e
