#!/usr/bin/env bash
# A session workspace against `git worktree add` on a repository of 20,000
# files and 500 MiB (random bytes, so nothing compresses): the time to make
# it (`chock exec --workspace -- true`, the workspace made and one
# sandboxed command run on it), the time of one apply of a small change
# (ten files changed, one added: `chock apply` against `git merge --ff-only`
# of the same change committed in the worktree), the disk each uses, and
# how soon `chock mcp --workspace` answers `initialize` and its first tool
# call.
# The two take turns, round by round. Everything is made in a temporary
# folder and deleted at the end. FILES, MIB and ROUNDS change the size and
# the count.
set -euo pipefail
bin=$(realpath "${CHOCK_BIN:-target/debug/chock}")
files=${FILES:-20000}
mib=${MIB:-500}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
repo=$work/repo
mkdir -p "$repo"
git -C "$repo" init -q -b main
python3 - "$files" "$mib" <<'PY' | git -C "$repo" fast-import --quiet
import os, sys
n, mib = int(sys.argv[1]), int(sys.argv[2])
size = mib * 1024 * 1024 // n
out = sys.stdout.buffer
out.write(b"commit refs/heads/main\ncommitter Bench <b@b> 0 +0000\ndata 5\nfiles\n")
for i in range(n):
    body = os.urandom(size)
    out.write(b"M 100644 inline d%03d/f%05d.bin\ndata %d\n" % (i // 100, i, len(body)))
    out.write(body)
    out.write(b"\n")
body = b".{ .policy = .{ .rules = .{ .{ .action = \"workspace.apply\", .decision = .allow } } } }\n"
out.write(b"M 100644 inline chock.zon\ndata %d\n%s\n" % (len(body), body))
PY
git -C "$repo" read-tree -u --reset HEAD
echo "repository: $(git -C "$repo" ls-files | wc -l) files, $(du -sh "$repo/.git" | cut -f1) of objects"
export HOME=$work/home XDG_DATA_HOME=$work/data XDG_CACHE_HOME=$work/cache CHOCK_STATE_DIR=$work/state
mkdir -p "$HOME"
git config --global user.name Bench
git config --global user.email b@b
cd "$repo"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$repo" "$work" "$bin" "${ROUNDS:-3}" <<'PY'
import shutil, statistics, subprocess, sys, time
repo, work, chock, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
change = "for i in 1 2 3 4 5 6 7 8 9 10; do echo change >> d000/f0000$((i - 1)).bin; done; echo new > new.txt"
def run(command, cwd=repo):
    subprocess.run(command, check=True, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
def timed(command, cwd=repo):
    start = time.perf_counter()
    run(command, cwd)
    return time.perf_counter() - start
def du(path):
    out = subprocess.run(["du", "-sk", path], check=True, capture_output=True, text=True).stdout
    return int(out.split()[0]) / 1024
def reset():
    shutil.rmtree(f"{work}/wt", ignore_errors=True)
    run(["git", "worktree", "prune"])
    run(["rm", "-rf", f"{work}/state/workspaces"])
    run(["git", "reset", "-q", "--hard", "base"])
    run(["git", "clean", "-qfd"])
    run(["sync"])
run(["git", "tag", "-f", "base"])
def mcp_workspace():
    """`chock mcp --workspace`: seconds until `initialize` is answered, and
    until the first tool call (which waits for the workspace's files)."""
    import json
    start = time.perf_counter()
    server = subprocess.Popen([chock, "mcp", "--workspace", "--no-approve"], cwd=repo,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    def say(message):
        server.stdin.write((json.dumps(message) + "\n").encode())
        server.stdin.flush()
    def answer(id):
        while True:
            line = json.loads(server.stdout.readline())
            if line.get("id") == id:
                return line
    say({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"}}})
    answer(1)
    initialized = time.perf_counter() - start
    say({"jsonrpc": "2.0", "method": "notifications/initialized"})
    say({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "list_directory", "arguments": {"path": "."}}})
    called = answer(2)
    assert not called["result"].get("isError"), called
    first_call = time.perf_counter() - start
    server.stdin.close()
    server.wait(timeout=60)
    return initialized, first_call
rows = {k: [] for k in ("make_git", "make_chock", "apply_git", "apply_chock", "disk_git", "disk_chock", "mcp_initialize", "mcp_first_call")}
for n in range(rounds):
    reset()
    rows["make_git"].append(timed(["git", "worktree", "add", "-q", "--detach", f"{work}/wt", "HEAD"]))
    rows["disk_git"].append(du(f"{work}/wt") + du(f"{repo}/.git/worktrees"))
    run(["sh", "-c", change + " && git add -A && git commit -qm change"], cwd=f"{work}/wt")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=f"{work}/wt", check=True, capture_output=True, text=True).stdout.strip()
    rows["apply_git"].append(timed(["git", "merge", "-q", "--ff-only", head]))
    reset()
    rows["make_chock"].append(timed([chock, "exec", "--workspace", "--", "true"]))
    rows["disk_chock"].append(du(f"{work}/state/workspaces"))
    run([chock, "exec", "--workspace", "--", "sh", "-c", change])
    rows["apply_chock"].append(timed([chock, "apply"]))
    landed = subprocess.run(["git", "log", "-1", "--format=%s"], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()
    assert landed.startswith("chock session"), landed
    reset()
    initialized, first_call = mcp_workspace()
    rows["mcp_initialize"].append(initialized)
    rows["mcp_first_call"].append(first_call)
    print(f"round {n + 1}: " + ", ".join(f"{k} {v[-1]:.2f}" for k, v in rows.items()), flush=True)
print("median: " + ", ".join(f"{k} {statistics.median(v):.2f}" for k, v in rows.items()) + " (seconds; disk in MiB)")
PY
