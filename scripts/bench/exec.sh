#!/usr/bin/env bash
# `chock exec -- /bin/true` against bubblewrap, in one run, taking turns:
#   bare         bwrap --unshare-all --ro-bind / / /bin/true
#   same tree    bwrap building the tree Chock builds, with a seccomp filter
#                holding Chock's lists (compiled with python3-seccomp)
#   chock        a project holding only chock.zon (every control input missing,
#                so each start makes and removes its placeholders)
#   chock+router the same with a rule that starts the network router
#   chock, inputs there   both again with every control input present
# Prints the median wall time of each (hyperfine) and the CPU per start
# (perf task-clock, median of 5 rounds). Figures in docs/benchmarks.md.
#   CHOCK_BIN=target/release/chock scripts/bench/exec.sh [RUNS]
# Needs root, bwrap, hyperfine, perf and python3-seccomp.
set -euo pipefail
: "${CHOCK_BIN:?set CHOCK_BIN to a release chock}"
runs=${1:-100}
work=$(mktemp -d /tmp/chock-bench-exec.XXXXXX)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home XDG_DATA_HOME=$work/data XDG_CACHE_HOME=$work/cache
export XDG_CONFIG_HOME=$work/config XDG_STATE_HOME=$work/state
mkdir -p "$HOME"

/usr/bin/python3 - "$work/filter.bpf" <<'PY'
import errno, sys
import seccomp as s
f = s.SyscallFilter(defaction=s.ALLOW)
kill, eperm, enosys = s.KILL_PROCESS, s.ERRNO(errno.EPERM), s.ERRNO(errno.ENOSYS)
for name in ["unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "open_tree",
             "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
             "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
             "add_key", "keyctl", "request_key", "ptrace", "process_vm_readv",
             "process_vm_writev", "bpf", "userfaultfd", "reboot", "syslog", "sethostname",
             "open_by_handle_at"]:
    f.add_rule(kill, name)
f.add_rule(kill, "execveat", s.Arg(4, s.MASKED_EQ, 0x1000, 0x1000))
f.add_rule(kill, "socket", s.Arg(0, s.EQ, 40))
for bit in [0x80, 0x20000, 0x2000000, 0x4000000, 0x8000000, 0x10000000, 0x20000000, 0x40000000]:
    f.add_rule(kill, "clone", s.Arg(0, s.MASKED_EQ, bit, bit))
for name in ["io_uring_setup", "io_uring_enter", "io_uring_register"]:
    f.add_rule(eperm, name)
for request in [0x5412, 0x541C]:
    f.add_rule(eperm, "ioctl", s.Arg(1, s.MASKED_EQ, 0xFFFFFFFF, request))
for name, flags in [("sendto", 3), ("sendmsg", 2), ("sendmmsg", 3)]:
    f.add_rule(eperm, name, s.Arg(flags, s.MASKED_EQ, 0x20000000, 0x20000000))
for bit in [0o4000, 0o2000]:
    for name, mode in [("chmod", 1), ("fchmod", 1), ("fchmodat", 2), ("mknod", 1), ("mknodat", 2), ("creat", 1)]:
        f.add_rule(eperm, name, s.Arg(mode, s.MASKED_EQ, bit, bit))
    for create in [0o100, 0o20200000]:
        f.add_rule(eperm, "open", s.Arg(1, s.MASKED_EQ, create, create), s.Arg(2, s.MASKED_EQ, bit, bit))
        f.add_rule(eperm, "openat", s.Arg(2, s.MASKED_EQ, create, create), s.Arg(3, s.MASKED_EQ, bit, bit))
for name in ["clone3", "openat2"]:
    f.add_rule(enosys, name)
for name in ["mmap", "mprotect", "pkey_mprotect"]:
    f.add_rule(eperm, name, s.Arg(2, s.MASKED_EQ, 0x6, 0x6))
f.add_rule(eperm, "personality", s.Arg(0, s.MASKED_EQ, 0xFFFFFFFF, 0x0400000))
f.add_rule(eperm, "shmat", s.Arg(2, s.MASKED_EQ, 0o100000, 0o100000))
with open(sys.argv[1], "wb") as out:
    f.export_bpf(out)
PY

