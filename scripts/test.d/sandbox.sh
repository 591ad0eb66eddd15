#!/usr/bin/env bash
# The sandbox against the real machine, with the release binary:
#   1. `chock doctor` must find every blocking layer;
#   2. the escape suite, printed attempt by attempt with its `N attempts, N blocked`;
#   3. a changed dev shell is built only as `chock build` would build it:
#      refused without a rule (exit 3, nothing built), built with one;
#   4. `chock exec -- /bin/true` against `bwrap --ro-bind / / --unshare-all
#      /bin/true`, in one hyperfine run of 30 each, medians and their ratio
#      (figures in docs/benchmarks.md).
# Needs user namespaces, Landlock, the Nix daemon, bwrap and hyperfine
# (scripts/setup installs and starts them). Exits non-zero on a failure;
# the benchmark only reports.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${CHOCK_BIN:?set CHOCK_BIN to the release chock binary (scripts/test does)}"

work=$(mktemp -d /tmp/chock-sandbox-check.XXXXXX)
trap 'chmod -R u+rwX "$work" 2>/dev/null; rm -rf "$work"' EXIT
# cargo and rustup still find their own homes after HOME moves.
export RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup} CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
export HOME=$work/home XDG_DATA_HOME=$work/data XDG_CACHE_HOME=$work/cache
export XDG_CONFIG_HOME=$work/config XDG_STATE_HOME=$work/state
mkdir -p "$HOME" "$work/project"

echo "-- chock doctor"
(cd "$work/project" && "$CHOCK_BIN" doctor) || { echo "sandbox: a blocking doctor row failed" >&2; exit 1; }

echo "-- escape suite"
suite=$(cargo test -q --locked -p chock --test escape -- --nocapture --test-threads=1 2>&1) || true
printf '%s\n' "$suite"
summary=$(grep -E '^[0-9]+ attempts, [0-9]+ blocked$' <<<"$suite" || true)
read -r attempts _ blocked _ <<<"$summary"
if [[ -z $summary || $attempts != "$blocked" ]]; then
  echo "sandbox: the escape suite did not block every attempt (${summary:-no summary line})" >&2
  exit 1
fi

echo "-- a changed dev shell is built only as chock build would build it"
shell=$work/shell
marker=$(mktemp -u /tmp/chock-devshell-marker.XXXXXX)   # where a build user may write
mkdir -p "$shell"
cat >"$shell/flake.nix" <<NIX
{
  outputs = { self }: let
    system = "$(uname -m)-linux";
    payload = derivation {
      name = "payload"; inherit system; builder = "/bin/sh"; PATH = "/usr/bin:/bin";
      args = [ "-c" "echo built > $marker && mkdir -p \$out/bin" ];
    };
  in {
    devShells.\${system}.default = derivation {
      name = "shell"; inherit system payload; builder = "/bin/bash";
      outputs = [ "out" ]; args = [ "-c" "echo > \$out" ];
      PATH = "\${payload}/bin";
    };
  };
}
NIX
status=0
(cd "$shell" && "$CHOCK_BIN" exec -- true </dev/null) 2>"$work/refused.txt" || status=$?
if [[ $status != 3 ]] || ! grep -q 'nix.build.devShells.*default' "$work/refused.txt" || [[ -e $marker ]]; then
  cat "$work/refused.txt" >&2
  echo "sandbox: a dev shell no rule allows was not refused before it was built (exit $status)" >&2
  exit 1
fi
printf '.{ .policy = .{ .rules = .{ .{ .action = "nix.build.devShells.*", .decision = .allow } } } }\n' >"$shell/chock.zon"
(cd "$shell" && "$CHOCK_BIN" exec -- true </dev/null) 2>"$work/allowed.txt" || true
# (`true` is not in this shell, so the command itself ends 127 once the shell is read.)
if ! grep -q '"action":"nix.build.devShells.[^"]*default".*"decision":"allow"' "$XDG_STATE_HOME/chock/log/decisions.jsonl" \
   || ! grep -q 'payload/bin' "$work/allowed.txt" || [[ ! -e $marker ]]; then
  cat "$work/allowed.txt" >&2
  echo "sandbox: an allowed dev shell was not built" >&2
  exit 1
fi
rm -f "$marker"
echo "refused without a rule, built with one"

echo "-- chock exec -- /bin/true against bwrap"
project=$work/project
# /bin/true is outside the project and the store, so it is exec.unparsed:
# allowed here by the project's own rule, as a person would write it.
printf '.{ .policy = .{ .rules = .{ .{ .action = "exec.unparsed", .decision = .allow } } } }\n' >"$project/chock.zon"
(cd "$project" && "$CHOCK_BIN" exec -- /bin/true) 2>/dev/null
# The reference is bubblewrap with every namespace and the host's root
# read-only: what a person would reach for instead. Chock's run includes
# loading the policy, the decision-log line and its own mount tree.
bwrap_cmd=(bwrap --ro-bind / / --unshare-all --new-session --die-with-parent /bin/true)
"${bwrap_cmd[@]}"
printf -v bwrap_line '%q ' "${bwrap_cmd[@]}"
printf -v chock_line '%q exec --project %q -- /bin/true' "$CHOCK_BIN" "$project"
hyperfine -N --warmup 5 --runs "${CHOCK_BENCH_RUNS:-30}" --export-json "$work/bench.json" \
  -n bwrap "$bwrap_line" -n "chock exec" "$chock_line" >/dev/null
python3 - "$work/bench.json" <<'PY'
import json, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
bwrap, chock = results["bwrap"]["median"], results["chock exec"]["median"]
print(f"median: bwrap {bwrap * 1000:.1f} ms, chock exec {chock * 1000:.1f} ms, ratio {chock / bwrap:.2f}x")
PY
