// File: kubeconfig.h
//
// Building a RestConfig from kubeconfig files the way kubectl and client-go's clientcmd do: the
// merged files (kubeconfig_file.h) give a context, the context a cluster and a user, and the
// user's static tokens, token files, client certificates and exec plugins become an
// AuthProvider. Choosing which files to read is config_discovery.h's job.
//
// Every problem comes back as a config error naming the file and the field, e.g.
//   config: /home/me/.kube/config: users[admin].tokenFile: /run/token: is a directory
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "pkg/kube/auth_provider.h"
#include "pkg/kube/errors.h"
#include "pkg/kube/exec_credential.h"
#include "pkg/kube/rest_config.h"

namespace egress::kube {

struct KubeconfigOptions {
  // Merged in order. A single path counts as explicitly given (--kubeconfig) and must exist;
  // in a longer list (KUBECONFIG) missing files are skipped, as long as one exists.
  std::vector<std::string> paths;
  std::string context;    // overrides current-context
  CredentialClock clock;  // for token-file and exec providers; empty = system_clock
  std::chrono::milliseconds execTimeout = ExecOptions{}.timeout;
};

Result<RestConfig> loadKubeconfig(const KubeconfigOptions& options);

struct MergedKubeconfig;

// loadKubeconfig's second half, on files already read (readKubeconfigFiles or parseKubeconfig):
// the selected context's cluster and user as a RestConfig. Reads the files the model points at
// (certificate-authority, client-certificate, client-key, tokenFile); never runs an exec plugin
// (its provider runs it on first use). options.paths is not used.
Result<RestConfig> buildRestConfig(const MergedKubeconfig& merged,
                                   const KubeconfigOptions& options);

}  // namespace egress::kube
