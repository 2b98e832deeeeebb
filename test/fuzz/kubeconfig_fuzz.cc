// File: kubeconfig_fuzz.cc
//
// libFuzzer target for pkg/kube's kubeconfig loader (`make fuzz`, hack/fuzz.sh): the input is a
// kubeconfig's text, parsed by parseKubeconfig (the parser readKubeconfigFiles runs on each
// file) and turned into a RestConfig by buildRestConfig (loadKubeconfig's second half). Checked,
// on any input:
//   - neither crashes nor throws (ASan/UBSan watch it; an escaping exception aborts);
//   - every failure is a config error with a message naming the file;
//   - a RestConfig has an http(s) server without a trailing slash, a namespace, and a client
//     certificate and key that are both set or both empty.
// The loader must not read files the input names, nor run its commands: every file reference
// the input makes (certificate-authority, client-certificate, client-key, tokenFile) is pointed
// at a fixture in a temporary folder made at startup before buildRestConfig reads it (one whose
// name ends in "missing" at a file that does not exist), and the exec plugin is never run
// (buildRestConfig only creates its provider; nothing asks it for credentials here).
// A violation prints what went wrong on stderr and aborts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "pkg/kube/errors.h"
#include "pkg/kube/kubeconfig.h"
#include "pkg/kube/kubeconfig_file.h"
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
namespace kube = egress::kube;

[[noreturn]] void fail(std::string_view what, std::string_view input, std::string_view detail) {
  std::fprintf(stderr, "kubeconfig_fuzz: %.*s\n  input: %.*s\n  detail: %.*s\n",
               static_cast<int>(what.size()), what.data(), static_cast<int>(input.size()),
               input.data(), static_cast<int>(detail.size()), detail.data());
  std::abort();
}

// The folder the fixtures live in, and the kubeconfig's notional path inside it (relative paths
// in the input resolve against it). Removed at exit.
class Fixtures {
 public:
  Fixtures() {
    std::string pattern = (fs::temp_directory_path() / "kubeconfig_fuzz.XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror("kubeconfig_fuzz: mkdtemp");
      std::abort();
    }
    dir_ = pattern;
    write("ca.crt", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    write("client.crt", "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n");
    write("client.key", "-----BEGIN PRIVATE KEY-----\nMIID\n-----END PRIVATE KEY-----\n");
    write("token", "fuzz-token\n");
  }
  ~Fixtures() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Fixtures(const Fixtures&) = delete;
  Fixtures& operator=(const Fixtures&) = delete;

  std::string kubeconfig() const { return (dir_ / "kubeconfig").string(); }

  // Where a reference the input made is read from instead: "" stays "" (not set).
  std::string confine(const std::string& path, const char* fixture) const {
    if (path.empty()) {
      return path;
    }
    const bool missing = path.size() >= 7 && path.compare(path.size() - 7, 7, "missing") == 0;
    return (dir_ / (missing ? "missing" : fixture)).string();
  }

 private:
  void write(const char* name, std::string_view text) const { std::ofstream(dir_ / name) << text; }

  fs::path dir_;
};

const Fixtures& fixtures() {
  static const Fixtures f;
  return f;
}

void checkError(const kube::Error& err, std::string_view input, std::string_view stage) {
  const std::string message = err.message();
  if (err.kind() != kube::Error::Kind::Config) {
    fail(std::string(stage) + " failed with an error that is not a config error", input, message);
  }
  if (message.find(fixtures().kubeconfig()) == std::string::npos) {
    fail(std::string(stage) + " failed with an error that does not name the file", input, message);
  }
}

}  // namespace

// libFuzzer's entry point, named by libFuzzer.
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const Fixtures& f = fixtures();
  auto merged = kube::parseKubeconfig(input, f.kubeconfig());
  if (!merged) {
    checkError(merged.error(), input, "parse");
    return 0;
  }
  for (auto& [name, cluster] : merged->clusters) {
    cluster.caFile = f.confine(cluster.caFile, "ca.crt");
  }
  for (auto& [name, user] : merged->users) {
    user.certFile = f.confine(user.certFile, "client.crt");
    user.keyFile = f.confine(user.keyFile, "client.key");
    user.tokenFile = f.confine(user.tokenFile, "token");
  }
  kube::KubeconfigOptions options;
  auto config = kube::buildRestConfig(*merged, options);
  if (!config) {
    checkError(config.error(), input, "build");
    return 0;
  }
  const std::string& server = config->server;
  if (server.rfind("https://", 0) != 0 && server.rfind("http://", 0) != 0) {
    fail("the server is not an http(s) URL", input, server);
  }
  if (server.back() == '/') {
    fail("the server has a trailing slash", input, server);
  }
  if (config->defaultNamespace.empty()) {
    fail("no default namespace", input, "");
  }
  if (config->clientCertPem.empty() != config->clientKeyPem.empty()) {
    fail("half a client certificate", input, config->clientCertPem);
  }
  return 0;
}
