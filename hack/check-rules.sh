#!/usr/bin/env bash
# The monitoring files of the chart, checked with real tools: `promtool check rules` on the alert
# rules, `promtool test rules` on test/prometheus/ (every alert firing and not firing), the
# runbooks' sections of docs/troubleshooting.md (they exist), and the Grafana dashboard's JSON
# (it parses, every panel and query uses the $datasource variable, no data source uid is
# hard-coded, every query has an expression). About a second. Runs in
# `make test` (make check-rules, and ctest: check_rules). PROMTOOL overrides the promtool binary.
set -euo pipefail
cd "$(dirname "$0")/.."
promtool=${PROMTOOL:-promtool}
files=deploy/helm/egress-gateway-operator/files
if ! command -v "$promtool" >/dev/null; then
  echo "check-rules: $promtool not found (hack/install-deps.sh installs Debian's prometheus)" >&2
  exit 1
fi
"$promtool" check rules "$files/prometheus-rules.yaml"
"$promtool" test rules test/prometheus/*_test.yaml

# Every runbook's docs/troubleshooting.md#<anchor> is a heading there (GitHub's anchor of a
# heading outside code blocks: lower case, spaces as '-', punctuation but '-' and '_' dropped).
doc=docs/troubleshooting.md
anchors=$(awk '/^```/ { code = !code; next } !code && /^#+ / { sub(/^#+ +/, ""); print }' "$doc" |
  tr '[:upper:]' '[:lower:]' | sed -E 's/[^a-z0-9 _-]//g; s/ /-/g')
refs=$(grep -oE 'docs/troubleshooting\.md#[A-Za-z0-9_-]+' "$files/prometheus-rules.yaml" | sort -u)
for ref in $refs; do
  if ! grep -qxF "${ref#*#}" <<<"$anchors"; then
    echo "check-rules: $files/prometheus-rules.yaml: runbook $ref: no such heading in $doc" >&2
    exit 1
  fi
done

dashboard=$files/grafana-dashboard.json
problems=$(jq -r '
  def ds_ok: . == {"type": "prometheus", "uid": "${datasource}"};
  [ (.panels[]? | .. | objects | select(has("datasource")) | select((.datasource | ds_ok) | not)
       | "\(.title // .refId // "?"): datasource \(.datasource | tojson) is not ${datasource}"),
    (.templating.list[]? | select(.type == "query") | select((.datasource | ds_ok) | not)
       | "variable \(.name): datasource is not ${datasource}"),
    (if ([.templating.list[]? | select(.name == "datasource" and .type == "datasource")] | length) == 1
     then empty else "no datasource variable named datasource" end),
    (.panels[]? | select(.type != "row") | select((.targets // []) | length == 0)
       | "\(.title): no queries"),
    (.panels[]? | .targets[]? | select((.expr // "") == "") | "\(.refId): empty expression")
  ] | .[]' "$dashboard")
if [[ -n $problems ]]; then
  echo "check-rules: $dashboard:" >&2
  echo "$problems" >&2
  exit 1
fi
echo "check-rules: $dashboard: $(jq '[.panels[] | select(.type != "row")] | length' "$dashboard") panels, every query on \${datasource}"
