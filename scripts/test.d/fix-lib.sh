#!/usr/bin/env bash
# fix against nixpkgs lib's own test suites: `chock eval --strict
# lib/tests/misc.nix`, run from the nixpkgs-lib corpus, must print `[ ]`
# (every one of its tests passes; Nix 2.8 cannot evaluate current lib, fix
# must), `lib.evalModules` over a small module set must give the same
# JSON as Nix 2.8, and lib's shell suites must pass, run with fix standing
# in for Nix: scripts/fix-as-nix/nix-instantiate first on PATH, which runs
# `chock eval --impure` with the same arguments (less the ones that only
# tune Nix). Each suite must pass every check.
#
# - lib/tests/modules.sh: the module system (lib.modules, lib.options,
#   lib.types), error messages included;
# - lib/tests/network.sh: lib.network;
# - lib/tests/filesystem.sh: lib.filesystem (reading directories);
# - lib/tests/systems.nix (an expression, `[ ]` when every test passes):
#   lib.systems.
#
# sources.sh cannot run this way:
# it copies sources into the store (`"${cleanSource ./.}"`) and lists the
# copy, and fix never writes to the store (the path is computed, not made).
#
# With FIX_LIB_COMPARE=1 each suite runs with Nix 2.8's
# nix-instantiate right after, and both times are printed (what
# docs/benchmarks.md reports); Nix 2.8 fails some checks, since this lib is
# newer than it.
#
# Needs: CHOCK_BIN (the release chock), CHOCK_SHARED (scripts/test sets
# both), nix-instantiate (scripts/setup installs it).
set -euo pipefail
cd "$(dirname "$0")/../.."

bin=${CHOCK_BIN:?set CHOCK_BIN to the chock binary (scripts/test does)}
shared=${CHOCK_SHARED:?set CHOCK_SHARED to the shared directory (scripts/test does)}
corpus=$shared/corpus/nixpkgs-lib
[[ -f $corpus/lib/tests/misc.nix ]] || {
  echo "fix-lib: nixpkgs lib is not at $corpus; CHOCK_SHARED must hold corpus/nixpkgs-lib" >&2
  exit 1
}
bin=$(realpath "$bin")

started=$(date +%s%N)
got=$(cd "$corpus" && "$bin" eval --strict lib/tests/misc.nix)
took=$((($(date +%s%N) - started) / 1000000))
if [[ $got != "[ ]" ]]; then
  echo "fix-lib: lib/tests/misc.nix printed, instead of [ ]:" >&2
  head -c 4000 <<< "$got" >&2
  exit 1
fi
echo "fix-lib: lib/tests/misc.nix gives [ ] in ${took} ms"

command -v nix-instantiate > /dev/null || {
  echo "fix-lib: nix-instantiate is missing; run scripts/setup to install Nix" >&2
  exit 1
}
modules=$(mktemp -d)
trap 'rm -rf "$modules"' EXIT
cat > "$modules/eval.nix" <<'NIX'
let
  lib = import LIB;
  base = { lib, ... }: {
    options.services = lib.mkOption {
      type = lib.types.attrsOf (lib.types.submodule ({ name, ... }: {
        options.enable = lib.mkEnableOption "the service";
        options.port = lib.mkOption { type = lib.types.port; default = 8000; };
        options.name = lib.mkOption { type = lib.types.str; default = name; };
        options.tags = lib.mkOption { type = lib.types.listOf lib.types.str; default = [ ]; };
      }));
      default = { };
    };
    options.ports = lib.mkOption { type = lib.types.listOf lib.types.port; };
  };
  web = { config, lib, ... }: {
    services.web = { enable = true; port = 8080; tags = [ "public" ]; };
    services.db.tags = lib.mkBefore [ "internal" ];
    ports = lib.mapAttrsToList (_: s: s.port) (lib.filterAttrs (_: s: s.enable) config.services);
  };
  overrides = { lib, ... }: {
    services.web.port = lib.mkForce 9090;
    services.db = { enable = lib.mkDefault true; tags = [ "backup" ]; };
  };
