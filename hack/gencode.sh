#!/usr/bin/env bash
# `make generate` (1/2): the codecs, field validation, typed clientset, listers and informers
# from pkg/apis/*/*/types.h, formatted with the repository's .clang-format.
# Usage: hack/gencode.sh [OUT_DIR]   (default: the repository; verify-codegen.sh uses a temp dir)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.}
codegen=$(hack/codegen/build-tool.sh)
for types in pkg/apis/*/*/types.h; do
  "$codegen" --input "$types" --root . --what code --out "$out"
done
# Generated C++ gets the same formatting as hand-written code (clang-format reads .clang-format
# from the file's directory upwards; in a temp dir, point it at ours).
find "$out/pkg" -name 'zz_generated.*' \( -name '*.h' -o -name '*.cc' \) -print0 |
  xargs -0 clang-format -i --style=file:"$PWD/.clang-format"
