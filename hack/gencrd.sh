#!/usr/bin/env bash
# `make generate` (2/2): the CustomResourceDefinitions in manifests/ from the API types.
# Usage: hack/gencrd.sh [OUT_DIR]   (default: the repository)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.}
codegen=$(hack/codegen/build-tool.sh)
for types in pkg/apis/*/*/types.h; do
  "$codegen" --input "$types" --root . --what crd --out "$out"
done
