#!/usr/bin/env bash
# ZON against Zig, through the release binary: what `chock policy` writes
# (the shipped table, every suggested rule) must pass `zig ast-check --zon`,
# a suggested rule must really raise the answer, and `chock policy check` must
# accept or refuse a file exactly when Zig does.
set -euo pipefail
: "${CHOCK_BIN:?set CHOCK_BIN to the chock binary (scripts/test does)}"
if ! python3 -m ziglang version >/dev/null 2>&1; then
  echo "zon.sh: Zig (the ZON oracle) is missing: run scripts/setup, or python3 -m pip install ziglang" >&2
  exit 1
fi
zig() { python3 -m ziglang "$@"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home XDG_CONFIG_HOME=$work/config XDG_DATA_HOME=$work/data
mkdir -p "$HOME"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# 1. The shipped table as printed.
"$CHOCK_BIN" policy defaults >"$work/defaults.zon"
zig ast-check --zon "$work/defaults.zon" || fail "zig refuses chock policy defaults"
zig fmt --check --zon "$work/defaults.zon" || fail "chock policy defaults is not in zig fmt layout"

# 2. Suggested rules: valid ZON, and adding one raises the answer to allow.
mkdir -p "$work/p"
cat >"$work/p/chock.zon" <<'ZON'
.{
    .policy = .{
        .rules = .{
            .{ .action = "net.fetch.*", .decision = .deny },
            .{ .tool = "run_command", .action = "git.push", .decision = .agent_then_human },
            .{ .agent_kind = "reviewer", .decision = .ask },
        },
    },
}
ZON
suggest() {
  "$CHOCK_BIN" policy explain "$@" --project "$work/p" --json |
    python3 -c 'import json,sys; s=json.load(sys.stdin)["suggestion"]; print(s["rule"] if s else "")'
}
answer() {
  "$CHOCK_BIN" policy explain "$@" --project "$work/p" --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["decision"])'
}
check_suggestion() {
  local rule
  rule=$(suggest "$@")
  [[ -n $rule ]] || { fail "no suggestion for $*"; return; }
  printf '.{ .policy = .{ .rules = .{ %s } } }\n' "$rule" >"$work/rule.zon"
  zig ast-check --zon "$work/rule.zon" || fail "zig refuses the suggested rule for $*: $rule"
  cp "$work/p/chock.zon" "$work/p/chock.zon.orig"
  python3 - "$work/p/chock.zon" "$rule" <<'PY'
import sys
path, rule = sys.argv[1], sys.argv[2]
text = open(path).read().replace("        .rules = .{\n", "        .rules = .{\n            " + rule + ",\n", 1)
open(path, "w").write(text)
PY
  [[ $(answer "$@") == allow ]] || fail "adding $rule did not allow $*"
  mv "$work/p/chock.zon.orig" "$work/p/chock.zon"
}
check_suggestion net.fetch.org.ziglang.docs
check_suggestion git.push --tool run_command
check_suggestion call.write_file --agent-kind reviewer
check_suggestion exec.nix.store.abc-jq.bin.jq
check_suggestion 'nix.build.packages.x86_64-linux.python3%2E12'

# 3. chock's ZON reader accepts a file exactly when Zig does. The value sits
#    in a field chock.zon does not have: the reader parses the whole file
#    before it reads any field, so a file whose only fault is that field
#    (`unknown field `.other``) is one whose syntax it accepted.
syntax_ok() { # project dir, stderr file
  "$CHOCK_BIN" policy check --project "$1" >/dev/null 2>"$2" || grep -q 'unknown field `.other`' "$2"
}
cases=(
  '1' '01' '1_000' '1__0' '0x1F' '0X1F' '-0' '-0.0' '- 1' '1.5e-3' '1.' '0x1.8p3' 'nan' '-inf' '-nan'
  '"a\tb"' '"\q"' '"\u{1F600}"' '"\u{D800}"' "'x'" "''" '.allow' '.@"fn"' '.fn' '.error' '.@""'
  '.{ .a = 1, .a = 2 }' '.{ .a = 1, .@"a" = 2 }' '.{ 1, .a = 2 }' '.{ .a = 1, 2 }' '.{ 1, 2, }' '.{,}'
  'foo' 'undefined' '(1)' '1 + 2' '.a.b' 'Foo{}' '@import("x")' 'true' 'null'
)
i=0
for case in "${cases[@]}"; do
  i=$((i + 1))
  mkdir -p "$work/c$i"
  printf '.{\n    .other = %s,\n}\n' "$case" >"$work/c$i/chock.zon"
  if zig ast-check --zon "$work/c$i/chock.zon" >/dev/null 2>&1; then zig_says=accept; else zig_says=refuse; fi
  if syntax_ok "$work/c$i" "$work/c$i/err"; then we_say=accept; else we_say=refuse; fi
  [[ $zig_says == "$we_say" ]] || fail "$case: zig would $zig_says, chock would $we_say ($(head -1 "$work/c$i/err"))"
  if [[ $we_say == refuse ]] && ! grep -q "chock.zon:[0-9]*:[0-9]*: " "$work/c$i/err"; then
    fail "$case: the refusal does not name FILE:LINE:COL"
  fi
done
for ws in $'\t' $'\r\n' ' //! doc'; do
  i=$((i + 1)); mkdir -p "$work/c$i"
  printf '.{ .other = 1 }%s\n' "$ws" >"$work/c$i/chock.zon"
  if zig ast-check --zon "$work/c$i/chock.zon" >/dev/null 2>&1; then zig_says=accept; else zig_says=refuse; fi
  if syntax_ok "$work/c$i" "$work/c$i/err"; then we_say=accept; else we_say=refuse; fi
  [[ $zig_says == "$we_say" ]] || fail "trailing ${ws@Q}: zig would $zig_says, chock would $we_say"
done

checked=$(( ${#cases[@]} + 3 + 5 + 1 ))
if ((failures)); then
  echo "zon.sh: $((checked - failures)) passed, $failures failed"
  exit 1
fi
echo "zon.sh: $checked passed, 0 failed"
