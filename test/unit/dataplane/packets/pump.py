# The throughput bench's client: sends 64 KiB writes to HOST:5201 for SECS seconds, then waits
# until the server has read them all (it closes after our end of stream) and prints
# "<bytes> <seconds>", or "error: <reason>".
import socket, sys, time
try:
    s = socket.create_connection((sys.argv[1], 5201), timeout=10)
    chunk = b"x" * 65536
    sent = 0
    start = time.time()
    end = start + float(sys.argv[2])
    while time.time() < end:
        s.sendall(chunk)
        sent += len(chunk)
    s.shutdown(socket.SHUT_WR)
    s.recv(1)
    print("%d %.3f" % (sent, time.time() - start))
except OSError as e:
    print("error: %s" % e)
