#!/usr/bin/env bash
# The sandbox against the real machine, with the release binary:
#   1. `chock doctor` must find every blocking layer;
#   2. the escape suite, printed attempt by attempt with its `N attempts, N blocked`;
#   3. a changed dev shell is built only as `chock build` would build it:
#      refused without a rule (exit 3, nothing built), built with one;
#   4. `chock exec -- /bin/true` against `bwrap --ro-bind / / --unshare-all
#      /bin/true` and against bwrap building the tree Chock builds: the wall
#      time of each (30 rounds, taking turns), medians and their ratios, then
#      the CPU per start of each (5 rounds taking turns, the median round)
#      and its ratios (figures in docs/benchmarks.md).
# Needs user namespaces, Landlock, the Nix daemon, bwrap and python3
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
if [[ $status != 125 ]] || ! grep -q 'nix.build.devShells.*default' "$work/refused.txt" || [[ -e $marker ]]; then
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
# The same reference building the tree Chock builds on this machine (the
# host's toolchain, the store, /dev with its pseudo-terminals, a fresh
# /proc, a private /tmp, the project and its cache read-write, the root
# read-only), so the figures tell the price of that tree from the price of
# Chock's own work.
cache_dir=$work/bench-cache
mkdir -p "$cache_dir"
same_tree=(bwrap --unshare-all --new-session --die-with-parent --tmpfs / --ro-bind /usr /usr)
for top in bin sbin lib lib64; do
  if [[ -L /$top ]]; then same_tree+=(--symlink "$(readlink "/$top")" "/$top")
  elif [[ -d /$top ]]; then same_tree+=(--ro-bind "/$top" "/$top"); fi
done
same_tree+=(--ro-bind-try /nix/store /nix/store --ro-bind-try /etc/alternatives /etc/alternatives
  --ro-bind-try /etc/ld.so.cache /etc/ld.so.cache --dev /dev --proc /proc --tmpfs /tmp
  --bind "$project" "$project" --bind "$cache_dir" /run/chock/cache --remount-ro / /bin/true)
"${same_tree[@]}"
chock_cmd=("$CHOCK_BIN" exec --project "$project" -- /bin/true)
# Taking turns: each round runs the three one after the other, so a change
# in the machine's load falls on all (one command's runs after another's
# would each see another load).
python3 - "${CHOCK_BENCH_RUNS:-30}" "${#bwrap_cmd[@]}" "${#same_tree[@]}" "${bwrap_cmd[@]}" "${same_tree[@]}" "${chock_cmd[@]}" <<'PY'
import statistics, subprocess, sys, time
rounds, n_bwrap, n_same = (int(a) for a in sys.argv[1:4])
argv = sys.argv[4:]
commands = {"bwrap": argv[:n_bwrap], "same tree": argv[n_bwrap:n_bwrap + n_same], "chock": argv[n_bwrap + n_same:]}
times = {name: [] for name in commands}
for _ in range(rounds + 5):
    for name, command in commands.items():
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times[name].append(time.perf_counter() - start)
# The first five rounds warm the caches and are not counted.
ms = {n: statistics.median(t[5:]) * 1000 for n, t in times.items()}
print(f"median wall time, taking turns: bwrap {ms['bwrap']:.1f} ms, bwrap building Chock's tree {ms['same tree']:.1f} ms, "
      f"chock exec {ms['chock']:.1f} ms; ratio {ms['chock'] / ms['bwrap']:.2f}x, "
      f"{ms['chock'] / ms['same tree']:.2f}x against the same tree")
PY
# Wall time on a loaded machine is mostly waiting for a CPU, so the steadier
# figure is the CPU a start costs: perf's task-clock, which counts every
# process and thread the command made (getrusage would miss bwrap's: its
# sandbox's first process is not reaped by the bwrap that is waited for).
# Five rounds of each, taking turns, so a change in load falls on all;
# the median round, so one round that met a burst of other work does not
# move the figure.
if command -v perf >/dev/null && perf stat -e task-clock true >/dev/null 2>&1; then
  cpu() { perf stat -x, -r "$1" -e task-clock "${@:2}" 2>&1 >/dev/null | awk -F, '/task-clock/ { print $1 }'; }
  runs=$(( (${CHOCK_BENCH_RUNS:-30} + 4) / 5 ))
  b=() s=() c=()
  for _ in 1 2 3 4 5; do
    b+=("$(cpu "$runs" "${bwrap_cmd[@]}")")
    s+=("$(cpu "$runs" "${same_tree[@]}")")
    c+=("$(cpu "$runs" "${chock_cmd[@]}")")
  done
  python3 - "${b[*]}" "${s[*]}" "${c[*]}" <<'PY'
import statistics, sys
b, s, c = (statistics.median(float(v) for v in arg.split()) for arg in sys.argv[1:4])
print(f"CPU per start (perf task-clock, median of 5 rounds): bwrap {b:.2f} ms, bwrap building Chock's tree {s:.2f} ms, "
      f"chock exec {c:.2f} ms; ratio {c / b:.2f}x, {c / s:.2f}x against the same tree")
PY
else
  echo "CPU per start: perf is not installed (apt-get install linux-perf), not measured"
fi
