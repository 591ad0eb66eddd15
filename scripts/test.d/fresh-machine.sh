#!/usr/bin/env bash
# The README's main command, as written there, on a machine that has no Nix
# build users: Debian's nix-bin makes none, and a daemon without them answers
# a ping but refuses every build.
#
# The scratch machine is a private mount and PID namespace (this machine's
# users, daemon and processes are never touched):
#   /etc     a copy of this machine's, with the nixbld group and users removed,
#            so scripts/setup has to create them (useradd renames files in
#            /etc, hence a copied directory rather than bind-mounted files);
#   /nix/var/nix/daemon-socket
#            an empty tmpfs: no daemon answers there until scripts/setup
#            starts one, which reads the copied /etc (and its nix.conf);
#   /tmp     a scratch directory, where that daemon writes its log.
# The store and its database are shared with this machine's daemon, as two
# daemons' workers share them. When the namespace's first process exits the
# kernel ends the scratch daemon with it.
#
# The README's second command, scripts/test, is the run this script is part
# of; CI runs it on a fresh Debian 12 container, where the build users are
# missing too.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
[[ $(id -u) -eq 0 ]] || { echo "fresh-machine: needs root (a mount namespace and a daemon of its own)" >&2; exit 1; }
command -v unshare >/dev/null || { echo "fresh-machine: unshare is missing (util-linux)" >&2; exit 1; }

# The commands of the README's "Two commands" block, without comments.
mapfile -t commands < <(awk '/^## Two commands/{s=1} s&&/^```/{n++; next} s&&n==1&&!/^#/&&NF' README.md)
if [[ ${#commands[@]} -ne 2 || ${commands[1]} != scripts/test ]]; then
  printf 'fresh-machine: expected two commands in README.md "Two commands", the second scripts/test; found:\n%s\n' \
    "${commands[@]}" >&2
  exit 1
fi
main=${commands[0]}

scratch=$(mktemp -d /var/tmp/chock-fresh-machine.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
cp -a /etc "$scratch/etc"
for f in passwd group shadow gshadow; do
  [[ -f $scratch/etc/$f ]] && sed -i -E '/^nixbld[0-9]*:/d' "$scratch/etc/$f"
done
mkdir "$scratch/tmp" "$scratch/state"
chmod 1777 "$scratch/tmp"

before=$(sha256sum /etc/passwd /etc/group)
daemon_before=$(pgrep -o -x nix-daemon || true)

# Inside: check the scratch machine really lacks the users and a daemon, then
# run the command exactly as the README writes it.
inner='
set -euo pipefail
mount --bind "$SCRATCH/etc" /etc
mount -t tmpfs -o mode=0755 chock-fresh-socket /nix/var/nix/daemon-socket
# A checkout under /tmp stays reachable at its own path on the scratch /tmp.
case $REPO in /tmp/*)
  mkdir -p "$SCRATCH/tmp/${REPO#/tmp/}"
  mount --bind "$REPO" "$SCRATCH/tmp/${REPO#/tmp/}" ;;
esac
mount --rbind "$SCRATCH/tmp" /tmp
if getent group nixbld >/dev/null || getent passwd nixbld1 >/dev/null; then
  echo "fresh-machine: the scratch /etc still has nixbld" >&2; exit 1
fi
if NIX_REMOTE=daemon timeout 10 nix store ping >/dev/null 2>&1; then
  echo "fresh-machine: a daemon answers in the scratch machine before setup ran" >&2; exit 1
fi
cd "$REPO"
set +e
bash -c "$MAIN"
status=$?
set -e
getent group nixbld | cut -d: -f1,4 >"$SCRATCH/group-after"
exit $status
'
set +e
env -u NIX_DAEMON_SOCKET_PATH -u NIX_REMOTE SCRATCH="$scratch" REPO="$repo" MAIN="$main" \
  CHOCK_STATE_DIR="$scratch/state" \
  unshare --mount --propagation private --pid --fork --mount-proc bash -c "$inner" >"$scratch/out" 2>&1
status=$?
set -e

fail() {
  echo "fresh-machine: $*" >&2
  echo "--- output of: $main" >&2
  cat "$scratch/out" >&2
  if [[ -f $scratch/tmp/nix-daemon.log ]]; then
    echo "--- the scratch daemon's log" >&2
    cat "$scratch/tmp/nix-daemon.log" >&2
  fi
  exit 1
}
[[ $status -eq 0 ]] || fail "the README's command exited $status on a machine without build users"
grep -q '^setup: creating the nixbld group' "$scratch/out" || fail "setup did not create the nixbld group"
grep -q '^setup: starting nix-daemon' "$scratch/out" || fail "setup did not start the scratch machine's daemon"
grep -q '^setup: ready' "$scratch/out" || fail "setup did not say it was ready"
[[ $(cat "$scratch/group-after") == nixbld:nixbld1,nixbld2,nixbld3,nixbld4,nixbld5,nixbld6,nixbld7,nixbld8,nixbld9,nixbld10 ]] \
  || fail "after setup the group is '$(cat "$scratch/group-after")', not nixbld with nixbld1..nixbld10"
[[ $(sha256sum /etc/passwd /etc/group) == "$before" ]] || fail "this machine's /etc/passwd or /etc/group changed"
[[ $(pgrep -o -x nix-daemon || true) == "$daemon_before" ]] || fail "this machine's nix-daemon (pid $daemon_before) is gone"
NIX_REMOTE=daemon nix store ping >/dev/null 2>&1 || fail "this machine's daemon no longer answers"
echo "fresh-machine: '$main' built on a machine that had no nixbld group or users"
