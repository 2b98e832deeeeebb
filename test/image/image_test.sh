#!/usr/bin/env bash
# The image test: builds the image (hack/image/build.sh, from BUILD_DIR's programs unless IMAGE
# is given), then checks it where it cannot be run as a container (podman run needs rlimits
# these machines refuse): in its root file system (podman image mount), as uid 65532 (chroot
# --userspec), every program's NEEDED libraries resolve, `--version` and `--help` run, and the
# runtime stage holds no compiler and no -dev package. The compiler and -dev checks run first on
# a fake root with a planted compiler and -dev package, so their finding nothing in the image
# means something.
#
#   test/image/image_test.sh --prebuilt BUILD_DIR --version VERSION [--image IMAGE]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=hack/image/lib.sh
source "$repo/hack/image/lib.sh"
image_require_root "$@"

build_dir="" version="" image=""
while [ "$#" -gt 0 ]; do
  case "$1" in
    --prebuilt) build_dir=$2; shift 2 ;;
    --version) version=$2; shift 2 ;;
    --image) image=$2; shift 2 ;;
    *) echo "usage: $0 --prebuilt BUILD_DIR --version VERSION [--image IMAGE]" >&2; exit 2 ;;
  esac
done
if [ -z "$version" ] || { [ -z "$build_dir" ] && [ -z "$image" ]; }; then
  echo "usage: $0 --prebuilt BUILD_DIR --version VERSION [--image IMAGE]" >&2
  exit 2
fi

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
# expect WHAT COMMAND...: one check, passed when COMMAND succeeds.
expect() {
  local what=$1
  shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}

# Programs in ROOT (executables, or links such as /etc/alternatives/cc) that are a compiler
# driver, a compiler proper or its linker helper.
compilers_in() {
  find "$1" -xdev \( -type l -o -type f -perm /111 \) \
    \( -name gcc -o -name 'gcc-[0-9]*' -o -name '*-gcc' \
    -o -name '*-gcc-[0-9]*' -o -name 'g++' -o -name 'g++-[0-9]*' -o -name '*-g++' \
    -o -name '*-g++-[0-9]*' -o -name cc -o -name c++ -o -name cpp -o -name 'cpp-[0-9]*' \
    -o -name 'clang*' -o -name cc1 -o -name cc1plus -o -name collect2 \) -printf '/%P\n'
}
# Installed packages in ROOT's dpkg database that are -dev packages or a toolchain.
dev_packages_in() {
  dpkg-query --admindir="$1/var/lib/dpkg" -W -f '${db:Status-Status} ${Package}\n' |
    awk '$1 == "installed" { print $2 }' |
    grep -E -e '-dev$' -e '^(gcc|g\+\+|cpp|clang|binutils|build-essential)(-[0-9.]+)?$' || true
}

# The checks catch what they look for: a fake root with a compiler and a -dev package.
fake=$(mktemp -d /var/tmp/egress-image-test.XXXXXX)
mount_image=""
cleanup() {
  rm -rf "$fake"
  [ -z "$mount_image" ] || podman image umount "$mount_image" >/dev/null || true
}
trap cleanup EXIT
mkdir -p "$fake/usr/bin" "$fake/usr/lib/gcc/x86_64-linux-gnu/12" "$fake/var/lib/dpkg"
touch "$fake/usr/bin/x86_64-linux-gnu-g++-12" "$fake/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus"
chmod +x "$fake/usr/bin/x86_64-linux-gnu-g++-12" "$fake/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus"
ln -s x86_64-linux-gnu-g++-12 "$fake/usr/bin/c++"
printf '%s\n' 'Package: libssl-dev' 'Status: install ok installed' 'Version: 1' \
  'Architecture: amd64' 'Maintainer: none' 'Description: planted by image_test.sh' '' \
  >"$fake/var/lib/dpkg/status"
[ "$(compilers_in "$fake" | wc -l)" -eq 3 ] || fail "the compiler check misses a planted compiler"
[ "$(dev_packages_in "$fake")" = libssl-dev ] || fail "the -dev check misses a planted package"

if [ -z "$image" ]; then
  image=localhost/egress-gateway-operator:image-test
  "$repo/hack/image/build.sh" --tag "$image" --prebuilt "$build_dir"
