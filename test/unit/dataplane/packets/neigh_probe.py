# Who answers for an address on this segment: ARP who-has for IPV4 and a neighbour solicitation
# for IPV6 (either may be "-"), sent from IFACE, and the link-layer addresses of every answer
# within WAIT seconds. Once: prints "v4 MAC,MAC v6 MAC" ("-" for none). With EVERY and FOR:
# repeats every EVERY seconds for FOR seconds, one line per probe, "T v4 ... v6 ..." (T: seconds
# since the start), so a test can say whether two hosts ever answered at once.
# Usage: neigh_probe.py IFACE IPV4 IPV6 [EVERY FOR]
import fcntl, select, socket, struct, sys, time
iface, v4, v6 = sys.argv[1:4]
every = float(sys.argv[4]) if len(sys.argv) > 4 else 0
total = float(sys.argv[5]) if len(sys.argv) > 5 else 0
WAIT = 0.08 if every else 0.3
def ifmac(name):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    info = fcntl.ioctl(s.fileno(), 0x8927, struct.pack("256s", name[:15].encode()))
    return info[18:24]
def ifaddr4(name):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    return fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name[:15].encode()))[20:24]
mac = ifmac(iface)
text = lambda m: ":".join("%02x" % b for b in m)
arp = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0806))
arp.bind((iface, 0x0806))
icmp = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
icmp.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
icmp.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS, 255)
icmp.setsockopt(socket.SOL_SOCKET, 25, iface.encode())  # SO_BINDTODEVICE
def probe():
    seen4, seen6 = set(), set()
    if v4 != "-":
        target = socket.inet_aton(v4)
        req = (b"\xff" * 6 + mac + b"\x08\x06" +
               struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + mac + ifaddr4(iface) + b"\0" * 6 + target)
        arp.send(req)
    if v6 != "-":
        t = socket.inet_pton(socket.AF_INET6, v6)
        solicited = socket.inet_pton(socket.AF_INET6, "ff02::1:ff00:0")[:13] + t[13:]
        ns = struct.pack("!BBHI", 135, 0, 0, 0) + t + struct.pack("!BB", 1, 1) + mac
        icmp.sendto(ns, (socket.inet_ntop(socket.AF_INET6, solicited), 0, 0,
                         socket.if_nametoindex(iface)))
    end = time.time() + WAIT
    while time.time() < end:
        r, _, _ = select.select([arp, icmp], [], [], max(0, end - time.time()))
        if arp in r:
            pkt = arp.recv(2048)
            op, spa = struct.unpack("!H", pkt[20:22])[0], pkt[28:32]
            if op == 2 and v4 != "-" and spa == socket.inet_aton(v4):
                seen4.add(text(pkt[22:28]))
        if icmp in r:
            pkt, _ = icmp.recvfrom(2048)
            if pkt[0] == 136 and v6 != "-" and pkt[8:24] == socket.inet_pton(socket.AF_INET6, v6):
                opts = pkt[24:]
                while len(opts) >= 8 and opts[1]:
                    if opts[0] == 2:
                        seen6.add(text(opts[2:8]))
                    opts = opts[opts[1] * 8:]
    return "v4 %s v6 %s" % (",".join(sorted(seen4)) or "-", ",".join(sorted(seen6)) or "-")
if not every:
    print(probe())
    sys.exit(0)
start = time.time()
while time.time() - start < total:
    t = time.time() - start
    print("%.2f %s" % (t, probe()), flush=True)
    time.sleep(max(0, every - (time.time() - start - t)))
