// End-to-end test of the CRD manifests (manifests/, generated from
// pkg/apis/networking/v1alpha1/types.h) against the real API server: they install and become
// Established, every example in deploy/examples/ is accepted and keeps every field, every object
// in test/testdata/invalid/ is rejected by the CRD's OpenAPI schema with the field path its
// `# expect:` line names, quantities are integers or quantity strings, a field v1alpha1 removed
// is pruned, `kubectl explain` shows the descriptions and `kubectl get` the printer columns.
//
// kubectl 1.33 and our 1.20 server: 1.20 has no server-side field validation (the fieldValidation
// query parameter), so kubectl's default --validate=strict falls back to client-side validation
// against the server's /openapi/v2. That document describes 1.20's JSONSchemaProps, which has no
// x-kubernetes-validations (CEL, 1.23+): manifests/ holds the CRDs without CEL rules, for any
// server, and manifests/cel/ the same CRDs with them, for servers >= 1.25. The invalid objects are
// sent with --validate=false as well, after a plain `kubectl create` has failed, so that the
// server's schema, not kubectl's copy of it, gives the verdict.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/e2e/testenv/environment.h"
#include <unistd.h>

namespace egress::testenv {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const char* const kCrds[] = {
    "ipampools.networking.egressgateway.dev",
    "egressgatewaypolicies.networking.egressgateway.dev",
    "egresspolicyslices.networking.egressgateway.dev",
    "operatorconfigs.networking.egressgateway.dev",
};

// The *.yaml files of a repository directory, sorted.
std::vector<std::string> yamlFiles(const std::string& relativeDir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator(sourceDir() + "/" + relativeDir, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The text after `# expect:` in a file's leading comment, or "".
std::string expectation(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  const std::string marker = "# expect:";
  while (std::getline(in, line) && line.rfind('#', 0) == 0) {
    if (line.rfind(marker, 0) == 0) {
      std::string value = line.substr(marker.size());
      value.erase(0, value.find_first_not_of(" \t"));
      value.erase(value.find_last_not_of(" \t\r") + 1);
      return value;
    }
  }
  return "";
}

// The whitespace-separated words of the first line of `text`.
std::vector<std::string> headerWords(const std::string& text) {
  std::istringstream words(text.substr(0, text.find('\n')));
  std::vector<std::string> result;
  std::string word;
  while (words >> word) {
    result.push_back(word);
  }
  return result;
}

std::string trimmed(std::string text) {
  text.erase(text.find_last_not_of(" \n") + 1);
  return text;
}

// `text` with every run of whitespace one space (kubectl explain wraps its lines).
std::string oneLine(const std::string& text) {
  std::istringstream words(text);
  std::string out;
  for (std::string word; words >> word;) {
    out += (out.empty() ? "" : " ") + word;
  }
  return out;
}

std::string baseName(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

// kubectl apply of the named files of deploy/examples/.
void applyExamples(std::initializer_list<const char*> examples) {
  for (const char* example : examples) {
    auto apply =
        controlPlane().kubectl({"apply", "-f", sourceDir() + "/deploy/examples/" + example});
    ASSERT_TRUE(apply.ok()) << example << ":\n" << apply.output;
  }
}

// A policy `name` in namespace default with `spec` (YAML lines indented by two), in a file of
// its own for kubectl -f; the caller removes it.
std::string writePolicy(const std::string& name, const std::string& spec) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("crd_e2e_" + std::to_string(::getpid()) + "_" + name + ".yaml");
  std::ofstream(path) << "apiVersion: networking.egressgateway.dev/v1alpha1\n"
                      << "kind: EgressGatewayPolicy\n"
                      << "metadata:\n  name: " << name << "\n  namespace: default\n"
                      << "spec:\n"
                      << spec;
  return path.string();
}

// `kubectl get` of one field of an object, by JSONPath.
std::string field(const std::vector<std::string>& object, const std::string& jsonPath) {
  std::vector<std::string> args = {"get"};
  args.insert(args.end(), object.begin(), object.end());
  args.insert(args.end(), {"-o", "jsonpath={" + jsonPath + "}"});
  auto out = controlPlane().kubectl(args);
  EXPECT_TRUE(out.ok()) << out.output;
  return out.output;
}

// Applies manifests/ and waits until every CRD is Established; once per test binary.
void installCrds() {
  static bool installed = false;
  if (installed) {
    return;
  }
  auto& cp = controlPlane();
  const std::string manifests = sourceDir() + "/manifests/";
  ASSERT_TRUE(std::filesystem::exists(manifests)) << manifests << " is missing (make generate)";
  // manifests/cel/ carries the CEL rules: kubectl refuses them here in its client-side
  // validation, and only because 1.20's OpenAPI predates x-kubernetes-validations.
  auto cel = cp.kubectl({"apply", "--dry-run=client", "-f", manifests + "cel/"});
  ASSERT_FALSE(cel.ok()) << "1.20 learned CEL?\n" << cel.output;
  std::istringstream lines(cel.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("error") != std::string::npos || line.find("Error") != std::string::npos) {
      EXPECT_THAT(line, HasSubstr("x-kubernetes-validations")) << "another problem:\n" << line;
    }
  }
  // ... while the server itself takes them (and drops the rules it does not know).
  auto celServer =
      cp.kubectl({"apply", "--dry-run=server", "--validate=warn", "-f", manifests + "cel/"});
  EXPECT_TRUE(celServer.ok()) << celServer.output;
  // What users run: kubectl's defaults, strict validation included.
  auto apply = cp.kubectl({"apply", "-f", manifests});
  ASSERT_TRUE(apply.ok()) << apply.output;
  for (const char* crd : kCrds) {
    EXPECT_THAT(apply.output, HasSubstr(crd));
    auto wait = cp.kubectl(
        {"wait", "--for", "condition=established", "--timeout=60s", std::string("crd/") + crd});
    ASSERT_TRUE(wait.ok()) << crd << ": " << wait.output;
  }
  installed = true;
}

TEST(Crd, ManifestsInstallAndBecomeEstablished) {
  ASSERT_NO_FATAL_FAILURE(installCrds());
  auto& cp = controlPlane();
  const std::string names =
      "jsonpath={range .items[?(@.spec.group==\"networking.egressgateway.dev\")]}"
      "{.metadata.name} {.spec.scope} {.spec.names.shortNames} {.spec.names.categories}"
      "{\"\\n\"}{end}";
  auto crds = cp.kubectl({"get", "crd", "-o", names});
  ASSERT_TRUE(crds.ok()) << crds.output;
  EXPECT_THAT(crds.output,
              HasSubstr("ipampools.networking.egressgateway.dev Cluster [\"ipp\"] [\"egress\"]\n"));
  EXPECT_THAT(crds.output, HasSubstr("egressgatewaypolicies.networking.egressgateway.dev "
                                     "Namespaced [\"egp\"] [\"egress\"]\n"));
  EXPECT_THAT(crds.output, HasSubstr("operatorconfigs.networking.egressgateway.dev Cluster "
                                     "[\"eoc\"] [\"egress\"]\n"));
  EXPECT_THAT(crds.output, HasSubstr("egresspolicyslices.networking.egressgateway.dev Cluster "
                                     "[\"egps\"] [\"egress\"]\n"));
}

TEST(Crd, EveryExampleApplies) {
  ASSERT_NO_FATAL_FAILURE(installCrds());
  auto& cp = controlPlane();
  const auto examples = yamlFiles("deploy/examples");
  ASSERT_GE(examples.size(), 9u);
  for (const auto& file : examples) {
    // kubectl's default (strict) validation also rejects fields the schema does not know, which
    // the server would otherwise drop silently.
    auto apply = cp.kubectl({"apply", "-f", file});
    EXPECT_TRUE(apply.ok()) << baseName(file) << ":\n" << apply.output;
    auto get = cp.kubectl({"get", "-f", file, "-o", "name"});
    EXPECT_TRUE(get.ok()) << baseName(file) << ":\n" << get.output;
  }
}

// What the schema would prune if it lacked a field: every new field of the examples survives.
TEST(Crd, ExamplesKeepEveryField) {
  ASSERT_NO_FATAL_FAILURE(installCrds());
  ASSERT_NO_FATAL_FAILURE(applyExamples(
      {"ipampool-team-payments.yaml", "operatorconfig.yaml", "policy-default-pool.yaml"}));
  EXPECT_EQ(field({"ipp", "egress-payments"}, ".spec.namespaceSelector.matchLabels.team"),
            "payments");
  EXPECT_EQ(
      field({"ipp", "egress-payments"}, ".spec.namespaceSelector.matchExpressions[0].operator"),
      "DoesNotExist");
  EXPECT_EQ(field({"eoc", "default"}, ".spec.clusterCIDRs"),
            R"(["10.244.0.0/16","10.96.0.0/12","fd00:10:244::/56","fd00:10:96::/112"])");
  const std::vector<std::string> policy = {"-n", "default", "egp", "batch-exports"};
  EXPECT_EQ(field(policy, ".spec.egressIP"), R"({"ipFamily":"IPv4"})") << "no pool";
  EXPECT_EQ(field(policy, ".spec.gateway.resources.limits.cpu"), "1");
  EXPECT_EQ(field(policy, ".spec.gateway.resources.requests.cpu"), "500m");
  EXPECT_EQ(field(policy, ".spec.gateway.tolerations[1].tolerationSeconds"), "30");
}

// int-or-string: a YAML integer stays an integer, a quantity string a string; both are stored.
TEST(Crd, QuantitiesAreIntegersOrQuantityStrings) {
  ASSERT_NO_FATAL_FAILURE(installCrds());
  auto& cp = controlPlane();
  const std::string file = writePolicy("quantities", R"(  podSelector: {}
  egressIP: {}
  gateway:
    resources:
      limits: {cpu: 1, memory: 128Mi, ephemeral-storage: "2Gi", example.com/foo: 2}
      requests: {cpu: "0.5", memory: 1e3, ephemeral-storage: ".5"}
)");
  auto apply = cp.kubectl({"apply", "-f", file});
  ASSERT_TRUE(apply.ok()) << apply.output;
  const std::vector<std::string> policy = {"-n", "default", "egp", "quantities"};
  EXPECT_EQ(field(policy, ".spec.gateway.resources.limits"),
            R"({"cpu":1,"ephemeral-storage":"2Gi","example.com/foo":2,"memory":"128Mi"})");
  EXPECT_EQ(field(policy, ".spec.gateway.resources.requests"),
            R"({"cpu":"0.5","ephemeral-storage":".5","memory":1000})")
      << "1e3 is a YAML float, an integral one: the server takes it as an integer";
  cp.kubectl({"delete", "-f", file});
  std::filesystem::remove(file);
}

// v1alpha1 dropped a policy's namespaceSelector (a policy selects pods of its own namespace):
// kubectl's validation names the unknown field, and the API server prunes it.
TEST(Crd, ThePolicyNamespaceSelectorIsGone) {
  ASSERT_NO_FATAL_FAILURE(installCrds());
  auto& cp = controlPlane();
  const std::string file =
      writePolicy("namespace-selector", R"(  podSelector: {matchLabels: {app: web}}
  namespaceSelector: {matchLabels: {team: payments}}
  egressIP: {pool: egress-ipv4}
)");
  auto strict = cp.kubectl({"create", "-f", file});
  EXPECT_FALSE(strict.ok()) << strict.output;
  EXPECT_THAT(strict.output, HasSubstr("namespaceSelector"));
  auto lax = cp.kubectl({"create", "--validate=false", "-f", file});
  ASSERT_TRUE(lax.ok()) << lax.output;
  const std::string spec = field({"-n", "default", "egp", "namespace-selector"}, ".spec");
  EXPECT_THAT(spec, HasSubstr(R"("podSelector":{"matchLabels":{"app":"web"}})"));
  EXPECT_THAT(spec, ::testing::Not(HasSubstr("namespaceSelector"))) << spec;
  cp.kubectl({"delete", "-f", file});
  std::filesystem::remove(file);
}

// The descriptions users read, from the server's OpenAPI.
TEST(Crd, ExplainShowsTheDescriptions) {
  ASSERT_NO_FATAL_FAILURE(installCrds());
  auto& cp = controlPlane();
  // The server publishes a new CRD's OpenAPI a moment after it is Established.
  CommandResult pool;
  for (int i = 0; i < 60; ++i) {
    pool = cp.kubectl({"explain", "egp.spec.egressIP.pool"});
    if (pool.ok()) {
      break;
    }
    ::sleep(1);
  }
  ASSERT_TRUE(pool.ok()) << pool.output;
  EXPECT_THAT(oneLine(pool.output), HasSubstr("absent: the OperatorConfig's spec.defaultPool"));
  EXPECT_THAT(oneLine(pool.output), HasSubstr("status.pool records the pool in use"));
  auto ledger = cp.kubectl({"explain", "egp.status.gateways"});
  ASSERT_TRUE(ledger.ok()) << ledger.output;
  EXPECT_THAT(ledger.output, HasSubstr("egressIPs"));
  EXPECT_THAT(oneLine(ledger.output), HasSubstr("one entry per gateway replica slot"));
  for (const auto& out : {pool.output, ledger.output}) {
    EXPECT_THAT(out, ::testing::Not(HasSubstr("std::")));
  }
}

TEST(Crd, EveryInvalidObjectIsRejectedBySchema) {
  ASSERT_NO_FATAL_FAILURE(installCrds());
  auto& cp = controlPlane();
  const auto invalid = yamlFiles("test/testdata/invalid");
  ASSERT_GE(invalid.size(), 10u);
  for (const auto& file : invalid) {
    const std::string name = baseName(file);
    const std::string expected = expectation(file);
    ASSERT_FALSE(expected.empty()) << name << " has no `# expect:` line";

    // What a user running kubectl with its defaults sees (on 1.20 possibly kubectl's own
    // client-side validation, which words missing fields differently).
    auto create = cp.kubectl({"create", "-f", file});
    EXPECT_FALSE(create.ok()) << name << " was accepted:\n" << create.output;
    // The server's verdict from the CRD schema alone.
    auto server = cp.kubectl({"create", "--validate=false", "-f", file});
    EXPECT_FALSE(server.ok()) << name << " was accepted by the server:\n" << server.output;
    EXPECT_THAT(server.output, HasSubstr(expected)) << name;
    std::cout << "[ rejected ] " << name << ": " << trimmed(server.output) << "\n";
    if (create.output != server.output) {
      std::cout << "  (kubectl's own validation: " << trimmed(create.output) << ")\n";
    }
    if (create.ok() || server.ok()) {
      cp.kubectl({"delete", "--ignore-not-found", "-f", file});
    }
  }
  std::cout.flush();
}

TEST(Crd, GetShowsPrinterColumns) {
  ASSERT_NO_FATAL_FAILURE(installCrds());
  auto& cp = controlPlane();
  ASSERT_NO_FATAL_FAILURE(
      applyExamples({"ipampool-ipv4.yaml", "policy-ipv4-pool.yaml", "operatorconfig.yaml"}));

  auto pools = cp.kubectl({"get", "ipp"});
  ASSERT_TRUE(pools.ok()) << pools.output;
  EXPECT_THAT(headerWords(pools.output),
              ElementsAre("NAME", "CIDRS", "ALLOCATED", "IPV4-FREE", "IPV6-FREE", "READY", "AGE"))
      << pools.output;
  EXPECT_THAT(pools.output, HasSubstr("203.0.113.0/26"));

  auto policies = cp.kubectl({"get", "egp", "-A"});
  ASSERT_TRUE(policies.ok()) << policies.output;
  EXPECT_THAT(headerWords(policies.output), ElementsAre("NAMESPACE", "NAME", "POOL", "EGRESS-IPS",
                                                        "PODS", "NODES", "READY", "AGE"))
      << policies.output;
  EXPECT_THAT(policies.output, HasSubstr("payments-partners"));

  // A server-side printer column shows the first value of a list path only: NODES is a list
  // of its own in the status, shown whole.
  const std::string status =
      R"({"status":{"egressIPs":["203.0.113.9","203.0.113.10"],"nodes":["node-a","node-b"]}})";
  auto patched = cp.kubectl({"patch", "egp", "-n", "default", "payments-partners",
                             "--subresource=status", "--type=merge", "-p", status});
  ASSERT_TRUE(patched.ok()) << patched.output;
  auto row = cp.kubectl({"get", "egp", "-n", "default", "payments-partners"});
  EXPECT_THAT(row.output, HasSubstr(R"(["203.0.113.9","203.0.113.10"])")) << row.output;
  EXPECT_THAT(row.output, HasSubstr(R"(["node-a","node-b"])")) << row.output;

  auto configs = cp.kubectl({"get", "eoc"});
  ASSERT_TRUE(configs.ok()) << configs.output;
  EXPECT_THAT(headerWords(configs.output),
              ElementsAre("NAME", "IMAGE", "POLICIES", "READY-POLICIES", "AGE"))
      << configs.output;

  // The category lists all three kinds.
  auto all = cp.kubectl({"get", "egress", "-A", "-o", "name"});
  ASSERT_TRUE(all.ok()) << all.output;
  EXPECT_THAT(all.output, HasSubstr("ipampool.networking.egressgateway.dev/egress-ipv4"));
  EXPECT_THAT(all.output,
              HasSubstr("egressgatewaypolicy.networking.egressgateway.dev/payments-partners"));
  EXPECT_THAT(all.output, HasSubstr("operatorconfig.networking.egressgateway.dev/default"));
}

}  // namespace
}  // namespace egress::testenv
