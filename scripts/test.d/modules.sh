#!/usr/bin/env bash
# The Nix side of Chock, checked against real readers: the module evaluation
# tests (nixpkgs' lib and Nix 2.8, offline), the messages a person reads when
# a configuration is wrong, the ZON the modules and nix/lib/zon.nix write
# (Zig's ast-check and fmt, and Zig reading it back to the intended data),
# the flake's lock against its inputs, and the package's source filter
# (chock built from exactly what the flake would build).
#
# Needs: CHOCK_SHARED (scripts/test sets it), a Nix daemon and Zig
# (scripts/setup), cargo. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD

die() {
  echo "modules: $*" >&2
  exit 1
}
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
pass() { echo "ok: $*"; }

# --- what the checks need ----------------------------------------------------

shared=${CHOCK_SHARED:?set CHOCK_SHARED to the shared directory (scripts/test does)}
lib_dir=$shared/corpus/nixpkgs-lib/lib
[[ -f $lib_dir/default.nix ]] || die "nixpkgs' lib is not at $lib_dir; CHOCK_SHARED must hold corpus/nixpkgs-lib"
command -v nix-instantiate >/dev/null || die "nix-instantiate is missing; run scripts/setup"
export NIX_REMOTE=${NIX_REMOTE:-daemon}
nix store ping >/dev/null 2>&1 || die "the Nix daemon does not answer; run scripts/setup"
if python3 -m ziglang version >/dev/null 2>&1; then
  zig=(python3 -m ziglang)
elif command -v zig >/dev/null; then
  zig=(zig)
else
  die "Zig is missing (the oracle for ZON); run scripts/setup"
fi
command -v cargo >/dev/null || die "cargo is missing"

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

nix_eval_json() { # FILE ATTR: the attribute of checks/FILE, called with nixpkgs' lib, as JSON
  nix-instantiate --eval --strict --json \
    -E "(import $repo/checks/$1 { lib = import $lib_dir; })$2"
}

# --- module evaluation tests (lib.runTests) ----------------------------------

# lib.runTests answers [ ] or the failures; anything else is a failure too.
run_tests() { # NAME EXPRESSION-FILE
  local out
  if ! out=$(nix_eval_json "$2" "" 2>&1); then
    fail "$1: evaluation failed: $out"
  elif [[ $out != "[]" ]]; then
    fail "$1: $(python3 -c 'import json,sys
for f in json.loads(sys.argv[1]):
    print("\n  %s\n    expected: %s\n    result:   %s" % (f["name"], json.dumps(f["expected"]), json.dumps(f["result"])))' "$out")"
  else
    pass "$1 ($(grep -c '^  test[A-Za-z]* =' "checks/$2") tests)"
  fi
}

# The runner must see a failure: a broken test is reported, not passed.
cat >"$work/broken.nix" <<'EOF'
{ lib }: lib.runTests { testBroken = { expr = 1; expected = 2; }; }
EOF
if out=$(nix-instantiate --eval --strict --json -E "import $work/broken.nix { lib = import $lib_dir; }") &&
  [[ $out == *testBroken* ]]; then
  pass "the runner reports a failing test"
else
  fail "the runner did not report a deliberately failing test: $out"
fi

run_tests "zon writer" zon.nix
run_tests "NixOS module" nixos.nix
run_tests "home-manager module" home-manager.nix
run_tests "flake outputs, lock and package" flake-outputs.nix
run_tests "the Nix examples the docs show" examples.nix

# --- what a person reads when a configuration is wrong ----------------------

expect_message() { # ATTR TEXT...: evaluating checks/messages.nix's ATTR fails, saying each TEXT
  local attr=$1 out text
  shift
  if out=$(nix_eval_json messages.nix ".$attr" 2>&1); then
    fail "message $attr: evaluation succeeded, expected it to fail"
    return
  fi
  for text in "$@"; do
    if [[ $out != *"$text"* ]]; then
      fail "message $attr: expected it to say '$text', it said: $out"
      return
    fi
  done
  pass "message $attr"
}
expect_message misspelledDecision 'programs.chock.orgPolicy.rules."[definition 1-entry 2]".decision' \
  'is not of type `one of "deny", "agent_then_human", "ask", "agent_review", "allow"' '"alow"'
expect_message malformedPattern 'Failed assertions:' \
  'programs.chock.orgPolicy.rules[1] { action = "git.*.push"; decision = "deny"; }' 'such as "git.*"'
