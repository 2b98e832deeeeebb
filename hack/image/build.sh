#!/usr/bin/env bash
# `make image`: builds the Dockerfile with podman on this machine and prints the image's name and
# size. No registry is reachable here, so the bases are local (base.sh), apt inside the build
# installs from this machine's own Debian archive (build arguments read from /etc/apt at run
# time), and podman builds with chroot isolation (its default OCI isolation needs cgroups these
# machines do not give it).
#
#   hack/image/build.sh [--tag IMAGE] [--prebuilt BUILD_DIR]
#
# By default the programs are compiled from source in the build stage, with this machine's
# ccache mounted into it (a rebuild compiles only what changed). --prebuilt BUILD_DIR copies the
# programs BUILD_DIR built instead (the Dockerfile's BINARIES=prebuilt), for the image test.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=hack/image/lib.sh
source "$repo/hack/image/lib.sh"
image_require_root "$@"

tag=egress-gateway-operator:dev
prebuilt=""
while [ "$#" -gt 0 ]; do
  case "$1" in
    --tag) tag=$2; shift 2 ;;
    --prebuilt) prebuilt=$2; shift 2 ;;
    *) echo "usage: $0 [--tag IMAGE] [--prebuilt BUILD_DIR]" >&2; exit 2 ;;
  esac
done
# The programs the image holds, as the Dockerfile's TARGETS (cmd/<name>/<name>).
targets=$(sed -n 's/^ARG TARGETS="\(.*\)"$/\1/p' "$repo/Dockerfile")

"$repo/hack/image/base.sh"
args=(--build-arg "BASE_IMAGE=$EGRESS_IMAGE_BASE"
  --build-arg "RUNTIME_IMAGE=$EGRESS_IMAGE_RUNTIME_BASE")
if archive=$(image_debian_archive bookworm); then
  args+=(--build-arg "DEBIAN_ARCHIVE=$archive")
  if security=$(image_debian_archive bookworm-security); then
    args+=(--build-arg "DEBIAN_SECURITY_ARCHIVE=$security")
  fi
fi

work=$(mktemp -d /var/tmp/egress-image-build.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [ -n "$prebuilt" ]; then
  mkdir -p "$work/prebuilt/bin"
  bins=()
  for t in $targets; do
    bin="$prebuilt/cmd/$t/$t"
    [ -x "$bin" ] || { echo "build.sh: $bin is not built" >&2; exit 1; }
    strip -o "$work/prebuilt/bin/$t" "$bin"
    bins+=("$work/prebuilt/bin/$t")
  done
  "$repo/hack/image/runtime-packages.sh" "${bins[@]}" >"$work/prebuilt/runtime-packages"
  args+=(--build-arg BINARIES=prebuilt --build-context "prebuilt-binaries=$work/prebuilt")
else
  # Explicitly, though it is the default: podman 4.3 decides which stages it can skip from the
  # --build-arg values only, and without this skips the compiled stage `FROM ${BINARIES}` needs.
  args+=(--build-arg BINARIES=compiled)
  ccache_dir=$(ccache -k cache_dir 2>/dev/null || true)
  if [ -n "$ccache_dir" ]; then
    mkdir -p "$ccache_dir"
    args+=(-v "$ccache_dir:/ccache" --build-arg CCACHE_DIR=/ccache)
  fi
fi

start=$SECONDS
if ! podman build --isolation=chroot --pull=never --tag "$tag" "${args[@]}" "$repo" \
  >"$work/build.log" 2>&1; then
  tail -n 40 "$work/build.log" >&2
  echo "build.sh: podman build failed" >&2
  exit 1
fi
size=$(podman image inspect --format '{{.Size}}' "$tag")
echo "build.sh: built in $((SECONDS - start)) s" >&2
printf '%s %s MB\n' "$(podman image inspect --format '{{index .RepoTags 0}}' "$tag")" \
  "$(awk -v b="$size" 'BEGIN { printf "%.1f", b / 1e6 }')"