fi

user=$(podman image inspect --format '{{.Config.User}}' "$image")
expect "image user 65532:65532 (is \"$user\")" [ "$user" = 65532:65532 ]
entrypoint=$(podman image inspect --format '{{join .Config.Entrypoint " "}}' "$image")
expect "entrypoint /usr/local/bin/egress-operator (is \"$entrypoint\")" \
  [ "$entrypoint" = /usr/local/bin/egress-operator ]

root=$(podman image mount "$image")
mount_image=$image
# In a fresh mount and PID namespace with its own /proc, as a container has: a program that reads
# /proc (LeakSanitizer in a `make test-asan` build does, at exit) would fail without it. The mount
# never reaches the host's mount table.
as_nonroot() {
  unshare --mount --propagation private --fork --pid --mount-proc="$root/proc" \
    chroot --userspec=65532:65532 "$root" "$@"
}

expect "programs run as uid 65532" [ "$(as_nonroot /usr/bin/id -u)" = 65532 ]
targets=$(sed -n 's/^ARG TARGETS="\(.*\)"$/\1/p' "$repo/Dockerfile")
for t in $targets; do
  bin=/usr/local/bin/$t
  if [ ! -x "$root$bin" ]; then
    fail "$bin is not in the image"
    continue
  fi
  # Every library the program names (DT_NEEDED) resolves inside the image, as the loader finds
  # it there: ldd runs the image's own loader.
  needed=$(readelf -d "$root$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  resolved=$(as_nonroot ldd "$bin" 2>&1) || fail "ldd $bin failed: $resolved"
  for lib in $needed; do
    expect "$t: $lib resolves in the image" grep -q "^[[:space:]]*$lib => /" <<<"$resolved"
  done
  if printf '%s\n' "$resolved" | grep -q 'not found'; then
    fail "$t: $(printf '%s\n' "$resolved" | grep 'not found' | tr -s '\t\n' ' ')"
  fi
done

out=$(as_nonroot /usr/local/bin/egress-operator --version 2>&1) || fail "--version exited $?: $out"
expect "--version prints \"egress-operator $version\" (printed \"$out\")" \
  [ "$out" = "egress-operator $version" ]
out=$(as_nonroot /usr/local/bin/egress-operator --help 2>&1) || fail "--help exited $?"
for flag in --leader-elect --metrics-bind-address --kubeconfig --version; do
  expect "--help lists $flag" grep -q -- "$flag" <<<"$out"
done

out=$(as_nonroot /usr/local/bin/egw-agent --version 2>&1) || fail "egw-agent --version exited $?: $out"
expect "egw-agent --version prints \"egw-agent $version\" (printed \"$out\")" \
  [ "$out" = "egw-agent $version" ]

out=$(as_nonroot /usr/local/bin/egw-gateway --version 2>&1) || fail "egw-gateway --version exited $?: $out"
expect "egw-gateway --version prints \"egw-gateway $version\" (printed \"$out\")" \
  [ "$out" = "egw-gateway $version" ]
# A gateway pod's container: it holds its place until the kubelet's SIGTERM, then exits 0 at once.
rc=0
out=$(as_nonroot timeout --preserve-status -s TERM 1 /usr/local/bin/egw-gateway 2>&1) || rc=$?
expect "egw-gateway exits 0 on SIGTERM (exit $rc: $out)" \
  [ "$rc" -eq 0 ] && grep -q "SIGTERM, exiting" <<<"$out"

found=$(compilers_in "$root" | tr '\n' ' ')
expect "no compiler in the image (found: ${found:-none})" [ -z "$found" ]
found=$(dev_packages_in "$root" | tr '\n' ' ')
expect "no -dev or toolchain package in the image (found: ${found:-none})" [ -z "$found" ]
expect "no headers in /usr/include" [ -z "$(ls -A "$root/usr/include" 2>/dev/null)" ]

echo "image_test: $image $(podman image inspect --format '{{.Size}}' "$image") bytes"
if [ "$failures" -gt 0 ]; then
  echo "image_test: $failures failures" >&2
  exit 1
fi
echo "image_test: passed"
