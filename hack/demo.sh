#!/usr/bin/env bash
# `make demo`: starts the local control plane (hack/testenv/up.sh), shows it, and keeps it up
# until Ctrl-C; everything is torn down on exit. It installs the CRDs and the examples, runs the
# operator (this build's egress-operator) against it, and shows what it did: every example policy
# Ready with its egress IPs, the gateway Deployments, the pods' egress-IP annotations, a gateway
# ConfigMap following its source pods, the pools' usage, Events and metrics.
# Usage: hack/demo.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
source hack/testenv/lib.sh
build=${1:-build}

env_out=$(hack/testenv/up.sh --nodes 3 --owner-pid $$ --kubelet "$(testenv_kubelet "$build")")
eval "$env_out"
trap 'hack/testenv/down.sh "$TESTENV_DIR"' EXIT
export KUBECONFIG
kubectl="$TESTENV_DIR/bin/kubectl"

echo
echo "== Local control plane up: $TESTENV_SERVER"
"$kubectl" get nodes -o wide
echo
echo "== A Deployment, through the real scheduler, controller-manager and test kubelet"
"$kubectl" create namespace demo >/dev/null
"$kubectl" -n demo create deployment web --image=example.invalid/demo/web:1 --replicas=3 >/dev/null
"$kubectl" -n demo wait --for=condition=Available deployment/web --timeout=120s
"$kubectl" -n demo get pods -o wide
echo
echo
echo "== The operator's API: CRDs (manifests/) and the examples users copy (deploy/examples/)"
"$kubectl" apply -f manifests/ >/dev/null
"$kubectl" wait --for condition=established --timeout=60s \
  crd/ipampools.networking.egressgateway.dev \
  crd/egressgatewaypolicies.networking.egressgateway.dev \
  crd/operatorconfigs.networking.egressgateway.dev >/dev/null
# What the examples expect of the cluster: nodes labelled for gateways and the PriorityClass
# that policy-default-pool.yaml names.
"$kubectl" label nodes --all egress.example.com/gateway=true >/dev/null
"$kubectl" create priorityclass egress-gateway --value=100000 \
  --description="egress gateway pods, scheduled ahead of ordinary workloads" >/dev/null
for f in deploy/examples/*.yaml; do
  "$kubectl" apply -f "$f" >/dev/null
done
echo
echo "== An invalid policy is refused, naming the field"
"$kubectl" create -f test/testdata/invalid/policy-negative-replicas.yaml 2>&1 | sed 's/^/   /' || true
echo
echo "== The operator: $("$build/cmd/egress-operator/egress-operator" --version)"
metrics_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$build/cmd/egress-operator/egress-operator" --kubeconfig "$KUBECONFIG" \
  --metrics-bind-address "127.0.0.1:$metrics_port" --health-probe-bind-address 0 \
  >"$TESTENV_DIR/logs/egress-operator.log" 2>&1 &
operator_pid=$!
trap 'kill "$operator_pid" 2>/dev/null; wait "$operator_pid" 2>/dev/null; hack/testenv/down.sh "$TESTENV_DIR"' EXIT
policies=$("$kubectl" get egp -A -o name | wc -l)
for _ in $(seq 1 120); do
  ready=$("$kubectl" get egp -A -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c True || true)
  [ "$ready" -ge "$policies" ] && break
  sleep 1
done
echo "   $ready of $policies policies Ready (log: $TESTENV_DIR/logs/egress-operator.log)"
"$kubectl" get egress -A
echo
echo "== The gateways: one pod per egress IP, each told its address in an annotation"
"$kubectl" get deployments,pdb -A -l app.kubernetes.io/managed-by=egress-gateway-operator
"$kubectl" get pods -A -l app.kubernetes.io/managed-by=egress-gateway-operator \
  -o custom-columns='NAMESPACE:.metadata.namespace,POD:.metadata.name,NODE:.spec.nodeName,EGRESS-IPS:.metadata.annotations.egressgateway\.dev/egress-ips'
echo
echo "== Source pods of policy reporting-fixed-ips, and what its gateway ConfigMap tells the data plane"
"$kubectl" -n default create deployment reporting --image=example.invalid/demo/reporting:1 --replicas=2 >/dev/null
"$kubectl" -n default wait --for=condition=Available deployment/reporting --timeout=120s >/dev/null
for _ in $(seq 1 30); do
  [ "$("$kubectl" -n default get configmap egw-reporting-fixed-ips -o jsonpath='{.data.sources}' | grep -c @ || true)" -ge 2 ] && break
  sleep 1
done
"$kubectl" -n default get configmap egw-reporting-fixed-ips -o go-template='{{range $k, $v := .data}}{{$k}}:{{"\n"}}{{$v}}{{end}}' | sed 's/^/   /'
echo
echo "== Events"
"$kubectl" get events -A --field-selector source=egress-gateway-operator 2>/dev/null | tail -12 || true
echo
echo "== Metrics (a few of them)"
curl -s "http://127.0.0.1:$metrics_port/metrics" | grep -E '^egress_(ipam_pool_addresses|policies)' | head -20
echo
if [ -n "${CI:-}" ] || [ ! -t 0 ]; then
  exit 0
fi
echo
echo "The control plane stays up until you press Ctrl-C. In another shell:"
echo "  export KUBECONFIG=$KUBECONFIG"
echo "  $kubectl get pods -A"
while :; do sleep 3600; done
