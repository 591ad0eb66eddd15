#!/usr/bin/env bash
# The decision log under load and faults, through the release binary:
#  1. 100 shell loops of `chock hook claude` at once (each call logs two
#     decisions), twice: every line chained, no seq twice, verify intact.
#  2. An unwritable log: a decision of several acts says so once on
#     stderr, as plain text (stderr here is a file, not a terminal).
set -euo pipefail
: "${CHOCK_BIN:?set CHOCK_BIN to the chock binary (scripts/test does)}"
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home
mkdir -p "$HOME" "$work/p"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

sed -e "s#@PROJECT@#$work/p#" -e "s#@HOME@#$HOME#" \
  "$here/rust/hook/tests/fixtures/claude/bash-cargo-test.json" >"$work/payload.json"

loops=100 calls=10
for run in 1 2; do
  export CHOCK_STATE_DIR=$work/state$run
  started=$(date +%s.%N)
  for _ in $(seq $loops); do
    (for _ in $(seq $calls); do
      "$CHOCK_BIN" hook claude <"$work/payload.json" >/dev/null 2>>"$work/stderr$run"
    done) &
  done
  wait
  took=$(echo "$(date +%s.%N) - $started" | bc)
  log=$CHOCK_STATE_DIR/log/decisions.jsonl
  lines=$(wc -l <"$log")
  want=$((loops * calls * 2))
  [[ $lines == "$want" ]] || fail "run $run: $lines lines logged, expected $want"
  unchained=$(grep -c '"unchained"' "$log" || true)
  [[ $unchained == 0 ]] || fail "run $run: $unchained lines unchained: $(head -3 "$work/stderr$run")"
  twice=$(grep -o '"seq":[0-9]*' "$log" | sort | uniq -d | wc -l)
  [[ $twice == 0 ]] || fail "run $run: $twice seq numbers used twice"
  "$CHOCK_BIN" log verify >"$work/verify$run" || fail "run $run: verify: $(cat "$work/verify$run")"
  echo "run $run: $loops loops x $calls calls, $lines lines in ${took}s: $(cut -c1-60 "$work/verify$run")"
done

# 2. The log folder is a file: nothing can be logged.
export CHOCK_STATE_DIR=$work/blocked
mkdir -p "$CHOCK_STATE_DIR"
touch "$CHOCK_STATE_DIR/log"
"$CHOCK_BIN" hook claude <"$work/payload.json" >/dev/null 2>"$work/blocked.err" || true
reports=$(grep -c 'was not logged' "$work/blocked.err" || true)
[[ $reports == 1 ]] || fail "an unwritable log was reported $reports times, not once: $(cat "$work/blocked.err")"
if grep -q $'\e' "$work/blocked.err"; then
  fail "colour codes on a stderr that is not a terminal: $(cat -v "$work/blocked.err")"
fi

if ((failures)); then
  echo "log.sh: $failures failure(s)" >&2
  exit 1
fi
echo "log.sh: all passed"
