#!/usr/bin/env bash
# Lines shipped per second to each kind of sink (journald's native protocol,
# syslog over a Unix socket, UDP, TCP and TLS, OTLP over HTTP and gRPC, each
# receiver on this machine reading and dropping what it gets), and the time
# of a log append with no sink and with a configured sink down whose shipper
# holds it and keeps trying it. Figures in docs/benchmarks.md.
#   scripts/bench/sinks.sh [LINES] [APPENDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
lines=${1:-20000}
appends=${2:-2000}
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
cargo run --release -q -p chock-sinks --example bench -- "$lines" "$appends"
