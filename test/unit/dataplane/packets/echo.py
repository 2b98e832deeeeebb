# The external server: a TCP echo that answers each connection with the address and port it saw
# (one line), and appends the address to a log, so a test can say what never arrived. UDP on
# the same port is logged as "udp ADDRESS:PORT PAYLOAD" (what a tunnel frame carried).
import socket, sys, threading
log = open(sys.argv[1], "a", buffering=1)
def listen(family, addr):
    srv = socket.socket(family, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        # Its own socket, so IPv4 peers never show as ::ffff:a.b.c.d.
        srv.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    srv.bind((addr, 8080))
    srv.listen(64)
    return srv
def serve(c, peer):
    log.write(peer[0] + "\n")
    try:
        c.sendall(("%s:%d\n" % peer[:2]).encode())
        while True:
            data = c.recv(65536)
            if not data:
                break
            c.sendall(data)
    finally:
        c.close()
def accept(srv):
    while True:
        c, peer = srv.accept()
        threading.Thread(target=serve, args=(c, peer), daemon=True).start()
def udp():
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("0.0.0.0", 8080))
    while True:
        data, peer = u.recvfrom(65536)
        log.write("udp %s:%d %s\n" % (peer[0], peer[1], data.decode(errors="replace")))
threading.Thread(target=udp, daemon=True).start()
v6 = listen(socket.AF_INET6, "::")
threading.Thread(target=accept, args=(v6,), daemon=True).start()
accept(listen(socket.AF_INET, "0.0.0.0"))
