// File: exec_extension.h
//
// The cluster's `client.authentication.k8s.io/exec` extension: arbitrary YAML in a kubeconfig
// that client-go hands to the exec plugin as JSON (ExecCredential spec.cluster.config). Plain
// scalars get YAML's core-schema types (true, 3, null); quoted ones stay strings.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <yaml-cpp/yaml.h>

namespace egress::kube {

inline constexpr std::string_view kExecExtensionName = "client.authentication.k8s.io/exec";

// The extension as compact JSON; nullopt if it cannot be JSON (a key that is not a scalar) or
// nests deeper than 64 levels.
std::optional<std::string> execExtensionToJson(const YAML::Node& extension);

}  // namespace egress::kube
