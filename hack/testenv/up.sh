#!/usr/bin/env bash
# Starts a local Kubernetes control plane on loopback for tests and demos:
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, and a test kubelet that
#   registers fake Nodes and runs (pretends to run) the pods scheduled to them.
#
# Usage: hack/testenv/up.sh [--dir DIR] [--nodes N] [--owner-pid PID] [--kubelet PATH]
#                            [--advertise-address IP]
#   --dir DIR        run directory to create (default: a new temp dir)
#   --nodes N        fake nodes to register (default 2)
#   --owner-pid PID  tear everything down when PID exits (the test binary that asked for it)
#   --kubelet PATH   the test kubelet's binary (egress-testenv-kubelet from the build; default
#                    $EGRESS_TESTENV_KUBELET); "" or unset: hack/testenv/kubelet.sh
#   --advertise-address IP  also serve the API on IP (bind all addresses, advertise IP, IP in
#                    the serving cert), for clients outside loopback: the data plane e2e runs
#                    it in a private network namespace and its agents reach it from the
#                    underlay. Default: loopback only. The kubeconfigs name 127.0.0.1 either way.
# On success prints shell assignments (TESTENV_DIR=..., KUBECONFIG=...) and exits 0 with
# everything running under a supervisor; hack/testenv/down.sh DIR stops it and removes DIR.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

dir="" nodes=2 owner="" advertise=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --owner-pid) owner=$2; shift 2 ;;
    --kubelet) EGRESS_TESTENV_KUBELET=$2; shift 2 ;;
    --advertise-address) advertise=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "up.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done
case "$nodes" in ''|*[!0-9]*) echo "up.sh: --nodes must be a number, got '$nodes'" >&2; exit 2 ;; esac
# The supervisor (and so every restart of the kubelet) runs what this names.
export EGRESS_TESTENV_KUBELET=${EGRESS_TESTENV_KUBELET:-}
if [ -n "$EGRESS_TESTENV_KUBELET" ]; then
  if [ ! -x "$EGRESS_TESTENV_KUBELET" ]; then
    echo "up.sh: the test kubelet '$EGRESS_TESTENV_KUBELET' is not an executable (build it first)" >&2
    exit 2
  fi
  EGRESS_TESTENV_KUBELET=$(readlink -f "$EGRESS_TESTENV_KUBELET")
fi

bin_src=$("$TESTENV_HACK_DIR/ensure-binaries.sh")
if [ -z "$dir" ]; then
  dir=$(mktemp -d "${TMPDIR:-/tmp}/egress-testenv.XXXXXX")
else
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
fi
started=0
cleanup_on_error() {
  if [ "$started" = 0 ]; then
    tlog "start failed; logs in $dir/logs (removed now):"
    for f in "$dir"/logs/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }; done
    "$TESTENV_HACK_DIR/down.sh" "$dir" >&2 || true
  fi
}
trap cleanup_on_error EXIT
trap 'exit 130' INT TERM

mkdir -p "$dir/bin" "$dir/pki" "$dir/logs" "$dir/etcd"
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl helm; do
  ln -sfn "$(readlink -f "$bin_src/$b")" "$dir/bin/$b"
done
echo "$nodes" >"$dir/nodes"
read -r etcd_port etcd_peer_port api_port < <(free_ports 3)
cat >"$dir/ports.env" <<ENV
ETCD_PORT=$etcd_port
ETCD_PEER_PORT=$etcd_peer_port
API_PORT=$api_port
ADVERTISE_ADDRESS=$advertise
ENV

# --- PKI: a CA, the apiserver's serving cert, an admin client cert, a service-account key pair.
pki=$dir/pki
ossl() { openssl "$@" 2>>"$dir/logs/openssl.log"; }
ossl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=egress-testenv-ca" \
  -keyout "$pki/ca.key" -out "$pki/ca.crt"
