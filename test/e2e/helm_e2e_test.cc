// End-to-end: the Helm chart (deploy/helm/egress-gateway-operator) with the real helm (Helm 4)
// against the real local control plane (kube-apiserver 1.20 with RBAC). What a user does: helm
// install, look at every object, helm upgrade with changed values, helm uninstall (the CRDs and
// the users' pools and policies stay), install again. Then the operator as a local process (the
// test kubelet runs no containers) with nothing but the chart's ServiceAccount token, read
// through the in-cluster configuration path in a private mount namespace: scenario 1 of
// operator_e2e_test passes with no RBAC denial, and the API server's own authorizer says what the
// ServiceAccount may not do. Rendering choices that need no cluster (the CRD variant by
// Kubernetes version, the monitoring objects, the values schema) are checked with helm template.
// Last, the chart with its agent on a cluster that carries packets (dataplane_cluster.h: node and
// pod network namespaces, so the whole binary runs in a private network namespace of its own):
// the test runs the agent DaemonSet's pods as a kubelet would, and a connection held through
// helm upgrade keeps its egress IP, and helm uninstall leaves every node as it found it.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "test/e2e/dataplane_cluster.h"
#include "test/e2e/operator_helpers.h"
#include "test/e2e/testenv/environment.h"
#include "test/testutil/temp_dir.h"
#include <signal.h>

namespace egress {
namespace {

using namespace std::chrono_literals;
using testenv::controlPlane;
using namespace e2e;  // the shared helpers (operator_helpers.h) read as this file's own

// One release name and namespace for every test: the CRDs a test's uninstall keeps carry them
// in their Helm ownership annotations, and Helm adopts them only into the same release.
constexpr const char* kRelease = "egw";
constexpr const char* kNamespace = "egress-system";
constexpr const char* kServiceAccount = "egw-egress-gateway-operator";
constexpr const char* kFullName = "egw-egress-gateway-operator";
constexpr const char* kCrds[] = {"ipampools.networking.egressgateway.dev",
                                 "egressgatewaypolicies.networking.egressgateway.dev",
                                 "egresspolicyslices.networking.egressgateway.dev",
                                 "operatorconfigs.networking.egressgateway.dev"};
constexpr const char* kSlices = "egresspolicyslices.networking.egressgateway.dev";

// Before main(): environment.cc's main starts the control plane, which must run in the private
// network namespace with the data-plane cluster of the last test. Listing needs none of it.
const bool kInPrivateNamespace = DataplaneCluster::reexecTestBinaryInPrivateNamespace();

std::string chartDir() {
  return testenv::sourceDir() + "/deploy/helm/egress-gateway-operator";
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// (apiGroup, resource, sorted verbs) of every rule of a Role or ClusterRole, one per resource.
using Rule = std::tuple<std::string, std::string, std::vector<std::string>>;
std::set<Rule> rulesOf(const rapidjson::Value& role) {
  std::set<Rule> out;
  const auto* rules = at(role, {"rules"});
  if (rules == nullptr || !rules->IsArray()) {
    return out;
  }
  for (const auto& r : rules->GetArray()) {
    auto verbs = strings(at(r, {"verbs"}));
    std::sort(verbs.begin(), verbs.end());
    for (const auto& group : strings(at(r, {"apiGroups"}))) {
      for (const auto& resource : strings(at(r, {"resources"}))) {
        out.emplace(group, resource, verbs);
      }
    }
  }
  return out;
}

// `v` as JSON text with every object's members sorted by name, so two values compare as text.
std::string canonicalJson(rapidjson::Value& v) {
  if (v.IsObject()) {
    std::sort(v.MemberBegin(), v.MemberEnd(), [](const auto& a, const auto& b) {
      return std::string_view(a.name.GetString()) < std::string_view(b.name.GetString());
    });
    for (auto& m : v.GetObject()) {
      canonicalJson(m.value);
    }
  } else if (v.IsArray()) {
    for (auto& e : v.GetArray()) {
      canonicalJson(e);
    }
  }
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  return buf.GetString();
}

class HelmE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    static int counter = 0;
    suffix_ = std::to_string(::getpid() % 10000) + "-" + std::to_string(++counter);
  }
  void TearDown() override {
    operators_.clear();
    helm({"uninstall", kRelease, "-n", kNamespace, "--wait", "--ignore-not-found"});
    for (const auto& ns : namespaces_) {
      controlPlane().kubectl({"delete", "namespace", ns, "--timeout=180s"});
    }
    for (const auto& p : pools_) {
      controlPlane().kubectl({"delete", "ipampool", p, "--ignore-not-found"});
    }
    controlPlane().kubectl({"delete", "operatorconfig", "default", "--ignore-not-found"});
  }

  // helm with the control plane's admin kubeconfig and its caches and config in this test's
  // directory.
  testenv::CommandResult helm(std::vector<std::string> args) const {
    args.insert(args.begin(),
                {controlPlane().dir() + "/bin/helm", "--kubeconfig", controlPlane().kubeconfig()});
    return testenv::runCommand(args, {"HELM_CACHE_HOME=" + tmp_.path() + "/helm/cache",
                                      "HELM_CONFIG_HOME=" + tmp_.path() + "/helm/config",
                                      "HELM_DATA_HOME=" + tmp_.path() + "/helm/data"});
  }
  testenv::CommandResult helmTemplate(const std::vector<std::string>& args) const {
    std::vector<std::string> all = {"template", kRelease, chartDir(), "-n", kNamespace};
    all.insert(all.end(), args.begin(), args.end());
    return helm(all);
  }
  testenv::CommandResult install(const std::vector<std::string>& values) const {
    std::vector<std::string> args = {"install", kRelease,        chartDir(),
                                     "-n",      kNamespace,      "--create-namespace",
                                     "--wait",  "--timeout=180s"};
    args.insert(args.end(), values.begin(), values.end());
    return helm(args);
  }
  // The API server's copy of one object, as JSON.
  rapidjson::Document get(const std::vector<std::string>& what) const {
    std::vector<std::string> args = {"get"};
    args.insert(args.end(), what.begin(), what.end());
    args.insert(args.end(), {"-o", "json"});
    return parseJson(controlPlane().kubectl(args).output);
  }
  std::string field(const std::vector<std::string>& what, const std::string& jsonpath) const {
    std::vector<std::string> args = {"get"};
    args.insert(args.end(), what.begin(), what.end());
    args.insert(args.end(), {"-o", "jsonpath={" + jsonpath + "}"});
    return controlPlane().kubectl(args).output;
  }
  ::testing::AssertionResult apply(const std::string& yaml) {
    return applyYaml(tmp_.path() + "/apply-" + std::to_string(++applied_) + ".yaml", yaml);
  }
  // kubectl auth can-i VERB RESOURCE [-n NS | -A] as the chart's ServiceAccount: "yes" or "no".
  std::string canI(const std::string& verb, const std::string& resource, const std::string& ns,
                   const std::string& subresource = "",
                   const std::string& serviceAccount = kServiceAccount) const {
    std::vector<std::string> args = {
        "auth", "can-i", verb, resource,
        std::string("--as=system:serviceaccount:") + kNamespace + ":" + serviceAccount};
    if (ns.empty()) {
      args.emplace_back("--all-namespaces");
    } else {
      args.insert(args.end(), {"-n", ns});
    }
    if (!subresource.empty()) {
      args.push_back("--subresource=" + subresource);
    }
    auto r = controlPlane().kubectl(args);
    return r.output.substr(0, r.output.find('\n'));
  }

  // A ServiceAccount's token and the cluster CA, from the Secret that 1.20's token controller
  // makes for it and names in the ServiceAccount: what a pod of it would have mounted.
  std::map<std::string, std::string> serviceAccountSecret(const std::string& serviceAccount) const {
    std::string secret;
    EXPECT_TRUE(eventually(
        [&] {
          secret = field({"serviceaccount", "-n", kNamespace, serviceAccount}, ".secrets[0].name");
          return !secret.empty();
        },
        60s));
    std::map<std::string, std::string> out;
    for (const std::string key : {"token", "ca.crt"}) {
      auto got =
          controlPlane().kubectl({"get", "secret", "-n", kNamespace, secret, "-o",
                                  "go-template={{index .data \"" + key + "\" | base64decode}}"});
      EXPECT_TRUE(got.ok() && !got.output.empty()) << got.output;
      out[key] = got.output;
    }
    return out;
  }

