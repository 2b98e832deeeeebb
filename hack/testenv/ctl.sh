#!/usr/bin/env bash
# Operates on a running test control plane (a run directory made by up.sh).
# Usage:
#   ctl.sh DIR restart COMPONENT   restart etcd|apiserver|controller-manager|scheduler|kubelet and,
#                                  for the apiserver, wait until /readyz answers again
#   ctl.sh DIR compact             compact etcd to its current revision (old watches get 410 Gone)
#   ctl.sh DIR logs COMPONENT      print a component's log
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dir=${1:?usage: ctl.sh DIR COMMAND ...}
cmd=${2:?usage: ctl.sh DIR COMMAND ...}
source "$dir/ports.env"
etcd_url="http://127.0.0.1:$ETCD_PORT"

case "$cmd" in
  restart)
    c=${3:?component}
    [ -f "$dir/$c.pid" ] || { echo "ctl.sh: no component '$c'" >&2; exit 2; }
    old=$(cat "$dir/$c.pid")
    touch "$dir/restart-$c"
    # A graceful apiserver drains long-running watches for up to a minute; after a 5 s grace
    # period this is a crash-restart, which is what clients must survive anyway.
    kill -TERM "$old"
    for i in $(seq 600); do
      [ "$(cat "$dir/$c.pid")" != "$old" ] && break
      [ "$i" = 50 ] && kill -KILL "$old" 2>/dev/null
      sleep 0.1
    done
    if [ "$c" = apiserver ]; then
      for _ in $(seq 600); do
        curl -fsS --cacert "$dir/pki/ca.crt" --cert "$dir/pki/admin.crt" --key "$dir/pki/admin.key" \
          "https://127.0.0.1:$API_PORT/readyz" >/dev/null 2>&1 && exit 0
        sleep 0.1
      done
      echo "ctl.sh: apiserver not ready after restart" >&2
      exit 1
    fi
    ;;
  compact)
    # etcd's gRPC gateway: read the current revision, then compact to it.
    rev=$(curl -fsS -X POST "$etcd_url/v3/kv/range" -d '{"key":"AA=="}' | jq -r '.header.revision')
    curl -fsS -X POST "$etcd_url/v3/kv/compaction" -d "{\"revision\":\"$rev\",\"physical\":true}" >/dev/null
    echo "$rev"
    ;;
  logs)
    cat "$dir/logs/${3:?component}.log"
    ;;
  *)
    echo "ctl.sh: unknown command '$cmd'" >&2
    exit 2
    ;;
esac
