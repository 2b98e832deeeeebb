#!/bin/sh
# A pod of topology.sh: network namespace POD behind a veth on node namespace NODE, with IPV4/32
# and IPV6/128, its default routes via 169.254.1.1 and fe80::1 with permanent neighbours (the node
# veth's MAC), and the node's routes to it.
# Usage: pod.sh POD NODE IPV4 IPV6
set -eu
pod=$1 node=$2 v4=$3 v6=$4
ip netns add "$pod"
ip netns exec "$pod" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
ip -n "$pod" link set lo up
ip -n "$node" link add "v-$pod" type veth peer name eth0 netns "$pod"
ip -n "$node" link set "v-$pod" up
ip -n "$node" route add "$v4/32" dev "v-$pod"
ip -n "$pod" addr add "$v4/32" dev eth0
ip -n "$pod" link set eth0 up
ip -n "$pod" route add 169.254.1.1 dev eth0
mac=$(ip -n "$node" -o link show dev "v-$pod" | sed 's|.*link/ether \([0-9a-f:]*\).*|\1|')
ip -n "$pod" neigh add 169.254.1.1 lladdr "$mac" dev eth0 nud permanent
ip -n "$pod" route add default via 169.254.1.1 dev eth0
ip -n "$node" -6 route add "$v6/128" dev "v-$pod"
ip -n "$pod" addr add "$v6/128" dev eth0
ip -n "$pod" -6 neigh add fe80::1 lladdr "$mac" dev eth0 nud permanent
ip -n "$pod" -6 route add default via fe80::1 dev eth0
