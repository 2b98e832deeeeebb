#!/usr/bin/env bash
# clang-format check and clang-tidy over every C++ file in the repository.
# Usage: hack/lint.sh [BUILD_DIR]   (BUILD_DIR holds compile_commands.json; default build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
mapfile -t files < <(git ls-files '*.h' '*.cc')
[ "${#files[@]}" -gt 0 ] || exit 0

echo "lint: clang-format (${#files[@]} files)"
clang-format --dry-run -Werror "${files[@]}"

echo "lint: clang-tidy"
mapfile -t sources < <(printf '%s\n' "${files[@]}" | grep '\.cc$')
# Generated code is checked by its generator's tests, not by clang-tidy.
mapfile -t sources < <(printf '%s\n' "${sources[@]}" | grep -v '/generated/' || true)
out=$(mktemp)
status=0
printf '%s\n' "${sources[@]}" |
  xargs -P "$(nproc)" -n 4 clang-tidy -p "$build" --quiet >"$out" 2>&1 || status=$?
grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter' \
  "$out" || true
rm -f "$out"
[ "$status" = 0 ] || { echo "lint: clang-tidy found problems" >&2; exit 1; }
echo "lint: ok"
