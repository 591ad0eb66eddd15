#!/usr/bin/env python3
"""What a model turn costs `chock run`, `claude -p` and `codex exec`
around the model, on the same scripted model server.

A scripted model on loopback answers at once, in each API's stream
(Anthropic Messages for `chock run` and `claude -p`, OpenAI Responses
for `codex exec`), and times its own work on every request, which is
subtracted. It asks for one tool call a turn until the conversation holds
N results, then ends: a file read (`read_file`, Claude Code's `Read`)
or, for Codex, its shell tool running `cat a.txt`. A request without tools
(a side request some agents make) is answered with text at once.

Each agent runs ROUNDS times with N = 0 (the model ends at once: the
start and one turn) and with N turns, interleaved; per turn is
(median(N) - median(0)) / N: the request built and sent with the whole
conversation so far, the reply read, the tool run, and whatever the agent
records of it.

usage: run-peers.py [--chock PATH] [--claude PATH] [--codex PATH] [--turns N] [--rounds R]
An agent whose PATH is not given (or not there) is left out.
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
    """The scripted model: answers with a tool call while the request's
    conversation holds fewer than `turns` tool results."""

    def __init__(self):
        self.turns = 0
        self.spent = 0.0
        self.requests = 0
        self.failed = None
        self.lock = threading.Lock()


def sse(name, body):
    return f"event: {name}\ndata: {json.dumps(body)}\n\n"


def anthropic_reply(call):
    events = [
        sse("message_start", {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "m1", "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}}),
        sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ]
    if call:
        call_id, name, arguments = call
        events.append(sse("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}}}))
        events.append(sse("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": json.dumps(arguments)}}))
        events.append(sse("content_block_stop", {"type": "content_block_stop", "index": 1}))
    stop = "tool_use" if call else "end_turn"
    events.append(sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}}))
    events.append(sse("message_stop", {"type": "message_stop"}))
    return "".join(events).encode()


def responses_reply(call):
    response = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "m1", "output": []}
    events = [sse("response.created", {"type": "response.created", "sequence_number": 0, "response": response})]
    message = {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant", "content": [{"type": "output_text", "text": "ok", "annotations": []}]}
    events.append(sse("response.output_item.added", {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": {**message, "status": "in_progress", "content": []}}))
    events.append(sse("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": 2, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "ok"}))
    events.append(sse("response.output_item.done", {"type": "response.output_item.done", "sequence_number": 3, "output_index": 0, "item": message}))
    output = [message]
    if call:
        call_id, name, arguments = call
        item = {"id": "fc_1", "type": "function_call", "status": "completed", "call_id": call_id, "name": name, "arguments": json.dumps(arguments)}
        events.append(sse("response.output_item.added", {"type": "response.output_item.added", "sequence_number": 4, "output_index": 1, "item": {**item, "arguments": ""}}))
        events.append(sse("response.output_item.done", {"type": "response.output_item.done", "sequence_number": 5, "output_index": 1, "item": item}))
        output.append(item)
    done = {**response, "status": "completed", "output": output, "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15, "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}
    events.append(sse("response.completed", {"type": "response.completed", "sequence_number": 6, "response": done}))
    return "".join(events).encode()


def results_in(body):
    """The tool results the request's conversation holds."""
    count = 0
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            count += sum(1 for block in content if isinstance(block, dict) and block.get("type") == "tool_result")
    for item in body.get("input", []) if isinstance(body.get("input"), list) else []:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            count += 1
    return count


def last_result(body):
    """The text of the request's newest tool result, as JSON text."""
    found = None
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    found = block.get("content")
    for item in body.get("input", []) if isinstance(body.get("input"), list) else []:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            found = item.get("output")
    return json.dumps(found)


def tool_names(body):
    names = []
    for tool in body.get("tools", []):
        names.append(tool.get("name") or tool.get("function", {}).get("name") or tool.get("type"))
    return names


def call_for(body, project, n):
    """The one tool call of turn `n`, in the tool this agent offers."""
    names = tool_names(body)
    if "read_file" in names:
        return (f"toolu_{n}", "read_file", {"path": "a.txt"})
    if "Read" in names:
        return (f"toolu_{n}", "Read", {"file_path": str(project / "a.txt")})
    if "shell" in names:
        return (f"call_{n}", "shell", {"command": ["cat", "a.txt"], "workdir": str(project)})
    if "exec_command" in names:
        return (f"call_{n}", "exec_command", {"cmd": "cat a.txt", "workdir": str(project)})
    sys.exit(f"the agent offers no tool the bench knows: {names}")


