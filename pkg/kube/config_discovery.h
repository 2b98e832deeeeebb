// File: config_discovery.h
//
// Where the operator's RestConfig comes from when nobody says: controller-runtime's
// config.GetConfig order of the --kubeconfig flag, the KUBECONFIG files, the in-cluster service
// account and ~/.kube/config.
#pragma once

#include <string>
#include <vector>

#include "pkg/kube/errors.h"
#include "pkg/kube/in_cluster.h"
#include "pkg/kube/kubeconfig.h"
#include "pkg/kube/rest_config.h"

namespace egress::kube {

// KUBECONFIG split on ':', empty entries dropped; null or "" gives no paths.
std::vector<std::string> kubeconfigPathsFromEnv(const char* value);

// The --kubeconfig flag if given; else the files in KUBECONFIG if set; else the in-cluster
// config if KUBERNETES_SERVICE_HOST is set (the context is ignored there); else
// $HOME/.kube/config. If in-cluster fails and there is no ~/.kube/config either, the
// in-cluster error is returned.
Result<RestConfig> loadRestConfig(const std::string& kubeconfigFlag, const std::string& context,
                                  const InClusterOptions& inCluster = {});

}  // namespace egress::kube
