#!/usr/bin/env bash
# The README's main job, as written there: chock builds examples/hello's
# default package through the Nix daemon, and the derivation paths fix
# computes for the example equal those nix-instantiate computes; the plan for
# the fetching package names its host and the question it would ask; with no
# terminal, the real build of it is refused naming the rule to add.
#
# Needs: CHOCK_BIN (scripts/test sets it), a running nix-daemon and
# nix-instantiate (scripts/setup).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${CHOCK_BIN:?set CHOCK_BIN to the chock binary (scripts/test does)}
project=examples/hello
state=$(mktemp -d)
trap 'rm -rf "$state"' EXIT
export CHOCK_STATE_DIR=$state

fail() { echo "example: $*" >&2; exit 1; }

built=$("$bin" build --project "$project" packages x86_64-linux default) || fail "the README's main command failed: $built"
out=$(sed -n 's/.*It produced \(\/nix\/store\/[^ ]*\)\.$/\1/p' <<< "$built")
[[ -n $out ]] || fail "no output path in: $built"
grep -q "hello from a build Chock allowed" "$out" || fail "$out does not hold what the builder wrote"

want=$(nix-instantiate --eval --strict -E "let f = (import ./$project/flake.nix).outputs { self = {}; }; in [ f.packages.x86_64-linux.default.drvPath f.packages.x86_64-linux.source.drvPath ]")
for attr in default source; do
  drv=$("$bin" build --project "$project" --plan --json packages x86_64-linux "$attr" | python3 -c 'import json,sys; print(json.load(sys.stdin)["derivation"])')
  grep -qF "\"$drv\"" <<< "$want" || fail "fix gave $drv for $attr; nix-instantiate gave $want"
done

plan=$("$bin" build --project "$project" --plan packages x86_64-linux source)
grep -q "nix.net.build.org.gnu.ftpmirror.443: ask" <<< "$plan" || fail "the plan does not name the host: $plan"

if refused=$("$bin" build --project "$project" packages x86_64-linux source 2>&1 < /dev/null); then
  fail "a build fetching from a host no rule answers went ahead with nobody asked: $refused"
fi
grep -qF '.{ .action = "nix.net.build.org.gnu.ftpmirror.443", .decision = .allow }' <<< "$refused" \
  || fail "the refusal does not name the rule to add: $refused"

"$bin" log verify > /dev/null || fail "the decision log does not verify"
echo "example: the README's main job builds, paths equal Nix's, the fetch is asked about first"