  testutil::TempDir tmp_;
  std::string suffix_;
  std::vector<std::string> namespaces_;
  std::vector<std::string> pools_;
  std::vector<std::unique_ptr<Operator>> operators_;
  int applied_ = 0;
};

// The ClusterRole's rules, exactly: the derivation in templates/clusterrole.yaml, one line each.
// With the agent (the default), also what sets the gateway pods' readiness gate.
std::set<Rule> expectedClusterRules(bool agent) {
  using V = std::vector<std::string>;
  std::set<Rule> rules = {
      {"", "pods", V{"list", "watch"}},
      {"", "namespaces", V{"list", "watch"}},
      {"", "nodes", V{"list", "watch"}},
      {"apps", "deployments", V{"create", "list", "patch", "watch"}},
      {"apps", "replicasets", V{"list", "watch"}},
      {"networking.egressgateway.dev", "egresspolicyslices",
       V{"create", "delete", "list", "patch", "watch"}},
      {"policy", "poddisruptionbudgets", V{"create", "delete", "list", "patch", "watch"}},
      {"networking.egressgateway.dev", "egressgatewaypolicies", V{"list", "watch"}},
      {"networking.egressgateway.dev", "ipampools", V{"list", "watch"}},
      {"networking.egressgateway.dev", "operatorconfigs", V{"list", "watch"}},
      {"networking.egressgateway.dev", "egressgatewaypolicies/status", V{"update"}},
      {"networking.egressgateway.dev", "ipampools/status", V{"update"}},
      {"networking.egressgateway.dev", "operatorconfigs/status", V{"update"}},
      {"networking.egressgateway.dev", "egressgatewaypolicies/finalizers", V{"update"}},
      {"", "events", V{"create", "patch"}},
  };
  if (agent) {
    rules.emplace("", "pods/status", V{"patch"});
  }
  return rules;
}

// Acceptance: helm install; every object the chart makes, as the API server has it.
TEST_F(HelmE2E, InstallMakesEveryObjectUpgradeChangesThemUninstallKeepsCRDsAndUsersObjects) {
  // The PriorityClass the values name must exist before pods may use it.
  const std::string priorityClass = "egress-operator-" + suffix_;
  ASSERT_TRUE(
      controlPlane().kubectl({"create", "priorityclass", priorityClass, "--value=1000000"}).ok());
  auto installed = install({"--set", "priorityClassName=" + priorityClass, "--set",
                            "operatorConfig.defaultPool=helm-default", "--set",
                            std::string("operatorConfig.gatewayImage=") + kImage, "--set",
                            "agent.enabled=false"});
  ASSERT_TRUE(installed.ok()) << installed.output;
  EXPECT_TRUE(contains(installed.output, "kubectl get ipp,egp -A")) << installed.output;
  EXPECT_TRUE(contains(installed.output, "named helm-default")) << installed.output;
  // NOTES.txt's command, pasted into a shell as it stands, makes the default pool.
  {
    const auto& notes = installed.output;
    const auto from = notes.find("kubectl apply -f - <<'YAML'\n");
    const auto to = notes.find("\nYAML\n", from);
    ASSERT_TRUE(from != std::string::npos && to != std::string::npos) << notes;
    const std::string pasted = notes.substr(from, to + 6 - from);
    pools_.push_back("helm-default");
    const char* path = std::getenv("PATH");
    auto ran = testenv::runCommand(
        {"timeout", "60", "env", "KUBECONFIG=" + controlPlane().kubeconfig(),
         "PATH=" + controlPlane().dir() + "/bin:" + (path != nullptr ? path : "/usr/bin:/bin"),
         "bash", "-c", pasted});
    ASSERT_TRUE(ran.ok()) << pasted << "\n" << ran.output;
    EXPECT_EQ(field({"ipampool", "helm-default"}, ".spec.cidrs"), "[\"203.0.113.0/28\"]");
  }

  // CRDs: the plain variant on 1.20, established, kept on uninstall.
  for (const char* crd : kCrds) {
    auto doc = get({"crd", crd});
    ASSERT_TRUE(doc.IsObject()) << crd;
    EXPECT_EQ(str(*at(doc, {"metadata", "annotations"}), "helm.sh/resource-policy"), "keep") << crd;
    EXPECT_EQ(field({"crd", crd}, ".status.conditions[?(@.type==\"Established\")].status"), "True");
    EXPECT_FALSE(contains(controlPlane().kubectl({"get", "crd", crd, "-o", "yaml"}).output,
                          "x-kubernetes-validations"))
        << crd;
  }

  // RBAC: exactly the derived rules; Leases only in a Role of the release namespace.
  auto clusterRole = get({"clusterrole", kFullName});
  EXPECT_EQ(rulesOf(clusterRole), expectedClusterRules(false));
  auto role = get({"role", "-n", kNamespace, std::string(kFullName) + "-leader-election"});
  EXPECT_EQ(rulesOf(role),
            (std::set<Rule>{{"coordination.k8s.io", "leases", {"create", "get", "update"}}}));
  for (const auto& binding :
       {std::vector<std::string>{"clusterrolebinding", kFullName},
        std::vector<std::string>{"rolebinding", "-n", kNamespace,
                                 std::string(kFullName) + "-leader-election"}}) {
    EXPECT_EQ(field(binding, ".subjects[0].kind") + "/" + field(binding, ".subjects[0].namespace") +
                  "/" + field(binding, ".subjects[0].name"),
              std::string("ServiceAccount/") + kNamespace + "/" + kServiceAccount)
        << binding[0];
  }
  EXPECT_TRUE(exists({"get", "serviceaccount", "-n", kNamespace, kServiceAccount}));

  // The Deployment: 2 replicas under leader election, probes, hardening, resources, spread.
  const std::vector<std::string> deploy = {"deployment", "-n", kNamespace, kFullName};
  EXPECT_EQ(field(deploy, ".spec.replicas"), "2");
  EXPECT_EQ(field(deploy, ".status.availableReplicas"), "2");
  const std::string pod = ".spec.template.spec";
  const std::string c = pod + ".containers[0]";
  const std::string args = field(deploy, c + ".args");
  EXPECT_TRUE(contains(args, "\"--leader-elect\"")) << args;
  EXPECT_TRUE(contains(args, std::string("--leader-election-namespace=") + kNamespace)) << args;
  EXPECT_TRUE(contains(args, "--graceful-shutdown-timeout=30s")) << args;
  EXPECT_EQ(field(deploy, c + ".livenessProbe.httpGet.path"), "/healthz");
  EXPECT_EQ(field(deploy, c + ".readinessProbe.httpGet.path"), "/readyz");
  EXPECT_EQ(field(deploy, c + ".readinessProbe.httpGet.port"), "health");
  EXPECT_EQ(field(deploy, c + ".ports[?(@.name==\"health\")].containerPort"), "8081");
  EXPECT_EQ(field(deploy, pod + ".securityContext.runAsNonRoot"), "true");
  EXPECT_EQ(field(deploy, pod + ".securityContext.runAsUser"), "65532");
  EXPECT_EQ(field(deploy, pod + ".securityContext.seccompProfile.type"), "RuntimeDefault");
  EXPECT_EQ(field(deploy, c + ".securityContext.readOnlyRootFilesystem"), "true");
  EXPECT_EQ(field(deploy, c + ".securityContext.allowPrivilegeEscalation"), "false");
  EXPECT_EQ(field(deploy, c + ".securityContext.capabilities.drop"), "[\"ALL\"]");
  EXPECT_EQ(field(deploy, c + ".resources.requests.cpu"), "100m");
  EXPECT_EQ(field(deploy, c + ".resources.limits.memory"), "256Mi");
  EXPECT_EQ(field(deploy, pod + ".topologySpreadConstraints[0].topologyKey"),
            "kubernetes.io/hostname");
  EXPECT_EQ(field(deploy, pod + ".priorityClassName"), priorityClass);
  EXPECT_EQ(field(deploy, pod + ".serviceAccountName"), kServiceAccount);
  // Above the graceful-shutdown timeout (30 s), so the drain is not cut short by a SIGKILL.
  EXPECT_EQ(field(deploy, pod + ".terminationGracePeriodSeconds"), "45");

  // The metrics Service selects the operator pods: the endpoints controller lists both.
  const std::vector<std::string> endpoints = {"endpoints", "-n", kNamespace,
                                              std::string(kFullName) + "-metrics"};
  EXPECT_TRUE(eventually(
      [&] {
        const std::string ips = field(endpoints, ".subsets[*].addresses[*].ip");
        return std::count(ips.begin(), ips.end(), ' ') == 1;
      },
      60s))
      << field(endpoints, ".subsets");
  EXPECT_EQ(field(endpoints, ".subsets[0].ports[0].port"), "8080");

  // The dashboard ConfigMap: labelled for Grafana's sidecar, the dashboard file as it is.
  const std::vector<std::string> dashboard = {"configmap", "-n", kNamespace,
                                              std::string(kFullName) + "-dashboard"};
  EXPECT_EQ(field(dashboard, ".metadata.labels.grafana_dashboard"), "1");
  auto embedded = parseJson(field(dashboard, ".data.egress-gateway-operator\\.json"));
  auto file = parseJson(readFile(chartDir() + "/files/grafana-dashboard.json"));
  ASSERT_TRUE(file.IsObject());
  EXPECT_TRUE(embedded.IsObject() && embedded == file);

  // The OperatorConfig from values; no monitoring.coreos.com objects (that API is not served).
  EXPECT_EQ(field({"operatorconfig", "default"}, ".spec.gatewayImage"), kImage);
  EXPECT_EQ(field({"operatorconfig", "default"}, ".spec.defaultPool"), "helm-default");
  EXPECT_EQ(field({"operatorconfig", "default"}, ".spec.clusterCIDRs"),
            "[\"10.244.0.0/16\",\"10.96.0.0/12\"]");
  auto manifest = helm({"get", "manifest", kRelease, "-n", kNamespace});
  EXPECT_FALSE(contains(manifest.output, "kind: ServiceMonitor")) << manifest.output;
  EXPECT_FALSE(contains(manifest.output, "kind: PrometheusRule"));

  // Users' objects, made while the chart is installed.
  const std::string pool = "helm-keep-" + suffix_;
  const std::string ns = "egw-helm-" + suffix_;
  pools_.push_back(pool);
  namespaces_.push_back(ns);
  ASSERT_EQ(controlPlane().createNamespace(ns), "");
  ASSERT_TRUE(apply(poolYaml(pool, {"198.51.100.64/28"})));
  ASSERT_TRUE(apply(policyYaml(ns, "kept", pool, 1, "kept")));

  // helm upgrade with changed values: every change reaches its object.
  auto upgraded = helm({"upgrade", kRelease, chartDir(), "-n", kNamespace, "--wait",
                        "--timeout=180s", "--reuse-values", "--set", "replicaCount=3", "--set",
                        "operator.logLevel=debug", "--set", "operator.workers=8", "--set",
                        "operatorConfig.gatewayImage=example.invalid/egress-gateway:e2e-2", "--set",
                        "monitoring.grafanaDashboard.enabled=false"});
  ASSERT_TRUE(upgraded.ok()) << upgraded.output;
  EXPECT_EQ(field(deploy, ".spec.replicas"), "3");
  EXPECT_EQ(field(deploy, ".status.availableReplicas"), "3");
  const std::string upgradedArgs = field(deploy, c + ".args");
  EXPECT_TRUE(contains(upgradedArgs, "--log-level=debug")) << upgradedArgs;
  EXPECT_TRUE(contains(upgradedArgs, "--workers=8")) << upgradedArgs;
  EXPECT_EQ(field(deploy, pod + ".priorityClassName"), priorityClass) << "--reuse-values";
  EXPECT_EQ(field({"operatorconfig", "default"}, ".spec.gatewayImage"),
            "example.invalid/egress-gateway:e2e-2");
  EXPECT_EQ(field({"operatorconfig", "default"}, ".spec.defaultPool"), "helm-default");
  EXPECT_TRUE(eventually(
      [&] {
        return !exists(
            {"get", "configmap", "-n", kNamespace, std::string(kFullName) + "-dashboard"});
      },
      30s));
  EXPECT_TRUE(contains(upgraded.output, "REVISION: 2")) << upgraded.output;

  // helm uninstall: the release's objects go; the CRDs, the pool and the policy stay.
  auto uninstalled = helm({"uninstall", kRelease, "-n", kNamespace, "--wait"});
  ASSERT_TRUE(uninstalled.ok()) << uninstalled.output;
  EXPECT_TRUE(eventually(
      [&] {
        return !exists({"get", "deployment", "-n", kNamespace, kFullName});
      },
      60s));
  EXPECT_FALSE(exists({"get", "serviceaccount", "-n", kNamespace, kServiceAccount}));
  EXPECT_FALSE(exists({"get", "clusterrole", kFullName}));
  EXPECT_FALSE(exists({"get", "clusterrolebinding", kFullName}));
  EXPECT_FALSE(
      exists({"get", "role", "-n", kNamespace, std::string(kFullName) + "-leader-election"}));
  EXPECT_FALSE(exists({"get", "service", "-n", kNamespace, std::string(kFullName) + "-metrics"}));
  for (const char* crd : kCrds) {
    EXPECT_TRUE(exists({"get", "crd", crd})) << crd;
  }
  EXPECT_TRUE(exists({"get", "ipampool", pool}));
  EXPECT_TRUE(exists({"get", "egp", "-n", ns, "kept"}));
  // Kept (helm.sh/resource-policy: keep, as the CRDs): the operator's settings survive it.
  EXPECT_TRUE(exists({"get", "operatorconfig", "default"}));
  const std::string configUid = field({"operatorconfig", "default"}, ".metadata.uid");

  // Installing again adopts the kept CRDs; the users' objects are untouched.
  const std::string uid = field({"crd", kCrds[0]}, ".metadata.uid");
  auto again = install({});
  ASSERT_TRUE(again.ok()) << again.output;
  EXPECT_EQ(field({"crd", kCrds[0]}, ".metadata.uid"), uid);
  EXPECT_TRUE(exists({"get", "egp", "-n", ns, "kept"}));
  // The kept OperatorConfig, adopted (same object) with this install's values: the defaults,
  // the operator's own image run as egw-gateway.
  EXPECT_EQ(field({"operatorconfig", "default"}, ".metadata.uid"), configUid);
  EXPECT_EQ(field({"operatorconfig", "default"}, ".spec.gatewayImage"),
            "egress-gateway-operator:0.1.0");
  EXPECT_EQ(field({"operatorconfig", "default"}, ".spec.gatewayCommand"),
            R"(["/usr/local/bin/egw-gateway"])");
  controlPlane().kubectl({"delete", "priorityclass", priorityClass});
}

// Acceptance: the operator with the chart's ServiceAccount credentials only, through the
// in-cluster configuration path: scenario 1 passes, and nothing is Forbidden.
TEST_F(HelmE2E, OperatorRunsInClusterWithOnlyTheServiceAccountToken) {
  const std::string pool = "helm-incluster-" + suffix_;
  // No agent runs here (the gateway pods' readiness gate would never be set).
  auto installed = install({"--set", "operatorConfig.defaultPool=" + pool, "--set",
                            std::string("operatorConfig.gatewayImage=") + kImage, "--set",
                            "agent.enabled=false"});
  ASSERT_TRUE(installed.ok()) << installed.output;

  // What a pod of the Deployment would have mounted.
  const std::string saDir = tmp_.path() + "/serviceaccount";
  const std::string home = tmp_.path() + "/home";
  std::filesystem::create_directories(saDir);
  std::filesystem::create_directories(home);
  for (const auto& [key, value] : serviceAccountSecret(kServiceAccount)) {
    ASSERT_FALSE(value.empty()) << key;
    std::ofstream(saDir + "/" + key) << value;
  }
  std::ofstream(saDir + "/namespace") << kNamespace;

  // A private mount namespace: a tmpfs over /var/run (so nothing is left on the machine) with
  // the ServiceAccount directory bind-mounted where a pod has it, then the operator with an
  // empty environment but KUBERNETES_SERVICE_HOST/PORT and a HOME without ~/.kube: no
  // kubeconfig anywhere, so the in-cluster configuration is the only one it can find.
  const std::string port = controlPlane().server().substr(controlPlane().server().rfind(':') + 1);
  auto wrapper = [&](bool mountToken) {
    const std::string script =
        std::string(
            "set -e; sa=$1; home=$2; port=$3; shift 3; "
            "mount -t tmpfs -o size=1m,mode=0755 tmpfs /var/run; "
            "mkdir -p /var/run/secrets/kubernetes.io/serviceaccount; ") +
        (mountToken ? "mount --bind \"$sa\" /var/run/secrets/kubernetes.io/serviceaccount; "
                      "mount -o remount,bind,ro /var/run/secrets/kubernetes.io/serviceaccount; "
                    : "") +
        "exec env -i PATH=/usr/bin:/bin HOME=\"$home\" KUBERNETES_SERVICE_HOST=127.0.0.1 "
        "KUBERNETES_SERVICE_PORT=\"$port\" \"$@\"";
    return std::vector<std::string>{"/usr/bin/unshare",
                                    "--mount",
                                    "--propagation",
                                    "private",
                                    "--",
                                    "/bin/sh",
                                    "-c",
                                    script,
                                    "sh",
                                    saDir,
                                    home,
                                    port};
  };

  // Without the token mounted the same launch fails on the in-cluster path, naming its token
  // file: that is the path it takes.
  {
    Operator without(tmp_.path(), "no-token", {}, {wrapper(false), false});
    EXPECT_EQ(exitCode(without.process().reap(60s)), 1) << without.process().log();
    EXPECT_TRUE(
        contains(without.process().log(), "/var/run/secrets/kubernetes.io/serviceaccount/token"))
        << without.process().log();
  }

  // No --leader-election-namespace: the Lease's namespace comes from the mounted namespace file.
  operators_.push_back(std::make_unique<Operator>(tmp_.path(), "in-cluster",
                                                  std::vector<std::string>{"--leader-elect"},
                                                  OperatorLaunch{wrapper(true), false}));
  Operator& op = *operators_.back();
  ASSERT_TRUE(op.process().error().empty()) << op.process().error();

  // Scenario 1 of operator_e2e_test: a pool, three policies (one with an explicit address);
  // the OperatorConfig is the chart's, so its default pool is the one they use.
  const std::string ns = "egw-helm-" + suffix_;
  namespaces_.push_back(ns);
  pools_.push_back(pool);
  ASSERT_EQ(controlPlane().createNamespace(ns), "");
  ASSERT_TRUE(apply(poolYaml(pool, {"198.51.100.0/28"}, {"198.51.100.1", "198.51.100.2"})));
  ASSERT_TRUE(apply(policyYaml(ns, "alpha", "", 2, "alpha") + "---\n" +
                    policyYaml(ns, "beta", pool, 1, "beta") + "---\n" +
                    policyYaml(ns, "gamma", pool, 2, "gamma", {"198.51.100.14"})));
  ASSERT_TRUE(allReady(ns, {"alpha", "beta", "gamma"}, 180s, operators_));
  auto ps = policies(ns);
  EXPECT_EQ(addressCount(ps), 5u);
  EXPECT_EQ(allAddresses(ps).size(), 5u) << "an address was given twice";
  EXPECT_EQ(ps["gamma"].ledger.front(), std::vector<std::string>{"198.51.100.14"});
  expectGatewaysHoldTheirLedgers(ns, ps, pool);
  EXPECT_TRUE(exists({"get", "pdb", "-n", ns, "egw-alpha"}));
  EXPECT_TRUE(eventually([&] { return hasEvent(ns, "alpha", "Allocated"); }, 30s));
  EXPECT_TRUE(eventually(
      [&] {
        return field({"ipampool", pool}, ".status.ipv4.allocated") == "5";
      },
      60s));
  EXPECT_TRUE(eventually(
      [&] {
        return field({"operatorconfig", "default"}, ".status.readyPolicies") == "3";
      },
      60s));
  // The Lease, in the namespace the mounted namespace file names, held by this process.
  EXPECT_FALSE(field({"lease", "-n", kNamespace, "egress-gateway-operator"}, ".spec.holderIdentity")
                   .empty());
  EXPECT_GT(op.writes(), 0);
  EXPECT_EQ(metricSum(op.metrics(), "rest_client_requests_total", {{"code", "401|403"}}), 0)
      << op.metrics();

  // helm upgrade changes the OperatorConfig in place (templates/operatorconfig.yaml): the same
  // object (its UID), and no policy leaves Ready meanwhile. A watch sees every status the
  // policies pass through; as a hook the OperatorConfig was deleted and made again, and each
  // policy went NoOperatorConfig (not Ready) in between.
  const std::string configUid = field({"operatorconfig", "default"}, ".metadata.uid");
  ASSERT_FALSE(configUid.empty());
  std::string watched;
  std::thread watcher([&] {
    watched =
        controlPlane()
            .kubectl(
                {"get", "egp", "-n", ns, "--watch", "--request-timeout=25s", "-o",
                 R"(jsonpath={.metadata.name}={.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="GatewayAvailable")].reason}{"\n"})"})
            .output;
  });
  std::this_thread::sleep_for(2s);  // the watch has listed the policies
  auto upgraded = helm({"upgrade", kRelease, chartDir(), "-n", kNamespace, "--wait",
                        "--timeout=180s", "--reuse-values", "--set", "operator.logLevel=debug"});
  watcher.join();
  ASSERT_TRUE(upgraded.ok()) << upgraded.output;
  EXPECT_EQ(field({"operatorconfig", "default"}, ".metadata.uid"), configUid)
      << "the upgrade replaced the OperatorConfig";
  EXPECT_EQ(field({"operatorconfig", "default"}, ".spec.defaultPool"), pool);
  EXPECT_TRUE(contains(watched, "alpha=True/")) << watched;
  for (const char* lost : {"=False", "NoOperatorConfig"}) {
    EXPECT_FALSE(contains(watched, lost)) << "a policy left Ready during helm upgrade:\n"
                                          << watched;
  }

  // What the ServiceAccount may not do, by the API server's authorizer.
  EXPECT_EQ(canI("get", "secrets", kNamespace), "no");
  EXPECT_EQ(canI("list", "secrets", ""), "no");
  EXPECT_EQ(canI("watch", "secrets", "default"), "no");
  EXPECT_EQ(canI("get", "leases", "kube-system"), "no");
  EXPECT_EQ(canI("update", "leases", "default"), "no");
  EXPECT_EQ(canI("create", "leases", ns), "no");
  EXPECT_EQ(canI("delete", "pods", ns), "no");
  EXPECT_EQ(canI("update", "deployments", ns), "no");
  EXPECT_EQ(canI("get", "configmaps", ns), "no");
  EXPECT_EQ(canI("list", "configmaps", ""), "no") << "the data-plane view is not a ConfigMap";
  EXPECT_EQ(canI("patch", "pods", ns, "status"), "no") << "only with the agent (its gate)";
  EXPECT_EQ(canI("patch", "pods", ns), "no") << "the holder record is the policy's status";
  EXPECT_EQ(canI("update", "pods", ns), "no");
  EXPECT_EQ(canI("delete", "replicasets", ns), "no");
  EXPECT_EQ(canI("delete", "egressgatewaypolicies.networking.egressgateway.dev", ns), "no");
  EXPECT_EQ(canI("*", "*", ns), "no");
  // ... and what it may, which the scenario above used.
  EXPECT_EQ(canI("update", "leases", kNamespace), "yes");
  EXPECT_EQ(canI("update", "egressgatewaypolicies.networking.egressgateway.dev", ns, "status"),
            "yes");
  EXPECT_EQ(canI("create", "events", ns), "yes");
  EXPECT_EQ(canI("list", "replicasets", ""), "yes");
  for (const char* verb : {"create", "patch", "delete", "list", "watch"}) {
    EXPECT_EQ(canI(verb, kSlices, ""), "yes") << verb;
  }
  EXPECT_EQ(canI("update", "egressgatewaypolicies.networking.egressgateway.dev", ns, "status"),
            "yes");

  op.process().signal(SIGTERM);
  EXPECT_EQ(exitCode(op.process().reap(60s)), 0) << op.process().log();
  std::string log = op.process().log();
  std::transform(log.begin(), log.end(), log.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  EXPECT_FALSE(contains(log, "forbidden")) << op.process().log();
  EXPECT_FALSE(contains(log, "unauthorized")) << op.process().log();
}

// The no-Helm path: kubectl apply -f deploy/manifests/, then (its CRD established) the
// OperatorConfig in deploy/manifests/operatorconfig/, installs the same operator; kubectl
// delete -f removes it again.
TEST_F(HelmE2E, PlainManifestsInstallWithKubectlApply) {
  const std::string dir = testenv::sourceDir() + "/deploy/manifests/";
  auto applied = controlPlane().kubectl({"apply", "-f", dir});
  ASSERT_TRUE(applied.ok()) << applied.output;
  auto established = controlPlane().kubectl(
      {"wait", "--for=condition=established", "--timeout=60s", std::string("crd/") + kCrds[3]});
  ASSERT_TRUE(established.ok()) << established.output;
  auto config = controlPlane().kubectl({"apply", "-f", dir + "operatorconfig/"});
  ASSERT_TRUE(config.ok()) << config.output;
  const std::string ns = "egress-gateway-system";
  const std::string name = "egress-gateway-operator";
  auto wait = controlPlane().kubectl(
      {"wait", "-n", ns, "--for=condition=Available", "--timeout=120s", "deployment/" + name});
  EXPECT_TRUE(wait.ok()) << wait.output;
  EXPECT_EQ(field({"deployment", "-n", ns, name}, ".status.availableReplicas"), "2");
  EXPECT_EQ(rulesOf(get({"clusterrole", name})), expectedClusterRules(true));
  EXPECT_TRUE(exists({"get", "daemonset", "-n", ns, name + "-agent"})) << "the agent is on";
  EXPECT_EQ(field({"operatorconfig", "default"}, ".spec.dataplane.agent"), "true");
  EXPECT_TRUE(exists({"get", "role", "-n", ns, name + "-leader-election"}));
  EXPECT_TRUE(exists({"get", "serviceaccount", "-n", ns, name}));
  EXPECT_FALSE(field({"operatorconfig", "default"}, ".spec.gatewayImage").empty());
  for (const char* crd : kCrds) {
    EXPECT_EQ(field({"crd", crd}, ".status.conditions[?(@.type==\"Established\")].status"), "True");
  }
  // Everything goes, the CRDs too, so the Helm tests' install finds no CRD it does not own.
  auto deleted = controlPlane().kubectl({"delete", "-f", dir + "operatorconfig/", "-f", dir,
                                         "--ignore-not-found", "--wait", "--timeout=180s"});
  EXPECT_TRUE(deleted.ok()) << deleted.output;
}

// The CRD variant follows the server's version; crds.* values turn the CRDs and keep off.
TEST_F(HelmE2E, TemplateChoosesTheCRDVariantByKubernetesVersion) {
  auto old = helmTemplate({"--kube-version", "1.20.0", "--show-only", "templates/crds.yaml"});
  ASSERT_TRUE(old.ok()) << old.output;
  EXPECT_FALSE(contains(old.output, "x-kubernetes-validations"));
  auto cel = helmTemplate({"--kube-version", "1.28.0", "--show-only", "templates/crds.yaml"});
  ASSERT_TRUE(cel.ok()) << cel.output;
  EXPECT_TRUE(contains(cel.output, "x-kubernetes-validations"));
  EXPECT_TRUE(contains(cel.output, "self.metadata.name == 'default'")) << cel.output;
  for (const auto& out : {old.output, cel.output}) {
    for (const char* crd : kCrds) {
      EXPECT_TRUE(contains(out, std::string("name: ") + crd)) << crd;
    }
    EXPECT_TRUE(contains(out, "helm.sh/resource-policy: keep"));
  }
  auto forcedPlain = helmTemplate({"--kube-version", "1.28.0", "--set", "crds.validation=plain",
                                   "--show-only", "templates/crds.yaml"});
  EXPECT_FALSE(contains(forcedPlain.output, "x-kubernetes-validations")) << forcedPlain.output;
  auto noKeep = helmTemplate({"--set", "crds.keep=false", "--show-only", "templates/crds.yaml"});
  ASSERT_TRUE(noKeep.ok()) << noKeep.output;
  EXPECT_FALSE(contains(noKeep.output, "resource-policy"));
  auto none = helmTemplate({"--set", "crds.install=false"});
  ASSERT_TRUE(none.ok()) << none.output;
  EXPECT_FALSE(contains(none.output, "kind: CustomResourceDefinition"));

  // The rendered CEL CRDs are the generated ones (manifests/cel/), field for field, as the API
  // server's client-side reading of both shows them.
  const std::string rendered = tmp_.path() + "/cel-crds.yaml";
  std::ofstream(rendered) << cel.output;
  // kubectl prints one JSON document per object.
  auto specsOf = [](const std::string& path) {
    const auto out =
        controlPlane()
            .kubectl({"create", "--dry-run=client", "--validate=false", "-o", "json", "-f", path})
            .output;
    std::map<std::string, std::string> specs;  // name -> the spec, re-serialized
    rapidjson::StringStream in(out.c_str());
    for (;;) {
      while (in.Peek() != '\0' && std::isspace(static_cast<unsigned char>(in.Peek())) != 0) {
        in.Take();
      }
      rapidjson::Document d;
      if (in.Peek() == '\0' ||
          d.ParseStream<rapidjson::kParseStopWhenDoneFlag | rapidjson::kParseIterativeFlag>(in)
              .HasParseError()) {
        break;
      }
      const auto* spec = at(d, {"spec"});
      const auto* meta = at(d, {"metadata"});
      if (spec != nullptr && meta != nullptr) {
        rapidjson::Document copy;
        copy.CopyFrom(*spec, copy.GetAllocator());
        specs[str(*meta, "name")] = canonicalJson(copy);
      }
    }
    return specs;
  };
  auto mine = specsOf(rendered);
  auto generated = specsOf(testenv::sourceDir() + "/manifests/cel/");
  EXPECT_EQ(mine.size(), std::size(kCrds)) << cel.output;
  EXPECT_EQ(mine, generated);
}

// ServiceMonitor, the agents' PodMonitor and PrometheusRule only where monitoring.coreos.com/v1
// serves them or they are forced; the PrometheusRule carries the rules file (the agents' group
// only with agent.enabled), and the PodMonitor scrapes the agent DaemonSet's pods.
TEST_F(HelmE2E, TemplateRendersMonitoringObjectsOnlyWhereTheirAPIIsServed) {
  auto plain = helmTemplate({});
  ASSERT_TRUE(plain.ok()) << plain.output;
  EXPECT_FALSE(contains(plain.output, "kind: ServiceMonitor"));
  EXPECT_FALSE(contains(plain.output, "kind: PrometheusRule"));
  EXPECT_TRUE(contains(plain.output, "grafana_dashboard: \"1\""));
  auto served = helmTemplate({"--api-versions", "monitoring.coreos.com/v1/ServiceMonitor",
                              "--api-versions", "monitoring.coreos.com/v1/PrometheusRule"});
  ASSERT_TRUE(served.ok()) << served.output;
  EXPECT_TRUE(contains(served.output, "kind: ServiceMonitor"));
  EXPECT_TRUE(contains(served.output, "kind: PrometheusRule"));
  auto forced = helmTemplate({"--set", "monitoring.serviceMonitor.force=true", "--set",
                              "monitoring.prometheusRule.force=true"});
  EXPECT_TRUE(contains(forced.output, "kind: ServiceMonitor"));
  EXPECT_TRUE(contains(forced.output, "kind: PrometheusRule"));
  auto off = helmTemplate({"--api-versions", "monitoring.coreos.com/v1/ServiceMonitor", "--set",
                           "monitoring.serviceMonitor.enabled=false"});
  EXPECT_FALSE(contains(off.output, "kind: ServiceMonitor"));
  // Every alert of the rules file is in the PrometheusRule; the agents' (group egw-agent) only
  // with agent.enabled, so that no agent alert reports agents that were never installed.
  auto noAgent = helmTemplate(
      {"--set", "monitoring.prometheusRule.force=true", "--set", "agent.enabled=false"});
  ASSERT_TRUE(noAgent.ok()) << noAgent.output;
  std::istringstream rules(readFile(chartDir() + "/files/prometheus-rules.yaml"));
  std::string line;
  int alerts = 0;
  int agentAlerts = 0;
  while (std::getline(rules, line)) {
    if (auto p = line.find("alert: "); p != std::string::npos) {
      ++alerts;
      const bool agent = contains(line, "alert: EgressGatewayAgent");
      agentAlerts += agent ? 1 : 0;
      EXPECT_TRUE(contains(forced.output, line.substr(p))) << line;
      EXPECT_EQ(contains(noAgent.output, line.substr(p)), !agent) << line;
    }
  }
  EXPECT_GT(alerts, agentAlerts);
  EXPECT_GE(agentAlerts, 6);

  // The agents' PodMonitor: where PodMonitors are served or it is forced, with agent.enabled.
  const std::string podMonitor = "kind: PodMonitor";
  EXPECT_FALSE(contains(plain.output, podMonitor));
  EXPECT_FALSE(contains(served.output, podMonitor));
  auto agentsServed = helmTemplate({"--api-versions", "monitoring.coreos.com/v1/PodMonitor"});
  ASSERT_TRUE(agentsServed.ok()) << agentsServed.output;
  EXPECT_TRUE(contains(agentsServed.output, podMonitor));
  EXPECT_TRUE(contains(helmTemplate({"--set", "monitoring.agentPodMonitor.force=true"}).output,
                       podMonitor));
  EXPECT_FALSE(contains(helmTemplate({"--api-versions", "monitoring.coreos.com/v1/PodMonitor",
                                      "--set", "monitoring.agentPodMonitor.enabled=false"})
                            .output,
                        podMonitor));
  EXPECT_FALSE(contains(helmTemplate({"--set", "monitoring.agentPodMonitor.force=true", "--set",
                                      "agent.enabled=false"})
                            .output,
                        podMonitor));
  // It scrapes the DaemonSet's pods by their metrics port, as the API server reads the
  // DaemonSet: their labels and the port's name are the ones it names.
  auto monitorYaml = helmTemplate({"--api-versions", "monitoring.coreos.com/v1/PodMonitor", "--set",
                                   "monitoring.agentPodMonitor.interval=15s", "--set",
                                   "monitoring.agentPodMonitor.labels.release=prometheus",
                                   "--show-only", "templates/agent-podmonitor.yaml"});
  ASSERT_TRUE(monitorYaml.ok()) << monitorYaml.output;
  auto daemonSetYaml = helmTemplate({"--show-only", "templates/agent-daemonset.yaml"});
  ASSERT_TRUE(daemonSetYaml.ok()) << daemonSetYaml.output;
  const std::string daemonSetFile = tmp_.path() + "/agent-daemonset.yaml";
  std::ofstream(daemonSetFile) << daemonSetYaml.output;
  const auto daemonSet = parseJson(controlPlane()
                                       .kubectl({"create", "--dry-run=client", "--validate=false",
                                                 "-o", "json", "-f", daemonSetFile})
                                       .output);
  ASSERT_TRUE(daemonSet.IsObject()) << daemonSetYaml.output;
  const auto* podLabels = at(daemonSet, {"spec", "template", "metadata", "labels"});
  ASSERT_TRUE(podLabels != nullptr && podLabels->IsObject());
  // Its selector (matchLabels, indented 6: not its own labels, indented 4).
  for (const char* name : {"app.kubernetes.io/name", "app.kubernetes.io/instance"}) {
    ASSERT_FALSE(str(*podLabels, name).empty()) << name;
    EXPECT_TRUE(contains(monitorYaml.output,
                         "\n      " + std::string(name) + ": " + str(*podLabels, name) + "\n"))
        << name << "\n"
        << monitorYaml.output;
  }
  const auto* ports =
      at((*at(daemonSet, {"spec", "template", "spec", "containers"}))[0], {"ports"});
  ASSERT_TRUE(ports != nullptr && ports->IsArray());
  std::set<std::string> portNames;
  for (const auto& port : ports->GetArray()) {
    portNames.insert(str(port, "name"));
  }
  EXPECT_TRUE(portNames.contains("agent-metrics"));
  EXPECT_TRUE(contains(monitorYaml.output, "- port: agent-metrics\n")) << monitorYaml.output;
  EXPECT_TRUE(contains(monitorYaml.output, "matchNames: [" + std::string(kNamespace) + "]"));
  EXPECT_TRUE(contains(monitorYaml.output, "interval: 15s"));
  EXPECT_TRUE(contains(monitorYaml.output, "release: prometheus"));
  // Every series gets the pod's node, which the agent alerts and the dashboard name.
  EXPECT_TRUE(contains(monitorYaml.output,
                       "- sourceLabels: [__meta_kubernetes_pod_node_name]\n"
                       "          targetLabel: node\n"))
      << monitorYaml.output;
}

// agent.enabled: the egw-agent DaemonSet (hostNetwork, NET_ADMIN + NET_RAW, the node's name
// from the downward API, a privileged init container for the sysctls) runs a pod on every node;
// the OperatorConfig's spec.dataplane.agent follows the value and the operator watches the
// agents' Leases in the release namespace; and the API server's authorizer lets the agent's
// ServiceAccount do exactly what egw-agent does (templates/agent-rbac.yaml), nothing more.
TEST_F(HelmE2E, WithTheAgentTheDaemonSetRunsOnEveryNodeWithTheRBACItNeeds) {
  // The default.
  auto installed = install({});
  ASSERT_TRUE(installed.ok()) << installed.output;
  // The agents' Leases live in a namespace of their own, which the chart makes: their right to
  // write Leases there reaches neither the operator's leader-election Lease nor any other.
  const std::string agentLeases = std::string(kNamespace) + "-agents";
  EXPECT_TRUE(exists({"get", "namespace", agentLeases}));
  const std::string ds = std::string(kFullName) + "-agent";
  const std::string sa = std::string(kFullName) + "-agent";
  auto toJson = [](const rapidjson::Value& v) {
    rapidjson::Document copy;
    copy.CopyFrom(v, copy.GetAllocator());
    return canonicalJson(copy);
  };
  auto nodes = controlPlane().kubectl({"get", "nodes", "-o", "name"});
  const auto nodeCount = std::count(nodes.output.begin(), nodes.output.end(), '\n');
  ASSERT_GE(nodeCount, 2);
  EXPECT_TRUE(eventually(
      [&] {
        return field({"daemonset", "-n", kNamespace, ds}, ".status.numberReady") ==
               std::to_string(nodeCount);
      },
      120s))
      << field({"daemonset", "-n", kNamespace, ds}, ".status");
  EXPECT_EQ(field({"daemonset", "-n", kNamespace, ds}, ".status.desiredNumberScheduled"),
            std::to_string(nodeCount));
  // Its pods, one per node, as the API server admitted them.
  auto pods =
      get({"pods", "-n", kNamespace, "-l", "app.kubernetes.io/name=egress-gateway-operator-agent"});
  const auto* items = at(pods, {"items"});
  ASSERT_TRUE(items != nullptr && items->IsArray());
  std::set<std::string> onNodes;
  for (const auto& pod : items->GetArray()) {
    const auto& spec = *at(pod, {"spec"});
    onNodes.insert(str(spec, "nodeName"));
    EXPECT_TRUE(at(spec, {"hostNetwork"}) != nullptr && at(spec, {"hostNetwork"})->GetBool());
    const auto& agent = (*at(spec, {"containers"}))[0];
    EXPECT_EQ(strings(at(agent, {"command"})),
              std::vector<std::string>{"/usr/local/bin/egw-agent"});
    const auto args = strings(at(agent, {"args"}));
    EXPECT_TRUE(std::find(args.begin(), args.end(), "--node-name=$(NODE_NAME)") != args.end());
    EXPECT_TRUE(std::find(args.begin(), args.end(), "--lease-namespace=" + agentLeases) !=
                args.end());
    EXPECT_TRUE(std::find(args.begin(), args.end(),
                          "--owner-daemonset=" + std::string(kNamespace) + "/" + ds) != args.end());
    EXPECT_EQ(
        toJson((*at(agent, {"env"}))[0]),
        R"({"name":"NODE_NAME","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"spec.nodeName"}}})");
    EXPECT_EQ(strings(at(agent, {"securityContext", "capabilities", "add"})),
              (std::vector<std::string>{"NET_ADMIN", "NET_RAW"}));
    EXPECT_EQ(strings(at(agent, {"securityContext", "capabilities", "drop"})),
              std::vector<std::string>{"ALL"});
    EXPECT_FALSE(at(agent, {"securityContext", "privileged"}) != nullptr &&
                 at(agent, {"securityContext", "privileged"})->GetBool());
    const auto& init = (*at(spec, {"initContainers"}))[0];
    EXPECT_TRUE(at(init, {"securityContext", "privileged"})->GetBool());
    EXPECT_TRUE(contains(toJson(init), "/proc/sys/net/ipv4/ip_forward"));
  }
  EXPECT_EQ(static_cast<long>(onNodes.size()), nodeCount) << "one pod per node";
  EXPECT_EQ(field({"operatorconfig", "default"}, ".spec.dataplane.agent"), "true");
  const auto operatorArgs = toJson(*at(get({"deployment", "-n", kNamespace, kFullName}),
                                       {"spec", "template", "spec", "containers"}));
  EXPECT_TRUE(contains(operatorArgs, "--agent-lease-namespace=" + agentLeases));

  // What egw-agent may and may not do (templates/agent-rbac.yaml), by the API server's
  // authorizer: the whole matrix, printed. It reads the view only the operator writes, the
  // Nodes and the agents' Leases, and writes its own Lease: no pod, ConfigMap or Secret.
  struct Ask {
    const char* verb;
    const char* resource;
    const char* ns;  // "" = every namespace (or cluster-scoped)
    const char* subresource;
    const char* want;
  };
  const std::string releaseNs = kNamespace;
  const std::vector<Ask> matrix = {
      {"list", "nodes", "", "", "yes"},
      {"watch", "nodes", "", "", "yes"},
      {"list", kSlices, "", "", "yes"},
      {"watch", kSlices, "", "", "yes"},
      {"list", "ipampools.networking.egressgateway.dev", "", "", "yes"},
      {"watch", "ipampools.networking.egressgateway.dev", "", "", "yes"},
      {"list", "operatorconfigs.networking.egressgateway.dev", "", "", "yes"},
      {"watch", "operatorconfigs.networking.egressgateway.dev", "", "", "yes"},
      {"update", "ipampools.networking.egressgateway.dev", "", "status", "no"},
      {"get", "leases", agentLeases.c_str(), "", "yes"},
      {"create", "leases", agentLeases.c_str(), "", "yes"},
      {"update", "leases", agentLeases.c_str(), "", "yes"},
      {"list", "leases", agentLeases.c_str(), "", "yes"},
      {"watch", "leases", agentLeases.c_str(), "", "yes"},
      {"update", "leases", releaseNs.c_str(), "", "no"},  // the operator's leader election
      {"get", "leases", releaseNs.c_str(), "", "no"},
      {"list", "configmaps", "", "", "no"},
      {"watch", "configmaps", "", "", "no"},
      {"get", "configmaps", "default", "", "no"},
      {"list", "pods", "", "", "no"},
      {"watch", "pods", "", "", "no"},
      {"patch", "pods", "default", "status", "no"},
      {"patch", "pods", releaseNs.c_str(), "status", "no"},
      {"patch", "pods", "default", "", "no"},
      {"update", "pods", "default", "status", "no"},
      {"delete", "pods", "default", "", "no"},
      {"get", "secrets", releaseNs.c_str(), "", "no"},
      {"list", "secrets", "", "", "no"},
      {"create", "leases", "default", "", "no"},
      {"delete", "leases", agentLeases.c_str(), "", "no"},
      {"update", "nodes", "", "", "no"},
      {"patch", "configmaps", "default", "", "no"},
      {"create", kSlices, "", "", "no"},
      {"patch", kSlices, "", "", "no"},
      {"delete", kSlices, "", "", "no"},
      {"list", "egressgatewaypolicies.networking.egressgateway.dev", "", "", "no"},
      {"create", "events", "default", "", "no"},
      // Its DaemonSet, read to tell an uninstall from a restart, in the release namespace only.
      {"list", "daemonsets.apps", releaseNs.c_str(), "", "yes"},
      {"watch", "daemonsets.apps", releaseNs.c_str(), "", "yes"},
      {"list", "daemonsets.apps", "", "", "no"},
      {"list", "daemonsets.apps", "kube-system", "", "no"},
      {"update", "daemonsets.apps", releaseNs.c_str(), "", "no"},
      {"delete", "daemonsets.apps", releaseNs.c_str(), "", "no"},
  };
  for (const auto& a : matrix) {
    const std::string got = canI(a.verb, a.resource, a.ns, a.subresource, sa);
    std::printf("[ can-i    ] agent %-6s %s%s%s in %s: %s\n", a.verb, a.resource,
                *a.subresource != 0 ? "/" : "", a.subresource, *a.ns != 0 ? a.ns : "all",
                got.c_str());
    EXPECT_EQ(got, a.want) << a.verb << " " << a.resource << "/" << a.subresource << " in " << a.ns;
  }
  // With the agent the operator sets the gateway pods' readiness gate from the agents' Leases.
  EXPECT_EQ(canI("patch", "pods", "default", "status"), "yes");
  // The operator reads the agents' Leases, in their namespace only.
  EXPECT_EQ(canI("list", "leases", agentLeases), "yes");
  EXPECT_EQ(canI("watch", "leases", agentLeases), "yes");
  EXPECT_EQ(canI("get", "leases", agentLeases), "yes");
  EXPECT_EQ(canI("update", "leases", agentLeases), "no");
  EXPECT_EQ(canI("list", "leases", "default"), "no");

  // Off again: no DaemonSet, and the OperatorConfig's switch follows.
  auto upgraded = helm({"upgrade", kRelease, chartDir(), "-n", kNamespace, "--wait",
                        "--timeout=180s", "--set", "agent.enabled=false"});
  ASSERT_TRUE(upgraded.ok()) << upgraded.output;
  EXPECT_TRUE(eventually([&] { return !exists({"get", "daemonset", "-n", kNamespace, ds}); }, 60s));
  EXPECT_EQ(field({"operatorconfig", "default"}, ".spec.dataplane.agent"), "");
}

