#!/usr/bin/env bash
# Shared helpers of the test control plane scripts (sourced, not run).

TESTENV_HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

tlog() { echo "[testenv $(date +%H:%M:%S)] $*" >&2; }

# Ports with a listening TCP socket on this machine, read from /proc (no iproute2 needed).
listening_ports() {
  local f line port state
  for f in /proc/net/tcp /proc/net/tcp6; do
    [ -r "$f" ] || continue
    while read -r _ line _ state _; do
      [ "$state" = "0A" ] || continue
      port=${line##*:}
      printf '%d\n' "0x$port"
    done < <(tail -n +2 "$f")
  done
}

# free_ports N: N distinct ports that nothing listens on, below the ephemeral range so client
# sockets of other processes do not take them between this check and the bind.
free_ports() {
  local want=$1 used picked=() p
  used=" $(listening_ports | tr '\n' ' ') "
  while [ "${#picked[@]}" -lt "$want" ]; do
    p=$((20000 + RANDOM % 12000))
    case "$used ${picked[*]} " in *" $p "*) continue ;; esac
    picked+=("$p")
  done
  echo "${picked[*]}"
}

# kubectl against the control plane in $1 (a run directory).
tkubectl() {
  local dir=$1
  shift
  "$dir/bin/kubectl" --kubeconfig "$dir/kubeconfig" "$@"
}

# The test kubelet for up.sh --kubelet when the control plane is started after a build (demo.sh,
# bench.sh): $EGRESS_TESTENV_KUBELET if set (empty means kubelet.sh), else the C++ kubelet of
# build directory $1 if it was built, else "" (kubelet.sh).
testenv_kubelet() {
  local bin=$1/test/testenv_kubelet/egress-testenv-kubelet
  if [ -n "${EGRESS_TESTENV_KUBELET+set}" ]; then
    echo "$EGRESS_TESTENV_KUBELET"
  elif [ -x "$bin" ]; then
    echo "$bin"
  fi
}
