#!/usr/bin/env bash
# The strictness of every builtin against Nix 2.8: for each builtin fix and
# Nix 2.8 both have and each argument position, calls given a value that
# throws there (directly, inside lists and sets, as a function's result, as
# a set whose outPath or __toString throws), evaluated under tryEval, seq
# and deepSeq by fix and by nix-instantiate (rust/fix/tests/differential/
# strictness.py, fixed seed); fails on a difference not listed in
# rust/fix/tests/differential/nix-2.8-fixed.txt with the Nix commit that
# changed it later.
#
# Needs: CHOCK_BIN (the release chock; scripts/test sets it), nix-instantiate
# (scripts/setup installs it).
set -euo pipefail
cd "$(dirname "$0")/../.."

bin=${CHOCK_BIN:?set CHOCK_BIN to the chock binary (scripts/test does)}
if ! command -v nix-instantiate > /dev/null; then
  echo "strictness: nix-instantiate is missing; run scripts/setup to install Nix" >&2
  exit 1
fi
python3 rust/fix/tests/differential/strictness.py "$bin" --seed 1
