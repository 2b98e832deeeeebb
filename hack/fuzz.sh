#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer targets with clang-14 (ASan + UBSan) in build/fuzz and runs
# each for SECONDS seconds, starting from a copy of its committed seed corpus
# (test/fuzz/corpus/<target>/), so the repository is never modified by a run:
#   decode      the generated networking/v1alpha1 decoders (test/fuzz/decode_fuzz.cc)
#   ipam        pkg/ipam against its brute-force model (test/fuzz/ipam_fuzz.cc)
#   watch       pkg/kube's watch-event stream decoder, cut into reads (test/fuzz/watch_fuzz.cc)
#   kubeconfig  pkg/kube's kubeconfig parser and RestConfig builder (test/fuzz/kubeconfig_fuzz.cc)
#   list        pkg/kube's item-by-item LIST decoder, against a whole parse (test/fuzz/list_fuzz.cc)
# Exits non-zero on a finding; the reproducer is written to build/fuzz/artifacts/ (rerun it with
# `build/fuzz/test/fuzz/<target>_fuzz <file>`). Each run's output, with libFuzzer's final stats
# (executions, cov:, corpus size), is kept in build/fuzz/logs/<target>.log.
#
# --minimize replaces each committed corpus by the minimal set (`-merge=1`) of its seeds and
# what the run found: the one mode that writes to the repository, for committing a new corpus.
# Usage: hack/fuzz.sh [--minimize] [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
minimize=0
if [ "${1:-}" = --minimize ]; then
  minimize=1
  shift
fi
seconds=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(decode ipam watch kubeconfig list)
fi
build=build/fuzz

if [ ! -f "$build/build.ninja" ]; then
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -G Ninja -DEGRESS_FUZZ=ON \
    -DEGRESS_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$build" --target "${targets[@]/%/_fuzz}"

work=$(mktemp -d "${TMPDIR:-/tmp}/egress_fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$build/artifacts" "$build/logs"

for target in "${targets[@]}"; do
  seeds=test/fuzz/corpus/$target
  corpus=$work/$target
  mkdir -p "$corpus"
  if [ -d "$seeds" ]; then
    cp "$seeds"/* "$corpus/"
  fi
  echo "== ${target}_fuzz: ${seconds} s from $(find "$corpus" -type f | wc -l) seeds"
  log=$build/logs/$target.log
  status=0
  "$build/test/fuzz/${target}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$build/artifacts/" "$corpus" >"$log" 2>&1 || status=$?
  grep -E '^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|SUMMARY)|_fuzz: ' "$log" || true
  if [ "$status" -ne 0 ]; then
    tail -n 40 "$log" >&2
    echo "${target}_fuzz: a finding (exit $status), see $log and $build/artifacts/" >&2
    exit 1
  fi
  if [ "$minimize" = 1 ]; then
    merged=$work/$target.merged
    mkdir -p "$merged"
    "$build/test/fuzz/${target}_fuzz" -merge=1 -timeout=10 -rss_limit_mb=2048 "$merged" \
      "$corpus" >"$build/logs/$target.merge.log" 2>&1
    rm -rf "$seeds"
    mkdir -p "$seeds"
    cp "$merged"/* "$seeds/"
    echo "${target}: committed corpus now $(find "$seeds" -type f | wc -l) files," \
      "$(du -sb --apparent-size "$seeds" | cut -f1) bytes"
  fi
done
