"""The far side of the router tests, run inside a network namespace the test
made: a DNS server (A records from argv), an HTTP server, an HTTPS server
with a test CA's certificate, and a byte source for throughput. Every TCP
connection accepted is written to the log, so a test can prove a host was
never reached. Bounded: it serves until killed, at most 10 minutes."""

import socket
import ssl
import struct
import sys
import threading
import time

address, log_path, cert, key = sys.argv[1:5]
records = dict(pair.split("=", 1) for pair in sys.argv[5:])
log_lock = threading.Lock()


def logged(port, peer):
    with log_lock, open(log_path, "a") as log:
        log.write(f"{port} {peer[0]}\n")


def dns():
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((address, 53))
    while True:
        data, peer = sock.recvfrom(1500)
        ident, flags, qd = struct.unpack("!HHH", data[:6])
        pos, labels = 12, []
        while data[pos]:
            labels.append(data[pos + 1 : pos + 1 + data[pos]].decode())
            pos += 1 + data[pos]
        qtype, _ = struct.unpack("!HH", data[pos + 1 : pos + 5])
        question = data[12 : pos + 5]
        name = ".".join(labels).lower()
        with log_lock, open(log_path, "a") as log:
            log.write(f"dns {name} {qtype}\n")
        answers = b""
        count = 0
        if name in records and qtype == 1:
            for ip in records[name].split(","):
                answers += b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton(ip)
                count += 1
        rcode = 0 if name in records else 3
        header = struct.pack("!HHHHHH", ident, 0x8180 | rcode, 1, count, 0, 0)
        sock.sendto(header + question + answers, peer)


def serve(port, handler, wrap=None):
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((address, port))
    listener.listen(64)
    while True:
        conn, peer = listener.accept()
        logged(port, peer)
        threading.Thread(target=handler, args=(conn, wrap), daemon=True).start()


def http(conn, wrap):
    try:
        if wrap:
            conn = wrap.wrap_socket(conn, server_side=True)
        conn.settimeout(10)
        request = b""
        while b"\r\n\r\n" not in request:
            chunk = conn.recv(4096)
            if not chunk:
                return
            request += chunk
        body = b"hello through the router\n"
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    except (OSError, ssl.SSLError):
        pass
    finally:
        conn.close()


def source(conn, wrap):
    """Sends the number of bytes the client asks for (8-byte count)."""
    try:
        want = struct.unpack("!Q", conn.recv(8))[0]
        block = b"\0" * (1 << 20)
        while want > 0:
            n = conn.send(block[: min(want, len(block))])
            want -= n
    except OSError:
        pass
    finally:
        conn.close()


context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
for target, args in [
    (dns, ()),
    (serve, (8080, http)),
    (serve, (8443, http, context)),
    (serve, (9000, source)),
]:
    threading.Thread(target=target, args=args, daemon=True).start()
print("ready", flush=True)
time.sleep(600)
