#!/usr/bin/env bash
# chock build --plan on a generated closure (rust/nix/tests/fixtures/bench:
# 4,500 derivations over 500 fixed-output ones: 350 builtin:fetchurl across
# 50 hosts, 100 mirror:// fetches through a mirrors list, 50 naming no URL).
# First a check against Nix: the plan covers the closure `nix show-derivation
# -r` lists, and names exactly the hosts its fixed-output derivations'
# URLs name, and fix's top derivation is the one Nix evaluates. Then the
# benchmark, all in one hyperfine run: the plan (fix's evaluation, then the
# planning), Nix's evaluation alone (`nix eval` of the drvPath), and `nix
# show-derivation -r` over the same closure.
# Figures: docs/benchmarks.md, "nix_build planning".
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${CHOCK_BIN:?set CHOCK_BIN to a release chock binary (scripts/test does)}"
export NIX_REMOTE=${NIX_REMOTE:-daemon}
for tool in nix hyperfine python3; do
  command -v "$tool" >/dev/null || { echo "build: $tool is missing: run scripts/setup" >&2; exit 1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
project=$tmp/project
cp -r rust/nix/tests/fixtures/bench "$project"
export CHOCK_STATE_DIR=$tmp/state XDG_CONFIG_HOME=$tmp/config XDG_DATA_HOME=$tmp/data

expr="(builtins.getFlake \"$project\").packages.x86_64-linux.default.drvPath"
if ! root=$(nix eval --raw --impure --offline --expr "$expr" 2>"$tmp/eval.log"); then
  cat "$tmp/eval.log" >&2
  echo "build: nix eval failed; is the daemon up? run scripts/setup" >&2
  exit 1
fi

plan=("$CHOCK_BIN" build --project "$project" --plan --json packages x86_64-linux default)
"${plan[@]}" >"$tmp/plan.json"
nix show-derivation -r "$root" >"$tmp/nix.json"
python3 - "$tmp/plan.json" "$tmp/nix.json" "$root" <<'PY'
import json, sys, urllib.parse
plan, nix = (json.load(open(p)) for p in sys.argv[1:3])
fail = lambda why: sys.exit(f"build: {why}")
if plan["derivation"] != sys.argv[3]:
    fail(f"fix evaluated {plan['derivation']}, Nix {sys.argv[3]}")
if plan["closure"] != len(nix):
    fail(f"the plan walked {plan['closure']} derivations, nix show-derivation -r lists {len(nix)}")
fods = {p: d for p, d in nix.items() if any("hash" in o or "hashAlgo" in o for o in d["outputs"].values())}
hosts, opaque = set(), set()
ports = {"https": 443, "http": 80, "ftp": 21}
for path, d in fods.items():
    urls = (d["env"].get("url", "") + " " + d["env"].get("urls", "")).split()
    if not urls:
        opaque.add(path)
    for u in urls:
        if u.startswith("mirror://"):
            continue
        p = urllib.parse.urlsplit(u)
        hosts.add((p.hostname, p.port or ports[p.scheme]))
ours = {(h["host"], h["port"]) for h in plan["hosts"]}
if ours != hosts:
    fail(f"hosts differ: only chock {sorted(ours - hosts)[:3]}, only nix {sorted(hosts - ours)[:3]}")
if set(plan["opaque"]["derivations"]) != opaque:
    fail("the opaque derivations differ from those naming no URL")
sites = sorted(s["site"] for s in plan["mirrors"])
if sites != ["gnu", "savannah", "sourceforge"]:
    fail(f"mirror sites {sites}")
if len(plan["pinned"]) != 100:
    fail(f"{len(plan['pinned'])} pinned copies, expected the 100 mirror:// fetches")
kinds = sorted(w["kind"] for w in plan["write"])
if kinds != ["mirrors file"] + ["pinned copy"] * 100:
    fail(f"writes {sorted(set(kinds))}: nix eval wrote every object fix registered already (at the same paths), so only the copies and their mirrors file are new")
actions = sorted(q["action"].rsplit(".", 1)[0] if q["action"].startswith("nix.net.build.mirrors.") else q["action"] for q in plan["questions"])
if actions != ["nix.net.build.mirrors.savannah", "nix.net.build.mirrors.sourceforge", "nix.net.hosts"]:
    fail(f"questions {actions}")
print(f"build: the plan covers nix's {len(nix)} derivations, {len(fods)} fixed-output, "
      f"{len(hosts)} hosts, {len(opaque)} naming no URL, 3 mirror sites, 100 pinned copies, 3 questions")
PY

# Nix's evaluation writes every .drv again through the daemon, one round
# trip each, and swings by seconds on a busy machine. So the three commands
# run against the local store (we are root here, as in CI), and fix's
# evaluation and the planning after it are read from the plan's own timings
# (CHOCK_LOG debug lines) over 15 runs.
local=(env -u NIX_REMOTE)
hyperfine -N --warmup 3 --runs 15 --export-json "$tmp/bench.json" \
  -n plan "${local[*]} ${plan[*]}" \
  -n eval "${local[*]} nix eval --raw --impure --offline --expr '$expr'" \
  -n show "${local[*]} nix show-derivation -r $root" >"$tmp/hyperfine.txt"
for _ in $(seq 15); do
  CHOCK_LOG=chock_nix=debug NO_COLOR=1 "${local[@]}" "${plan[@]}" 2>>"$tmp/steps.log" >/dev/null
done
python3 - "$tmp/bench.json" "$tmp/steps.log" <<'PY'
import json, re, statistics, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
ms = lambda k: f"{r[k]['mean']*1000:.0f} ms ± {r[k]['stddev']*1000:.0f}"
log = re.sub(r"\x1b\[[0-9;]*m", "", open(sys.argv[2]).read())
steps = re.findall(r"(evaluated|plan ready) after ([0-9.]+) ms", log)
evaluated = [float(t) for s, t in steps if s == "evaluated"]
ready = [float(t) for s, t in steps if s == "plan ready"]
planning = [b - a for a, b in zip(evaluated, ready)]
if len(planning) != 15:
    sys.exit(f"build: read {len(planning)} plan timings, expected 15")
p = statistics.mean(planning) / 1000
e = statistics.mean(evaluated) / 1000
show = r["show"]["mean"]
print(f"build: chock build --plan {ms('plan')}, of which fix's evaluation {e*1000:.0f} ms ± {statistics.stdev(evaluated):.0f} "
      f"(Nix's nix eval alone: {ms('eval')}); the planning after it {p*1000:.0f} ms ± {statistics.stdev(planning):.0f} "
      f"(walking the registry, the store query, hosts, mirrors, answers, pinned copies); nix show-derivation -r {ms('show')}")
print(f"build: fix's evaluation takes {e / r['eval']['mean']:.2f}x the time of nix eval; "
      f"the planning is {show / p:.2f}x faster than nix show-derivation -r over the same closure; "
      f"the whole plan is {show / r['plan']['mean']:.2f}x its speed")
if p > show:
    sys.exit("build: the planning is slower than nix show-derivation -r")
PY
