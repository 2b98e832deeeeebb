#!/usr/bin/env bash
# Installs exactly the Debian packages that building, testing and the local control plane need.
# Idempotent: installs nothing (and skips `apt-get update`) when everything is present.
set -euo pipefail

packages=(
  # build
  cmake ninja-build ccache g++ make pkg-config
  libboost1.81-dev libssl-dev rapidjson-dev libyaml-cpp-dev prometheus-cpp-dev
  libspdlog-dev libfmt-dev libgtest-dev libgmock-dev zlib1g-dev
  # the data plane (egw-agent): nftables through libnftables, rtnetlink through libmnl
  libnftables-dev libmnl-dev
  # the data plane's netns tests set up their devices with ip(8)
  iproute2
  # lint, fuzz
  clang clang-format clang-format-14 clang-tidy libclang-rt-14-dev
  # the test control plane: etcd, and Go to build kube-* from Debian's source package
  etcd-server golang-go dpkg-dev rsync jq
  golang-github-modern-go-reflect2-dev golang-github-json-iterator-go-dev
  # control plane scripts: certificates, health checks, kubectl/helm from the npm package
  openssl curl unzip ca-certificates procps util-linux npm
  # a real Prometheus scrapes /metrics in the e2e tests (the tests run /usr/bin/prometheus
  # themselves; the package's system service is not used); promtool lints /metrics bodies
  prometheus
  # the image (make image, the image test): podman builds the Dockerfile daemonless, from base
  # images debootstrap makes out of the Debian archive (hack/image/base.sh)
  podman debootstrap
  # make bench draws the scale curve's chart (hack/bench-chart.py) with Debian's python3
  python3-matplotlib
)

missing=()
for p in "${packages[@]}"; do
  # npm may come from another source than Debian's package (a Node.js install); that will do.
  if [ "$p" = npm ] && command -v npm >/dev/null 2>&1; then
    continue
  fi
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present" >&2
  exit 0
fi

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# An empty package list (fresh image) or a stale one makes `install` fail; update first.
as_root apt-get update -qq
as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