issue_cert() { # name subject extfile-content
  ossl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$pki/$1.key" -out "$pki/$1.csr"
  printf '%s\n' "$3" >"$pki/$1.ext"
  ossl x509 -req -in "$pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 2 -extfile "$pki/$1.ext" -out "$pki/$1.crt"
}
issue_cert apiserver "/CN=kube-apiserver" \
  "subjectAltName=IP:127.0.0.1,${advertise:+IP:$advertise,}DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc
extendedKeyUsage=serverAuth"
issue_cert admin "/O=system:masters/CN=egress-testenv-admin" "extendedKeyUsage=clientAuth"
ossl genrsa -out "$pki/sa.key" 2048
ossl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub"
admin_token=$(openssl rand -hex 24)
echo "$admin_token,egress-testenv-admin-token,egress-testenv-admin-token,system:masters" >"$pki/tokens.csv"
echo -n "$admin_token" >"$pki/admin.token"
chmod 600 "$pki"/*.key "$pki/tokens.csv" "$pki/admin.token"

server="https://127.0.0.1:$api_port"
b64() { base64 -w0 <"$1"; }
cat >"$dir/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: egress-testenv
  cluster:
    server: $server
    certificate-authority-data: $(b64 "$pki/ca.crt")
users:
- name: admin
  user:
    client-certificate-data: $(b64 "$pki/admin.crt")
    client-key-data: $(b64 "$pki/admin.key")
contexts:
- name: egress-testenv
  context: {cluster: egress-testenv, user: admin, namespace: default}
current-context: egress-testenv
KC
cat >"$dir/kubeconfig-token" <<KC
apiVersion: v1
kind: Config
clusters:
- name: egress-testenv
  cluster:
    server: $server
    certificate-authority: pki/ca.crt
users:
- name: admin-token
  user:
    tokenFile: pki/admin.token
contexts:
- name: egress-testenv
  context: {cluster: egress-testenv, user: admin-token, namespace: default}
current-context: egress-testenv
KC
chmod 600 "$dir/kubeconfig" "$dir/kubeconfig-token"

# --- Start everything under the supervisor, in its own session so one signal reaches all.
setsid "$TESTENV_HACK_DIR/supervise.sh" "$dir" "$owner" >"$dir/logs/supervisor.log" 2>&1 </dev/null &
# Whole, by a rename: supervise.sh writes the same file (its own $$) as it starts.
echo $! >"$dir/supervisor.pid.up" && mv -f "$dir/supervisor.pid.up" "$dir/supervisor.pid"

wait_for() { # description timeout-seconds command...
  local what=$1 limit=$2 t0=$SECONDS
  shift 2
  until "$@" >/dev/null 2>&1; do
    if ! kill -0 "$(cat "$dir/supervisor.pid")" 2>/dev/null; then
      tlog "supervisor exited while waiting for $what"; return 1
    fi
    if [ $((SECONDS - t0)) -ge "$limit" ]; then tlog "timed out after ${limit}s waiting for $what"; return 1; fi
    sleep 0.2
  done
  tlog "$what: ok after $((SECONDS - t0))s"
}
readyz() {
  curl -fsS --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "$server/readyz"
}
nodes_ready() {
  [ "$nodes" = 0 ] && return 0
  local n
  n=$(tkubectl "$dir" get nodes -l egress.testenv/fake=true \
    -o jsonpath='{range .items[*]}{.spec.taints}{"|"}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' |
    grep -c '^|True$' || true)
  [ "$n" -ge "$nodes" ]
}
default_sa_ready() { # pods can only be created once the default ServiceAccount has its token
  [ -n "$(tkubectl "$dir" -n default get serviceaccount default -o jsonpath='{.secrets[0].name}')" ]
}
# Generous: on a 2-core machine that also builds, the controller-manager's token controller took
# over 60 s at a load of 10-12 (the waits return as soon as the condition holds).
wait_for "apiserver /readyz" 120 readyz
wait_for "$nodes Ready untainted nodes" 120 nodes_ready
wait_for "default ServiceAccount token" 180 default_sa_ready

started=1
echo "TESTENV_DIR=$dir"
echo "KUBECONFIG=$dir/kubeconfig"
echo "TESTENV_SERVER=$server"
