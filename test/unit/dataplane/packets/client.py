# A pod's client: connects to HOST:PORT (PORT 8080 unless given; 3 s) and prints the first line the server answers (the
# address it saw), or "error: <reason>"; exits 0 either way. Then, by MODE:
#   bulk        writes 200 times 1400 bytes (DF, as Linux TCP sends) and reads them all back:
#               "bulk ok" or "bulk broken: <reason>"
#   hold:SECS[:WAIT]  keeps the connection for SECS, one echoed line every 0.2 s, each echo
#               awaited up to WAIT s (5): "held ok N" (N lines) or "held broken after N: <reason>"
#   -           nothing more
import socket, sys, time
mode = sys.argv[2] if len(sys.argv) > 2 else ""
port = int(sys.argv[3]) if len(sys.argv) > 3 else 8080
try:
    s = socket.create_connection((sys.argv[1], port), timeout=3)
    f = s.makefile("rb")
    print(f.readline().decode().strip(), flush=True)
except OSError as e:
    print("error: %s" % e)
    sys.exit(0)
if mode == "bulk":
    try:
        chunk = b"x" * 1400
        for _ in range(200):
            s.sendall(chunk)
            got = f.read(1400)
            if got != chunk:
                raise OSError("short echo")
        print("bulk ok")
    except OSError as e:
        print("bulk broken: %s" % e)
elif mode.startswith("hold:"):
    hold = mode[5:].split(":")
    end = time.time() + float(hold[0])
    n = 0
    s.settimeout(float(hold[1]) if len(hold) > 1 else 5)
    try:
        while time.time() < end:
            line = ("ping %d\n" % n).encode()
            s.sendall(line)
            if f.readline() != line:
                raise OSError("wrong echo")
            n += 1
            time.sleep(0.2)
        print("held ok %d" % n)
    except OSError as e:
        print("held broken after %d: %s" % (n, e))