// values.schema.json: Helm refuses a value of the wrong type or an unknown key; the chart
// refuses values that would make a broken Deployment.
TEST_F(HelmE2E, TemplateRefusesWrongValues) {
  ASSERT_TRUE(helmTemplate({}).ok());
  ASSERT_TRUE(helm({"lint", "--strict", chartDir()}).ok());
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  for (const auto& [args, says] : std::vector<Case>{
           {{"--set", "replicaCount=two"}, "/replicaCount"},
           {{"--set-string", "operator.workers=4"}, "/operator/workers"},
           {{"--set", "operator.workers=0"}, "/operator/workers"},
           {{"--set", "crds.install=maybe"}, "/crds/install"},
           {{"--set", "crds.validation=sometimes"}, "/crds/validation"},
           {{"--set", "operator.logFormat=xml"}, "/operator/logFormat"},
           {{"--set", "operator.syncPeriod=soon"}, "/operator/syncPeriod"},
           {{"--set", "resources.limits.cpu=lots"}, "/resources/limits/cpu"},
           {{"--set", "replicaz=2"}, "replicaz"},
           {{"--set", "operatorConfig.clusterCIDRs=10.0.0.0/8"}, "/operatorConfig/clusterCIDRs"},
           {{"--set", "terminationGracePeriodSeconds=30"}, "must exceed"},
           {{"--set", "leaderElection.enabled=false"}, "needs leaderElection.enabled"},
           {{"--set", "serviceAccount.create=false"}, "serviceAccount.name is required"},
           {{"--set", "agent.enabled=yes"}, "/agent/enabled"},
           {{"--set", "agent.logFormat=xml"}, "/agent/logFormat"},
           {{"--set", "agent.ports.metrics=0"}, "/agent/ports/metrics"},
           {{"--set", "agent.enabled=true", "--set",
             std::string("agent.leaseNamespace=") + kNamespace},
            "namespace of the agents' own"},
       }) {
    auto r = helmTemplate(args);
    EXPECT_FALSE(r.ok()) << args.back();
    EXPECT_TRUE(contains(r.output, says)) << args.back() << ": " << r.output;
  }
  // The boundaries the refusals sit next to are accepted.
  EXPECT_TRUE(helmTemplate({"--set", "terminationGracePeriodSeconds=31"}).ok());
  EXPECT_TRUE(
      helmTemplate({"--set", "leaderElection.enabled=false", "--set", "replicaCount=1"}).ok());
  EXPECT_TRUE(helmTemplate({"--set", "resources.limits.cpu=500m"}).ok());
}

