#!/usr/bin/env bash
# `chock eval --stats`: the value on stdout as without the flag, and one
# JSON object of counters on stderr whose counts match what the expression
# does (two calls of a two-argument lambda: two lambda calls, three
# environments counting the let).
#
# Needs: CHOCK_BIN (the release chock; scripts/test sets it).
set -euo pipefail

bin=${CHOCK_BIN:?set CHOCK_BIN to the chock binary (scripts/test does)}
err=$(mktemp)
trap 'rm -f "$err"' EXIT

out=$("$bin" eval --stats --expr 'let f = x: y: x + y; in f 1 2 + f 3 4' 2> "$err")
if [[ $out != 10 ]]; then
  echo "fix-stats: expected the value 10 on stdout, got: $out" >&2
  exit 1
fi
stats=$(tail -n 1 "$err")
python3 - "$stats" <<'PY'
import json, sys
s = json.loads(sys.argv[1])
want = {("calls", "lambda"): 4, ("envs",): 5}
for path, n in want.items():
    v = s
    for k in path:
        v = v[k]
    if v != n:
        sys.exit(f"fix-stats: {'.'.join(path)} is {v}, expected {n}: {sys.argv[1]}")
if s["allocations"]["number"] <= 0 or s["allocations"]["peakLiveBytes"] <= 0:
    sys.exit(f"fix-stats: no allocations counted: {sys.argv[1]}")
PY
plain=$("$bin" eval --expr 'let f = x: y: x + y; in f 1 2 + f 3 4' 2>&1)
if [[ $plain != 10 ]]; then
  echo "fix-stats: without --stats the output changed: $plain" >&2
  exit 1
fi
echo "fix-stats: --stats prints the counters"
