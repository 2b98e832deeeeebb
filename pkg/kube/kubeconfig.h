// File: kubeconfig.h
//
// Building a RestConfig from kubeconfig files the way kubectl and client-go's clientcmd do:
// several files merged (first definition of a name wins), a context chosen, relative paths taken
// against the file that wrote them, `*-data` fields decoded, static tokens, token files and exec
// plugins turned into an AuthProvider. Plus loadRestConfig, controller-runtime's order of
// --kubeconfig, KUBECONFIG, in-cluster and ~/.kube/config.
//
// Every problem comes back as a config error naming the file and the field, e.g.
//   config: /home/me/.kube/config: users[admin].client-key-data: not valid base64
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "pkg/kube/auth_provider.h"
#include "pkg/kube/errors.h"
#include "pkg/kube/exec_credential.h"
#include "pkg/kube/in_cluster.h"
#include "pkg/kube/rest_config.h"

namespace egress::kube {

// Larger kubeconfig files are rejected rather than handed to the YAML parser.
inline constexpr size_t kMaxKubeconfigBytes = 4 << 20;

struct KubeconfigOptions {
  // Merged in order. A single path counts as explicitly given (--kubeconfig) and must exist;
  // in a longer list (KUBECONFIG) missing files are skipped, as long as one exists.
  std::vector<std::string> paths;
  std::string context;    // overrides current-context
  CredentialClock clock;  // for token-file and exec providers; empty = system_clock
  std::chrono::milliseconds execTimeout = ExecOptions{}.timeout;
};

Result<RestConfig> loadKubeconfig(const KubeconfigOptions& options);

// KUBECONFIG split on ':', empty entries dropped; null or "" gives no paths.
std::vector<std::string> kubeconfigPathsFromEnv(const char* value);

// controller-runtime's config.GetConfig order: the --kubeconfig flag if given; else the files in
// KUBECONFIG if set; else the in-cluster config if KUBERNETES_SERVICE_HOST is set (the context
// is ignored there); else $HOME/.kube/config. If in-cluster fails and there is no
// ~/.kube/config either, the in-cluster error is returned.
Result<RestConfig> loadRestConfig(const std::string& kubeconfigFlag, const std::string& context,
                                  const InClusterOptions& inCluster = {});

}  // namespace egress::kube
