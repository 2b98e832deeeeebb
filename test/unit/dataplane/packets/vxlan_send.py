# Sends one raw VXLAN frame, as a node's tunnel endpoint would (or a pod pretending to be one):
# UDP to DST:PORT carrying VNI, an Ethernet frame from SRC_MAC to DST_MAC, and in it an IPv4 UDP
# datagram INNER_SRC:40000 -> INNER_DST:INNER_PORT whose payload is PAYLOAD.
# Usage: vxlan_send.py DST PORT VNI SRC_MAC DST_MAC INNER_SRC INNER_DST INNER_PORT PAYLOAD
import socket, struct, sys
dst, port, vni, smac, dmac, isrc, idst, iport, payload = sys.argv[1:10]
def mac(text):
    return bytes(int(b, 16) for b in text.split(":"))
def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
body = payload.encode()
udp = struct.pack("!HHHH", 40000, int(iport), 8 + len(body), 0) + body
src, dstaddr = socket.inet_aton(isrc), socket.inet_aton(idst)
pseudo = src + dstaddr + struct.pack("!BBH", 0, 17, len(udp))
udp = udp[:6] + struct.pack("!H", checksum(pseudo + udp) or 0xffff) + udp[8:]
ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0, src, dstaddr)
ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
frame = mac(dmac) + mac(smac) + b"\x08\x00" + ip + udp
vxlan = struct.pack("!II", 0x08000000, int(vni) << 8)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(vxlan + frame, (dst, int(port)))
print("sent")
