#!/usr/bin/env bash
# The test "kubelet": registers N fake Nodes (Ready, with allocatable cpu/memory/pods) and makes
# every pod the scheduler binds to one of them Running and Ready, with a pod IP from the node's
# range, so ReplicaSets and Deployments become Available through the real controllers. Pods that
# are being deleted are removed at once (there are no containers to stop). Nothing is executed.
#
# The fallback for up.sh without --kubelet: after a build, the e2e tests, demo.sh and bench.sh
# run the C++ kubelet (test/testenv_kubelet, egress-testenv-kubelet) instead, which does the
# same for hundreds of pods per second; this script runs one kubectl per pod.
#
# Usage: kubelet.sh RUN_DIR   (started by supervise.sh; N is read from RUN_DIR/nodes)
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

dir=$1
nodes=$(cat "$dir/nodes")
prefix=egress-node-
k() { tkubectl "$dir" "$@"; }
now() { date -u +%Y-%m-%dT%H:%M:%SZ; }

register_node() { # index
  local i=$1 name="$prefix$1" t
  t=$(now)
  k apply --server-side --field-manager egress-testenv-kubelet -f - >/dev/null <<NODE || return 1
apiVersion: v1
kind: Node
metadata:
  name: $name
  labels:
    kubernetes.io/hostname: $name
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    egress.testenv/fake: "true"
spec:
  podCIDR: 10.244.$i.0/24
  podCIDRs: [10.244.$i.0/24]
NODE
  # Status through the status subresource, as a kubelet posts it.
  k patch node "$name" --subresource=status --type=merge -p "$(cat <<STATUS
{"status": {
  "capacity":    {"cpu": "16", "memory": "64Gi", "pods": "250", "ephemeral-storage": "100Gi"},
  "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "250", "ephemeral-storage": "100Gi"},
  "addresses": [{"type": "InternalIP", "address": "127.0.1.$i"}, {"type": "Hostname", "address": "$name"}],
  "conditions": [
    {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "egress test kubelet",
     "lastHeartbeatTime": "$t", "lastTransitionTime": "$t"},
    {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory",
     "lastHeartbeatTime": "$t", "lastTransitionTime": "$t"},
    {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure",
     "lastHeartbeatTime": "$t", "lastTransitionTime": "$t"},
    {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID",
     "lastHeartbeatTime": "$t", "lastTransitionTime": "$t"}],
  "nodeInfo": {"kubeletVersion": "v1.20.0-egress-testenv", "operatingSystem": "linux",
               "architecture": "amd64", "containerRuntimeVersion": "fake://0",
               "kernelVersion": "", "osImage": "egress testenv", "kubeProxyVersion": "",
               "machineID": "", "systemUUID": "", "bootID": ""}}}
STATUS
)" >/dev/null || return 1
  # Admission (TaintNodesByCondition) taints new nodes not-ready; with the node lifecycle
  # controller off nothing else would remove it.
  k taint nodes "$name" node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
}

for i in $(seq 1 "$nodes"); do
  until register_node "$i"; do sleep 0.5; done
  tlog "registered node $prefix$i"
done

declare -A next_ip=()
run_pod() { # namespace name node containers(comma-separated name=image)
  local ns=$1 name=$2 node=$3 containers=$4 idx t ip statuses="" c
  idx=${node#"$prefix"}
  n=$(( ${next_ip[$idx]:-1} ))
  next_ip[$idx]=$(( n % 250 + 1 ))
  ip="10.244.$idx.$((n + 1))"
  t=$(now)
  IFS=, read -ra cs <<<"$containers"
  for c in "${cs[@]}"; do
    statuses+="${statuses:+,}{\"name\": \"${c%%=*}\", \"image\": \"${c#*=}\", \"imageID\": \"\",
      \"ready\": true, \"started\": true, \"restartCount\": 0, \"state\": {\"running\": {\"startedAt\": \"$t\"}}}"
  done
  k -n "$ns" patch pod "$name" --subresource=status --type=merge -p "$(cat <<STATUS
{"status": {"phase": "Running", "hostIP": "127.0.1.$idx", "podIP": "$ip", "podIPs": [{"ip": "$ip"}],
  "startTime": "$t", "containerStatuses": [$statuses],
  "conditions": [
    {"type": "Initialized", "status": "True", "lastTransitionTime": "$t"},
    {"type": "Ready", "status": "True", "lastTransitionTime": "$t"},
    {"type": "ContainersReady", "status": "True", "lastTransitionTime": "$t"},
    {"type": "PodScheduled", "status": "True", "lastTransitionTime": "$t"}]}}
STATUS
)" >/dev/null 2>&1
}

# One line per pod event: namespace, name, node, phase, Ready status, deletionTimestamp,
# containers (name=image,...).
pod_events() {
  k get pods --all-namespaces --watch --output-watch-events -o json 2>>"$dir/logs/kubelet-watch.log" |
    jq --unbuffered -r 'select(.type != "DELETED") | .object |
      select((.spec.nodeName // "") | startswith("'"$prefix"'")) |
      [.metadata.namespace, .metadata.name, .spec.nodeName, (.status.phase // "-"),
       ([(.status.conditions // [])[] | select(.type == "Ready") | .status][0] // "-"),
       (.metadata.deletionTimestamp // "-"),
       ([.spec.containers[] | "\(.name)=\(.image)"] | join(","))] | @tsv'
}

while :; do
  while IFS=$'\t' read -r ns name node phase ready deleting containers; do
    if [ "$deleting" != "-" ]; then
      k -n "$ns" delete pod "$name" --grace-period=0 --force --wait=false >/dev/null 2>&1
    elif [ "$phase" != "Running" ] || [ "$ready" != "True" ]; then
      run_pod "$ns" "$name" "$node" "$containers" && tlog "running $ns/$name on $node"
    fi
  done < <(pod_events)
  sleep 0.5 # the watch ended (server timeout or restart): list and watch again
done
