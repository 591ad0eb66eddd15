#!/usr/bin/env bash
# fix against nixpkgs lib's own test suite: `chock eval --strict
# lib/tests/misc.nix`, run from the nixpkgs-lib corpus, must print `[ ]`
# (every one of its tests passes; Nix 2.8 cannot evaluate current lib, fix
# must), and `lib.evalModules` over a small module set must give the same
# JSON as Nix 2.8.
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
