#!/usr/bin/env bash
# Making a session workspace for a repository of 100,000 files
# (`chock exec --workspace -- true`: the workspace made, then one
# sandboxed command on it) against `git worktree add --detach` of the same
# HEAD, in the same hyperfine run. The repository is made in a temporary
# folder and deleted at the end. FILES and RUNS change the size and count.
set -euo pipefail
command -v hyperfine >/dev/null || { echo "hyperfine is missing: run scripts/setup" >&2; exit 1; }
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
hyperfine -w "${WARMUP:-0}" -r "${RUNS:-3}" --export-json "$work/workspace.hf.json" \
  --prepare "rm -rf $work/wt $work/state/workspaces; git -C $repo worktree prune" \
  -n "git worktree add" "git -C $repo worktree add -q --detach $work/wt HEAD" \
  -n "chock exec --workspace" "$bin exec --workspace -- true"
python3 - "$work/workspace.hf.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
g, c = r["git worktree add"]["median"], r["chock exec --workspace"]["median"]
print(f"median: git worktree add {g:.3f} s, chock exec --workspace {c:.3f} s, ratio {c / g:.2f}")
PY
