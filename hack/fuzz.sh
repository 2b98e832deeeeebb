#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer targets with clang-14 (ASan + UBSan) in build/fuzz and fuzzes
# the generated networking/v1alpha1 decoders (test/fuzz/decode_fuzz.cc) for SECONDS seconds,
# starting from a copy of the seed corpus, so the repository is never modified, then pkg/ipam
# against its brute-force model (test/fuzz/ipam_fuzz.cc) for SECONDS seconds from an empty
# corpus. Exits non-zero on a finding; the reproducer is written to build/fuzz/artifacts/ (rerun
# it with `build/fuzz/test/fuzz/<target> <file>`).
# Usage: hack/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
build=build/fuzz

if [ ! -f "$build/build.ninja" ]; then
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -G Ninja -DEGRESS_FUZZ=ON \
    -DEGRESS_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$build" --target decode_fuzz ipam_fuzz

corpus=$(mktemp -d "${TMPDIR:-/tmp}/decode_fuzz_corpus.XXXXXX")
ipam_corpus=$(mktemp -d "${TMPDIR:-/tmp}/ipam_fuzz_corpus.XXXXXX")
trap 'rm -rf "$corpus" "$ipam_corpus"' EXIT
cp test/fuzz/corpus/decode/* "$corpus/"
mkdir -p "$build/artifacts"

"$build/test/fuzz/decode_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$build/artifacts/" "$corpus"
"$build/test/fuzz/ipam_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$build/artifacts/" "$ipam_corpus"
