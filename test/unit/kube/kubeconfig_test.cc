#include "pkg/kube/kubeconfig.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pkg/kube/base64.h"
#include "pkg/kube/config_discovery.h"
#include "pkg/kube/kubeconfig_file.h"
#include "test/testutil/scoped_env.h"
#include "test/testutil/temp_dir.h"
#include "test/unit/kube/sync_credentials.h"
#include <stdlib.h>
#include <unistd.h>

namespace egress::kube {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kTestdata = std::string(EGRESS_TESTDATA_DIR) + "/kubeconfig";
const std::string kFirst = kTestdata + "/first.yaml";
const std::string kSecond = kTestdata + "/nested/second.yaml";

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

using testutil::ScopedEnv;
using testutil::TempDir;

// Restores the working directory, which some tests change to prove paths do not depend on it.
class ScopedCwd {
 public:
  explicit ScopedCwd(const std::string& dir) : old_(fs::current_path()) { fs::current_path(dir); }
  ~ScopedCwd() { fs::current_path(old_); }

 private:
  fs::path old_;
};

Result<RestConfig> load(std::vector<std::string> paths, std::string context = "") {
  KubeconfigOptions options;
  options.paths = std::move(paths);
  options.context = std::move(context);
  return loadKubeconfig(options);
}

// Loads `path` with providers reading the time from `*now`.
Result<RestConfig> loadAt(const std::string& path,
                          const std::chrono::system_clock::time_point* now) {
  KubeconfigOptions options;
  options.paths = {path};
  options.clock = [now] { return *now; };
  return loadKubeconfig(options);
}

TEST(Kubeconfig, MergesFilesFirstDefinitionWins) {
  // current-context comes from first.yaml (dev), whose cluster and user win over second.yaml's.
  auto config = load({kFirst, kSecond});
  ASSERT_TRUE(config) << config.error().message();
  EXPECT_EQ(config->server, "https://dev.example.test:6443");  // trailing slash dropped
  EXPECT_EQ(config->defaultNamespace, "team-a");
  EXPECT_EQ(config->tlsServerName, "kubernetes.default");
  EXPECT_EQ(config->caPem, readFile(kTestdata + "/certs/ca.pem"));
  // dev-user from first.yaml (certificate files, served by a provider that follows their
  // rotation), not the token in second.yaml.
  ASSERT_NE(config->auth, nullptr);
  auto creds = syncCredentials(*config->auth);
  ASSERT_TRUE(creds) << creds.error().message();
  EXPECT_EQ(creds->bearerToken, "");
  EXPECT_EQ(creds->clientCertPem, readFile(kTestdata + "/certs/client.pem"));
  EXPECT_EQ(creds->clientKeyPem, readFile(kTestdata + "/certs/client-key.pem"));
  EXPECT_FALSE(config->insecureSkipTlsVerify);
  EXPECT_EQ(config->qps, 5.0);
  EXPECT_EQ(config->burst, 10);
}

TEST(Kubeconfig, CurrentContextFromFirstFileThatSetsIt) {
  TempDir dir;
  const std::string noCurrent = dir.write("none.yaml", "apiVersion: v1\nkind: Config\n");
  auto config = load({noCurrent, kSecond, kFirst});
  ASSERT_TRUE(config) << config.error().message();
  // second.yaml's current-context "prod", whose cluster and user only second.yaml defines.
  EXPECT_EQ(config->server, "https://prod.example.test:443");  // scheme defaulted to https
  ASSERT_NE(config->auth, nullptr);
  auto creds = syncCredentials(*config->auth);
  ASSERT_TRUE(creds);
  EXPECT_EQ(creds->bearerToken, "prod-token");  // its tokenFile does not exist
  EXPECT_EQ(config->defaultNamespace, "default");
}

TEST(Kubeconfig, UserOnlyInLaterFileIsFound) {
  auto config = load({kFirst, kSecond}, "prod");
  ASSERT_TRUE(config) << config.error().message();
  EXPECT_EQ(config->server, "https://prod.example.test:443");
  ASSERT_NE(config->auth, nullptr);
  EXPECT_EQ(syncCredentials(*config->auth)->bearerToken, "prod-token");
}

TEST(Kubeconfig, ExplicitContextOverridesCurrentContext) {
  auto config = load({kFirst, kSecond}, "shared");
  ASSERT_TRUE(config) << config.error().message();
  EXPECT_EQ(config->server, "https://first-shared.example.test");
  EXPECT_TRUE(config->insecureSkipTlsVerify);
  ASSERT_NE(config->auth, nullptr);
  // tokenFile resolved against first.yaml's folder, not the working directory.
  EXPECT_EQ(syncCredentials(*config->auth)->bearerToken, "file-token-from-testdata");
}

TEST(Kubeconfig, RelativePathsResolveAgainstTheDefiningFile) {
  TempDir elsewhere;
  {
    ScopedCwd cwd(elsewhere.path());
    auto config = load({kFirst});
    ASSERT_TRUE(config) << config.error().message();
    EXPECT_EQ(config->caPem, readFile(kTestdata + "/certs/ca.pem"));
  }
  {
    // A relative kubeconfig path (as given on the command line) works too.
    ScopedCwd cwd(kTestdata);
    auto relative = load({"nested/../first.yaml"});
    ASSERT_TRUE(relative) << relative.error().message();
    ASSERT_NE(relative->auth, nullptr);
    EXPECT_EQ(syncCredentials(*relative->auth)->clientKeyPem,
              readFile(kTestdata + "/certs/client-key.pem"));
  }
}

TEST(Kubeconfig, DecodesDataFields) {
  auto config = load({kFirst, kSecond}, "data");
  ASSERT_TRUE(config) << config.error().message();
  EXPECT_EQ(config->caPem, readFile(kTestdata + "/certs/ca.pem"));
  EXPECT_EQ(config->clientCertPem, readFile(kTestdata + "/certs/client.pem"));
  // client-key-data is wrapped over several lines in the file.
  EXPECT_EQ(config->clientKeyPem, readFile(kTestdata + "/certs/client-key.pem"));
  EXPECT_EQ(config->defaultNamespace, "data-ns");
}

TEST(Kubeconfig, MissingFilesInAListAreSkippedButAnExplicitOneIsAnError) {
  auto listed = load({kTestdata + "/missing.yaml", kFirst});
  ASSERT_TRUE(listed) << listed.error().message();
  EXPECT_EQ(listed->server, "https://dev.example.test:6443");

  auto explicitPath = load({kTestdata + "/missing.yaml"});
  ASSERT_FALSE(explicitPath);
  EXPECT_EQ(explicitPath.error().kind(), Error::Kind::Config);
  EXPECT_THAT(explicitPath.error().message(), HasSubstr(kTestdata + "/missing.yaml"));
  EXPECT_THAT(explicitPath.error().message(), HasSubstr("does not exist"));

  auto none = load({kTestdata + "/a.yaml", kTestdata + "/b.yaml"});
  ASSERT_FALSE(none);
  EXPECT_THAT(none.error().message(), HasSubstr("none of the kubeconfig files exist"));

  auto directory = load({kTestdata});
  ASSERT_FALSE(directory);
  EXPECT_THAT(directory.error().message(), HasSubstr("is a directory"));
}

TEST(Kubeconfig, PathsFromEnv) {
  EXPECT_EQ(kubeconfigPathsFromEnv(nullptr), std::vector<std::string>{});
  EXPECT_EQ(kubeconfigPathsFromEnv(""), std::vector<std::string>{});
  EXPECT_EQ(kubeconfigPathsFromEnv("/a"), std::vector<std::string>{"/a"});
  EXPECT_EQ(kubeconfigPathsFromEnv(":/a::b/c:"), (std::vector<std::string>{"/a", "b/c"}));
}

constexpr const char* kValidHeader = R"(apiVersion: v1
kind: Config
current-context: ctx
clusters:
- name: c
  cluster:
    server: https://h:6443
contexts:
- name: ctx
  context: {cluster: c, user: admin}
)";

