#!/usr/bin/env bash
# demo_e2e_test: `make demo` as CI or a pipe runs it (hack/demo.sh, stdin from /dev/null, so not
# on a terminal) exits 0 after both parts and prints the lines that show the product:
#   - the policy's egress IP (as its status lists it), which must be in the demo's pool and be no
#     node's address;
#   - the selected pod p3's line: the echo server saw exactly that egress IP;
#   - the other pod p2's line: the echo server saw its node's address (the node line's);
#   - which node holds the egress IP, then the move to another node after the holder's agent
#     died, with the held connection still alive (some lines echoed), and a new connection from
#     p3 that still leaves with the egress IP;
#   - no UNEXPECTED address anywhere, and the bookkeeping part's policies Ready.
# Usage: test/e2e/demo_test.sh BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: demo_test.sh BUILD_DIR}" && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT

fail() {
  echo "demo_test: FAIL: $*" >&2
  exit 1
}

status=0
"$here/hack/demo.sh" "$build" </dev/null >"$out" 2>&1 || status=$?
cat "$out"
echo
[ "$status" = 0 ] || fail "hack/demo.sh exited $status"

# The first line that has this text, or fail.
line() {
  local l
  l=$(grep -F -m1 -- "$1" "$out") || fail "no line with '$1'"
  echo "$l"
}

# The word of line $1 that follows text $2.
after() {
  local rest=${1#*"$2"}
  echo "${rest%% *}"
}

# "   policy web's status lists egress IPs 192.168.50.20x fd00:50::20x"
status_line=$(line "policy web's status lists egress IPs ")
egress=$(after "$status_line" "egress IPs ")
egress6=$(after "$status_line" "egress IPs $egress ")
[ -n "$egress" ] && [ -n "$egress6" ] || fail "no egress IPs in the policy's status line"
# "   node egress-node-2: 192.168.50.12, fd00:50::12"
declare -A node_address
for i in 1 2 3; do
  node_address[$i]=$(after "$(line "node egress-node-$i: ")" "node egress-node-$i: " | tr -d ,)
  [ "${node_address[$i]}" = "192.168.50.1$i" ] ||
    fail "egress-node-$i's address is '${node_address[$i]}', not the topology's 192.168.50.1$i"
  [ "$egress" != "${node_address[$i]}" ] || fail "the egress IP $egress is egress-node-$i's address"
done
python3 - "$egress" "$egress6" <<'PY' || fail "the egress IPs $egress $egress6 are not in the demo's pool"
import ipaddress, sys
assert ipaddress.ip_address(sys.argv[1]) in ipaddress.ip_network("192.168.50.200/29")
assert ipaddress.ip_address(sys.argv[2]) in ipaddress.ip_network("fd00:50::200/125")
PY

# What the external echo server saw.
selected=$(line "selected pod p3 (app=web, on egress-node-3) -> echo server saw ")
[ "$(after "$selected" " saw ")" = "$egress" ] ||
  fail "the selected pod's source was not the egress IP $egress: $selected"
other=$(line "other pod p2 (app=other, on egress-node-2) -> echo server saw ")
[ "$(after "$other" " saw ")" = "${node_address[2]}" ] ||
  fail "the other pod's source was not its node's address ${node_address[2]}: $other"
if grep -q UNEXPECTED "$out"; then
  fail "$(grep UNEXPECTED "$out")"
fi

# Who holds it, then the move.
held_by=$(after "$(line "egress IP $egress is held by ")" " is held by ")
[ -n "$held_by" ] || fail "no holder for $egress"
move=$(line "egress IP $egress moved to ")
moved_to=$(after "$move" " moved to ")
[[ "$moved_to" == egress-node-* && "$moved_to" != "$held_by" ]] ||
  fail "the egress IP did not move off $held_by: $move"
[[ "$move" =~ after\ [0-9.]+\ s\;\ the\ held\ connection\ is\ still\ alive\ \(([0-9]+)\ lines ]] ||
  fail "the move line does not say the held connection is alive: $move"
[ "${BASH_REMATCH[1]}" -gt 0 ] || fail "no line echoed across the move: $move"
line "saw $egress  (the egress IP, now through $moved_to)" >/dev/null
# In this order: the selected pod's line, the holder, the move.
order=$(grep -n -F -e "$selected" -e "egress IP $egress is held by $held_by" -e "$move" "$out" |
  cut -d: -f1 | tr '\n' ' ')
[ "$order" = "$(tr ' ' '\n' <<<"$order" | grep . | sort -n | tr '\n' ' ')" ] ||
  fail "the lines are out of order (lines $order)"

# The bookkeeping part ran to its end.
ready=$(line " policies Ready (log: ")
[[ "$ready" =~ ([0-9]+)\ of\ ([0-9]+)\ policies ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] ||
  fail "not every example policy Ready: $ready"
line "== Metrics (a few of them)" >/dev/null
echo "demo_test: PASS: $egress (in the pool, no node's) seen for p3, ${node_address[2]} for p2;" \
  "moved $held_by -> $moved_to with the held connection alive"
