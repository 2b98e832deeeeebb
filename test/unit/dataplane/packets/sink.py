# The throughput bench's server: accepts on port 5201 and reads each connection to its end,
# discarding what it reads, then closes it (which tells the sender every byte arrived).
import socket, threading
srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("0.0.0.0", 5201))
srv.listen(16)
def drain(c):
    with c:
        while c.recv(1 << 16):
            pass
while True:
    c, _ = srv.accept()
    threading.Thread(target=drain, args=(c,), daemon=True).start()
