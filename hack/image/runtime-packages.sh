#!/bin/sh
# Prints the Debian packages that hold the shared libraries the given binaries load, one a line:
# what the image's runtime stage installs, derived from `ldd` rather than kept by hand, so a new
# library dependency reaches the image without anyone editing a package list. Runs where the
# binaries were built (the Dockerfile's build stage, or the host for a prebuilt binary).
# Fails if a library does not resolve or belongs to no package.
set -eu

[ "$#" -gt 0 ] || { echo "usage: $0 BINARY..." >&2; exit 2; }

libs=$(for bin in "$@"; do
  out=$(ldd "$bin") || { echo "runtime-packages: ldd $bin failed" >&2; exit 1; }
  if printf '%s\n' "$out" | grep -q 'not found'; then
    printf '%s\n' "$out" | grep 'not found' >&2
    exit 1
  fi
  # "libssl.so.3 => /lib/x86_64-linux-gnu/libssl.so.3 (0x...)", "/lib64/ld-linux-x86-64.so.2 (0x..)"
  printf '%s\n' "$out" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
done | sort -u)

for lib in $libs; do
  # dpkg knows a file by the path its package ships; on a merged-/usr system ldd may report
  # /lib/... for /usr/lib/..., and the loader's path may be a symlink into another directory.
  pkg=""
  for path in "$lib" "/usr$lib" "$(readlink -f "$lib")"; do
    if pkg=$(dpkg-query -S "$path" 2>/dev/null | head -n 1 | cut -d: -f1) && [ -n "$pkg" ]; then
      break
    fi
  done
  [ -n "$pkg" ] || { echo "runtime-packages: no package holds $lib" >&2; exit 1; }
  echo "$pkg"
done | sort -u
