#!/usr/bin/env bash
# `make manifests`: the chart's copies of the generated CRDs (manifests/ → the chart's
# crds-generated/) and the plain manifests (deploy/manifests/, `helm template` of the chart with
# hack/manifests-values.yaml), so `kubectl apply -f deploy/manifests/` and then
# `kubectl apply -f deploy/manifests/operatorconfig/` install what `helm install` does. `hack/manifests.sh --verify` (in `make test`) renders into a temporary
# directory and fails if anything committed differs, naming it.
# Usage: hack/manifests.sh [--verify]
set -euo pipefail
cd "$(dirname "$0")/.."
verify=false
[ "${1:-}" = "--verify" ] && verify=true

chart=deploy/helm/egress-gateway-operator
helm="${HELM:-$(hack/testenv/ensure-binaries.sh)/helm}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The chart's CRDs are exactly the generated ones (Helm reads only files inside the chart).
mkdir -p "$work/crds/plain" "$work/crds/cel"
cp manifests/*.yaml "$work/crds/plain/"
cp manifests/cel/*.yaml "$work/crds/cel/"

render() {  # render CHART_DIR OUT_DIR
  local rendered="$1" out="$2"
  "$helm" template egress-gateway-operator "$rendered" --namespace egress-gateway-system \
    --kube-version 1.20.0 --values hack/manifests-values.yaml --output-dir "$work/out" >/dev/null
  local t="$work/out/egress-gateway-operator/templates" f
  mkdir -p "$out"
  # kubectl apply -f DIR takes the files in name order: the Namespace and the CRDs first. The
  # OperatorConfig, an object of those CRDs, goes to a subdirectory (which apply -f DIR does not
  # enter) for a second kubectl apply: one kubectl run maps every object to its API before it
  # creates any, and cannot map an OperatorConfig before its CRD exists.
  local order=(namespace crds serviceaccount clusterrole role deployment service
               agent-serviceaccount agent-rbac agent-daemonset
               grafana-dashboard servicemonitor agent-podmonitor prometheusrule operatorconfig)
  local i=0 name target
  mkdir -p "$out/operatorconfig"
  for name in "${order[@]}"; do
    f="$t/$name.yaml"
    if [ -s "$f" ]; then
      target="$out/$(printf '%02d' "$i")-$name.yaml"
      [ "$name" = operatorconfig ] && target="$out/operatorconfig/default.yaml"
      { echo "# Rendered from $chart/templates/$name.yaml by hack/manifests.sh. DO NOT EDIT."
        grep -v '^# Source: ' "$f"; } >"$target"
      i=$((i + 1))
    fi
  done
  for f in "$t"/*.yaml; do
    case " ${order[*]} " in *" $(basename "$f" .yaml) "*) ;; *)
      echo "hack/manifests.sh: $f is not in the file order; add it" >&2; exit 1 ;;
    esac
  done
}

if $verify; then
  # Render from a copy of the chart holding the fresh CRD copies, so a stale copy is caught
  # twice: as a copy, and in what it renders.
  cp -r "$chart" "$work/chart"
  rm -rf "$work/chart/crds-generated"
  cp -r "$work/crds" "$work/chart/crds-generated"
  render "$work/chart" "$work/manifests"
  status=0
  diff -ru "$work/crds" "$chart/crds-generated" || status=1
  diff -ru "$work/manifests" deploy/manifests || status=1
  if [ "$status" -ne 0 ]; then
    echo "hack/manifests.sh: $chart/crds-generated or deploy/manifests is stale: run make manifests" >&2
    exit 1
  fi
  echo "manifests up to date"
else
  rm -rf "$chart/crds-generated"
  cp -r "$work/crds" "$chart/crds-generated"
  rm -rf deploy/manifests
  render "$chart" deploy/manifests
  find deploy/manifests -type f | sort
fi
