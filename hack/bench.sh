#!/usr/bin/env bash
# `make bench`: starts a local control plane, seeds 10,000 pods, and runs the benchmarks in
# test/bench against it; prints their numbers (informer: time to sync with and without gzip, RSS
# and heap bytes per cached pod, events per second, heap allocations and bytes per watch event;
# REST client; IPAM allocation rate and memory; the data plane's core at 10k-100k source pods;
# one egw-agent at cluster scale against the real control plane (agent_bench); its failover time
# and tunnel throughput). Everything is torn down at the end.
# Usage: hack/bench.sh [BUILD_DIR] [PODS]
set -euo pipefail
cd "$(dirname "$0")/.."
source hack/testenv/lib.sh
build=${1:-build}
pods=${2:-10000}

# Ten nodes: room (250 pods each) for the operator bench's 1,000 gateway pods and, at its end,
# the cluster floor's 1,000 more; the seeded pods name a scheduler that does not exist and stay
# Pending on none. The pods and policies are spread over 100 namespaces (bench-0..bench-99).
namespaces=100
env_out=$(hack/testenv/up.sh --nodes 10 --owner-pid $$ --kubelet "$(testenv_kubelet "$build")")
eval "$env_out"
trap 'hack/testenv/down.sh "$TESTENV_DIR"' EXIT
# Each phase's start, in seconds since the bench began, so a run shows where its time goes.
phase() { echo "== [${SECONDS} s] $*"; }

phase "seeding $pods pods, then the informer caching the typed Pod as decoded (no transform)"
"$build/test/bench/informer_bench" --kubeconfig "$KUBECONFIG" --namespace bench \
  --namespaces "$namespaces" --create "$pods" --transform none --churn 1000
phase "the informer with its transform hook (only the fields the operator reads)"
"$build/test/bench/informer_bench" --kubeconfig "$KUBECONFIG" --namespace bench \
  --namespaces "$namespaces" --transform strip --churn 1000
phase "the informer with the operator's own pod transform (controller::stripPod)"
"$build/test/bench/informer_bench" --kubeconfig "$KUBECONFIG" --namespace bench \
  --namespaces "$namespaces" --transform operator --churn 0
phase "the same without gzip-compressed LISTs (RestConfig::disableCompression=true)"
"$build/test/bench/informer_bench" --kubeconfig "$KUBECONFIG" --namespace bench \
  --namespaces "$namespaces" --transform strip --gzip=false --churn 0
phase "REST client: list and watch decoding, GETs over one pooled connection"
"$build/test/bench/client_bench" --kubeconfig "$KUBECONFIG" --namespace= --gets 2000 --lists 2
phase "the operator: $pods pods cached, 1,000 policies over 20 pools and $namespaces namespaces, cold start to every policy Ready, then churn"
"$TESTENV_DIR/bin/kubectl" --kubeconfig "$KUBECONFIG" apply -f manifests/ >/dev/null
"$TESTENV_DIR/bin/kubectl" --kubeconfig "$KUBECONFIG" wait --for condition=established --timeout=60s \
  crd/ipampools.networking.egressgateway.dev crd/egressgatewaypolicies.networking.egressgateway.dev \
  crd/operatorconfigs.networking.egressgateway.dev \
  crd/egresspolicyslices.networking.egressgateway.dev >/dev/null
# 8 workers: with 16 (the ceiling's concurrency) every policy was Ready later (148.6 s against
# 129.2 s: the API server and the controller-manager share 2 cores). Its figures as JSON lines
# too (kept in $build/bench/), from which the scale curve's chart is drawn into
# docs/scale-curve.png.
mkdir -p "$build/bench"
"$build/test/bench/operator_bench" --kubeconfig "$KUBECONFIG" --namespace bench \
  --operator "$build/cmd/egress-operator/egress-operator" --namespaces "$namespaces" \
  --policies 1000 --pools 20 --workers 8 --churn 2000 --churn-pods 100 --churn-rate 50 \
  --scale-curve 1000,5000,10000,20000 --floor-deployments 1000 \
  | tee "$build/bench/operator_bench.out"
/usr/bin/python3 hack/bench-chart.py docs/scale-curve.png "$build/bench/operator_bench.out"
phase "IPAM: allocations per second and bytes per allocation (no cluster needed)"
"$build/test/bench/ipam_bench"
phase "the data plane's core at scale: a holder's state computed and its nft table programmed for 10k/50k/100k source pods (no cluster; a network namespace of its own)"
"$build/test/bench/dataplane_bench" --sources 10000,50000,100000 --changes 100
phase "one egw-agent against the real control plane at 10k/50k/100k source pods (500 Nodes, 5,000 policies, 2,000 egress IPs): first programming, a pod's API write to the kernel under a churn of 50 pods/s, CPU, RSS, packets, a restart under a held connection"
# Its own control plane and cluster, in a private network and mount namespace (as egw-demo's);
# its figures as JSON lines too, from which docs/agent-scale.png is drawn.
"$build/test/bench/agent_bench" --sources 10000,50000,100000 --rate 50 --seconds 20 \
  > "$build/bench/agent_bench.out" 2>&1 || { cat "$build/bench/agent_bench.out"; exit 1; }
grep -E '^(\[ bench \]|\{)' "$build/bench/agent_bench.out"
/usr/bin/python3 hack/agent-bench-chart.py docs/agent-scale.png "$build/bench/agent_bench.out"
phase "the data plane: failover (median of 5) and one TCP stream through the tunnel against routed directly"
# Its own control plane, operator and agents, in a private network and mount namespace (the test
# binary re-executes itself under unshare -m -n); the figures are its "[ bench ]" and JSON lines.
"$build/test/e2e/dataplane_e2e_test" --gtest_also_run_disabled_tests \
  --gtest_filter='DataplaneE2E.DISABLED_BenchFailoverAndTunnelThroughput' \
  > "$build/bench/dataplane_bench.out" 2>&1 || { cat "$build/bench/dataplane_bench.out"; exit 1; }
grep -E '^(\[ bench \]|\{)' "$build/bench/dataplane_bench.out"
phase "done"
