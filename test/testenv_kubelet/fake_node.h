// File: fake_node.h
//
// The fake Nodes of the test kubelet, exactly as hack/testenv/kubelet.sh registers them, because
// up.sh, the e2e tests and the demo rely on every detail: node <i> (1-based) is
// "egress-node-<i>", labelled kubernetes.io/hostname, kubernetes.io/os=linux,
// kubernetes.io/arch=amd64 and egress.testenv/fake=true, with podCIDR 10.244.<i>.0/24,
// InternalIP 127.0.1.<i>, 16 CPU, 64 Gi, 250 pods and 100 Gi of ephemeral storage, Ready and
// without pressure. Pure functions: names, addresses, and the bodies of the writes that register
// a node (server-side apply of the object, a merge patch of its status, a JSON patch that takes
// off the not-ready taint admission puts on new nodes).
#pragma once

#include <string>
#include <string_view>

#include "pkg/apis/core/node.h"
#include "pkg/apis/meta/time.h"

namespace egress::testenv {

inline constexpr std::string_view kNodePrefix = "egress-node-";
// 127.0.1.<i> and 10.244.<i>.0/24 need i <= 254.
inline constexpr int kMaxNodes = 254;
// The field manager of every write the kubelet makes (as kubelet.sh's kubectl apply).
inline constexpr const char* kFieldManager = "egress-testenv-kubelet";
// What TaintNodesByCondition admission adds to a node that is created without a Ready status;
// with the node lifecycle controller off, nothing but us removes it.
inline constexpr std::string_view kNotReadyTaint = "node.kubernetes.io/not-ready";

std::string nodeName(int node);
// "10.244.<i>.0/24".
std::string nodePodCidr(int node);
// "127.0.1.<i>": the node's InternalIP, and the hostIP of its pods.
std::string nodeInternalIp(int node);
// i for "egress-node-<i>" with 1 <= i <= nodes; 0 for any other name.
int nodeIndex(std::string_view name, int nodes);

// The Node for server-side apply: metadata (name, labels) and spec (podCIDR, podCIDRs).
std::string nodeApplyBody(int node);
// The merge patch of the node's status subresource: capacity, allocatable, addresses,
// conditions (heartbeat and transition at `now`), nodeInfo.
std::string nodeStatusPatch(int node, meta::Time now);
// A JSON patch that removes the not-ready:NoSchedule taint (testing that it is still where it
// was read, so a concurrent change fails the patch instead of removing another taint); "" when
// the node has no such taint.
std::string removeNotReadyTaintPatch(const core::Node& node);

}  // namespace egress::testenv