in
(lib.evalModules { modules = [ base web overrides ]; }).config
NIX
# Nix 2.8 cannot evaluate current lib; its modules.nix with an older
# lib.minVersion check aside, the module system here is what both read.
sed -i "s|LIB|$corpus/lib|" "$modules/eval.nix"
ours=$("$bin" eval --strict --json --root "$corpus" --root "$modules" "$modules/eval.nix")
if theirs=$(NIX_REMOTE=${NIX_REMOTE:-daemon} nix-instantiate --eval --strict --json "$modules/eval.nix" 2> "$modules/nix.err"); then
  if [[ $ours != "$theirs" ]]; then
    echo "fix-lib: lib.evalModules differs from Nix 2.8" >&2
    echo " fix: $ours" >&2
    echo " nix: $theirs" >&2
    exit 1
  fi
  echo "fix-lib: lib.evalModules gives the same JSON as Nix 2.8: $ours"
else
  echo "fix-lib: Nix 2.8 cannot evaluate this lib ($(head -c 300 "$modules/nix.err" | tr '\n' ' ')); fix gives $ours"
  expected='{"ports":[8000,9090],"services":{"db":{"enable":true,"name":"db","port":8000,"tags":["internal","backup"]},"web":{"enable":true,"name":"web","port":9090,"tags":["public"]}}}'
  if [[ $ours != "$expected" ]]; then
    echo "fix-lib: lib.evalModules gave $ours, not $expected" >&2
    exit 1
  fi
fi

work=$(mktemp -d)
trap 'rm -rf "$modules" "$work"' EXIT

# The shell suites. They write nothing into the corpus, but modules.sh expects the
# folder to be called `lib` under a nixpkgs checkout (the messages it
# matches name `lib/modules.nix`): a copy keeps the shared corpus read-only.
mkdir -p "$work/nixpkgs"
cp -r "$corpus/lib" "$work/nixpkgs/lib"


# What a suite's output says of its checks: "407 Pass, 0 Fail", or "tests ok".
summary() {
  grep -E '^[0-9]+ (Pass|Fail)$|^tests ok$' "$1" | paste -sd, - | sed 's/,/, /g' || true
}

failed=0
for suite in modules network filesystem; do
  script=$work/nixpkgs/lib/tests/$suite.sh
  started=$(date +%s%N)
  if PATH=$PWD/scripts/fix-as-nix:$PATH CHOCK_BIN=$bin bash "$script" > "$work/$suite.out" 2>&1; then
    took=$((($(date +%s%N) - started) / 1000000))
    echo "fix-lib: lib/tests/$suite.sh passes with fix in ${took} ms ($(summary "$work/$suite.out"))"
  else
    echo "fix-lib: lib/tests/$suite.sh fails with fix standing in for nix-instantiate:" >&2
    grep -B2 -A12 'TEST FAILED\|failed' "$work/$suite.out" | head -80 >&2 || tail -40 "$work/$suite.out" >&2
    failed=1
    continue
  fi
  if [[ ${FIX_LIB_COMPARE:-0} == 1 ]]; then
    started=$(date +%s%N)
    NIX_REMOTE=${NIX_REMOTE:-daemon} bash "$script" > "$work/$suite.nix.out" 2>&1 && result=passes || result=fails
    took=$((($(date +%s%N) - started) / 1000000))
    echo "fix-lib: with Nix 2.8, lib/tests/$suite.sh $result in ${took} ms ($(summary "$work/$suite.nix.out"))"
  fi
done
started=$(date +%s%N)
got=$(cd "$work/nixpkgs" && "$bin" eval --strict lib/tests/systems.nix 2>&1) || true
took=$((($(date +%s%N) - started) / 1000000))
if [[ $got == "[ ]" ]]; then
  echo "fix-lib: lib/tests/systems.nix gives [ ] in ${took} ms"
else
  echo "fix-lib: lib/tests/systems.nix printed, instead of [ ]:" >&2
  head -c 4000 <<< "$got" >&2
  failed=1
fi
exit $failed
