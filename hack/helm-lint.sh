#!/usr/bin/env bash
# `make helm-lint`: `helm lint --strict` of the chart with its defaults, with the plain
# manifests' values, and for a server with and without CEL and the monitoring.coreos.com API.
# Usage: hack/helm-lint.sh
set -euo pipefail
cd "$(dirname "$0")/.."
chart=deploy/helm/egress-gateway-operator
helm="${HELM:-$(hack/testenv/ensure-binaries.sh)/helm}"
"$helm" lint --strict "$chart" --kube-version 1.20.0
"$helm" lint --strict "$chart" --kube-version 1.28.0 --values hack/manifests-values.yaml \
  --set monitoring.serviceMonitor.force=true --set monitoring.prometheusRule.force=true \
  --set monitoring.agentPodMonitor.force=true
