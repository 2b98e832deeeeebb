#!/usr/bin/env bash
# `make demo`: starts the local control plane (hack/testenv/up.sh), shows it, and keeps it up
# until Ctrl-C; everything is torn down on exit. It installs the CRDs and the examples; the
# operator's controllers join the demo as their issues land.
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
for f in deploy/examples/*.yaml; do
  "$kubectl" apply -f "$f" >/dev/null
done
"$kubectl" get egress -A
echo
echo "== An invalid policy is refused, naming the field"
"$kubectl" create -f test/testdata/invalid/policy-negative-replicas.yaml 2>&1 | sed 's/^/   /' || true
echo
"$build/cmd/egress-operator/egress-operator" --version
if [ -n "${CI:-}" ] || [ ! -t 0 ]; then
  exit 0
fi
echo
echo "The control plane stays up until you press Ctrl-C. In another shell:"
echo "  export KUBECONFIG=$KUBECONFIG"
echo "  $kubectl get pods -A"
while :; do sleep 3600; done
