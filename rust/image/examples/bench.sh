#!/usr/bin/env bash
# The container image benchmark of docs/benchmarks.md: a ~500 MB image made
# by umoci from the host's own files (/usr/lib/llvm-14, /usr/lib/gcc and
# /usr/lib/python3.11, one gzip layer), written into a tree by chock-image
# (a cold start), by `umoci unpack --rootless`, and by `tar -xzf` of the
# same layer, each run by hyperfine in one run. Everything is made in a
# temporary directory and deleted at the end.
set -euo pipefail
cd "$(dirname "$0")/../../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build -q --release -p chock-image --example unpack
unpack=${CARGO_TARGET_DIR:-target}/release/examples/unpack

umoci init --layout "$work/layout"
umoci new --image "$work/layout:big"
umoci unpack --rootless --image "$work/layout:big" "$work/bundle" >/dev/null
mkdir -p "$work/bundle/rootfs/usr/lib"
cp -a /usr/lib/llvm-14 /usr/lib/gcc /usr/lib/python3.11 "$work/bundle/rootfs/usr/lib/"
umoci repack --image "$work/layout:big" "$work/bundle"
rm -rf "$work/bundle"
du -sh --apparent-size "$work/layout"
layer=$(find "$work/layout/blobs/sha256" -size +1M)

hyperfine --runs "${RUNS:-5}" --export-markdown "$work/result.md" \
  --prepare "rm -rf $work/trees $work/umoci $work/tar" \
  -n chock-image "$unpack $work/layout docker.io/library/big:big $work/trees" \
  -n "umoci unpack" "umoci unpack --rootless --image $work/layout:big $work/umoci" \
  -n "tar -xzf" "mkdir $work/tar && tar -xzf $layer -C $work/tar"
cat "$work/result.md"