// values.schema.json accepts exactly the values egress-operator starts with (the issue: it took
// operator.cacheSyncTimeout "0", which the operator refuses, a crash loop). For every value that
// becomes an operator flag, each end of what the schema accepts and the odd but valid spellings:
// helm template renders it, and the operator container's args, as the rendered Deployment has
// them, start the real egress-operator against the control plane, which syncs its caches, takes
// the Lease and starts its controller, and exits 0 on SIGTERM. Just past each end helm template
// refuses, naming the value; where the chart still renders the value with the schema skipped,
// the operator refuses it too (exit 2, naming the flag): the bound is the operator's own.
TEST_F(HelmE2E, TheSchemasBoundaryValuesAreTheOperatorsToo) {
  int renders = 0;
  // The operator container's args in the Deployment that helm template renders with `values`;
  // empty, with the failure in `error`, if helm or kubectl fails.
  const auto renderedArgs = [&](std::vector<std::string> values, bool skipSchema,
                                std::string& error) {
    values.insert(values.end(), {"--show-only", "templates/deployment.yaml"});
    if (skipSchema) {
      values.emplace_back("--skip-schema-validation");
    }
    auto rendered = helmTemplate(values);
    if (!rendered.ok()) {
      error = rendered.output;
      return std::vector<std::string>{};
    }
    const std::string file = tmp_.path() + "/boundary-" + std::to_string(++renders) + ".yaml";
    std::ofstream(file) << rendered.output;
    // kubectl reads the YAML as the API server would, quoting and all.
    auto json = controlPlane().kubectl(
        {"create", "--dry-run=client", "--validate=false", "-o", "json", "-f", file});
    const auto doc = parseJson(json.output);
    const auto* containers =
        doc.IsObject() ? at(doc, {"spec", "template", "spec", "containers"}) : nullptr;
    if (containers != nullptr && containers->IsArray()) {
      for (const auto& c : containers->GetArray()) {
        if (str(c, "name") == "operator") {
          return strings(at(c, {"args"}));
        }
      }
    }
    error = "no operator container in\n" + rendered.output + "\n" + json.output;
    return std::vector<std::string>{};
  };
  // What in those args only makes sense inside the pod, adapted to this out-of-cluster process:
  // the bind addresses ":<port>" listen on every interface of the machine (in the pod, of the
  // pod). Where the ports are not what a case is about, the chart's (8080, 8081, maybe taken on
  // this machine) are dropped and the Operator helper's free loopback ports stand (its /readyz
  // is then what op.ready() asks); where they are, the chart's port stays, on loopback. The
  // helper also passes --kubeconfig (the admin's: there is no ServiceAccount token out of the
  // cluster; helm's RBAC is another test's) and its own --graceful-shutdown-timeout,
  // --kube-api-qps and --kube-api-burst, before these args: the operator takes the last of a
  // repeated flag, so the chart's win. Everything else is passed as it is.
  const auto adapt = [](const std::vector<std::string>& chartArgs, bool keepPorts) {
    std::vector<std::string> out;
    for (const auto& arg : chartArgs) {
      const auto colon = arg.find("=:");
      const std::string flag = arg.substr(0, colon);
      if (colon == std::string::npos ||
          (flag != "--metrics-bind-address" && flag != "--health-probe-bind-address")) {
        out.push_back(arg);
      } else if (keepPorts) {
        out.push_back(flag + "=127.0.0.1:" + arg.substr(colon + 2));
      }
    }
    return out;
  };

  // The informers need the CRDs. A Helm test before this one may have left them (kept, owned by
  // the release); if not, they are applied here and deleted when the test ends, so that a later
  // helm install finds no CRD it does not own.
  struct AppliedCrds {
    bool applied = false;
    ~AppliedCrds() {
      if (applied) {
        controlPlane().kubectl({"delete", "-f", testenv::sourceDir() + "/manifests/",
                                "--ignore-not-found", "--wait", "--timeout=180s"});
      }
    }
  } crds;
  if (!std::all_of(std::begin(kCrds), std::end(kCrds), [](const char* crd) {
        return exists({"get", "crd", crd});
      })) {
    crds.applied = true;
    ASSERT_EQ(installCrds(), "");
  }
  // The Lease namespace must exist for the Lease to be taken.
  if (!exists({"get", "namespace", kNamespace})) {
    ASSERT_EQ(controlPlane().createNamespace(kNamespace), "");
    namespaces_.emplace_back(kNamespace);
  }
  // The longest names: a 63-character namespace (a DNS-1123 label) and a 253-character Lease
  // name (a DNS-1123 subdomain); one longer each is refused.
  const auto padded = [](std::string name, size_t size) {
    name.resize(size, 'x');
    return name;
  };
  const std::string longNs = padded("egw-bounds-" + suffix_ + "-", 63);
  const std::string longAgentNs = padded("egw-agents-" + suffix_ + "-", 63);
  const std::string longLease = std::string(63, 'a') + "." + std::string(63, 'b') + "." +
                                std::string(63, 'c') + "." + std::string(61, 'd');
  ASSERT_EQ(longLease.size(), 253u);
  ASSERT_EQ(controlPlane().createNamespace(longNs), "");
  namespaces_.push_back(longNs);

  struct Accepted {
    std::vector<std::string> values;
    bool ports = false;  // the case is about the ports: the chart's stay (on loopback)
  };
  const std::string maxDuration = "99999.999h999999m999999s999999ms999999us999999ns";
  const std::vector<Accepted> accepted = {
      {{"--set", "operator.workers=1"}},
      {{"--set", "operator.workers=1024"}},
      // Numbers from a values file (or --set-json) are floats, which Helm prints as 1e+06 from
      // a million on: --set-json renders them as a values file would. Any number is a QPS (a
      // tiny positive one throttles the start as client-go's limiter would: not a bound).
      {{"--set-json", "operator.kubeApiQps=-1.7976931348623157e308"}},  // no limit
      {{"--set", "operator.kubeApiQps=0"}},                             // client-go's 5
      {{"--set-json", "operator.kubeApiQps=1.7976931348623157e308"}},
      {{"--set", "operator.kubeApiBurst=0"}},  // client-go's 10
      {{"--set-json", "operator.kubeApiBurst=2147483647"}},
      {{"--set", "operator.gracefulShutdownTimeoutSeconds=0"}},
      {{"--set-json", "operator.gracefulShutdownTimeoutSeconds=3600000000"}},
      {{"--set-string", "operator.syncPeriod=0"}},  // no resyncs
      {{"--set-string", "operator.syncPeriod=0s"}},
      {{"--set-string", "operator.syncPeriod=1ns"}},  // 1ms; the informers resync at most each 1s
      {{"--set-string", "operator.syncPeriod=1.5h"}},
      {{"--set-string", "operator.syncPeriod=1h30m"}},
      {{"--set-string", "operator.syncPeriod=0.5s"}},
      {{"--set-string", "operator.syncPeriod=250\u00b5s"}},
      {{"--set-string", "operator.syncPeriod=" + maxDuration}},
      {{"--set-string", "operator.cacheSyncTimeout=1s"}},
      {{"--set-string", "operator.cacheSyncTimeout=1000ms"}},
      {{"--set-string", "operator.cacheSyncTimeout=0.1m"}},
      {{"--set-string", "operator.cacheSyncTimeout=" + maxDuration}},
      {{"--set", "leaderElection.leaseName=a"}},
      {{"--set", "leaderElection.leaseName=" + longLease}},
      {{"--set", "leaderElection.namespace=" + longNs}},
      {{"--set", "agent.enabled=true", "--set", "agent.leaseNamespace=" + longAgentNs}},
      {{"--set", "ports.metrics=1", "--set", "ports.health=65535"}, true},
      {{"--set", "ports.metrics=65535", "--set", "ports.health=1"}, true},
  };
  int started = 0;
  for (const auto& [values, ports] : accepted) {
    const std::string what = values.back();
    SCOPED_TRACE(what);
    std::string error;
    const auto chartArgs = renderedArgs(values, false, error);
    if (chartArgs.empty()) {
      ADD_FAILURE() << "helm template refused a value the schema should accept: " << error;
      continue;
    }
    if (ports && ::geteuid() != 0) {
      std::printf("[ skipped  ] %s: port 1 needs root\n", what.c_str());
      continue;
    }
    const auto t0 = std::chrono::steady_clock::now();
    Operator op(tmp_.path(), "boundary-" + std::to_string(++started), adapt(chartArgs, ports));
    ASSERT_TRUE(op.process().error().empty()) << op.process().error();
    std::optional<int> exited;
    const bool running = eventually(
        [&] {
          exited = op.process().reap(0s);
          return exited || contains(op.process().log(), "started 1 controllers");
        },
        90s);
    std::string args;
    for (const auto& a : chartArgs) {
      args += " " + a;
    }
    EXPECT_TRUE(running && !exited)
        << "exit " << exitCode(exited).value_or(-1) << "; the chart's" << args << "\n"
        << op.process().log();
    EXPECT_TRUE(contains(op.process().log(), "caches synced")) << op.process().log();
    EXPECT_TRUE(contains(op.process().log(), "became the leader")) << op.process().log();
    if (ports) {
      for (const auto* flag : {"--metrics-bind-address=:", "--health-probe-bind-address=:"}) {
        for (const auto& a : chartArgs) {
          if (a.rfind(flag, 0) == 0) {
            const std::string port = a.substr(std::string(flag).size());
            EXPECT_TRUE(contains(op.process().log(), "on port " + port + "\"")) << port;
          }
        }
      }
    } else {
      EXPECT_TRUE(op.ready());
    }
    op.process().signal(SIGTERM);
    EXPECT_EQ(exitCode(op.process().reap(60s)), 0) << op.process().log();
    std::printf("[ started  ] %-62s %4lld ms\n", what.substr(0, 62).c_str(),
                static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                           std::chrono::steady_clock::now() - t0)
                                           .count()));
  }

  struct Refused {
    std::vector<std::string> values;
    std::string path;  // in helm's message
    std::string flag;  // in the operator's; "" where the operator is not asked (why: below)
  };
  const std::vector<Refused> refused = {
      {{"--set", "operator.workers=0"}, "/operator/workers", "--workers"},
      {{"--set", "operator.workers=1025"}, "/operator/workers", "--workers"},
      {{"--set-string", "operator.kubeApiQps=fast"}, "/operator/kubeApiQps", "--kube-api-qps"},
      {{"--set", "operator.kubeApiBurst=-1"}, "/operator/kubeApiBurst", "--kube-api-burst"},
      {{"--set", "operator.kubeApiBurst=2147483648"}, "/operator/kubeApiBurst", "--kube-api-burst"},
      {{"--set", "operator.gracefulShutdownTimeoutSeconds=-1"},
       "/operator/gracefulShutdownTimeoutSeconds",
       "--graceful-shutdown-timeout"},
      {{"--set", "operator.gracefulShutdownTimeoutSeconds=3600000001"},
       "/operator/gracefulShutdownTimeoutSeconds",
       "--graceful-shutdown-timeout"},
      {{"--set-string", "operator.syncPeriod="}, "/operator/syncPeriod", "--sync-period"},
      {{"--set-string", "operator.syncPeriod=-1s"}, "/operator/syncPeriod", "--sync-period"},
      {{"--set-string", "operator.syncPeriod=1d"}, "/operator/syncPeriod", "--sync-period"},
      // Past the schema's longest (the pattern bounds the digits, so a sum stays below the
      // operator's 1000000h); the operator takes these.
      {{"--set-string", "operator.syncPeriod=100000h"}, "/operator/syncPeriod", ""},
      {{"--set-string", "operator.syncPeriod=1000000m"}, "/operator/syncPeriod", ""},
      {{"--set-string", "operator.cacheSyncTimeout=0"},
       "/operator/cacheSyncTimeout",
       "--cache-sync-timeout"},
      {{"--set-string", "operator.cacheSyncTimeout=0s"},
       "/operator/cacheSyncTimeout",
       "--cache-sync-timeout"},
      // Under a second the caches' first LISTs outlast the timeout and the operator exits 1;
      // its flag, as controller-runtime's, takes any positive timeout.
      {{"--set-string", "operator.cacheSyncTimeout=999ms"}, "/operator/cacheSyncTimeout", ""},
      {{"--set-string", "operator.cacheSyncTimeout=0.9s"}, "/operator/cacheSyncTimeout", ""},
      {{"--set-string", "operator.cacheSyncTimeout=100000h"}, "/operator/cacheSyncTimeout", ""},
      {{"--set-string", "leaderElection.leaseName="},
       "/leaderElection/leaseName",
       "--leader-election-id"},
      {{"--set", "leaderElection.leaseName=" + longLease + "d"},
       "/leaderElection/leaseName",
       "--leader-election-id"},
      {{"--set", "leaderElection.leaseName=Egress"},
       "/leaderElection/leaseName",
       "--leader-election-id"},
      {{"--set", "leaderElection.leaseName=egress_gateway"},
       "/leaderElection/leaseName",
       "--leader-election-id"},
      {{"--set", "leaderElection.namespace=" + longNs + "x"},
       "/leaderElection/namespace",
       "--leader-election-namespace"},
      {{"--set", "leaderElection.namespace=egress.system"},
       "/leaderElection/namespace",
       "--leader-election-namespace"},
      {{"--set", "agent.enabled=true", "--set", "agent.leaseNamespace=" + longAgentNs + "x"},
       "/agent/leaseNamespace",
       "--agent-lease-namespace"},
      {{"--set", "agent.enabled=true", "--set", "agent.leaseNamespace=Agents"},
       "/agent/leaseNamespace",
       "--agent-lease-namespace"},
      // ":0" is a port the kernel picks, which the operator allows (tests use it); a
      // containerPort of 0 is not one a pod may have.
      {{"--set", "ports.metrics=0"}, "/ports/metrics", ""},
      {{"--set", "ports.health=0"}, "/ports/health", ""},
      {{"--set", "ports.metrics=65536"}, "/ports/metrics", "--metrics-bind-address"},
      {{"--set", "ports.health=65536"}, "/ports/health", "--health-probe-bind-address"},
      // A template check, not the schema's, so the chart renders this not even without the
      // schema; the operator's refusal (both flags on one port) is manager_options_test's.
      {{"--set", "ports.metrics=9000", "--set", "ports.health=9000"},
       "ports.metrics and ports.health must differ",
       ""},
  };
  for (const auto& [values, path, flag] : refused) {
    const std::string what = values.back();
    SCOPED_TRACE(what);
    auto r = helmTemplate(values);
    EXPECT_FALSE(r.ok()) << "the chart took it";
    EXPECT_TRUE(contains(r.output, path)) << r.output;
    if (flag.empty()) {
      continue;
    }
    std::string error;
    const auto chartArgs = renderedArgs(values, true, error);
    ASSERT_FALSE(chartArgs.empty()) << error;
    Operator op(tmp_.path(), "refused-" + std::to_string(++started),
                adapt(chartArgs, path.rfind("/ports/", 0) == 0));
    ASSERT_TRUE(op.process().error().empty()) << op.process().error();
    EXPECT_EQ(exitCode(op.process().reap(30s)), 2) << op.process().log();
    EXPECT_TRUE(contains(op.process().log(), flag)) << op.process().log();
  }

  controlPlane().kubectl({"delete", "lease", "-n", kNamespace, "egress-gateway-operator", "a",
                          longLease, "--ignore-not-found"});
}