rule='.{ .action = "exec.unparsed", .decision = .allow }'
route='.{ .action = "net.connect.org.example.443", .decision = .allow }'
for p in plain routed plain-there routed-there; do mkdir -p "$work/$p"; done
printf '.{ .policy = .{ .rules = .{ %s } } }\n' "$rule" | tee "$work/plain/chock.zon" >"$work/plain-there/chock.zon"
printf '.{ .policy = .{ .rules = .{ %s, %s } } }\n' "$rule" "$route" | tee "$work/routed/chock.zon" >"$work/routed-there/chock.zon"
for p in plain-there routed-there; do
  (cd "$work/$p" && git init -q && mkdir -p .agents/policies .chock .claude .codex .gemini .cursor .vscode .idea .husky \
    && touch chock.lock .mcp.json .envrc .pre-commit-config.yaml lefthook.yml lefthook.yaml .lefthook.yml .lefthook.yaml)
done

cache=$work/bench-cache
mkdir -p "$cache"
same=(bwrap --unshare-all --new-session --die-with-parent --tmpfs / --ro-bind /usr /usr)
for top in bin sbin lib lib64; do
  if [[ -L /$top ]]; then same+=(--symlink "$(readlink "/$top")" "/$top")
  elif [[ -d /$top ]]; then same+=(--ro-bind "/$top" "/$top"); fi
done
same+=(--ro-bind-try /nix/store /nix/store --ro-bind-try /etc/alternatives /etc/alternatives
  --ro-bind-try /etc/ld.so.cache /etc/ld.so.cache --dev /dev --proc /proc --tmpfs /tmp
  --bind "$work/plain" "$work/plain" --bind "$cache" /run/chock/cache --remount-ro /
  --seccomp 9 /bin/true)
same_sh="${same[*]} 9<$work/filter.bpf"
for p in plain routed plain-there routed-there; do "$CHOCK_BIN" exec --project "$work/$p" -- /bin/true 2>/dev/null; done

hyperfine -N --warmup 10 --runs "$runs" --style basic --export-markdown "$work/wall.md" \
  -n bare "bwrap --unshare-all --ro-bind / / /bin/true" \
  -n "same tree + seccomp" "bash -c '$same_sh'" \
  -n chock "$CHOCK_BIN exec --project $work/plain -- /bin/true" \
  -n "chock, router" "$CHOCK_BIN exec --project $work/routed -- /bin/true" \
  -n "chock, inputs there" "$CHOCK_BIN exec --project $work/plain-there -- /bin/true" \
  -n "chock, router, inputs there" "$CHOCK_BIN exec --project $work/routed-there -- /bin/true" >/dev/null
cat "$work/wall.md"

if perf stat -e task-clock true >/dev/null 2>&1; then
  cpu() { perf stat -x, -r 20 -e task-clock "$@" 2>&1 >/dev/null | awk -F, '/task-clock/ { print $1 }'; }
  declare -A got
  names=(bare same chock routed there routed-there)
  for _ in 1 2 3 4 5; do
    got[bare]+="$(cpu bwrap --unshare-all --ro-bind / / /bin/true) "
    got[same]+="$(cpu bash -c "$same_sh") "
    got[shell]+="$(cpu bash -c true) "
    got[chock]+="$(cpu "$CHOCK_BIN" exec --project "$work/plain" -- /bin/true) "
    got[routed]+="$(cpu "$CHOCK_BIN" exec --project "$work/routed" -- /bin/true) "
    got[there]+="$(cpu "$CHOCK_BIN" exec --project "$work/plain-there" -- /bin/true) "
    got[routed-there]+="$(cpu "$CHOCK_BIN" exec --project "$work/routed-there" -- /bin/true) "
  done
  python3 - "${got[bare]}" "${got[same]}" "${got[shell]}" "${got[chock]}" "${got[routed]}" "${got[there]}" "${got[routed-there]}" <<'PY'
import statistics, sys
bare, same, shell, chock, routed, there, routed_there = (statistics.median(float(v) for v in a.split()) for a in sys.argv[1:])
same -= shell
print(f"CPU per start: bare {bare:.2f} ms, same tree + seccomp {same:.2f} ms (bash -c taken off), "
      f"chock {chock:.2f} ms ({chock / same:.2f}x), chock+router {routed:.2f} ms ({routed / same:.2f}x), "
      f"inputs there {there:.2f} ms ({there / same:.2f}x), router+inputs there {routed_there:.2f} ms ({routed_there / same:.2f}x)")
PY
fi
