// File: exec_credential.h
//
// Exec credential plugins (client.authentication.k8s.io/v1 and v1beta1), the way client-go's
// plugin/pkg/client/auth/exec runs them: the kubeconfig names a command; we run it with
// KUBERNETES_EXEC_INFO describing the request, read an ExecCredential from its stdout (a bearer
// token or a client certificate + key, maybe with an expiry), and cache that until it expires or
// the server rejects it. A controller has no terminal, so plugins always run non-interactively
// (stdin is /dev/null) and a plugin that insists on a terminal is a configuration error.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/kube/auth_provider.h"
#include "pkg/kube/errors.h"

namespace egress::kube {

inline constexpr std::string_view kExecApiVersionV1 = "client.authentication.k8s.io/v1";
inline constexpr std::string_view kExecApiVersionV1Beta1 = "client.authentication.k8s.io/v1beta1";

struct ExecEnvVar {
  std::string name;
  std::string value;
};

// The kubeconfig `users[].user.exec` stanza.
struct ExecConfig {
  std::string apiVersion;
  // A bare name is looked up in PATH; a path is used as is (the kubeconfig loader has already
  // made relative paths absolute against the kubeconfig's folder).
  std::string command;
  std::vector<std::string> args;
  std::vector<ExecEnvVar> env;  // added to (and overriding) our own environment
  // "Never", "IfAvailable" or "Always". client-go insists on it for v1; we read "" as
  // IfAvailable, which for a process without a terminal means the same as Never.
  std::string interactiveMode;
  bool provideClusterInfo = false;
  std::string installHint;  // shown when the command cannot be found
};

// The cluster sent to the plugin in KUBERNETES_EXEC_INFO when provideClusterInfo is set.
struct ExecClusterInfo {
  std::string server;
  std::string tlsServerName;
  bool insecureSkipTlsVerify = false;
  std::string caPem;
  // The cluster's `client.authentication.k8s.io/exec` extension as a JSON value; "" = none.
  std::string configJson;
};

// What a plugin returned.
struct ExecCredentialStatus {
  std::string token;
  std::string clientCertPem;
  std::string clientKeyPem;
  std::optional<std::chrono::system_clock::time_point> expiration;  // none = until rejected
};

struct ExecOptions {
  std::chrono::milliseconds timeout = std::chrono::seconds(60);
  CredentialClock clock;  // empty = system_clock
};

// Rejects what client-go rejects (no command, unknown apiVersion or interactiveMode, empty env
// names) and interactiveMode Always, which can never be satisfied without a terminal.
Result<Ok> validateExecConfig(const ExecConfig& config);

// The ExecCredential put in KUBERNETES_EXEC_INFO: spec.interactive=false, plus spec.cluster when
// config.provideClusterInfo.
std::string execCredentialRequest(const ExecConfig& config, const ExecClusterInfo& cluster);

// Parses a plugin's stdout. `apiVersion` is the configured one; the answer must use the same.
// Error messages do not name the plugin (the caller adds that).
Result<ExecCredentialStatus> parseExecCredential(std::string_view json,
                                                 std::string_view apiVersion);

// Runs the plugin on first use and whenever the cached credential has expired or was
// invalidated, as a child process awaited on the caller's io_context (never blocking it).
// Concurrent callers share one run. A failed run is cached and returned, without running the
// plugin again, for an exponential backoff (kInitialBackoff doubling up to kMaxBackoff), so a
// broken or hanging plugin does not run for every request. The plugin's stderr is logged once
// per run. Thread-safe.
class ExecCredentialProvider final : public AuthProvider {
 public:
  static constexpr std::chrono::seconds kInitialBackoff{1};
  static constexpr std::chrono::seconds kMaxBackoff{60};

  static Result<std::shared_ptr<ExecCredentialProvider>> create(ExecConfig config,
                                                                ExecClusterInfo cluster,
                                                                ExecOptions options = {});
  ~ExecCredentialProvider() override;

  net::awaitable<Result<Credentials>> credentials() override;
  void invalidate(const Credentials& used) override;
  const ExecConfig& config() const;

  struct State;
  struct PluginRun;

 private:
  explicit ExecCredentialProvider(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

}  // namespace egress::kube
