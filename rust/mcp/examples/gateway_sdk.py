"""The gateway's added latency per tools/call, measured with the official
MCP Python SDK as the client, against the same server called directly with
the same SDK, one call at a time and 100 at once, in one run.

    cargo build --release -p chock
    python3 rust/mcp/examples/gateway_sdk.py target/release/chock [CALLS] [ROUNDS]

It needs npm's `@modelcontextprotocol/server-everything` and PyPI's `mcp`
(`scripts/setup` installs both). For each of the two servers (the
everything server started directly, and `chock mcp` on a fresh project,
its own HOME, XDG folders and decision log, whose chock.zon names the
same server in the sandbox and allows its `echo`) it sends CALLS calls of
`echo` one after another (each answered before the next goes, the first 50
warm up and are not counted), then ROUNDS rounds of 100 calls sent at once,
timing each call from its send to its answer and each round whole. The
machine's load average before and after is printed beside the figures.
"""

import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

WARM = 50
AT_ONCE = 100


def quantile(times, q):
    times = sorted(times)
    return times[int((len(times) - 1) * q)]


async def measure(params, tool, calls, rounds):
    with open(os.devnull, "w") as quiet:
        return await measured(params, tool, calls, rounds, quiet)


async def measured(params, tool, calls, rounds, quiet):
    async with stdio_client(params, errlog=quiet) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()

            async def one():
                began = time.perf_counter()
                result = await session.call_tool(tool, {"message": "hello"})
                took = time.perf_counter() - began
                if result.isError:
                    raise SystemExit(f"{tool} failed: {result.content}")
                return took

            serial = [await one() for _ in range(WARM + calls)][WARM:]
            concurrent, walls = [], []
            for _ in range(rounds):
                began = time.perf_counter()
                concurrent += await asyncio.gather(*(one() for _ in range(AT_ONCE)))
                walls.append(time.perf_counter() - began)
            return serial, concurrent, walls


def main():
    if len(sys.argv) < 2:
        raise SystemExit("usage: gateway_sdk.py PATH/TO/chock [CALLS] [ROUNDS]")
    chock = os.path.abspath(sys.argv[1])
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    server = shutil.which("mcp-server-everything", path="/usr/bin:/usr/local/bin")
    if server is None:
        raise SystemExit("mcp-server-everything is not installed: run scripts/setup")
    root = tempfile.mkdtemp()
    project = os.path.join(root, "project")
    os.makedirs(project)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": root,
        "XDG_STATE_HOME": os.path.join(root, "state"),
        "XDG_CONFIG_HOME": os.path.join(root, "config"),
        "XDG_DATA_HOME": os.path.join(root, "data"),
    }
    with open(os.path.join(project, "chock.zon"), "w") as f:
        f.write(
            '.{\n'
            f'    .mcp = .{{ .{{ .name = "everything", .command = .{{ "{server}", "stdio" }} }} }},\n'
            '    .policy = .{ .rules = .{\n'
            '        .{ .action = "sandbox.jit", .decision = .allow },\n'
            '        .{ .action = "mcp.everything.tool.echo", .decision = .allow },\n'
            '    } },\n'
            '}\n'
        )
    direct = StdioServerParameters(command=server, args=["stdio"], env=env, cwd=project)
    gateway = StdioServerParameters(
        command=chock, args=["mcp", "--no-approve"], env=env, cwd=project
    )
    measured = {}
    load_before = os.getloadavg()[0]
    for label, params, tool in [
        ("directly", direct, "echo"),
        ("through chock mcp", gateway, "everything__echo"),
    ]:
        measured[label] = asyncio.run(measure(params, tool, calls, rounds))
    load_after = os.getloadavg()[0]
    us = lambda s: s * 1e6
    # The machine's load, for the figures to be read against.
    print(f"load average (1 min): {load_before:.2f} before, {load_after:.2f} after")
    for label, (serial, concurrent, walls) in measured.items():
        print(
            f"{label}: one at a time median {us(statistics.median(serial)):.1f} µs, "
            f"p90 {us(quantile(serial, 0.9)):.1f} µs; {AT_ONCE} at once: per call median "
            f"{us(statistics.median(concurrent)):.1f} µs, p90 {us(quantile(concurrent, 0.9)):.1f} µs, "
            f"a round median {us(statistics.median(walls)) / 1000:.2f} ms"
        )
    (ds, dc, dw), (gs, gc, gw) = measured["directly"], measured["through chock mcp"]
    for what, d, g in [
        ("one at a time, per call", ds, gs),
        (f"{AT_ONCE} at once, per call", dc, gc),
        (f"{AT_ONCE} at once, per round", dw, gw),
    ]:
        added = statistics.median(g) - statistics.median(d)
        ratio = statistics.median(g) / statistics.median(d)
        print(f"added {what}: {us(added):.1f} µs at the median ({ratio:.2f}x)")
    shutil.rmtree(root, ignore_errors=True)


main()
