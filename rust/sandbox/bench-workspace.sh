#!/usr/bin/env bash
# Making a session workspace for a repository of 100,000 files
# (`chock exec --workspace -- true`: the workspace made, then one
# sandboxed command on it) against `git worktree add --detach` of the same
# HEAD, in one run, taking turns; then the overlay workspace of the same
# files outside git against `chock exec -- true` on them. Everything is made
# in a temporary folder and deleted at the end. FILES and ROUNDS change the
# size and count.
set -euo pipefail
bin=$(realpath "${CHOCK_BIN:-target/debug/chock}")
files=${FILES:-100000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
repo=$work/repo
mkdir -p "$repo"
git -C "$repo" init -q -b main
# One commit of $files small files in folders of 100, written with
# fast-import (adding them one by one would take minutes).
python3 - "$files" <<'PY' | git -C "$repo" fast-import --quiet
import sys
n = int(sys.argv[1])
out = sys.stdout.buffer
out.write(b"commit refs/heads/main\ncommitter Bench <b@b> 0 +0000\ndata 5\nfiles\n")
for i in range(n):
    body = b"file %d\n" % i
    out.write(b"M 100644 inline d%04d/f%05d.txt\ndata %d\n%s\n" % (i // 100, i, len(body), body))
PY
git -C "$repo" read-tree -u --reset HEAD
echo "repository: $(git -C "$repo" ls-files | wc -l) files"
export HOME=$work/home XDG_DATA_HOME=$work/data XDG_CACHE_HOME=$work/cache CHOCK_STATE_DIR=$work/state
mkdir -p "$HOME"
cd "$repo"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
# The two take turns, round by round, so both see the same load.
python3 - "$repo" "$work" "$bin" "${ROUNDS:-3}" <<'PY'
import shutil, statistics, subprocess, sys, time
repo, work, chock, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def clean():
    shutil.rmtree(f"{work}/wt", ignore_errors=True)
    subprocess.run(["git", "-C", repo, "worktree", "prune"], check=True)
    subprocess.run(["rm", "-rf", f"{work}/state/workspaces"], check=True)
    # What the removal left to write back is written now, not in the next
    # measurement.
    subprocess.run(["sync"], check=True)
def timed(command):
    start = time.perf_counter()
    subprocess.run(command, check=True, cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start
git, ours = [], []
for n in range(rounds):
    clean()
    git.append(timed(["git", "-C", repo, "worktree", "add", "-q", "--detach", f"{work}/wt", "HEAD"]))
    clean()
    ours.append(timed([chock, "exec", "--workspace", "--", "true"]))
    print(f"round {n + 1}: git worktree add {git[-1]:.2f} s, chock exec --workspace {ours[-1]:.2f} s, ratio {ours[-1] / git[-1]:.2f}", flush=True)
g, c = statistics.median(git), statistics.median(ours)
print(f"median of {rounds}: git worktree add {g:.2f} s, chock exec --workspace {c:.2f} s, ratio {c / g:.2f}")
PY
# The same files in a folder that is not a git repository: the workspace is
# an overlay, made without copying anything, against the same command on
# the project itself (no workspace), taking turns.
plain=$work/plain
mkdir -p "$plain"
git -C "$repo" archive HEAD | tar -x -C "$plain"
cd "$plain"
python3 - "$plain" "$work" "$bin" "${ROUNDS:-3}" <<'PY'
import statistics, subprocess, sys, time
plain, work, chock, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def timed(command):
    start = time.perf_counter()
    subprocess.run(command, check=True, cwd=plain, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start
bare, ours = [], []
for n in range(rounds):
    bare.append(timed([chock, "exec", "--", "true"]))
    subprocess.run(["rm", "-rf", f"{work}/state/workspaces"], check=True)
    ours.append(timed([chock, "exec", "--workspace", "--", "true"]))
    print(f"round {n + 1}: chock exec {bare[-1]:.2f} s, chock exec --workspace (overlay) {ours[-1]:.2f} s, ratio {ours[-1] / bare[-1]:.2f}", flush=True)
b, c = statistics.median(bare), statistics.median(ours)
print(f"median of {rounds}: chock exec {b:.2f} s, chock exec --workspace (overlay) {c:.2f} s, ratio {c / b:.2f}")
PY
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
