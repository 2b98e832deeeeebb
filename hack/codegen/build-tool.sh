#!/usr/bin/env bash
# Builds egress-codegen (a standalone CMake project of its own, so generating never needs the
# generated code to compile) and prints its path. Cached in $EGRESS_CODEGEN_BUILD_DIR.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${EGRESS_CODEGEN_BUILD_DIR:-build/codegen}
if [[ ! -f "$dir/build.ninja" ]]; then
  cmake -S hack/codegen -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$dir" --target egress-codegen >/dev/null
case "$dir" in
  /*) echo "$dir/egress-codegen" ;;
  *) echo "$PWD/$dir/egress-codegen" ;;
esac
