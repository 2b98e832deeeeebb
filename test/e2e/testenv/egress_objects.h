// File: egress_objects.h
//
// The operator's objects as e2e tests write them: YAML for IPAMPools, EgressGatewayPolicies,
// the OperatorConfig `default` and source pods, the CRDs installed (manifests/) and established,
// and `kubectl apply` of a YAML text, all against the test binary's control plane.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace egress::testenv {

// The gateway image the OperatorConfig names (never pulled: the test kubelet runs no containers).
inline constexpr const char* kGatewayImage = "example.invalid/egress-gateway:e2e";

// A policy selecting pods labelled app=<app>, to 192.0.2.0/24, from `pool` ("" leaves
// spec.egressIP.pool out) and/or the explicit `addresses`.
std::string policyYaml(const std::string& ns, const std::string& name, const std::string& pool,
                       int replicas, const std::string& app,
                       const std::vector<std::string>& addresses = {});
std::string poolYaml(const std::string& name, const std::vector<std::string>& cidrs,
                     const std::vector<std::string>& exclude = {});
// The OperatorConfig `default` with kGatewayImage, `defaultPool` ("" for none) and the test
// cluster's pod and service CIDRs.
std::string operatorConfigYaml(const std::string& defaultPool);
std::string podYaml(const std::string& ns, const std::string& name, const std::string& app);

// kubectl apply -f manifests/ and waits until the three CRDs are established; "" or what failed.
std::string installCrds();
// kubectl apply of a YAML document (or several, separated by ---), written to a fresh file in
// `dir`; a failure carries kubectl's output.
::testing::AssertionResult applyYaml(const std::string& dir, const std::string& yaml);

}  // namespace egress::testenv
