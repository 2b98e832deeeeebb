#!/usr/bin/env bash
# Stops the control plane of a run directory made by up.sh and removes the directory.
# Usage: hack/testenv/down.sh DIR
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dir=${1:?usage: down.sh RUN_DIR}
[ -d "$dir" ] || exit 0
if [ -f "$dir/supervisor.pid" ]; then
  sup=$(cat "$dir/supervisor.pid")
  if kill -TERM "$sup" 2>/dev/null; then
    for _ in $(seq 150); do kill -0 "$sup" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$sup" 2>/dev/null
  fi
fi
# Components run with a parent-death signal; this catches anything that ran without setpriv.
for f in "$dir"/*.pid; do
  [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
done
rm -rf "$dir"
