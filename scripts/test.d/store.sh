#!/usr/bin/env bash
# chock-store against Nix 2.8 on a generated closure of 5,000 derivations:
# `chock derivation show -r` must print the same JSON as
# `nix show-derivation -r` (compared parsed), and the benchmark measures
# both in the same run (figures in docs/benchmarks.md, "Store formats").
# The byte-for-byte corpus checks and the daemon tests run in `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${CHOCK_BIN:?set CHOCK_BIN to a release chock binary (scripts/test does)}"
export NIX_REMOTE=daemon
for tool in nix nix-instantiate hyperfine python3; do
  command -v "$tool" >/dev/null || { echo "store: $tool is missing: run scripts/setup" >&2; exit 1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! root=$(nix-instantiate rust/store/tests/data/closure-5000.nix 2>"$tmp/instantiate.log"); then
  cat "$tmp/instantiate.log" >&2
  echo "store: nix-instantiate failed; is the daemon up? run scripts/setup" >&2
  exit 1
fi

"$CHOCK_BIN" derivation show -r "$root" >"$tmp/chock.json"
nix show-derivation -r "$root" >"$tmp/nix.json"
python3 - "$tmp/chock.json" "$tmp/nix.json" <<'PY'
import json, sys
ours, theirs = (json.load(open(p)) for p in sys.argv[1:3])
if len(theirs) < 5000:
    sys.exit(f"store: the closure has {len(theirs)} derivations, expected 5,001")
differ = sorted(k for k in theirs.keys() | ours.keys() if ours.get(k) != theirs.get(k))
if differ:
    sys.exit(f"store: chock and nix disagree on {len(differ)} derivations, first {differ[0]}")
print(f"store: chock derivation show -r equals nix show-derivation -r on {len(theirs)} derivations")
PY

hyperfine -N --warmup 3 --runs 20 --export-json "$tmp/bench.json" \
  -n chock "$CHOCK_BIN derivation show -r $root" \
  -n nix "nix show-derivation -r $root" >"$tmp/hyperfine.txt"
python3 - "$tmp/bench.json" <<'PY'
import json, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
chock, nix = results["chock"], results["nix"]
ratio = nix["mean"] / chock["mean"]
print(f"store: derivation show -r over 5,001 derivations: chock {chock['mean']*1000:.0f} ms ± {chock['stddev']*1000:.0f}, "
      f"nix {nix['mean']*1000:.0f} ms ± {nix['stddev']*1000:.0f}: chock is {ratio:.2f}x faster (goal 4x)")
if ratio < 1:
    sys.exit("store: chock derivation show -r is slower than nix show-derivation -r")
PY
