"""A git server over HTTP with Basic auth, for the push tests, run inside the
far namespace of the lab: `git http-backend` (git's own smart HTTP server,
as a CGI program) behind a small HTTP server that refuses every request
without the one user name and password it was given (401 with a Basic
challenge, which is what makes git ask for a credential). Every request is
logged as method, path and whether it was authorised: never the password.
Bounded: it serves until killed, at most 10 minutes."""

import base64
import http.server
import os
import subprocess
import sys
import threading
import time

address, port, root, user, password, log_path = sys.argv[1:7]
expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
log_lock = threading.Lock()


def body_of(handler):
    """The request's body, by Content-Length or chunked."""
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        body = b""
        while True:
            size = int(handler.rfile.readline().split(b";")[0], 16)
            if size == 0:
                handler.rfile.readline()
                return body
            body += handler.rfile.read(size)
            handler.rfile.readline()
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length else b""


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def serve(self, method):
        given = self.headers.get("Authorization")
        verdict = "anonymous" if given is None else "authorised" if given == expected else "wrong"
        with log_lock, open(log_path, "a") as log:
            log.write(f"{method} {self.path} {verdict}\n")
        body = body_of(self)
        if verdict != "authorised":
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="chock test"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        path, _, query = self.path.partition("?")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": root,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_PROJECT_ROOT": root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "REMOTE_USER": user,
            "REMOTE_ADDR": self.client_address[0],
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
        }
        out = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, timeout=60
        ).stdout
        head, _, rest = out.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.split(b"\r\n"):
            name, _, value = line.decode().partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(rest)))
        self.end_headers()
        self.wfile.write(rest)

    def do_GET(self):
        self.serve("GET")

    def do_POST(self):
        self.serve("POST")


server = http.server.ThreadingHTTPServer((address, int(port)), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
print("ready", flush=True)
time.sleep(600)