struct MalformedCase {
  std::string name;
  std::string yaml;
  std::vector<std::string> expected;  // substrings of the message besides the file name
  std::string context = {};
};

TEST(Kubeconfig, MalformedInputNamesFileAndField) {
  const std::string header = kValidHeader;
  const std::vector<MalformedCase> cases = {
      {"bad-base64",
       header + "users:\n- name: admin\n  user:\n    client-certificate-data: aGVsbG8=\n"
                "    client-key-data: \"not*base64!\"\n",
       {"users[admin].client-key-data: not valid base64"}},
      {"unknown-context",
       header + "users:\n- name: admin\n",
       {"context \"foo\" does not exist", "available: ctx"},
       "foo"},
      {"unknown-current-context",
       "current-context: nope\nclusters: []\ncontexts:\n- name: a\n  context: {cluster: c}\n",
       {"current-context", "context \"nope\" does not exist"}},
      {"missing-server",
       "current-context: ctx\nclusters:\n- name: c\n  cluster: {insecure-skip-tls-verify: true}\n"
       "contexts:\n- name: ctx\n  context: {cluster: c}\n",
       {"clusters[c].server", "no server"}},
      {"missing-cluster",
       "current-context: ctx\ncontexts:\n- name: ctx\n  context: {cluster: x}\n",
       {"contexts[ctx].cluster", "cluster \"x\" does not exist"}},
      {"missing-user", header, {"contexts[ctx].user", "\"admin\" does not exist"}},
      {"yaml-syntax", "clusters:\n- name: [unclosed\n", {"invalid YAML", "line"}},
      {"clusters-not-list", "clusters:\n  c:\n    server: x\n", {"clusters: must be a list"}},
      {"entry-without-name", "users:\n- user: {token: t}\n", {"users[0].name: is required"}},
      {"duplicate-name", "users:\n- name: u\n- name: u\n", {"users[u]", "defined twice"}},
      {"bad-bool",
       "clusters:\n- name: c\n  cluster: {insecure-skip-tls-verify: maybe}\n",
       {"clusters[c].insecure-skip-tls-verify: must be true or false"}},
      {"server-not-string",
       "clusters:\n- name: c\n  cluster: {server: [a, b]}\n",
       {"clusters[c].server: must be a string"}},
      {"bad-server-url",
       "current-context: ctx\nclusters:\n- name: c\n  cluster: {server: 'ftp://h'}\n"
       "contexts:\n- name: ctx\n  context: {cluster: c}\n",
       {"clusters[c].server", "http(s) URL"}},
      {"top-level-scalar", "just a string\n", {"not a kubeconfig"}},
      {"wrong-kind", "kind: Pod\n", {"kind: is \"Pod\", want Config"}},
      {"exec-args-not-list",
       "users:\n- name: u\n  user:\n    exec: {command: x, args: y}\n",
       {"users[u].exec.args: must be a list"}},
      {"exec-env-without-name",
       "users:\n- name: u\n  user:\n    exec:\n      command: x\n      env: [{value: v}]\n",
       {"users[u].exec.env[0].name: is required"}},
      {"exec-interactive-always",
       header + "users:\n- name: admin\n  user:\n    exec:\n"
                "      apiVersion: client.authentication.k8s.io/v1\n"
                "      command: get-token\n      interactiveMode: Always\n",
       {"users[admin].exec", "interactiveMode Always"}},
      {"exec-bad-api-version",
       header + "users:\n- name: admin\n  user:\n    exec: {apiVersion: "
                "client.authentication.k8s.io/v1alpha1, command: get-token}\n",
       {"users[admin].exec", "v1alpha1", "not supported"}},
      {"ca-file-missing",
       "current-context: ctx\nclusters:\n- name: c\n  cluster:\n    server: https://h\n"
       "    certificate-authority: no-such-ca.pem\ncontexts:\n- name: ctx\n"
       "  context: {cluster: c}\n",
       {"clusters[c].certificate-authority", "no-such-ca.pem", "does not exist"}},
      {"ca-file-and-data",
       "current-context: ctx\nclusters:\n- name: c\n  cluster:\n    server: https://h\n"
       "    certificate-authority: ca.pem\n    certificate-authority-data: aGk=\n"
       "contexts:\n- name: ctx\n  context: {cluster: c}\n",
       {"clusters[c]", "both set"}},
      {"insecure-with-ca",
       "current-context: ctx\nclusters:\n- name: c\n  cluster:\n    server: https://h\n"
       "    insecure-skip-tls-verify: true\n    certificate-authority-data: aGk=\n"
       "contexts:\n- name: ctx\n  context: {cluster: c}\n",
       {"clusters[c].insecure-skip-tls-verify", "cannot be combined"}},
      {"token-file-missing",
       header + "users:\n- name: admin\n  user: {tokenFile: gone}\n",
       {"users[admin].tokenFile", "/gone"}},
      {"cert-without-key",
       header + "users:\n- name: admin\n  user: {client-certificate-data: aGk=}\n",
       {"users[admin].client-key", "required together"}},
      {"basic-auth",
       header + "users:\n- name: admin\n  user: {username: a, password: b}\n",
       {"users[admin].username", "not supported"}},
      {"no-current-context", "clusters: []\n", {"no context selected"}},
      {"binary", std::string("\x00\xff\xfe{[\x01", 6), {}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir dir;
    const std::string path = dir.write(c.name + ".yaml", c.yaml);
    auto config = load({path}, c.context);
    ASSERT_FALSE(config);
    EXPECT_EQ(config.error().kind(), Error::Kind::Config);
    EXPECT_THAT(config.error().message(), HasSubstr(path));
    for (const auto& want : c.expected) {
      EXPECT_THAT(config.error().message(), HasSubstr(want));
    }
  }
}

TEST(Kubeconfig, TokenFileBeatsTokenWhichIsItsFallback) {
  // client-go: with both set, the token file is read (and cached) for every request, and the
  // token is used only while the file cannot be read.
  TempDir dir;
  const std::string tokenFile = dir.write("token", "from-file\n");
  const std::string path = dir.write("kc.yaml", std::string(kValidHeader) + R"(users:
- name: admin
  user:
    token: static
    tokenFile: token
)");
  std::chrono::system_clock::time_point now{};
  auto config = loadAt(path, &now);
  ASSERT_TRUE(config) << config.error().message();
  ASSERT_NE(config->auth, nullptr);
  EXPECT_EQ(syncCredentials(*config->auth)->bearerToken, "from-file");
  fs::remove(tokenFile);
  now += std::chrono::minutes(2);
  EXPECT_EQ(syncCredentials(*config->auth)->bearerToken, "from-file");  // the last good read
  config->auth->invalidate(Credentials{"from-file", {}, {}});
  EXPECT_EQ(syncCredentials(*config->auth)->bearerToken, "static");
}

TEST(Kubeconfig, TokenIsTheFallbackOfAMissingTokenFileAndBeatsExec) {
  TempDir dir;
  const std::string path = dir.write("kc.yaml", std::string(kValidHeader) + R"(users:
- name: admin
  user:
    token: static
    tokenFile: missing
    exec: {apiVersion: client.authentication.k8s.io/v1, command: never-run}
)");
  auto config = load({path});
  ASSERT_TRUE(config) << config.error().message();
  ASSERT_NE(config->auth, nullptr);
  EXPECT_EQ(syncCredentials(*config->auth)->bearerToken, "static");
}

TEST(Kubeconfig, StaticClientCertificateMeansTheExecPluginIsNotRun) {
  // client-go's exec Authenticator steps aside when the config has token or certificate auth.
  TempDir dir;
  dir.write("cert.pem", "CERT");
  dir.write("key.pem", "KEY");
  const std::string marker = dir.path() + "/ran";
  dir.write("plugin.sh", "#!/bin/sh\ntouch " + marker +
                             "\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                             "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"plugin\"}}'\n");
  fs::permissions(dir.path() + "/plugin.sh", fs::perms::owner_all);
  const std::string exec =
      "    exec: {apiVersion: client.authentication.k8s.io/v1, command: ./plugin.sh}\n";
  for (const std::string& cert : {std::string("    client-certificate-data: Q0VSVA==\n"
                                              "    client-key-data: S0VZ\n"),
                                  std::string("    client-certificate: cert.pem\n"
                                              "    client-key: key.pem\n")}) {
    SCOPED_TRACE(cert);
    const std::string path = dir.write(
        "kc.yaml", std::string(kValidHeader) + "users:\n- name: admin\n  user:\n" + cert + exec);
    auto config = load({path});
    ASSERT_TRUE(config) << config.error().message();
    if (config->auth != nullptr) {
      auto creds = syncCredentials(*config->auth);
      ASSERT_TRUE(creds) << creds.error().message();
      EXPECT_EQ(creds->bearerToken, "");
    }
    EXPECT_FALSE(fs::exists(marker));
  }
}

TEST(Kubeconfig, ClientCertificateFilesAreReloadedWhenTheyChange) {
  TempDir dir;
  dir.write("cert.pem", "CERT-1");
  dir.write("key.pem", "KEY-1");
  const std::string path = dir.write("kc.yaml", std::string(kValidHeader) + R"(users:
- name: admin
  user:
    client-certificate: cert.pem
    client-key: key.pem
)");
  std::chrono::system_clock::time_point now{};
  auto config = loadAt(path, &now);
  ASSERT_TRUE(config) << config.error().message();
  // Not a static certificate: a provider serves it, and the client follows its changes.
  EXPECT_EQ(config->clientCertPem, "");
  ASSERT_NE(config->auth, nullptr);
  auto first = syncCredentials(*config->auth);
  ASSERT_TRUE(first) << first.error().message();
  EXPECT_EQ(first->clientCertPem, "CERT-1");
  EXPECT_EQ(first->clientKeyPem, "KEY-1");
  // Rotated as cert-manager or a kubelet would: new files renamed over the old ones.
  dir.write("cert.pem.new", "CERT-2 longer");
  dir.write("key.pem.new", "KEY-2 longer");
  fs::rename(dir.path() + "/cert.pem.new", dir.path() + "/cert.pem");
  fs::rename(dir.path() + "/key.pem.new", dir.path() + "/key.pem");
  now += std::chrono::seconds(2);
  auto second = syncCredentials(*config->auth);
  ASSERT_TRUE(second) << second.error().message();
  EXPECT_EQ(second->clientCertPem, "CERT-2 longer");
  EXPECT_EQ(second->clientKeyPem, "KEY-2 longer");
}

TEST(Kubeconfig, TokenWithALineBreakIsRefused) {
  TempDir dir;
  const std::string path = dir.write("kc.yaml", std::string(kValidHeader) + R"(users:
- name: admin
  user:
    token: "abc\r\nX-Injected: yes"
)");
  auto config = load({path});
  ASSERT_FALSE(config);
  EXPECT_THAT(config.error().message(), HasSubstr("users[admin].token"));
  EXPECT_THAT(config.error().message(), HasSubstr("control character"));

  dir.write("token", "abc\nX-Injected: yes\n");
  const std::string fromFile = dir.write("kc2.yaml", std::string(kValidHeader) + R"(users:
- name: admin
  user:
    tokenFile: token
)");
  auto fileConfig = load({fromFile});
  ASSERT_FALSE(fileConfig);
  EXPECT_THAT(fileConfig.error().message(), HasSubstr("users[admin].tokenFile"));
  EXPECT_THAT(fileConfig.error().message(), HasSubstr("control character"));
}

TEST(Kubeconfig, ProxyUrlHttpAndHttpsAreKeptOthersRefused) {
  TempDir dir;
  const auto withProxy = [&](const std::string& proxy) {
    return dir.write("kc.yaml",
                     "current-context: ctx\nclusters:\n- name: c\n  cluster:\n"
                     "    server: https://h:6443\n    proxy-url: " +
                         proxy + "\ncontexts:\n- name: ctx\n  context: {cluster: c}\n");
  };
  for (const std::string proxy : {"http://proxy.corp:3128", "https://user:pw@proxy.corp"}) {
    auto config = load({withProxy(proxy)});
    ASSERT_TRUE(config) << config.error().message();
    EXPECT_EQ(config->proxyUrl, proxy);
  }
  auto noProxy = load({kFirst});
  ASSERT_TRUE(noProxy) << noProxy.error().message();
  EXPECT_EQ(noProxy->proxyUrl, "");
  for (const std::string proxy : {"socks5://proxy.corp:1080", "proxy.corp:3128", "http://"}) {
    SCOPED_TRACE(proxy);
    const std::string path = withProxy(proxy);
    auto config = load({path});
    ASSERT_FALSE(config);
    EXPECT_THAT(config.error().message(), HasSubstr(path));
    EXPECT_THAT(config.error().message(), HasSubstr("clusters[c].proxy-url"));
    EXPECT_THAT(config.error().message(), HasSubstr(proxy));
  }
  auto socks = load({withProxy("socks5://proxy.corp:1080")});
  ASSERT_FALSE(socks);
  EXPECT_THAT(socks.error().message(), HasSubstr("scheme \"socks5\" is not supported"));
}

TEST(Kubeconfig, RejectsFilesOverTheSizeCap) {
  TempDir dir;
  std::string big = std::string(kValidHeader) + "users:\n- name: admin\n# ";
  big.resize(kMaxKubeconfigBytes + 1, 'x');
  const std::string path = dir.write("big.yaml", big);
  auto tooBig = load({path});
  ASSERT_FALSE(tooBig);
  EXPECT_THAT(tooBig.error().message(), HasSubstr(path));
  EXPECT_THAT(tooBig.error().message(), HasSubstr("larger than 4194304 bytes"));

  // Exactly at the cap is still read and parsed.
  big.resize(kMaxKubeconfigBytes);
  dir.write("big.yaml", big);
  auto atCap = load({path});
  ASSERT_TRUE(atCap) << atCap.error().message();
  EXPECT_EQ(atCap->server, "https://h:6443");
}

TEST(Kubeconfig, HostileInputDoesNotCrash) {
  TempDir dir;
  const std::vector<std::string> inputs = {
      std::string(100000, '['),
      std::string(100000, '{'),
      "a: &a [*a]\n",
      "clusters: &x\n- name: c\n  cluster: *x\n",
      "users:\n- name: u\n  user:\n    exec: {command: x, env: [[1]]}\n",
      "---\n---\n---\n",
      "\t\t: :\n",
      "clusters:\n- name: {a: b}\n",
      "current-context: c\ncontexts:\n- name: c\n  context: [1]\n",
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    SCOPED_TRACE(i);
    const std::string path = dir.write("hostile" + std::to_string(i) + ".yaml", inputs[i]);
    auto config = load({path});
    ASSERT_FALSE(config);
    EXPECT_THAT(config.error().message(), HasSubstr(path));
  }
  // Every prefix of a valid file either loads or fails cleanly.
  const std::string valid = readFile(kSecond);
  for (size_t n = 0; n <= valid.size(); n += 3) {
    const std::string path = dir.write("prefix.yaml", valid.substr(0, n));
    auto config = load({path}, "data");
    if (!config) {
      EXPECT_THAT(config.error().message(), HasSubstr(path));
    }
  }
}

TEST(Kubeconfig, ExecPluginGetsClusterInfoAndResolvesRelativeCommand) {
  TempDir dir;
  dir.write("bin/plugin.sh",
            "#!/bin/sh\n"
            "printf '%s' \"$KUBERNETES_EXEC_INFO\" > \"$INFO_FILE\"\n"
            "cat <<EOF\n"
            "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
            "\"status\":{\"token\":\"from-plugin\"}}\n"
            "EOF\n");
  fs::permissions(dir.path() + "/bin/plugin.sh", fs::perms::owner_all);
  const std::string info = dir.path() + "/info.json";
  const std::string path = dir.write("kc.yaml", R"(apiVersion: v1
kind: Config
current-context: ctx
clusters:
- name: c
  cluster:
    server: https://h:6443
    certificate-authority-data: aGVsbG8=
    extensions:
    - name: client.authentication.k8s.io/exec
      extension: {audience: egress, retries: 3, quoted: "3", enabled: true}
contexts:
- name: ctx
  context: {cluster: c, user: u}
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./bin/plugin.sh
      interactiveMode: Never
      provideClusterInfo: true
      env:
      - name: INFO_FILE
        value: )" + info + "\n");
  // The command must resolve against the kubeconfig's folder, not the working directory.
  ScopedCwd cwd("/");
  auto config = load({path});
  ASSERT_TRUE(config) << config.error().message();
  ASSERT_NE(config->auth, nullptr);
  auto creds = syncCredentials(*config->auth);
  ASSERT_TRUE(creds) << creds.error().message();
  EXPECT_EQ(creds->bearerToken, "from-plugin");
  EXPECT_EQ(readFile(info),
            R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",)"
            R"("spec":{"interactive":false,"cluster":{"server":"https://h:6443",)"
            R"("certificate-authority-data":"aGVsbG8=","config":{"audience":"egress",)"
            R"("retries":3,"quoted":"3","enabled":true}}}})");
}

TEST(Kubeconfig, LoadRestConfigOrder) {
  TempDir dir;
  const std::string other =
      dir.write("other.yaml",
                "current-context: o\nclusters:\n- name: o\n  cluster: {server: https://other}\n"
                "contexts:\n- name: o\n  context: {cluster: o}\n");
  dir.write("home/.kube/config",
            "current-context: h\nclusters:\n- name: h\n  cluster: {server: https://home}\n"
            "contexts:\n- name: h\n  context: {cluster: h}\n");
  dir.write("sa/token", "sa-token\n");
  const InClusterOptions inCluster{dir.path() + "/sa", {}};

  ScopedEnv home("HOME", (dir.path() + "/home").c_str());
  {
    ScopedEnv kubeconfig("KUBECONFIG", other.c_str());
    ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.0.0.1");
    ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
    // The flag beats everything, and the context applies to it.
    auto flag = loadRestConfig(kFirst, "", inCluster);
    ASSERT_TRUE(flag) << flag.error().message();
    EXPECT_EQ(flag->server, "https://dev.example.test:6443");
    auto flagContext = loadRestConfig(kFirst, "shared", inCluster);
    ASSERT_TRUE(flagContext) << flagContext.error().message();
    EXPECT_EQ(flagContext->server, "https://first-shared.example.test");
    EXPECT_FALSE(loadRestConfig(dir.path() + "/nope.yaml", "", inCluster));
    // KUBECONFIG beats in-cluster.
    auto env = loadRestConfig("", "", inCluster);
    ASSERT_TRUE(env) << env.error().message();
    EXPECT_EQ(env->server, "https://other");
  }
  {
    ScopedEnv kubeconfig("KUBECONFIG", nullptr);
    ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.0.0.1");
    ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
    auto inside = loadRestConfig("", "", inCluster);
    ASSERT_TRUE(inside) << inside.error().message();
    EXPECT_EQ(inside->server, "https://10.0.0.1:443");
    // In-cluster fails (no token): ~/.kube/config is the fallback.
    auto fallback = loadRestConfig("", "", InClusterOptions{dir.path() + "/no-sa", {}});
    ASSERT_TRUE(fallback) << fallback.error().message();
    EXPECT_EQ(fallback->server, "https://home");
  }
  {
    ScopedEnv kubeconfig("KUBECONFIG", "");
    ScopedEnv host("KUBERNETES_SERVICE_HOST", nullptr);
    auto homeConfig = loadRestConfig("", "", inCluster);
    ASSERT_TRUE(homeConfig) << homeConfig.error().message();
    EXPECT_EQ(homeConfig->server, "https://home");
    ScopedEnv emptyHome("HOME", (dir.path() + "/empty").c_str());
    auto nothing = loadRestConfig("", "", inCluster);
    ASSERT_FALSE(nothing);
    EXPECT_THAT(nothing.error().message(), HasSubstr("no Kubernetes configuration found"));
    EXPECT_THAT(nothing.error().message(), HasSubstr(dir.path() + "/empty/.kube/config"));
  }
}

// parseKubeconfig + buildRestConfig (the fuzz target's entry points) are loadKubeconfig on text:
// the same RestConfig, relative paths resolved against the notional file's folder, errors
// naming that file, and nothing read until buildRestConfig reads what the model points at.
TEST(Kubeconfig, TextEntryPointMatchesTheFileLoader) {
  TempDir dir;
  const std::string text =
      "current-context: c\n"
      "clusters: [{name: k, cluster: {server: \"127.0.0.1:6443/\", certificate-authority: "
      "ca.crt}}]\n"
      "contexts: [{name: c, context: {cluster: k, user: u, namespace: ns}}]\n"
      "users: [{name: u, user: {token: t}}]\n";
  dir.write("config", text);
  dir.write("ca.crt", "CA");
  const std::string notional = dir.path() + "/config";

  auto merged = parseKubeconfig(text, notional);
  ASSERT_TRUE(merged) << merged.error().message();
  EXPECT_EQ(merged->files, std::vector<std::string>{notional});
  EXPECT_EQ(merged->clusters.at("k").caFile, dir.path() + "/ca.crt");
  auto fromText = buildRestConfig(*merged, KubeconfigOptions{});
  ASSERT_TRUE(fromText) << fromText.error().message();
  auto fromFile = load({notional});
  ASSERT_TRUE(fromFile) << fromFile.error().message();
  EXPECT_EQ(fromText->server, "https://127.0.0.1:6443");
  EXPECT_EQ(fromText->server, fromFile->server);
  EXPECT_EQ(fromText->caPem, "CA");
  EXPECT_EQ(fromText->caPem, fromFile->caPem);
  EXPECT_EQ(fromText->defaultNamespace, "ns");

  // A name that does not exist: parsing does not look at the file system at all.
  auto elsewhere = parseKubeconfig(text, dir.path() + "/no/such/dir/config");
  ASSERT_TRUE(elsewhere) << elsewhere.error().message();
  EXPECT_EQ(elsewhere->clusters.at("k").caFile, dir.path() + "/no/such/dir/ca.crt");
  auto unreadable = buildRestConfig(*elsewhere, KubeconfigOptions{});
  ASSERT_FALSE(unreadable);
  EXPECT_THAT(unreadable.error().message(), HasSubstr("certificate-authority"));

  auto invalid = parseKubeconfig("clusters: [", notional);
  ASSERT_FALSE(invalid);
  EXPECT_EQ(invalid.error().kind(), Error::Kind::Config);
  EXPECT_THAT(invalid.error().message(), HasSubstr(notional + ": invalid YAML"));
  auto huge = parseKubeconfig(std::string(kMaxKubeconfigBytes + 1, '#'), notional);
  ASSERT_FALSE(huge);
  EXPECT_THAT(huge.error().message(), HasSubstr("larger than"));
}

TEST(Base64, DecodesStandardAlphabetToleratingWhitespace) {
  EXPECT_EQ(base64Decode("aGVsbG8="), "hello");
  EXPECT_EQ(base64Decode("aGVs\n bG8=\r\n"), "hello");
  EXPECT_EQ(base64Decode("aGVsbG8"), "hello");  // unpadded
  EXPECT_EQ(base64Decode("aGVsbA=="), "hell");
  EXPECT_EQ(base64Decode(""), "");
  EXPECT_EQ(base64Decode("+/+/"), std::string("\xfb\xff\xbf", 3));
  EXPECT_EQ(base64Decode("aGVs*G8="), std::nullopt);
  EXPECT_EQ(base64Decode("aGVsbG8=aGk="), std::nullopt);  // data after padding
  EXPECT_EQ(base64Decode("aGVsb"), std::nullopt);         // dangling sextet
  EXPECT_EQ(base64Decode("aGVsbG8=="), std::nullopt);     // too much padding
  EXPECT_EQ(base64Decode("===="), std::nullopt);
  EXPECT_EQ(base64Decode("-_-_"), std::nullopt);  // the URL alphabet is not the standard one
  for (const std::string& s :
       {std::string(), std::string("a"), std::string("ab"), std::string("abc"), std::string("abcd"),
        std::string("\x00\xff\x10 binary", 10)}) {
    EXPECT_EQ(base64Decode(base64Encode(s)), s);
  }
  EXPECT_EQ(base64Encode("hello"), "aGVsbG8=");
}

}  // namespace
}  // namespace egress::kube
