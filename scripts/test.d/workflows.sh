#!/usr/bin/env bash
# The GitHub Actions workflows: this repository's own (.github/workflows) and
# the one `chock sync --ci` writes into a user's project, generated here into
# a scratch project. Both pass actionlint (with shellcheck on their `run:`
# scripts, scripts/setup installs both), and every action either uses is
# pinned by a full commit hash with the release named in a comment, so a
# moved tag cannot change what runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${CHOCK_BIN:?set CHOCK_BIN to a release chock binary (scripts/test does)}"

actionlint=$(command -v actionlint || echo "$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/actionlint")
[[ -x $actionlint ]] || { echo "workflows: actionlint is missing: run scripts/setup" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git init -q "$tmp/project"
CHOCK_STATE_DIR=$tmp/state XDG_CONFIG_HOME=$tmp/config XDG_DATA_HOME=$tmp/data \
  "$CHOCK_BIN" sync --ci --agents claude --project "$tmp/project" >"$tmp/sync.out" 2>&1 \
  || { cat "$tmp/sync.out" >&2; echo "workflows: chock sync --ci failed" >&2; exit 1; }
synced=$tmp/project/.github/workflows/chock.yml
[[ -f $synced ]] || { echo "workflows: chock sync --ci wrote no $synced" >&2; exit 1; }

files=(.github/workflows/*.yml "$synced")
"$actionlint" -shellcheck="$(command -v shellcheck || true)" "${files[@]}"

# `uses: owner/repo[/path]@<40 hex> # <release>`; local actions (./...) need no pin.
bad=$(grep -nE '^[[:space:]-]*uses:' "${files[@]}" \
  | grep -vE 'uses:[[:space:]]*\./' \
  | grep -vE 'uses:[[:space:]]*[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}[[:space:]]+#[[:space:]]*v[0-9]' || true)
if [[ -n $bad ]]; then
  printf 'workflows: an action not pinned by commit (write owner/repo@<full commit> # vX.Y.Z):\n%s\n' "$bad" >&2
  exit 1
fi
echo "workflows: ${#files[@]} workflows pass actionlint ($("$actionlint" -version | head -n 1)), every action pinned"
