# shellcheck shell=bash
# Sourced by the image scripts (build.sh, base.sh, test/image/image_test.sh): the machine's Debian
# archive, the local base images' names, and running as root.

# The base images `make image` builds from when it runs here (base.sh makes them; elsewhere the
# Dockerfile's defaults, debian:bookworm and debian:bookworm-slim, are pulled as usual).
EGRESS_IMAGE_BASE=${EGRESS_IMAGE_BASE:-localhost/debian:bookworm}
EGRESS_IMAGE_RUNTIME_BASE=${EGRESS_IMAGE_RUNTIME_BASE:-localhost/debian:bookworm-slim}

# debootstrap, podman's storage and chroot need root: re-run the calling script under sudo.
image_require_root() {
  if [ "$(id -u)" -ne 0 ]; then
    exec sudo --preserve-env=EGRESS_IMAGE_BASE,EGRESS_IMAGE_RUNTIME_BASE,CCACHE_DIR "$0" "$@"
  fi
}

# The URI of the first Debian archive in this machine's apt sources that serves SUITE (bookworm,
# bookworm-security): read at run time, so no archive host is written into the repository and the
# image's build installs exactly from where this machine does. Both source formats: one-line
# ("deb [opts] URI SUITE COMPONENTS") and deb822 stanzas (Types/URIs/Suites).
image_debian_archive() {
  local suite=$1 files=()
  [ -f /etc/apt/sources.list ] && files+=(/etc/apt/sources.list)
  for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && files+=("$f")
  done
  [ "${#files[@]}" -gt 0 ] || return 1
  local uri
  uri=$(awk -v suite="$suite" '
    function found(uri) { print uri; done = 1; exit }
    function flush() {
      if (deb && uris != "" && (" " suites " ") ~ (" " suite " ")) {
        split(uris, u, " ")
        found(u[1])
      }
      deb = 0; uris = ""; suites = ""
    }
    FNR == 1 { flush() }
    FILENAME ~ /\.sources$/ {
      if ($0 ~ /^[[:space:]]*$/) { flush(); next }
      if ($1 == "Types:") { deb = ($0 ~ /[[:space:]]deb([[:space:]]|$)/) }
      if ($1 == "URIs:") { uris = substr($0, index($0, $2)) }
      if ($1 == "Suites:") { suites = substr($0, index($0, $2)) }
      next
    }
    $1 == "deb" {
      i = 2
      if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
      if ($(i + 1) == suite) found($i)
    }
    END { if (!done) flush() }
  ' "${files[@]}")
  [ -n "$uri" ] && echo "$uri"
}
