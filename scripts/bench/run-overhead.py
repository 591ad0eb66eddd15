#!/usr/bin/env python3
"""What `chock run` adds per tool call and per turn, the model left out.

A scripted model on loopback (Anthropic Messages, streamed) answers at once
and times its own work on every request, which is subtracted. In the same
run, on one fresh git project:

  start   a session whose model answers at once with no tool call
  calls   one turn asking for N read_file calls, then the end
  turns   N turns of one read_file call each, then the end
  mcp     N read_file calls over `chock mcp` (JSON-RPC on stdio), the
          same tool through the same session and gate, for the ratio

per call = (calls - start) / N; per turn = (turns - calls) / N (a turn's
request carries the whole conversation so far, as every agent's does).
Each measure is the median of ROUNDS runs.

usage: run-overhead.py [--chock PATH] [--calls N] [--rounds R]
"""

import argparse
import http.server
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


class Model:
    """The scripted model: `plan` is a list of replies, each a list of
    tool calls (an empty list ends the session)."""

    def __init__(self):
        self.plan = []
        self.spent = 0.0
        self.lock = threading.Lock()

    def next_reply(self):
        with self.lock:
            return self.plan.pop(0) if self.plan else []


def sse(name, body):
    return f"event: {name}\ndata: {json.dumps(body)}\n\n"


def reply_bytes(calls):
    events = [
        sse("message_start", {"type": "message_start", "message": {"id": "msg", "type": "message", "role": "assistant", "content": [], "model": "m", "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}}),
        sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ]
    for i, (call_id, name, arguments) in enumerate(calls, start=1):
        events.append(sse("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}}}))
        events.append(sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": json.dumps(arguments)}}))
        events.append(sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    stop = "tool_use" if calls else "end_turn"
    events.append(sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 5}}))
    events.append(sse("message_stop", {"type": "message_stop"}))
    return "".join(events).encode()


def handler_for(model):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            started = time.perf_counter()
            length = int(self.headers.get("content-length", "0"))
            json.loads(self.rfile.read(length))
            body = reply_bytes(model.next_reply())
            # One write, with Nagle off: headers and body written apart
            # would wait out the client's delayed ACK (40 ms) per request.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            head = (
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                f"content-length: {len(body)}\r\n\r\n"
            ).encode()
            self.wfile.write(head + body)
            self.wfile.flush()
            with model.lock:
                model.spent += time.perf_counter() - started

    return Handler


def read_file(i):
    return (f"toolu_{i}", "read_file", {"path": "a.txt"})


def setup(root, port):
    env = dict(os.environ)
    for key in ("CHOCK_PROVIDER", "CHOCK_MODEL"):
        env.pop(key, None)
    env.update(
        HOME=str(root / "home"),
        XDG_CONFIG_HOME=str(root / "config"),
        XDG_DATA_HOME=str(root / "data"),
        XDG_STATE_HOME=str(root / "state"),
        XDG_CACHE_HOME=str(root / "cache"),
        GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.org",
        GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.org",
    )
    (root / "home").mkdir()
    (root / "config/chock").mkdir(parents=True)
    (root / "config/chock/config.zon").write_text(
        '.{ .providers = .{ .{ .name = "loop", .kind = .anthropic, '
        f'.base_url = "http://127.0.0.1:{port}", .key = .none }} }} }}\n'
    )
    project = root / "project"
    project.mkdir()
    (project / "a.txt").write_text("one\n" * 100)
    (project / "chock.zon").write_text(".{}\n")
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *args], cwd=project, env=env, check=True)
    return env, project


def session(chock, env, project, model, plan):
    """One `chock run`: its wall time less the model's own."""
    model.plan = [list(reply) for reply in plan]
    model.spent = 0.0
    started = time.perf_counter()
    out = subprocess.run(
        [chock, "run", "--model", "m1", "--max-turns", "10000", "--", "read a.txt"],
        cwd=project, env=env, capture_output=True,
    )
    wall = time.perf_counter() - started
    if out.returncode != 0:
        sys.exit(f"chock run failed ({out.returncode}): {out.stderr.decode()[-2000:]}")
    return wall - model.spent


def mcp_calls(chock, env, project, count):
    """`count` read_file calls over `chock mcp`, one after another: the
    time from the first request to the last answer."""
    server = subprocess.Popen(
        [chock, "mcp"], cwd=project, env=env,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )

    def request(message):
        server.stdin.write((json.dumps(message) + "\n").encode())
        server.stdin.flush()
        if "id" in message:
            return json.loads(server.stdout.readline())
        return None

    request({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    request({"jsonrpc": "2.0", "method": "notifications/initialized"})
    started = time.perf_counter()
    for i in range(1, count + 1):
        answer = request({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "read_file", "arguments": {"path": "a.txt"}}})
        if answer.get("result", {}).get("isError", True):
            sys.exit(f"read_file over chock mcp failed: {answer}")
    spent = time.perf_counter() - started
    server.stdin.close()
    server.wait()
    return spent


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chock", default="target/release/chock")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    chock = str(Path(args.chock).resolve())
    n = args.calls

    model = Model()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler_for(model))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory() as tmp:
        env, project = setup(Path(tmp), httpd.server_address[1])
        plans = {
            "start": [[]],
            "calls": [[read_file(i) for i in range(n)], []],
            "turns": [[read_file(i)] for i in range(n)] + [[]],
        }
        times = {name: [] for name in (*plans, "mcp")}
        for _ in range(args.rounds):
            for name, plan in plans.items():
                times[name].append(session(chock, env, project, model, plan))
            times["mcp"].append(mcp_calls(chock, env, project, n))
    httpd.shutdown()

    median = {name: statistics.median(values) for name, values in times.items()}
    per_call = (median["calls"] - median["start"]) / n
    per_turn = (median["turns"] - median["calls"]) / n
    per_mcp = median["mcp"] / n
    print(f"session start, model left out: {median['start'] * 1000:.1f} ms")
    print(f"per tool call (read_file), chock run: {per_call * 1e6:.0f} us")
    print(f"per tool call (read_file), chock mcp over stdio: {per_mcp * 1e6:.0f} us")
    print(f"ratio chock run / chock mcp per call: {per_call / per_mcp:.2f}x")
    print(f"per turn (one call, the conversation resent), model left out: {per_turn * 1e6:.0f} us")


if __name__ == "__main__":
    main()