expect_message unknownRuleField 'rules."[definition 1-entry 1]".actoin'"' does not exist" 'Did you mean'
expect_message oldSinkShape 'programs.chock.orgPolicy.sinks."[definition 1-entry 1]".kind'"' does not exist" \
  'sinks."[definition 1-entry 1]".name' 'sinks."[definition 1-entry 1]".to'
expect_message floatInBundle 'programs.chock.orgPolicy.search.weight' 'is not of type `ZON value'
expect_message noPackage 'pkgs.chock does not exist' 'nixosModules.default'
expect_message homeModuleInNixos '(class: "homeManager") cannot be imported into a module evaluation that expects class "nixos"'

# --- every Nix file parses (the VM test and flake checks need nixpkgs to run) --

while IFS= read -r -d '' file; do
  nix-instantiate --parse "$file" >/dev/null 2>"$work/parse.err" || fail "$file does not parse: $(cat "$work/parse.err")"
done < <(find flake.nix nix modules checks -name '*.nix' -print0)
pass "every Nix file parses"

# --- the ZON written, read by Zig ---------------------------------------------

mkdir -p "$work/zon"
nix_eval_json render.nix "" >"$work/render.json" || die "checks/render.nix does not evaluate"
python3 - "$work/render.json" "$work/zon" <<'EOF'
import json, os, sys
rendered = json.load(open(sys.argv[1]))
for name, text in rendered["files"].items():
    with open(os.path.join(sys.argv[2], name), "w", encoding="utf-8") as f:
        f.write(text)
    json.dump(rendered["readBack"].get(name), open(os.path.join(sys.argv[2], name + ".json"), "w"))
with open(os.path.join(sys.argv[2], "vm-test-script.py"), "w") as f:
    f.write(rendered["vmTestScript"])
with open(os.path.join(sys.argv[2], "vm-fleet-test-script.py"), "w") as f:
    f.write(rendered["vmFleetTestScript"])
for script, name in (("preStart", "witness-prestart.sh"), ("script", "witness-serve.sh")):
    with open(os.path.join(sys.argv[2], name), "w") as f:
        f.write(rendered["witnessService"][script])
with open(os.path.join(sys.argv[2], "vm-fleet-nodes.json"), "w") as f:
    json.dump(rendered["vmFleetNodes"], f, separators=(",", ":"))
with open(os.path.join(sys.argv[2], "check-bundle.sh"), "w") as f:
    f.write(rendered["checkScript"])
EOF

# The oracle itself must refuse what is not ZON.
printf '.{ .a = "\\q" }\n' >"$work/not-zon.zon"
if "${zig[@]}" ast-check --zon "$work/not-zon.zon" >/dev/null 2>&1; then
  fail "zig ast-check accepted an invalid escape; the ZON oracle is not checking"
fi

"${zig[@]}" build-exe checks/zon-dump.zig -femit-bin="$work/zon-dump" --cache-dir "$work/zig-cache" >/dev/null 2>"$work/zig.err" ||
  die "checks/zon-dump.zig does not build with $("${zig[@]}" version): $(cat "$work/zig.err")"

