#!/usr/bin/env bash
# Makes the local base images `make image` builds from, where no registry is reachable:
# debootstrap --variant=minbase bookworm from this machine's Debian archive, imported into podman
# as EGRESS_IMAGE_BASE (localhost/debian:bookworm, the build stage's base) and, with what
# debian:bookworm-slim leaves out removed (documentation, manual pages, locales; dpkg told to keep
# leaving them out), as EGRESS_IMAGE_RUNTIME_BASE (localhost/debian:bookworm-slim). Does nothing
# for an image that exists already; --force remakes both.
set -euo pipefail
# shellcheck source=hack/image/lib.sh
source "$(dirname "$0")/lib.sh"
image_require_root "$@"

force=0
[ "${1:-}" = --force ] && force=1
if [ "$force" -eq 0 ] && podman image exists "$EGRESS_IMAGE_BASE" &&
  podman image exists "$EGRESS_IMAGE_RUNTIME_BASE"; then
  exit 0
fi

archive=$(image_debian_archive bookworm) || {
  echo "base.sh: no Debian bookworm archive in /etc/apt/sources.list*" >&2
  exit 1
}
work=$(mktemp -d /var/tmp/egress-image-base.XXXXXX)
trap 'rm -rf "$work"' EXIT
start=$SECONDS
echo "base.sh: debootstrap --variant=minbase bookworm from $archive" >&2
if ! debootstrap --variant=minbase bookworm "$work/rootfs" "$archive" \
  >"$work/debootstrap.log" 2>&1; then
  tail -n 20 "$work/debootstrap.log" >&2
  exit 1
fi
# What debootstrap downloaded is no part of the system.
rm -rf "$work"/rootfs/var/cache/apt/archives/*.deb "$work"/rootfs/var/lib/apt/lists/*
tar -C "$work/rootfs" -c . | podman import --quiet - "$EGRESS_IMAGE_BASE" >/dev/null

# The slim variant, as Debian's slim images are made (debuerreotype --slimify).
cat >"$work/rootfs/etc/dpkg/dpkg.cfg.d/slim" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
CFG
find "$work/rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$work/rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "$work"/rootfs/usr/share/{man,groff,info,lintian,linda,locale}/*
tar -C "$work/rootfs" -c . | podman import --quiet - "$EGRESS_IMAGE_RUNTIME_BASE" >/dev/null
echo "base.sh: $EGRESS_IMAGE_BASE and $EGRESS_IMAGE_RUNTIME_BASE in $((SECONDS - start)) s" >&2
