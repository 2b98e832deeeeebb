#!/usr/bin/env bash
# `make demo`: the product on this machine, in two parts; everything is torn down on exit.
#  1. Packets (egw-demo, test/e2e/demo_main.cc): on the embedded control plane, three nodes and
#     their pods in network namespaces of a private `unshare -m -n` (as dataplane_e2e_test builds
#     them), the real egress-operator and one real egw-agent per node, and an external echo
#     server that answers with the source address it saw. It prints what that server saw of a
#     selected pod (the egress IP) and of an other pod (its node's address), which node holds
#     each egress IP, then kills the holder node (agent SIGKILLed, link cut) and shows the
#     address move with a held connection still alive.
#  2. Bookkeeping: starts the local control plane (hack/testenv/up.sh), installs the CRDs and the
#     examples, runs the operator (this build's egress-operator) against it, and shows what it
#     did as a user would look: `kubectl get ipp,egp -A` (every example policy Ready with its
#     egress IPs, the pools' usage), the gateway Deployments Available with their pods' egress
#     IPs, the data-plane view (the cluster-scoped EgressPolicySlices) following a policy's
#     source pods, an invalid policy's condition and event, Events and a /metrics excerpt.
# Not on a terminal (CI, a pipe) it exits after both parts; else the second part's control plane
# stays up until Ctrl-C. Either way it cleans up. test/e2e/demo_test.sh runs it that way.
# Usage: hack/demo.sh [BUILD_DIR]   or   hack/demo.sh --intro (what it needs and takes; `make
# demo` prints it before it builds anything, then runs the demo with EGW_DEMO_INTRO=shown).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}

if [ "${EGW_DEMO_INTRO:-}" != shown ]; then
cat <<'EOF'
make demo: the egress gateway operator on this machine, packets first, then its bookkeeping.
  It needs root: it makes network namespaces and runs egw-agent with NET_ADMIN in them (and a
  first run installs Debian packages). A first `make demo` spends most of its time before this
  line: it builds the control plane from Debian's kubernetes source (about 10 minutes on 2
  cores, cached outside the repo) and compiles the project (about 30 minutes on 2 cores). The
  demo itself then takes under 2 minutes: about a minute of packets, 40 s of bookkeeping.
EOF
fi
if [ "$(id -u)" != 0 ]; then
  echo "hack/demo.sh: run it as root (sudo make demo): network namespaces need it" >&2
  exit 1
fi
[ "$build" = --intro ] && exit 0
demo="$build/test/e2e/egw-demo"
if [ ! -x "$demo" ]; then
  echo "hack/demo.sh: no $demo; build it first: cmake --build $build --target egw-demo" >&2
  exit 1
fi

echo
echo "######## Part 1: packets through the real operator and egw-agent processes"
"$demo"

echo
echo "######## Part 2: the operator's bookkeeping, on a local control plane with the examples"
source hack/testenv/lib.sh

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
  crd/egresspolicyslices.networking.egressgateway.dev \
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
echo
echo "== kubectl get ipp,egp -A: the pools' usage, every policy's egress IPs and readiness"
"$kubectl" get ipp,egp -A
echo
echo "== The gateways: Deployments Available, one pod per egress IP, each named in its policy's status"
"$kubectl" wait --for=condition=Available --timeout=60s -A deployments \
  -l app.kubernetes.io/managed-by=egress-gateway-operator >/dev/null
"$kubectl" get deployments,pdb -A -l app.kubernetes.io/managed-by=egress-gateway-operator
"$kubectl" get egp -A \
  -o go-template='{{range .items}}{{$p := .metadata.name}}{{range .status.gateways}}   {{$p}}: egress IP {{.egressIPs}} held by pod {{.pod}} on node {{.node}}{{"\n"}}{{end}}{{end}}'
echo
echo "== Source pods of policy reporting-fixed-ips, and what its EgressPolicySlice tells the data plane"
echo "   (cluster-scoped, written by the operator only: the agents read nothing a tenant can write)"
"$kubectl" -n default create deployment reporting --image=example.invalid/demo/reporting:1 --replicas=2 >/dev/null
"$kubectl" -n default wait --for=condition=Available deployment/reporting --timeout=120s >/dev/null
for _ in $(seq 1 30); do
  [ "$("$kubectl" get egresspolicyslice default.reporting-fixed-ips.0 -o jsonpath='{.spec.sources[*].pod}' | wc -w || true)" -ge 2 ] && break
  sleep 1
done
"$kubectl" get egresspolicyslices -l egressgateway.dev/policy-namespace=default
"$kubectl" get egresspolicyslice default.reporting-fixed-ips.0 \
  -o go-template='{{range .spec.gateway.egressIPs}}   egress IP {{.ips}} held on node {{.node}} by pod {{.pod}}{{"\n"}}{{end}}{{range .spec.sources}}   source {{.pod}} {{.ips}} on {{.node}}{{"\n"}}{{end}}'
echo
echo "== A policy the API server accepts but the operator refuses: its condition and its event"
# 192.0.2.5/24 has host bits set: valid to the CRD's schema, refused by the operator's validation,
# which names the field; the policy gets no addresses and no gateway.
"$kubectl" apply -f - >/dev/null <<'YAML'
apiVersion: networking.egressgateway.dev/v1alpha1
kind: EgressGatewayPolicy
metadata:
  name: broken-excludes
  namespace: default
spec:
  podSelector:
    matchLabels:
      app: broken
  egressIP:
    pool: egress-ipv4
  excludedCIDRs: [192.0.2.5/24]
YAML
for _ in $(seq 1 30); do
  [ "$("$kubectl" -n default get egp broken-excludes -o jsonpath='{.status.conditions[?(@.type=="IPAllocated")].reason}')" = InvalidSpec ] && break
  sleep 1
done
"$kubectl" -n default get egp broken-excludes \
  -o jsonpath='{range .status.conditions[*]}   {.type}={.status} {.reason}: {.message}{"\n"}{end}'
for _ in $(seq 1 30); do
  "$kubectl" -n default get events --field-selector involvedObject.name=broken-excludes -o name | grep -q . && break
  sleep 1
done
"$kubectl" -n default get events --field-selector involvedObject.name=broken-excludes \
  -o custom-columns='TYPE:.type,REASON:.reason,OBJECT:.involvedObject.name,MESSAGE:.message'
echo
echo "== Events"
"$kubectl" get events -A --field-selector source=egress-gateway-operator 2>/dev/null | tail -12 || true
echo
echo "== Metrics (a few of them)"
curl -s "http://127.0.0.1:$metrics_port/metrics" |
  grep -E '^(egress_(ipam_pool_addresses|policies|ip_allocation_failures_total)|controller_runtime_reconcile_total\{controller="egressgateway"|workqueue_depth|leader_election_master_status)' |
  head -40
echo
if [ -n "${CI:-}" ] || [ ! -t 0 ]; then
  exit 0
fi
echo
echo "The control plane stays up until you press Ctrl-C. In another shell:"
echo "  export KUBECONFIG=$KUBECONFIG"
echo "  $kubectl get pods -A"
while :; do sleep 3600; done