// What a kubelet would run for the pods of the chart's agent DaemonSet on the data-plane
// cluster's nodes (the control plane's test kubelet marks them Ready and finalizes their
// deletion, but runs nothing): the init container's command in the node's namespace, then
// egw-agent with the container's arguments (the downward API's $(NODE_NAME) and $(HOST_IP)
// filled in) and the agent ServiceAccount's token, so the API server authorizes it by the
// chart's RBAC; and SIGTERM once its pod is deleted or being deleted, as a kubelet stops a
// container.
class AgentKubelet {
 public:
  AgentKubelet(DataplaneCluster& cluster, std::string kubeconfig)
      : cluster_(cluster), kubeconfig_(std::move(kubeconfig)) {}

  // One pass over the pods: starts an agent for each new one, stops those of deleted ones.
  void sync() {
    auto r = controlPlane().kubectl({"get", "pods", "-n", kNamespace, "-l",
                                     "app.kubernetes.io/name=egress-gateway-operator-agent", "-o",
                                     "json"});
    if (!r.ok()) {
      return;
    }
    const auto pods = parseJson(r.output);
    const auto* items = at(pods, {"items"});
    if (items == nullptr || !items->IsArray()) {
      return;
    }
    // As a kubelet: a deleted pod's container is stopped before its successor's starts (both
    // bind the node's ports).
    std::set<std::string> live;
    for (const auto& pod : items->GetArray()) {
      if (at(pod, {"metadata", "deletionTimestamp"}) == nullptr) {
        live.insert(str(*at(pod, {"metadata"}), "uid"));
      }
    }
    for (auto it = agents_.begin(); it != agents_.end();) {
      if (live.contains(it->first)) {
        ++it;
        continue;
      }
      auto& p = *it->second.process;
      p.signal(SIGTERM);
      const auto code = exitCode(p.reap(30s));
      std::printf("[ kubelet  ] stopped %s: exit %d\n", it->second.pod.c_str(), code.value_or(-1));
      stopped_.push_back({it->second.pod, code.value_or(-1), p.log()});
      it = agents_.erase(it);
    }
    for (const auto& pod : items->GetArray()) {
      const std::string uid = str(*at(pod, {"metadata"}), "uid");
      const std::string nodeName = str(*at(pod, {"spec"}), "nodeName");
      if (at(pod, {"metadata", "deletionTimestamp"}) != nullptr || nodeName.empty()) {
        continue;
      }
      int i = 1;
      while (i <= 3 && DataplaneCluster::node(i) != nodeName) {
        ++i;
      }
      if (i > 3 || agents_.contains(uid)) {
        continue;
      }
      const std::string name = str(*at(pod, {"metadata"}), "name");
      auto init = strings(at((*at(pod, {"spec", "initContainers"}))[0], {"command"}));
      init.insert(init.begin(), {"ip", "netns", "exec", nodeName});
      auto initRun = testenv::runCommand(init);
      EXPECT_EQ(initRun.exitCode, 0) << name << "'s init container: " << initRun.output;
      const auto& container = (*at(pod, {"spec", "containers"}))[0];
      EXPECT_EQ(strings(at(container, {"command"})),
                std::vector<std::string>{"/usr/local/bin/egw-agent"});
      auto args = strings(at(container, {"args"}));
      for (auto& a : args) {
        for (const auto& [var, value] :
             {std::pair<std::string, std::string>{"$(NODE_NAME)", nodeName},
              {"$(HOST_IP)", DataplaneCluster::nodeAddress(i)}}) {
          if (auto p = a.find(var); p != std::string::npos) {
            a.replace(p, var.size(), value);
          }
        }
      }
      args.push_back("--kubeconfig=" + kubeconfig_);
      Agent agent{name, cluster_.confinedAgent(i, args, name)};
      EXPECT_TRUE(agent.process->error().empty()) << agent.process->error();
      std::printf("[ kubelet  ] started %s on %s\n", name.c_str(), nodeName.c_str());
      agents_.emplace(uid, std::move(agent));
    }
  }

