#!/bin/sh
# A three-node cluster topology, made inside the test's private network namespace (the test
# re-executes itself under `unshare -m -n`; every namespace below lives on a tmpfs /run/netns of
# that mount namespace and vanishes with it). No packet leaves these namespaces.
#   ul       bridge br0 for 192.168.50.0/24 (the underlay)
#   n1-n3    nodes .11-.13 (eth0; $EGW_NODE_PREFIX<i> if set), all.rp_filter=1, a flannel-like
#            VXLAN "CNI" (flannel.1, VNI 1, port 8472) with /24 pod subnets 10.244.N.0/24 and
#            the CNI's MASQUERADE
#   p1@n1 10.244.1.2, p2@n2 10.244.2.2, p3@n3 10.244.3.2, p3b@n3 10.244.3.3: pods behind veths
#            (a /32 each, default via 169.254.1.1, a permanent neighbour with the node veth's
#            MAC: Calico's layout without its proxy_arp, which needs a node default route),
#            made by pod.sh; none with EGW_PODS=0 (the data plane e2e makes its pods with the
#            addresses the test kubelet gave them)
#   ext      .100 and .101 on the underlay (::100 and ::101), where the echo server runs
# and the same in IPv6: the underlay fd00:50::/64 (nodes ::11-::13, ext ::100), pods
# fd00:244:N::2 (p3b ::3) routed by the CNI over flannel.1's link-locals, its MASQUERADE too.
set -eu
here=$(dirname "$0")
node=${EGW_NODE_PREFIX:-n}
mkdir -p /run/netns
mount -t tmpfs tmpfs /run/netns
ip link set lo up
for ns in ul ${node}1 ${node}2 ${node}3 ext; do
  ip netns add $ns
  ip netns exec $ns sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
  ip -n $ns link set lo up
done
ip -n ul link add br0 type bridge
ip -n ul link set br0 up
attach() {  # namespace, name in ul
  ip -n ul link add "$2" type veth peer name eth0 netns "$1"
  ip -n ul link set "$2" master br0 up
  ip -n "$1" link set eth0 up
}
attach ext v-ext
ip -n ext addr add 192.168.50.100/24 dev eth0
ip -n ext addr add 192.168.50.101/24 dev eth0
ip -n ext addr add fd00:50::100/64 dev eth0
# Deprecated (preferred_lft 0): it receives, but ext's own connections leave from ::100, as
# they leave from .100 (the primary) in IPv4.
ip -n ext addr add fd00:50::101/64 dev eth0 preferred_lft 0
for i in 1 2 3; do
  n=$node$i
  attach $n v-$n
  ip -n $n addr add 192.168.50.1$i/24 dev eth0
  ip -n $n addr add fd00:50::1$i/64 dev eth0
  ip netns exec $n sysctl -qw net.ipv6.conf.all.forwarding=1 net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=1 \
    net.ipv4.conf.default.rp_filter=1
  ip -n $n link add flannel.1 address 02:f1:00:00:00:0$i type vxlan id 1 dstport 8472 \
    local 192.168.50.1$i dev eth0 nolearning
  ip -n $n addr add 10.244.$i.0/32 dev flannel.1
  ip -n $n link set flannel.1 up
  for j in 1 2 3; do
    [ $j = $i ] && continue
    ip -n $n route add 10.244.$j.0/24 via 10.244.$j.0 dev flannel.1 onlink
    ip -n $n neigh add 10.244.$j.0 lladdr 02:f1:00:00:00:0$j dev flannel.1 nud permanent
    ip netns exec $n bridge fdb append 02:f1:00:00:00:0$j dev flannel.1 dst 192.168.50.1$j
    # The peer's flannel.1 link-local (EUI-64 of its MAC) is the IPv6 next hop.
    ip -n $n -6 route add fd00:244:$j::/64 via fe80::f1:ff:fe00:$j dev flannel.1
    ip -n $n -6 neigh add fe80::f1:ff:fe00:$j lladdr 02:f1:00:00:00:0$j dev flannel.1 \
      nud permanent
  done
  ip netns exec $n ip6tables -t nat -A POSTROUTING -s fd00:244::/32 ! -d fd00:244::/32 \
    -j MASQUERADE
  ip netns exec $n iptables -t nat -A POSTROUTING -s 10.244.0.0/16 ! -d 10.244.0.0/16 \
    -j MASQUERADE
done
[ "${EGW_PODS:-1}" = 0 ] && exit 0
sh "$here/pod.sh" p1 ${node}1 10.244.1.2 fd00:244:1::2
sh "$here/pod.sh" p2 ${node}2 10.244.2.2 fd00:244:2::2
sh "$here/pod.sh" p3 ${node}3 10.244.3.2 fd00:244:3::2
sh "$here/pod.sh" p3b ${node}3 10.244.3.3 fd00:244:3::3
