#!/usr/bin/env bash
# fix (`chock eval`) against the Nix language: runs the conformance corpus
# ($CHOCK_SHARED/conformance/run-nix-lang) and fails when fewer cases pass
# than the floor recorded in rust/fix/conformance.floor, or when the corpus
# is missing (raise the floor when fix passes more); then evaluates 200
# random expressions with both fix and Nix 2.8 (rust/fix/tests/differential)
# and fails on any difference.
#
# Needs: CHOCK_BIN (the release chock), CHOCK_SHARED (scripts/test sets both),
# nix-instantiate (scripts/setup installs it).
set -euo pipefail
cd "$(dirname "$0")/../.."

bin=${CHOCK_BIN:?set CHOCK_BIN to the chock binary (scripts/test does)}
shared=${CHOCK_SHARED:?set CHOCK_SHARED to the shared directory (scripts/test does)}
runner=$shared/conformance/run-nix-lang
floor_file=rust/fix/conformance.floor

if [[ ! -x $runner ]]; then
  echo "conformance: the corpus runner is not at $runner; put the corpus there (CHOCK_SHARED/conformance)" >&2
  exit 1
fi
floor=$(tr -dc '0-9' < "$floor_file")
[[ -n $floor ]] || { echo "conformance: $floor_file holds no number" >&2; exit 1; }

report=$(mktemp)
trap 'rm -f "$report"' EXIT
# The corpus by its physical path: the runner writes the directory it was
# given as /pwd in the expected outputs, and an evaluator (Nix or fix) names
# files by the physical path, so a CHOCK_SHARED reached through a symlink
# would otherwise fail every case that prints a position.
corpus=$(cd "$shared/conformance/nix-lang" && pwd -P)
"$runner" "$corpus" -- "$bin" eval > "$report" 2>&1
summary=$(tail -n 1 "$report")
passed=$(sed -n 's/^\([0-9]*\) passed.*/\1/p' <<< "$summary")
echo "conformance: $summary (floor $floor)"
grep '^FAIL' "$report" || true
if [[ -z $passed ]]; then
  echo "conformance: the runner printed no summary; its output was:" >&2
  tail -n 20 "$report" >&2
  exit 1
fi
if (( passed < floor )); then
  echo "conformance: $passed cases pass, fewer than the floor of $floor in $floor_file" >&2
  exit 1
fi

if ! command -v nix-instantiate > /dev/null; then
  echo "conformance: nix-instantiate is missing; run scripts/setup to install Nix" >&2
  exit 1
fi
python3 rust/fix/tests/differential/run.py "$bin" 1 200
