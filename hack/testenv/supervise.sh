#!/usr/bin/env bash
# Runs the control plane components of one run directory and owns their lifetime (started by
# up.sh in its own session). Stops everything and removes the run directory when it gets
# SIGTERM/SIGINT/SIGHUP, or when the owner process (if any) has exited. Each component runs
# under `setpriv --pdeathsig KILL`, so even a SIGKILLed supervisor leaves no process behind.
# A component is restarted only when asked (hack/testenv/ctl.sh DIR restart COMPONENT).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

as_function=0
if [ "${1:-}" = "--as-function" ]; then
  as_function=1
  shift
fi
dir=$1
owner=${2:-}
source "$dir/ports.env"
pki=$dir/pki
bin=$dir/bin
server="https://127.0.0.1:$API_PORT"
components=(etcd apiserver controller-manager scheduler kubelet)
declare -A pids=() reported=()

run_etcd() {
  exec "$bin/etcd" --name testenv --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "testenv=http://127.0.0.1:$ETCD_PEER_PORT" \
    --listen-metrics-urls "" --log-level warn
}
run_apiserver() {
  # up.sh --advertise-address: every address of this (network namespace's) host, else loopback.
  local bind=127.0.0.1 advertise=127.0.0.1
  if [ -n "${ADVERTISE_ADDRESS:-}" ]; then
    bind=0.0.0.0 advertise=$ADVERTISE_ADDRESS
  fi
  # --insecure-port=0: 1.20 would otherwise open an unauthenticated port 8080.
  exec "$bin/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address "$bind" --advertise-address "$advertise" \
    --secure-port "$API_PORT" --insecure-port 0 \
    --cert-dir "$dir/apiserver-certs" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" --token-auth-file "$pki/tokens.csv" \
    --service-account-key-file "$pki/sa.pub" \
    --service-account-signing-key-file "$pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc \
    --authorization-mode RBAC --allow-privileged=true \
    --service-cluster-ip-range 10.96.0.0/16 \
    --enable-priority-and-fairness=false \
    --v 1
}
run_controller-manager() {
  # nodelifecycle is off: our fake nodes post no heartbeats and must stay Ready.
  exec "$bin/kube-controller-manager" \
    --kubeconfig "$dir/kubeconfig" \
    --authentication-kubeconfig "$dir/kubeconfig" --authorization-kubeconfig "$dir/kubeconfig" \
    --secure-port 0 --port 0 --leader-elect=false \
    --controllers '*,-nodelifecycle' \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --use-service-account-credentials=true \
    --concurrent-deployment-syncs 10 --concurrent-replicaset-syncs 10 \
    --kube-api-qps 200 --kube-api-burst 400 \
    --v 1
}
run_scheduler() {
  exec "$bin/kube-scheduler" \
    --kubeconfig "$dir/kubeconfig" \
    --authentication-kubeconfig "$dir/kubeconfig" --authorization-kubeconfig "$dir/kubeconfig" \
    --secure-port 0 --port 0 --leader-elect=false --v 1
}
run_kubelet() {
  # The C++ kubelet (test/testenv_kubelet) when up.sh was given one, as the e2e tests, demo.sh
  # and bench.sh do after the build; the script otherwise, so up.sh alone works without a build.
  if [ -n "${EGRESS_TESTENV_KUBELET:-}" ]; then
    exec "$EGRESS_TESTENV_KUBELET" "$dir"
  fi
  exec "$TESTENV_HACK_DIR/kubelet.sh" "$dir"
}

start() { # component
  local c=$1
  if command -v setpriv >/dev/null; then
    setpriv --pdeathsig KILL -- bash -c "source '$0' --as-function '$dir' && run_$c" \
      >>"$dir/logs/$c.log" 2>&1 </dev/null &
  else
    ("run_$c") >>"$dir/logs/$c.log" 2>&1 </dev/null &
  fi
  pids[$c]=$!
  echo "${pids[$c]}" >"$dir/$c.pid"
  tlog "started $c (pid ${pids[$c]})"
}

stopping=0
shutdown() {
  [ "$stopping" = 1 ] && return
  stopping=1
  tlog "stopping ($1)"
  local c i alive
  # Reverse order: the kubelet and controllers first, etcd last.
  for ((i = ${#components[@]} - 1; i >= 0; i--)); do
    c=${components[$i]}
    [ -n "${pids[$c]:-}" ] && kill -TERM "${pids[$c]}" 2>/dev/null
  done
  for _ in $(seq 50); do
    alive=0
    for c in "${components[@]}"; do
      [ -n "${pids[$c]:-}" ] && kill -0 "${pids[$c]}" 2>/dev/null && alive=1
    done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for c in "${components[@]}"; do
    [ -n "${pids[$c]:-}" ] && kill -KILL "${pids[$c]}" 2>/dev/null
  done
  # Anything else left in our session (kubectl children of the kubelet, say), but not us.
  local p
  for p in $(pgrep -s 0 -f "$dir"); do
    [ "$p" != "$$" ] && kill -KILL "$p" 2>/dev/null
  done
  wait 2>/dev/null
  if [ ! -e "$dir/keep" ]; then
    rm -rf "$dir"
  fi
  exit 0
}

# Sourced by `start` to get run_<component> in a fresh bash under setpriv.
if [ "$as_function" = 1 ]; then
  return 0
fi

trap 'shutdown signal' TERM INT HUP
# Written whole by a rename: up.sh polls this file, and a plain `>` would let it read an empty
# file between the truncation and the write, and report a live supervisor as exited (seen once,
# in a fresh-clone .ci/run).
echo $$ >"$dir/supervisor.pid.$$" && mv -f "$dir/supervisor.pid.$$" "$dir/supervisor.pid"
tlog "test kubelet: ${EGRESS_TESTENV_KUBELET:-$TESTENV_HACK_DIR/kubelet.sh}"
for c in "${components[@]}"; do
  start "$c"
  if [ "$c" = etcd ]; then
    for _ in $(seq 100); do
      curl -fsS "http://127.0.0.1:$ETCD_PORT/health" >/dev/null 2>&1 && break
      sleep 0.1
    done
  fi
done

while :; do
  if [ -n "$owner" ] && ! kill -0 "$owner" 2>/dev/null; then shutdown "owner $owner exited"; fi
  for c in "${components[@]}"; do
    if ! kill -0 "${pids[$c]}" 2>/dev/null; then
      wait "${pids[$c]}" 2>/dev/null
      rc=$?
      if [ -e "$dir/restart-$c" ]; then
        rm -f "$dir/restart-$c"
        tlog "restarting $c on request"
        start "$c"
      elif [ -z "${reported[$c]:-}" ]; then
        tlog "$c exited with status $rc (see logs/$c.log)"
        reported[$c]=1
      fi
    fi
  done
  sleep 0.5 &
  wait $! 2>/dev/null
done
