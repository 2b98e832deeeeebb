// File: in_cluster.h
//
// The RestConfig of a pod talking to its own cluster, as client-go's rest.InClusterConfig builds
// it: the API server from KUBERNETES_SERVICE_HOST/PORT, trust from the service account's ca.crt,
// identity from its token. The token is served by a TokenFileProvider rather than read once,
// because the kubelet rotates bound service-account tokens under a running pod.
#pragma once

#include <string>

#include "pkg/kube/errors.h"
#include "pkg/kube/file_credentials.h"
#include "pkg/kube/rest_config.h"

namespace egress::kube {

struct InClusterOptions {
  std::string serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";
  CredentialClock clock;  // for the token provider; empty = system_clock
};

// Fails with a config error saying we are not in a cluster when either environment variable is
// unset, and when the token cannot be read. A missing ca.crt means system roots (client-go logs
// and carries on the same way); a missing `namespace` file means "default".
Result<RestConfig> inClusterConfig(const InClusterOptions& options = {});

}  // namespace egress::kube