  // `work` on a thread of its own while this one syncs every 200 ms (helm --wait blocks until
  // the pods it waits for are Ready, and an agent must be back before its Lease runs out).
  testenv::CommandResult whileSyncing(const std::function<testenv::CommandResult()>& work) {
    std::atomic<bool> done = false;
    testenv::CommandResult result;
    std::thread t([&] {
      result = work();
      done = true;
    });
    while (!done) {
      sync();
      std::this_thread::sleep_for(200ms);
    }
    t.join();
    sync();
    return result;
  }

  size_t running() const { return agents_.size(); }
  struct Stopped {
    std::string pod;
    int exitCode;
    std::string log;
  };
  const std::vector<Stopped>& stopped() const { return stopped_; }
  std::string logs() const {
    std::string out;
    for (const auto& [uid, a] : agents_) {
      out += "## " + a.pod + "\n" + a.process->log() + "\n";
    }
    return out;
  }

 private:
  struct Agent {
    std::string pod;
    std::unique_ptr<testenv::ChildProcess> process;
  };
  DataplaneCluster& cluster_;
  std::string kubeconfig_;
  std::map<std::string, Agent> agents_;  // by pod UID
  std::vector<Stopped> stopped_;
};

// Acceptance: the chart as a user installs it, the agent on (the default), on a cluster whose
// nodes carry packets. Install: a selected pod's connection leaves with the egress IP, another
// pod's with its node's address. Upgrade (the agent's pods replaced one by one): a connection
// held through it loses no line and no policy leaves Ready. Uninstall: each agent, stopped
// because its DaemonSet was deleted, takes its state out of the kernel, and each node's
// ruleset, rules, routes, proxy entries and links are what they were before the install.
TEST_F(HelmE2E, WithTheAgentPacketsLeaveThroughAnUpgradeAndUninstallLeavesEveryNodeAsItWas) {
  ASSERT_TRUE(kInPrivateNamespace);
  DataplaneCluster cluster;
  ASSERT_EQ(cluster.createNodesAndPods(), "");
  namespaces_.push_back(DataplaneCluster::kNamespace);
  namespaces_.push_back(DataplaneCluster::kLeaseNamespace);
  pools_.push_back(DataplaneCluster::kPool);
  std::map<int, std::string> before;
  for (int i = 1; i <= 3; ++i) {
    before[i] = DataplaneCluster::networkState(i);
    ASSERT_THAT(before[i], ::testing::HasSubstr("## nft list ruleset\ntable ")) << before[i];
  }
  ASSERT_EQ(cluster.prepareAgents(), "");

  // The CRDs are the cluster's already (createNodesAndPods applied them).
  auto installed = install({"--set", "crds.install=false"});
  ASSERT_TRUE(installed.ok()) << installed.output;
  const std::string agentSa = std::string(kFullName) + "-agent";
  const std::string token = serviceAccountSecret(agentSa)["token"];
  ASSERT_FALSE(token.empty());
  const std::string kubeconfig = cluster.tokenKubeconfig(token, "agent-sa");
  ASSERT_FALSE(kubeconfig.empty());
  AgentKubelet kubelet(cluster, kubeconfig);
  ASSERT_TRUE(eventually(
      [&] {
        kubelet.sync();
        return kubelet.running() == 3;
      },
      120s));
  const std::string agentLeases = std::string(kNamespace) + "-agents";
  ASSERT_EQ(cluster.startOperator({.operatorConfigYaml = "",
                                   .applyOperatorConfig = false,
                                   .agentLeaseNamespace = agentLeases}),
            "")
      << kubelet.logs();
  const std::string egressIP = cluster.egressIP();
  EXPECT_THAT(DataplaneCluster::connect("p3", DataplaneCluster::kEchoServer),
              ::testing::StartsWith(egressIP + ":"));
  EXPECT_THAT(DataplaneCluster::connect("p2", DataplaneCluster::kEchoServer),
              ::testing::StartsWith(DataplaneCluster::nodeAddress(2) + ":"));
  for (int i = 1; i <= 3; ++i) {
    EXPECT_NE(DataplaneCluster::networkState(i), before[i]) << "node " << i << " not programmed";
  }

  // helm upgrade with a changed agent value: the DaemonSet replaces its pods one by one.
  auto held = cluster.inNamespace("p3",
                                  {"python3", DataplaneCluster::packetsDir() + "/client.py",
                                   DataplaneCluster::kEchoServer, "hold:30:5"},
                                  "held");
  ASSERT_TRUE(eventually([&] { return !held->log().empty(); }, 10s));
  std::string watched;
  std::thread watcher([&] {
    watched =
        controlPlane()
            .kubectl(
                {"get", "egp", "-n", DataplaneCluster::kNamespace, "--watch",
                 "--request-timeout=50s", "-o",
                 R"(jsonpath={.metadata.name}={.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Programmed")].status}{"\n"})"})
            .output;
  });
  std::this_thread::sleep_for(2s);
  const auto upgradeStart = std::chrono::steady_clock::now();
  auto upgraded = kubelet.whileSyncing([&] {
    return helm({"upgrade", kRelease, chartDir(), "-n", kNamespace, "--wait", "--timeout=180s",
                 "--reuse-values", "--set", "agent.logLevel=debug"});
  });
  const double upgradeSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - upgradeStart).count();
  ASSERT_TRUE(upgraded.ok()) << upgraded.output;
  ASSERT_TRUE(eventually(
      [&] {
        kubelet.sync();
        return kubelet.running() == 3;
      },
      60s));
  std::printf("[ upgrade  ] %.1f s, %zu agents replaced\n", upgradeSeconds,
              kubelet.stopped().size());
  EXPECT_EQ(kubelet.stopped().size(), 3u) << "each agent pod replaced once";
  for (const auto& s : kubelet.stopped()) {
    EXPECT_EQ(s.exitCode, 0) << s.pod << ":\n" << s.log;
    EXPECT_THAT(s.log, ::testing::HasSubstr("the kernel state stays")) << s.pod;
    EXPECT_THAT(s.log, ::testing::Not(::testing::HasSubstr("removing what this agent")));
  }
  // Otherwise the connection did not span the upgrade, and proved nothing about it.
  EXPECT_TRUE(held->running()) << "the upgrade outlasted the held connection: " << held->log();
  EXPECT_TRUE(held->reap(120s)) << "still holding";
  EXPECT_THAT(held->log(), ::testing::StartsWith(egressIP + ":"));
  EXPECT_THAT(held->log(), ::testing::HasSubstr("\nheld ok")) << held->log();
  watcher.join();
  EXPECT_THAT(watched, ::testing::HasSubstr("web=True/True")) << watched;
  EXPECT_THAT(watched, ::testing::Not(::testing::HasSubstr("=False"))) << watched;
  EXPECT_THAT(DataplaneCluster::connect("p3", DataplaneCluster::kEchoServer),
              ::testing::StartsWith(egressIP + ":"));

  // helm uninstall deletes the DaemonSet (and, right after, the agents' RBAC and ServiceAccount):
  // the agents learn of the deletion from the watch they hold, and clean up when stopped.
  const size_t replaced = kubelet.stopped().size();
  auto uninstalled = kubelet.whileSyncing([&] {
    return helm({"uninstall", kRelease, "-n", kNamespace, "--wait"});
  });
  ASSERT_TRUE(uninstalled.ok()) << uninstalled.output;
  EXPECT_TRUE(eventually(
      [&] {
        kubelet.sync();
        return kubelet.running() == 0;
      },
      120s))
      << kubelet.logs();
  ASSERT_EQ(kubelet.stopped().size(), replaced + 3);
  for (size_t k = replaced; k < kubelet.stopped().size(); ++k) {
    const auto& s = kubelet.stopped()[k];
    EXPECT_EQ(s.exitCode, 0) << s.pod << ":\n" << s.log;
    EXPECT_THAT(s.log, ::testing::HasSubstr("removing what this agent put in the kernel"))
        << s.pod << ":\n"
        << s.log;
  }
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(DataplaneCluster::networkState(i), before[i]) << "node " << i;
  }
  cluster.egressOperator().process().signal(SIGTERM);
  EXPECT_EQ(exitCode(cluster.egressOperator().process().reap(60s)), 0);
}

}  // namespace
}  // namespace egress