for file in "$work"/zon/*.zon; do
  name=$(basename "$file")
  before=$failures
  if ! "${zig[@]}" ast-check --zon "$file" 2>"$work/zig.err"; then
    fail "zig ast-check refuses $name: $(cat "$work/zig.err")"
    continue
  fi
  "${zig[@]}" fmt --check --zon "$file" >/dev/null 2>&1 ||
    fail "zig fmt would change $name (the writer's layout is not canonical)"
  cmp -s "$file" "checks/golden/$name" || fail "$name differs from checks/golden/$name"
  read_back=""
  if [[ $(cat "$file.json") != null ]]; then
    read_back=", read back as written"
    if ! "$work/zon-dump" "$file" >"$file.read.json" 2>"$work/zig.err"; then
      fail "checks/zon-dump.zig could not read $name: $(cat "$work/zig.err")"
    else
      python3 - "$file.json" "$file.read.json" <<'PY' || fail "Zig read $name back as different data"
import difflib, json, sys
# Bytes that are not UTF-8 (Zig's \xHH can make them) still show in the diff.
meant, read = (json.loads(open(p, "rb").read().decode("utf-8", "surrogateescape")) for p in sys.argv[1:3])
if meant != read:
    show = lambda v: json.dumps(v, indent=1, sort_keys=True).splitlines()
    print("\n".join(difflib.unified_diff(show(meant), show(read), "meant", "zig read", lineterm="")), file=sys.stderr)
    sys.exit(1)
PY
    fi
  fi
  ((failures == before)) && pass "$name: zig ast-check, zig fmt --check$read_back"
done

# The VM tests' scripts are Python the test driver will run; they must parse.
for vm in vm vm-fleet; do
  if python3 -c 'import sys; compile(open(sys.argv[1]).read(), "testScript", "exec")' "$work/zon/$vm-test-script.py"; then
    pass "the $vm test's script parses"
  else
    fail "the $vm test's script (checks/$vm.nix) is not valid Python"
  fi
done
# The fleet's machines, evaluated with the modules: every assertion passes,
# the laptop has the checkpoint timer, the witness serves its log on the
# port it opens.
if [[ $(cat "$work/zon/vm-fleet-nodes.json") == '{"checkpointTimer":true,"witnessPorts":[8440],"witnessServesTheLog":true}' ]]; then
  pass "the vm-fleet test's machines evaluate with the modules"
else
  fail "the vm-fleet test's machines are not what the test expects: $(cat "$work/zon/vm-fleet-nodes.json")"
fi

# --- flake.lock agrees with flake.nix, by Nix's own rules --------------------

# The flake as CI sees it: the committed tree, with this area's files as they
# are in the working tree (so the checks run before a commit too, and nobody
# else's uncommitted work in a shared checkout gets in). A path: flake, so
# Nix 2.8 reads it without git. Offline and with the lock frozen, Nix fails
# if the lock does not match the inputs (it would have to fetch to re-lock).
mkdir -p "$work/flake"
git archive HEAD | tar -x -C "$work/flake"
find flake.nix flake.lock nix modules checks -type f -print0 | tar --null -T - -cf - | tar -x -C "$work/flake"
if out=$(nix --offline flake metadata --no-update-lock-file --json "path:$work/flake" 2>&1); then
  if python3 -c 'import json, sys
sys.exit(json.loads(sys.argv[1])["locks"]["nodes"] != json.load(open("flake.lock"))["nodes"])' "$out"; then
    pass "flake.lock pins the flake's inputs"
  else
    fail "nix flake metadata shows other pins than flake.lock"
  fi
else
  fail "flake.lock does not match flake.nix's inputs (Nix would re-lock): $out"
fi

# --- the package's source, built ----------------------------------------------

# nix/package.nix's filtered source, from the same copy, built with cargo the
# way rustPlatform.buildRustPackage does (offline, in a read-only source
# tree). The binary is also what the read-back checks below run.
src=$(cd "$work/flake" && nix eval --impure --raw --expr "
  (import ./nix/package.nix {
    lib = import $lib_dir;
    stdenv = { buildPlatform.canExecute = _: true; hostPlatform = { }; };
    installShellFiles = null;
    path = \"/nixpkgs\";
    rustPlatform = { rust.rustc.version = \"$(rustc --version | cut -d' ' -f2)\"; buildRustPackage = args: args; };
  }).src.outPath") || die "nix/package.nix's source does not evaluate"
# The profile-guided build's training runs from the same source.
missing=()
for file in scripts/pgo-train scripts/pgo-train-modules.nix scripts/fix-as-nix/nix-instantiate; do
  [[ -f $src/$file ]] || missing+=("$file")
done
if ((${#missing[@]} == 0)); then
  pass "the package's source holds what its training run needs"
else
  fail "nix/package.nix's source leaves out ${missing[*]}, which its training run (scripts/pgo-train) needs; add each to the list of kept files in nix/package.nix"
fi
target=${CHOCK_FLAKE_TARGET_DIR:-$(cd "$repo/.." && pwd)/target-flake}
chock=$target/debug/chock
# Cargo tells what to rebuild by modification times, and every file in the
# Nix store has the same one (1970), so a target directory kept from an
# earlier run would take a newer source for the one it built. The build
# reads a copy with times of now, read-only as a Nix build's source is.
copy=$work/package-source
cp -r --no-preserve=mode,timestamps "$src" "$copy"
chmod -R a-w "$copy"
if (cd "$copy" && CARGO_TARGET_DIR=$target cargo build --quiet --offline -p chock 2>"$work/cargo.err"); then
  pass "chock builds from the package's filtered source ($src)"
  # No .git there and no CHOCK_COMMIT: the version says so rather than guess.
  version=$("$target/debug/chock" --version)
  if [[ $version == "chock $(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1) (commit unknown)" ]]; then
    pass "chock --version built without git says: $version"
  else
    fail "chock --version built without git and CHOCK_COMMIT says '$version', not '(commit unknown)'"
  fi
else
  fail "chock does not build from nix/package.nix's filtered source; a file the build reads is filtered out: $(tail -20 "$work/cargo.err")"
  chock=""
fi

# --- what Nix writes, Chock reads --------------------------------------------

# The bundle from the NixOS module, the config.zon from home-manager and the
# chock.zon files from lib.zon, read by `chock policy check` and answered by
# `chock policy explain` as the org ceiling they are meant to be. A home of
# its own, so only these files are read (and /etc/chock/org-policy.zon, when
# the machine running the tests has one).
if [[ -n $chock ]]; then
  home=$work/home
  mkdir -p "$home/config/chock" "$home/data" "$work/empty" "$work/project" "$work/vm-project"
  cp "$work/zon/config.zon" "$home/config/chock/config.zon"
  cp "$work/zon/chock.zon" "$work/project/chock.zon"
  cp "$work/zon/vm-project.zon" "$work/vm-project/chock.zon"
  bundle=$work/zon/org-policy.zon
  run_chock() { HOME=$home XDG_CONFIG_HOME=$home/config XDG_DATA_HOME=$home/data "$chock" "$@"; }

  expect_check() { # WHAT ARGS...: chock policy check accepts, naming each file it was given
    local what=$1 out file
    shift
    if ! out=$(run_chock policy check "$@" 2>&1); then
      fail "chock policy check refuses $what: $out"
      return
    fi
    for file in "$home/config/chock/config.zon" "${@: -1}"; do
      [[ $out == *"$file"* ]] || { fail "chock policy check did not read $file for $what: $out"; return; }
    done
    pass "chock policy check reads $what"
  }
  expect_check "the NixOS module's bundle" --project "$work/empty" --org-bundle "$bundle"
  expect_check "a chock.zon from lib.zon" --project "$work/project"
  expect_check "the VM test's chock.zon" --project "$work/vm-project"
  expect_check "the fleet VM test's bundle" --project "$work/empty" --org-bundle "$work/zon/vm-fleet-org-policy.zon"

  # The bundle binds as a ceiling, rule by rule, as the module wrote it.
  expect_answer() { # ACTION PROJECT DECISION LAYER [ARGS...]
    local action=$1 project=$2 decision=$3 layer=$4 out
    shift 4
    if ! out=$(run_chock policy explain "$action" --project "$project" --org-bundle "$bundle" --json "$@" 2>&1); then
      fail "chock policy explain $action failed: $out"
    elif python3 -c 'import json, sys
a = json.loads(sys.argv[1])
sys.exit(not (a["decision"] == sys.argv[2] and a["decided_by"]["layer"] == sys.argv[3]))' "$out" "$decision" "$layer"; then
      pass "explain $action${*:+ $*}: $decision, by the $layer layer"
    else
      fail "explain $action${*:+ $*}: expected $decision by the $layer layer, got $out"
    fi
  }
  expect_answer sandbox.jit "$work/vm-project" deny org
  expect_answer nix.build.packages.x86_64-linux.hello "$work/vm-project" allow project
  expect_answer call.write_file "$work/empty" deny org --agent-kind reviewer
  expect_answer call.write_file "$work/empty" allow default
  expect_answer git.push "$work/empty" agent_then_human org
  expect_answer net.fetch.org.ziglang.docs "$work/project" allow project
  expect_answer exec.workspace.build "$work/project" allow default

  # And the reader refuses what it should: a decision Chock does not know.
  sed 's/\.decision = \.deny/.decision = .denny/' "$bundle" >"$work/bad-bundle.zon"
  if out=$(run_chock policy check --project "$work/empty" --org-bundle "$work/bad-bundle.zon" 2>&1); then
    fail "chock policy check accepted a bundle with the decision .denny"
  elif [[ $out != *"$work/bad-bundle.zon:"* ]]; then
    fail "chock policy check refused a bad bundle without naming its file and line: $out"
  else
    pass "chock policy check refuses a bad bundle, naming it"
  fi

  # The NixOS module's build step (checkOrgPolicy), run as the Nix builder
  # would run it: it installs the bundle unchanged, and fails on a bad one.
  check_bundle() { # TEXT-FILE OUT: run the module's script
    (mkdir -p "$work/build" && cd "$work/build" && rm -rf ./* &&
      PATH=$(dirname "$chock"):$PATH TMPDIR=$work/build textPath=$1 out=$2 bash -eu "$work/zon/check-bundle.sh") >"$work/build.log" 2>&1
  }
  if ! check_bundle "$bundle" "$work/installed.zon"; then
    fail "the NixOS module's bundle check fails on a good bundle: $(cat "$work/build.log")"
  elif ! cmp -s "$bundle" "$work/installed.zon"; then
    fail "the NixOS module's bundle check changed the bundle it installs"
  elif check_bundle "$work/bad-bundle.zon" "$work/installed-bad.zon"; then
    fail "the NixOS module's bundle check passed a bundle Chock refuses"
  else
    pass "the NixOS module's build-time check passes the bundle and stops a bad one"
  fi
fi

# --- the witness service, run ------------------------------------------------

# services.chock-witness's own scripts, run with that chock as systemd would
# (STATE_DIRECTORY set, the port made 0 so any free one is taken): the first
# start makes the key and writes its verifier key, a restart keeps both; the
# witness a config.zon names cosigns a log's checkpoint and refuses the same
# log rewritten.
if [[ -n $chock ]]; then
  w=$work/witness
  mkdir -p "$w/state" "$w/laptop/keys"
  for script in prestart serve; do
    sed -e "s|@chock@/bin/chock|$chock|g" -e 's|--listen 127.0.0.1:8440 |--listen 127.0.0.1:0 |' \
      "$work/zon/witness-$script.sh" >"$w/$script.sh"
  done
  laptop() { (cd "$w/laptop" && HOME=$w/laptop XDG_CONFIG_HOME=$w/laptop/config CHOCK_STATE_DIR=$w/laptop "$chock" "$@"); }
  witness_check() { # sets problem when something is wrong
    STATE_DIRECTORY=$w/state bash -eu "$w/prestart.sh" 2>"$w/prestart.err" || {
      problem="its first start failed: $(cat "$w/prestart.err")"
      return
    }
    local first
    first=$(cat "$w/state/verifier-key")
    STATE_DIRECTORY=$w/state bash -eu "$w/prestart.sh" 2>"$w/prestart.err" || {
      problem="its second start failed: $(cat "$w/prestart.err")"
      return
    }
    [[ $first == witness.fleet.test+* && $(cat "$w/state/verifier-key") == "$first" ]] ||
      { problem="the verifier key is '$first', then '$(cat "$w/state/verifier-key")'"; return; }
    STATE_DIRECTORY=$w/state bash -eu "$w/serve.sh" >"$w/serve.out" 2>&1 &
    witness_pid=$!
    local url="" i
    for i in $(seq 100); do
      url=$(sed -n 's|^witness .* at \(http://[^ ]*\)/add-checkpoint$|\1|p' "$w/serve.out")
      [[ -n $url ]] && break
      sleep 0.1
    done
    [[ -n $url ]] || { problem="it did not start: $(cat "$w/serve.out")"; return; }
    grep -qF "witness $first at" "$w/serve.out" || { problem="it printed another key than verifier-key: $(cat "$w/serve.out")"; return; }
    # The fleet test's laptop log, signed with the key the witness knows.
    (umask 077 && sed -n 's|^ *private = "\(PRIVATE+KEY+chock.local/laptop/alice+[^"]*\)";$|\1|p' checks/vm-fleet.nix >"$w/laptop/keys/checkpoint.key")
    # The witness as a config.zon names it, so `chock log checkpoint` asks it unbidden.
    mkdir -p "$w/laptop/config/chock"
    printf '.{ .witnesses = .{ .{ .url = "%s", .key = "%s" } } }\n' "$url" "$first" >"$w/laptop/config/chock/config.zon"
    laptop log append --count 3 >/dev/null || { problem="chock log append failed"; return; }
    local out
    out=$(laptop log checkpoint 2>&1) || { problem="it refused a good checkpoint: $out"; return; }
    [[ $out == *"— witness.fleet.test "* ]] || { problem="the checkpoint carries no cosignature: $out"; return; }
    rm "$w/laptop/log/"decisions*.jsonl "$w/laptop/log/checkpoint" "$w/laptop/log/checkpoint.tree"
    laptop log append --count 5 >/dev/null || { problem="chock log append failed on the rewritten log"; return; }
    if out=$(laptop log checkpoint 2>&1); then
      problem="it cosigned the rewritten log: $out"
      return
    fi
    [[ $out == *"$url"*rewritten* ]] || { problem="the refusal does not name the witness and the rewrite: $out"; return; }
    [[ ! -e $w/laptop/log/checkpoint ]] || problem="a checkpoint of the rewritten log was written"
  }
  witness_pid="" problem=""
  witness_check
  [[ -z $witness_pid ]] || kill "$witness_pid"
  if [[ -z $problem ]]; then
    pass "services.chock-witness's scripts make the key once, cosign a log and refuse it rewritten"
  else
    fail "services.chock-witness's scripts: $problem"
  fi
fi

if ((failures)); then
  echo "modules: $failures check(s) failed" >&2
  exit 1
fi
echo "modules: all checks passed"
