#!/usr/bin/env bash
# `make generate` (1/2): the codecs, field validation, typed clientset, listers and informers
# from pkg/apis/*/*/types.h, formatted with the repository's .clang-format.
# Usage: hack/gencode.sh [OUT_DIR]   (default: the repository; verify-codegen.sh uses a temp dir)
#
# The formatter is pinned to Debian's clang-format 14 (the `clang-format-14` binary; override the
# path with EGRESS_CLANG_FORMAT, still version 14): other versions format differently, and the
# committed files must be the same bytes on every machine for verify-codegen to mean anything.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.}
fmt=${EGRESS_CLANG_FORMAT:-clang-format-14}
if ! command -v "$fmt" >/dev/null 2>&1; then
  echo "hack/gencode.sh: clang-format-14 not found ($fmt): generated code is formatted with" \
    "Debian's clang-format 14; install it with hack/install-deps.sh" >&2
  exit 1
fi
if ! "$fmt" --version | grep -q 'clang-format version 14\.'; then
  echo "hack/gencode.sh: $fmt is $("$fmt" --version); generated code needs clang-format 14" \
    "(another version formats differently)" >&2
  exit 1
fi
codegen=$(hack/codegen/build-tool.sh)
for types in pkg/apis/*/*/types.h; do
  "$codegen" --input "$types" --root . --what code --out "$out"
done
# Generated C++ gets the same formatting as hand-written code (clang-format reads .clang-format
# from the file's directory upwards; in a temp dir, point it at ours).
find "$out/pkg" -name 'zz_generated.*' \( -name '*.h' -o -name '*.cc' \) -print0 |
  xargs -0 "$fmt" -i --style=file:"$PWD/.clang-format"
