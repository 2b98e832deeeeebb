#!/usr/bin/env bash
# hack/verify-codegen.sh must fail when a generated file is edited by hand, and pass again after
# `make generate`. Runs on a copy of the repository, never on the working tree.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$repo/hack" "$repo/pkg" "$repo/manifests" "$repo/.clang-format" "$tmp/"
# The generator's build is reused, so only the repository copy is new.
export EGRESS_CODEGEN_BUILD_DIR=$tmp/codegen-build
cd "$tmp"
hack/verify-codegen.sh >/dev/null

echo "// edited by hand" >> pkg/apis/networking/v1alpha1/zz_generated.codec.cc
if hack/verify-codegen.sh >/dev/null 2>&1; then
  echo "FAIL: an edited zz_generated.codec.cc passed verify-codegen" >&2
  exit 1
fi
sed -i 's/type: boolean/type: string/' manifests/networking.egressgateway.dev_ipampools.yaml
hack/gencode.sh
if hack/verify-codegen.sh >/dev/null 2>&1; then
  echo "FAIL: an edited CRD passed verify-codegen" >&2
  exit 1
fi
hack/gencrd.sh
hack/verify-codegen.sh >/dev/null
touch pkg/client/networking/v1alpha1/zz_generated.stale.h
if hack/verify-codegen.sh >/dev/null 2>&1; then
  echo "FAIL: a generated file without a source passed verify-codegen" >&2
  exit 1
fi
echo "verify-codegen catches hand edits, stale CRDs and orphans"
