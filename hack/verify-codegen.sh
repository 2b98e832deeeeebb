#!/usr/bin/env bash
# Fails if the generated files in the repository differ from what `make generate` would write
# now (a stale or hand-edited generated file). Runs in `make test` (ctest: verify_codegen).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
hack/gencode.sh "$tmp"
hack/gencrd.sh "$tmp"
status=0
while IFS= read -r -d '' f; do
  rel=${f#"$tmp"/}
  if ! diff -u "$rel" "$f" >/dev/null 2>&1; then
    echo "verify-codegen: $rel is out of date or edited by hand; run \`make generate\`" >&2
    diff -u "$rel" "$f" | head -20 >&2 || true
    status=1
  fi
done < <(find "$tmp" -type f -print0)
# A generated file with no source any more.
while IFS= read -r f; do
  if [[ ! -f "$tmp/$f" ]]; then
    echo "verify-codegen: $f is no longer generated; delete it" >&2
    status=1
  fi
done < <(find pkg -name 'zz_generated.*'; find manifests -name '*.yaml')
if [[ $status -eq 0 ]]; then
  echo "verify-codegen: generated files are up to date"
fi
exit $status
