// File: update_filters.h
//
// Which updates of a watched object can change what the policies (or pools) reconcile to. An
// update that changes nothing they read queues nothing: the API server rewrites pool counts,
// the OperatorConfig's summary and pods' container statuses far more often than anything a
// reconcile depends on.
#pragma once

#include "pkg/apis/core/pod.h"
#include "pkg/apis/networking/v1alpha1/types.h"

namespace egress::controller {

namespace v1alpha1 = networking::v1alpha1;

// Whether a pool's update can change what the policies using it (and the other pools, through
// overlaps) reconcile to: its spec, labels, uid, deletion or conditions (type, status,
// reason). Its usage counts alone cannot: the allocator, not the pool's status, holds the
// usage, and a release wakes the policies waiting for the pool itself. Every allocation
// rewrites a pool's counts; passing those on would queue each of the pool's policies once per
// allocation in the pool.
bool poolUpdateMattersToPolicies(const v1alpha1::IPAMPool& oldPool,
                                 const v1alpha1::IPAMPool& newPool);

// Whether an OperatorConfig's update can change what any policy reconciles to: its spec, uid or
// deletion. Its status cannot (no policy reads it), and the status summary is rewritten after
// policies' status writes: passing those on would queue every policy again after each summary,
// and each summary follows policies' writes.
bool operatorConfigUpdateMattersToPolicies(const v1alpha1::OperatorConfig& oldConfig,
                                           const v1alpha1::OperatorConfig& newConfig);

// Whether a pod's update can change what the policies that select or own it reconcile to: a
// difference in what the pod cache keeps of it (stripPod: labels, identity and controller,
// deletion, node, hostNetwork, phase, addresses, readiness and the readiness gate). Everything else
// a kubelet writes (container statuses, probe times) is stripped before the cache sees it and
// arrives as an update with equal views: passing those on would queue every selecting policy,
// and each reconcile scans its namespace's pods.
bool podUpdateMattersToPolicies(const core::Pod& oldPod, const core::Pod& newPod);

}  // namespace egress::controller
