#!/usr/bin/env bash
# hack/gencode.sh formats with Debian's clang-format 14 and nothing else: another version formats
# differently, so verify-codegen would flag correct files (or pass stale ones) depending on the
# machine. A missing clang-format-14, or a binary that is not version 14, fails with a clear
# message before anything is written.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export EGRESS_CODEGEN_BUILD_DIR=$tmp/codegen-build

if EGRESS_CLANG_FORMAT=$tmp/no-such/clang-format-14 "$repo/hack/gencode.sh" "$tmp/out1" \
  2>"$tmp/err1"; then
  echo "FAIL: gencode.sh ran without clang-format-14" >&2
  exit 1
fi
grep -q "clang-format-14 not found" "$tmp/err1" ||
  { echo "FAIL: unclear message without clang-format-14:" >&2; cat "$tmp/err1" >&2; exit 1; }

# A formatter of another version (it would leave the files as they are).
cat >"$tmp/clang-format-17" <<'FAKE'
#!/bin/sh
if [ "$1" = --version ]; then echo "Debian clang-format version 17.0.6"; fi
FAKE
chmod +x "$tmp/clang-format-17"
if EGRESS_CLANG_FORMAT=$tmp/clang-format-17 "$repo/hack/gencode.sh" "$tmp/out2" \
  2>"$tmp/err2"; then
  echo "FAIL: gencode.sh formatted with clang-format 17" >&2
  exit 1
fi
grep -q "needs clang-format 14" "$tmp/err2" ||
  { echo "FAIL: unclear message for clang-format 17:" >&2; cat "$tmp/err2" >&2; exit 1; }
[[ ! -e "$tmp/out2" ]] || { echo "FAIL: files written before the version check" >&2; exit 1; }
echo "gencode.sh insists on clang-format 14"
