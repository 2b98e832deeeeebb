#!/bin/sh
# Installs Debian packages inside an image stage (Dockerfile), from the archive the build names.
# DEBIAN_ARCHIVE / DEBIAN_SECURITY_ARCHIVE (the build arguments of the same names) replace the
# base image's apt sources for this one install only: a build on a machine that reaches Debian
# only through its own archive works, and the image does not keep that machine's archive in
# /etc/apt. Both empty: the base image's own sources are used unchanged.
# POSIX sh: the base image may have no bash.
set -eu

if [ -n "${DEBIAN_ARCHIVE:-}" ]; then
  saved=/tmp/apt-sources.saved
  mkdir -p "$saved"
  [ -e /etc/apt/sources.list ] && mv /etc/apt/sources.list "$saved/"
  mv /etc/apt/sources.list.d "$saved/"
  # However the install ends, the base image's sources come back.
  trap 'rm -rf /etc/apt/sources.list.d /etc/apt/sources.list;
        [ -e "$saved/sources.list" ] && mv "$saved/sources.list" /etc/apt/;
        mv "$saved/sources.list.d" /etc/apt/; rm -rf "$saved"' EXIT
  mkdir /etc/apt/sources.list.d
  {
    printf 'Types: deb\nURIs: %s\nSuites: bookworm bookworm-updates\nComponents: main\n' \
      "$DEBIAN_ARCHIVE"
    printf 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n'
    if [ -n "${DEBIAN_SECURITY_ARCHIVE:-}" ]; then
      printf '\nTypes: deb\nURIs: %s\nSuites: bookworm-security\nComponents: main\n' \
        "$DEBIAN_SECURITY_ARCHIVE"
      printf 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n'
    fi
  } >/etc/apt/sources.list.d/build.sources
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "$@"
apt-get clean
rm -rf /var/lib/apt/lists/*