def handler_for(model, project):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def answer(self, status, kind, body):
            # One write, with Nagle off: headers and body written apart
            # would wait out the client's delayed ACK (40 ms) per request.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            head = (f"HTTP/1.1 {status} OK\r\ncontent-type: {kind}\r\ncontent-length: {len(body)}\r\n\r\n").encode()
            self.wfile.write(head + body)
            self.wfile.flush()

        def do_GET(self):
            self.answer(404, "application/json", b'{"error": {"type": "not_found", "message": "no"}}')

        def do_HEAD(self):
            self.answer(200, "text/plain", b"")

        def do_POST(self):
            started = time.perf_counter()
            length = int(self.headers.get("content-length", "0"))
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw)
            except ValueError:
                body = {}
            if "count_tokens" in self.path:
                self.answer(200, "application/json", b'{"input_tokens": 10}')
            else:
                call = None
                # Every turn's tool really ran: its result holds the file.
                if results_in(body) and "one" not in last_result(body):
                    with model.lock:
                        model.failed = last_result(body)[:500]
                if body.get("tools") and results_in(body) < model.turns:
                    call = call_for(body, project, results_in(body))
                reply = responses_reply(call) if "/responses" in self.path else anthropic_reply(call)
                self.answer(200, "text/event-stream", reply)
            with model.lock:
                model.spent += time.perf_counter() - started
                model.requests += 1

    return Handler


def setup(root, port):
    env = {key: value for key, value in os.environ.items() if not key.startswith(("CHOCK_", "ANTHROPIC_", "OPENAI_", "CLAUDE_", "CODEX_"))}
    env.update(
        HOME=str(root / "home"),
        XDG_CONFIG_HOME=str(root / "config"),
        XDG_DATA_HOME=str(root / "data"),
        XDG_STATE_HOME=str(root / "state"),
        XDG_CACHE_HOME=str(root / "cache"),
        GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.org",
        GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.org",
        # Claude Code
        ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}",
        ANTHROPIC_API_KEY="sk-ant-bench",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1",
        # Codex
        CODEX_HOME=str(root / "codex"),
        BENCH_KEY="sk-bench",
    )
    (root / "home").mkdir()
    (root / "config/chock").mkdir(parents=True)
    (root / "config/chock/config.zon").write_text(
        '.{ .providers = .{ .{ .name = "loop", .kind = .anthropic, '
        f'.base_url = "http://127.0.0.1:{port}", .key = .none }} }} }}\n'
    )
    (root / "codex").mkdir()
    (root / "codex/config.toml").write_text(
        'model = "m1"\nmodel_provider = "bench"\n\n[model_providers.bench]\nname = "bench"\n'
        f'base_url = "http://127.0.0.1:{port}/v1"\nwire_api = "responses"\nenv_key = "BENCH_KEY"\n'
        "request_max_retries = 0\nstream_max_retries = 0\n"
    )
    project = root / "project"
    project.mkdir()
    (project / "a.txt").write_text("one\n" * 100)
    (project / "chock.zon").write_text(".{}\n")
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *args], cwd=project, env=env, check=True)
    return env, project


def commands(args):
    agents = {}
    if args.chock and Path(args.chock).exists():
        agents["chock run"] = [str(Path(args.chock).resolve()), "run", "--model", "m1", "--max-turns", "10000", "--", "read a.txt"]
    if args.claude and Path(args.claude).exists():
        agents["claude -p"] = [str(Path(args.claude).resolve()), "-p", "read a.txt", "--model", "claude-sonnet-4-5", "--max-turns", "10000"]
    if args.codex and Path(args.codex).exists():
        agents["codex exec"] = [str(Path(args.codex).resolve()), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "read a.txt"]
    return agents


def session(command, env, project, model, turns):
    """One run: its wall time less the model's own."""
    model.turns = turns
    model.spent = 0.0
    model.requests = 0
    model.failed = None
    started = time.perf_counter()
    out = subprocess.run(command, cwd=project, env=env, capture_output=True, stdin=subprocess.DEVNULL, timeout=600)
    wall = time.perf_counter() - started
    if out.returncode != 0:
        sys.exit(f"{command[0]} failed ({out.returncode}): {out.stderr.decode()[-3000:]}")
    if model.failed:
        sys.exit(f"{command[0]}: a tool call did not read the file: {model.failed}")
    if model.requests < turns + 1:
        sys.exit(f"{command[0]} sent {model.requests} requests for {turns} turns: {out.stdout.decode()[-2000:]}")
    return wall - model.spent, model.requests


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chock", default="target/release/chock")
    parser.add_argument("--claude")
    parser.add_argument("--codex")
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    n = args.turns
    model = Model()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler_for(model, root / "project"))
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        env, project = setup(root, httpd.server_address[1])
        agents = commands(args)
        times = {(name, turns): [] for name in agents for turns in (0, n)}
        requests = {}
        for _ in range(args.rounds):
            for name, command in agents.items():
                for turns in (0, n):
                    spent, sent = session(command, env, project, model, turns)
                    times[(name, turns)].append(spent)
                    requests[(name, turns)] = sent
        httpd.shutdown()
    for name in agents:
        start = statistics.median(times[(name, 0)])
        long = statistics.median(times[(name, n)])
        per_turn = (long - start) / n
        print(f"{name}: start and one turn {start * 1000:.1f} ms ({requests[(name, 0)]} requests); "
              f"{n} turns {long * 1000:.1f} ms ({requests[(name, n)]} requests); per turn {per_turn * 1000:.2f} ms")


if __name__ == "__main__":
    main()
