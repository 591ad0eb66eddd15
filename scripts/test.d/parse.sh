#!/usr/bin/env bash
# Parsing is linear in the length of a line: 100,000 terms on one line
# (`1+1+...`, `{}.a.a...`, `---1`, `!!!true`, 100,000 nested lists) parse
# within a bound, and about as fast as the same number of terms one per
# line. Nix 2.8 parses the same files in the same run, for the ratio
# (given at most 10 s each; it is quadratic on some of them).
#
# Needs: CHOCK_BIN (the release chock; scripts/test sets it).
set -euo pipefail
bin=${CHOCK_BIN:?set CHOCK_BIN to the chock binary (scripts/test does)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=100000
# A bound far above the linear time (well under a second here) and far below
# the quadratic one (over 20 s for the sums).
bound=5
failures=0

python3 - "$work" "$n" <<'PY'
import sys
work, n = sys.argv[1], int(sys.argv[2])
files = {
    "sum-one-line": "+".join(["1"] * n),
    "sum-one-per-line": "\n+".join(["1"] * n),
    "selects": "{}" + ".a" * n + " or 1",
    "negations": "-" * n + "1",
    "nots": "!" * n + "true",
    "lists": "[" * n + "]" * n,
}
for name, text in files.items():
    with open(f"{work}/{name}.nix", "w") as f:
        f.write(text + "\n")
PY

seconds() { python3 -c 'import sys; print(f"{float(sys.argv[1]):.2f}")' "$1"; }
timed() { # timed LIMIT CMD... -> prints seconds, or ">LIMIT" when cut off
  local limit=$1 start end
  shift
  start=$(date +%s.%N)
  if timeout -k 1 "$limit" "$@" >/dev/null 2>&1 || [[ $? != 124 && $? != 137 ]]; then
    end=$(date +%s.%N)
    seconds "$(echo "$end - $start" | bc)"
  else
    echo ">$limit"
  fi
}

printf '%-18s %10s %10s\n' "100,000 terms" "chock (s)" "nix (s)"
for name in sum-one-line sum-one-per-line selects negations nots lists; do
  file=$work/$name.nix
  ours=$(timed 60 "$bin" eval --parse "$file")
  nix=$(timed 10 nix-instantiate --parse "$file")
  printf '%-18s %10s %10s\n' "$name" "$ours" "$nix"
  if [[ $ours == ">"* ]] || (($(echo "$ours > $bound" | bc))); then
    echo "FAIL: parsing $name took $ours s, the bound is $bound s" >&2
    failures=$((failures + 1))
  fi
done

if ((failures)); then
  echo "parse.sh: $failures failure(s)" >&2
  exit 1
fi
echo "parse.sh: all within ${bound}s"
