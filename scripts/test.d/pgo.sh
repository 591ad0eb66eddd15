#!/usr/bin/env bash
# The profile-guided build (scripts/build-dist) end to end, with the
# quicker release profile: the instrumented build, the training run, the
# merge and the build with the counts must all work; the training must
# have run (lib's suites pass on the instrumented binary and the counts
# reach the evaluator's and the policy engine's code); and the binary
# built with the counts must answer the evaluator's benchmark cases as the
# release binary does.
#
# Needs: CHOCK_BIN (the release chock), CHOCK_SHARED (the nixpkgs-lib
# corpus); scripts/test sets both. Builds in target/pgo-check and
# target/pgo-train and removes both after.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${CHOCK_BIN:?set CHOCK_BIN to the release chock (scripts/test does)}
lib=${CHOCK_SHARED:?set CHOCK_SHARED (scripts/test does)}/corpus/nixpkgs-lib/lib
out=$PWD/target/pgo-check
trap 'rm -rf "$out" target/pgo-train' EXIT

fail() {
  echo "pgo: $*" >&2
  exit 1
}

log=$(CARGO_TARGET_DIR=$out scripts/build-dist --profile release "$lib" 2>&1) \
  || { tail -40 <<< "$log" >&2; fail "scripts/build-dist failed"; }
grep '^pgo-train:' <<< "$log"
grep -q '^pgo-train: lib/tests/misc.nix gave \[ \]$' <<< "$log" \
  || fail "the instrumented chock did not pass lib/tests/misc.nix in the training run"
grep -qE '^pgo-train: lib/tests/modules.sh .*: 407 Pass,0 Fail$' <<< "$log" \
  || fail "the instrumented chock did not pass lib/tests/modules.sh in the training run"
grep -q '^pgo-train: one large module-system evaluation .* gave { host-1 = ' <<< "$log" \
  || fail "the instrumented chock did not evaluate scripts/pgo-train-modules.nix in the training run"

host=$(rustc -vV | sed -n 's/^host: //p')
profdata=$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata
# The counts of a function's blocks in the profile: how much of it ran in
# the training.
counted() {
  "$profdata" show --counts --function="$1" target/pgo-train/chock.profdata \
    | awk '/Block counts:/ { sub(/.*\[/, ""); n = split($0, c, /[^0-9]+/); for (i = 1; i <= n; i++) total += c[i] }
           END { print total + 0 }'
}
for function in Evaluator5apply Policy6decide; do
  count=$(counted "$function")
  ((count > 0)) || fail "the profile counts nothing in $function: the training did not reach it"
  echo "pgo: the training counted $count blocks run in $function"
done

pgo=$out/release/chock
export FIX_BENCH_LIB=$lib
cases=(rust/fix/bench/cases/*.nix)
for case in "${cases[@]}"; do
  want=$("$bin" eval --impure --strict "$case" | sha256sum)
  got=$("$pgo" eval --impure --strict "$case" | sha256sum)
  [[ $got == "$want" ]] || fail "the profile-guided build answers $case differently"
done
echo "pgo: the profile-guided build answers the ${#cases[@]} benchmark cases as the release build does"
