#!/usr/bin/env bash
# Flake inputs at session start: `chock inputs --fetch` against
# `nix flake archive` (what the Zig Chock ran at session start), on the same
# flake.lock, from the same loopback HTTP server, in the same hyperfine run.
#
#   rust/inputs/bench.sh [path/to/chock]      (default: target/release/chock)
#   N=20 SIZE_KIB=512 rust/inputs/bench.sh    (inputs, and random KiB in each)
#
# Two measurements:
#   cold  every input's store path is deleted before each run, so both
#         download, unpack, hash and add all N inputs;
#   warm  every input is already in the store (the ordinary session start).
# Needs the Nix daemon (scripts/setup), hyperfine and python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
chock=$(realpath "${1:-target/release/chock}")
[[ -x $chock ]] || { echo "no $chock: run cargo build --release -p chock" >&2; exit 1; }
for tool in hyperfine python3 nix; do
  command -v $tool >/dev/null || { echo "$tool is missing: run scripts/setup" >&2; exit 1; }
done
N=${N:-20}
SIZE_KIB=${SIZE_KIB:-512}
export NIX_REMOTE=daemon
nix() { command nix --extra-experimental-features 'nix-command flakes' "$@"; }

work=$(mktemp -d)
server=
cleanup() {
  [[ -n $server ]] && kill "$server" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/www" "$work/src" "$work/project" "$work/home" "$work/state"
export HOME=$work/home XDG_CONFIG_HOME=$work/home/.config XDG_DATA_HOME=$work/home/.local/share
export XDG_CACHE_HOME=$work/home/.cache CHOCK_STATE_DIR=$work/state

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory "$work/www" "$port" >/dev/null 2>&1 &
server=$!

inputs="" nodes="" roots=""
for i in $(seq 1 "$N"); do
  top=$work/src/t$i/t$i
  mkdir -p "$top/lib"
  head -c "${SIZE_KIB}K" /dev/urandom > "$top/lib/data"
  printf '%s %s\n' "$i" "$(date +%s%N)" > "$top/default.nix"
  tar -C "$work/src/t$i" -czf "$work/www/t$i.tar.gz" "t$i"
  hash=$(nix hash path --sri "$top")
  url="http://127.0.0.1:$port/t$i.tar.gz"
  inputs+="    t$i = { url = \"$url\"; flake = false; };"$'\n'
  nodes+="\"t$i\": {\"flake\": false, \"locked\": {\"type\": \"tarball\", \"url\": \"$url\", \"narHash\": \"$hash\"}, \"original\": {\"type\": \"tarball\", \"url\": \"$url\"}},"
  roots+="\"t$i\": \"t$i\","
done
cat > "$work/project/flake.nix" <<EOF
{
  inputs = {
$inputs  };
  outputs = _: { };
}
EOF
cat > "$work/project/flake.lock" <<EOF
{"nodes": {$nodes "root": {"inputs": {${roots%,}}}}, "root": "root", "version": 7}
EOF
cat > "$work/project/chock.zon" <<'EOF'
.{ .policy = .{ .rules = .{ .{ .action = "nix.net.eval.*", .decision = .allow } } } }
EOF
project=$work/project

# Every input's store path, as chock computes it (and checks it against the store).
mapfile -t paths < <("$chock" inputs --project "$project" --json |
  python3 -c 'import json,sys; [print(i["store_path"]) for i in json.load(sys.stdin)["inputs"]]')
delete="nix store delete ${paths[*]} >/dev/null 2>&1 || true"

chock_fetch="$chock inputs --project $project --fetch >/dev/null 2>&1"
nix_archive="nix --extra-experimental-features 'nix-command flakes' flake archive --no-write-lock-file $project >/dev/null 2>&1"

# Both must get every input into the store on their own.
bash -c "$delete"; bash -c "$chock_fetch"
for p in "${paths[@]}"; do [[ -d $p ]] || { echo "chock did not fetch $p" >&2; exit 1; }; done
bash -c "$delete"; bash -c "$nix_archive"
for p in "${paths[@]}"; do [[ -d $p ]] || { echo "nix did not fetch $p" >&2; exit 1; }; done

echo "== cold: $N inputs of $SIZE_KIB KiB each, deleted from the store before each run"
hyperfine --warmup 1 --runs 10 --prepare "$delete" \
  -n "chock inputs --fetch" "$chock_fetch" \
  -n "nix flake archive" "$nix_archive"
echo "== warm: $N inputs already in the store"
hyperfine --warmup 3 --runs 30 \
  -n "chock inputs --fetch" "$chock_fetch" \
  -n "nix flake archive" "$nix_archive"
