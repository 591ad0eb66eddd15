#!/usr/bin/env bash
# The cost of one `chock hook` call, from process start to answer, against
# /bin/true in the same hyperfine run. Each measured command runs its program
# 100 times in a loop (hyperfine cannot time a single call of a few
# milliseconds precisely), with a recorded Claude Code payload on stdin.
#
#   rust/hook/bench.sh [path/to/chock]      (default: target/release/chock)
#
# The project, home and state folders are temporary; the project has a
# chock.zon with three rules, and every call appends its lines to a real
# decision log.
set -euo pipefail
cd "$(dirname "$0")/../.."
chock=$(realpath "${1:-target/release/chock}")
[[ -x $chock ]] || { echo "no $chock: run cargo build --release -p chock" >&2; exit 1; }
command -v hyperfine >/dev/null || { echo "hyperfine is missing: run scripts/setup" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/project" "$work/home" "$work/state"
git -C "$work/project" init -q
cat > "$work/project/chock.zon" <<'EOF'
.{
    .policy = .{
        .rules = .{
            .{ .action = "exec.path.rm", .decision = .deny },
            .{ .action = "net.fetch.org.ziglang.*", .decision = .allow },
            .{ .action = "mcp.github.tool.*", .decision = .ask },
        },
    },
}
EOF
export HOME=$work/home XDG_CONFIG_HOME=$work/home/.config XDG_DATA_HOME=$work/home/.local/share
export CHOCK_STATE_DIR=$work/state CLAUDE_PROJECT_DIR=$work/project
fixtures=rust/hook/tests/fixtures/claude
for name in bash-cd-rm bash-cargo-test write-bashrc todowrite bash-long; do
  sed -e "s#@PROJECT@#$work/project#g" -e "s#@HOME@#$work/home#g" \
    "$fixtures/$name.json" > "$work/$name.json"
done
cat > "$work/loop.sh" <<'EOF'
#!/bin/sh
i=0
while [ $i -lt 100 ]; do "$@" < "$PAYLOAD" > /dev/null; i=$((i+1)); done
EOF
chmod +x "$work/loop.sh"

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-16s %12s %12s %7s %12s %12s\n' payload "true ms" "chock ms" ratio "true cpu ms" "chock cpu ms"
for name in bash-cd-rm bash-cargo-test write-bashrc todowrite bash-long; do
  export PAYLOAD=$work/$name.json
  (cd "$work/project" && hyperfine -N -w 3 -r "${RUNS:-30}" --export-json "$work/$name.hf.json" \
    "$work/loop.sh /bin/true" "$work/loop.sh $chock hook claude" >/dev/null)
  python3 - "$work/$name.hf.json" "$name" <<'EOF'
import json, sys
true, chock = json.load(open(sys.argv[1]))["results"]
# Wall clock: the median of the runs; CPU: user plus system, the mean.
wall = lambda r: r["median"] * 1000 / 100
cpu = lambda r: (r["user"] + r["system"]) * 1000 / 100
print(f"{sys.argv[2]:16} {wall(true):12.2f} {wall(chock):12.2f} {chock['median'] / true['median']:7.2f}"
      f" {cpu(true):12.2f} {cpu(chock):12.2f}")
EOF
done
