"""The far side of the router tests, run inside a network namespace the test
made: a DNS server (A and AAAA records from argv), an HTTP server, an HTTPS server
with a test CA's certificate, and a byte source for throughput. Every TCP
connection accepted is written to the log, so a test can prove a host was
never reached. Bounded: it serves until killed, at most 10 minutes."""

import socket
import ssl
import struct
import sys
import threading
import time

addresses, log_path, cert, key = sys.argv[1:5]
addresses = addresses.split(",")
records = dict(pair.split("=", 1) for pair in sys.argv[5:])
log_lock = threading.Lock()


def logged(port, peer, local):
    with log_lock, open(log_path, "a") as log:
        log.write(f"{port} {peer[0]} {local}\n")


def family(address):
    return socket.AF_INET6 if ":" in address else socket.AF_INET


def dns(sock):
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
        for ip in records.get(name, "").split(","):
            kind = family(ip) if ip else None
            if kind == socket.AF_INET and qtype == 1:
                answers += b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton(ip)
                count += 1
            elif kind == socket.AF_INET6 and qtype == 28:
                data = socket.inet_pton(socket.AF_INET6, ip)
                answers += b"\xc0\x0c" + struct.pack("!HHIH", 28, 1, 60, 16) + data
                count += 1
        rcode = 0 if name in records else 3
        header = struct.pack("!HHHHHH", ident, 0x8180 | rcode, 1, count, 0, 0)
        sock.sendto(header + question + answers, peer)


def listen(address, port):
    listener = socket.socket(family(address))
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((address, port))
    listener.listen(64)
    return listener


def serve(listener, handler, wrap=None):
    port = listener.getsockname()[1]
    while True:
        conn, peer = listener.accept()
        logged(port, peer, conn.getsockname()[0])
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
# Every socket is bound before "ready", so a test never races the servers.
dns_socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
dns_socket.bind((addresses[0], 53))
threading.Thread(target=dns, args=(dns_socket,), daemon=True).start()
for address in addresses:
    for port, *args in [(8080, http), (8443, http, context), (9000, source)]:
        listener = listen(address, port)
        threading.Thread(target=serve, args=(listener, *args), daemon=True).start()
print("ready", flush=True)
time.sleep(600)
