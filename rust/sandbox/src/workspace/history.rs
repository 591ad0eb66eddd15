//! What a session's history changes, read in the person's repository
//! after its objects were fetched there (with replace refs and grafts off,
//! see [`super::git`]): every commit not reachable from the base, each
//! diffed against every one of its parents (a root commit against the
//! empty tree), with no history simplification. A merge's own changes, a
//! side commit hidden behind an `ours` merge, a commit a later one undoes:
//! each path any of them touches counts.

use std::collections::BTreeMap;
use std::path::Path;

use chock_policy::visible;

use super::WorkspaceError;
use super::git::{Git, split_z};

/// At most this many commits are read for one apply.
const MAX_COMMITS: usize = 20_000;
/// At most this many lines of one control file's diff are shown.
const DIFF_LINES: usize = 40;

/// One commit of the session's history.
#[derive(Clone, Debug)]
pub(crate) struct Commit {
    pub(crate) id: String,
    pub(crate) parents: Vec<String>,
    /// `abbrev subject`.
    pub(crate) line: String,
}

/// Every commit between the base and the session commit, and every path
/// each of them changes.
#[derive(Clone, Debug)]
pub(crate) struct History {
    /// Oldest first (topological).
    pub(crate) commits: Vec<Commit>,
    /// Each path touched, with the commits (full ids) that touch it.
    pub(crate) touched: BTreeMap<String, Vec<String>>,
}

impl History {
    /// Reads `base..commit` in `host`.
    pub(crate) fn read(host: &Git, base: &str, commit: &str) -> Result<History, WorkspaceError> {
        let range = format!("{base}..{commit}");
        let listed = host.run([
            "log",
            "--reverse",
            "--topo-order",
            "--no-show-signature",
            "--no-decorate",
            "-z",
            "--format=%H%x01%P%x01%h %s",
            &range,
        ])?;
        let mut commits = Vec::new();
        for record in split_z(&listed.stdout) {
            let mut parts = record.splitn(3, '\u{1}');
            let (Some(id), Some(parents), Some(line)) = (parts.next(), parts.next(), parts.next())
            else {
                return Err(WorkspaceError::Refused(format!(
                    "cannot read the session's history in {}: `git log` printed `{}`",
                    host.dir().display(),
                    visible(&record)
                )));
            };
            commits.push(Commit {
                id: id.to_owned(),
                parents: parents.split_whitespace().map(str::to_owned).collect(),
                line: line.to_owned(),
            });
            if commits.len() > MAX_COMMITS {
                return Err(WorkspaceError::Refused(format!(
                    "the session's history holds more than {MAX_COMMITS} commits, more than Chock reads for one apply; squash them in the workspace and apply again"
                )));
            }
        }
        let mut touched: BTreeMap<String, Vec<String>> = BTreeMap::new();
        if !commits.is_empty() {
            let ids: String = commits.iter().map(|c| format!("{}\n", c.id)).collect();
            let out = host.output(
                [
                    "diff-tree",
                    "--stdin",
                    "-m",
                    "-r",
                    "-z",
                    "--root",
                    "--no-renames",
                    "--no-ext-diff",
                    "--no-textconv",
                    "--name-status",
                ],
                Some(ids.as_bytes()),
            )?;
            if !out.ok {
                return Err(host.failed(["diff-tree", "--stdin"], &out));
            }
            let known: std::collections::BTreeSet<&str> =
                commits.iter().map(|c| c.id.as_str()).collect();
            let fields = split_z(&out.stdout);
            let mut current: Option<String> = None;
            let mut at = 0;
            while at < fields.len() {
                let field = &fields[at];
                if known.contains(field.as_str()) {
                    current = Some(field.clone());
                    at += 1;
                    continue;
                }
                let (Some(by), Some(path)) = (&current, fields.get(at + 1)) else {
                    return Err(WorkspaceError::Refused(format!(
                        "cannot read what the session's commits change in {}: `git diff-tree` printed `{}`",
                        host.dir().display(),
                        visible(field)
                    )));
                };
                let seen = touched.entry(path.clone()).or_default();
                if !seen.contains(by) {
                    seen.push(by.clone());
                }
                at += 2;
            }
        }
        Ok(History { commits, touched })
    }

    /// Whether any commit has other than one parent (a merge, a root).
    pub(crate) fn has_merge_or_root(&self) -> bool {
        self.commits.iter().any(|c| c.parents.len() != 1)
    }

    /// The `abbrev subject` lines, oldest first, a merge said as one.
    pub(crate) fn lines(&self) -> Vec<String> {
        self.commits
            .iter()
            .map(|c| match c.parents.len() {
                1 => c.line.clone(),
                0 => format!("{} (a root commit: every file it holds counts)", c.line),
                n => format!("{} (a merge of {n}: its diff against each counts)", c.line),
            })
            .collect()
    }

    fn short<'a>(&'a self, id: &'a str) -> &'a str {
        self.commits
            .iter()
            .find(|c| c.id == id)
            .and_then(|c| c.line.split(' ').next())
            .unwrap_or(id)
    }
}

/// Why a path is no path a checkout may write: a part that is empty, `.`,
/// `..`, or git's own folder however a file system might spell it.
pub(crate) fn crafted(path: &str) -> Option<&'static str> {
    for part in path.split('/') {
        if part.is_empty() || part == "." || part == ".." {
            return Some("a part that is empty, `.` or `..`");
        }
        let folded = part
            .trim_end_matches(['.', ' '])
            .chars()
            .filter(|c| !matches!(c, '\u{200c}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{206a}'..='\u{206f}' | '\u{feff}'))
            .collect::<String>()
            .to_ascii_lowercase();
        if folded == ".git" || folded == "git~1" || folded.starts_with(".git:") {
            return Some("git's own folder, `.git`");
        }
        if part.contains('\\') {
            return Some("a backslash, which some file systems read as a folder");
        }
    }
    None
}

/// What a guarded path is, for the refusal.
pub(crate) enum Guard {
    /// A control input (`chock_policy::control`), with who reads it.
    Control(&'static str),
    /// A `deny_read` file.
    DenyRead,
    /// A path inside a bind (the person's own path, or a copy): never
    /// committed, and a host path the agent may have written.
    Bind(String),
}

/// The refusal of a history whose commits touch `guarded` paths or
/// `crafted` ones: control files first, each on its own line with its
/// diff, then the rest. Every name is escaped.
pub(crate) fn refusal(
    host: &Git,
    history: &History,
    guarded: &[(String, Guard)],
    bad: &[(String, &'static str)],
    base: &str,
    why_control: &str,
) -> String {
    let mut lines = Vec::new();
    if !guarded.is_empty() {
        let mut order: Vec<&(String, Guard)> = guarded
            .iter()
            .filter(|(_, g)| matches!(g, Guard::Control(_)))
            .collect();
        order.extend(
            guarded
                .iter()
                .filter(|(_, g)| !matches!(g, Guard::Control(_))),
        );
        let names: Vec<String> = order.iter().map(|(p, _)| visible(p).into_owned()).collect();
        lines.push(format!(
            "the session's commits change {}, which no apply carries ({why_control}); nothing was applied: remove those changes in the workspace (`git checkout {base} -- PATH` there, and drop any commit or merge that carries them) and apply again",
            names.join(", ")
        ));
        for (path, guard) in order {
            let by: Vec<&str> = history.touched[path]
                .iter()
                .map(|id| history.short(id))
                .collect();
            let what = match guard {
                Guard::Control(read_by) => format!("configures {read_by}"),
                Guard::DenyRead => "a deny_read file".to_owned(),
                Guard::Bind(name) => format!("inside the workspace bind {}", visible(name)),
            };
            lines.push(format!(
                "  {} ({what}), changed by commit {}",
                visible(path),
                by.join(", ")
            ));
            if let Guard::Control(_) = guard {
                for id in &history.touched[path] {
                    lines.extend(diff_of(host, id, path));
                }
            }
        }
    }
    if !bad.is_empty() {
        lines.push(format!(
            "the session's commits hold {} path{} no checkout may write; nothing was applied: make those commits again without them",
            bad.len(),
            if bad.len() == 1 { "" } else { "s" }
        ));
        for (path, why) in bad {
            let by: Vec<&str> = history.touched[path]
                .iter()
                .map(|id| history.short(id))
                .collect();
            lines.push(format!(
                "  {} ({why}), in commit {}",
                visible(path),
                by.join(", ")
            ));
        }
    }
    lines.join("\n")
}

/// The lines of `commit`'s diff of `path` against each of its parents,
/// indented and escaped, at most [`DIFF_LINES`].
fn diff_of(host: &Git, commit: &str, path: &str) -> Vec<String> {
    let out = host.output(
        [
            "diff-tree",
            "-p",
            "-m",
            "--root",
            "--no-renames",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            "--format=",
            commit,
            "--",
            &format!(":(literal){path}"),
        ],
        None,
    );
    let Ok(out) = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()) else {
        return vec!["      (its diff could not be read)".to_owned()];
    };
    let all: Vec<&str> = out
        .lines()
        .filter(|l| !l.starts_with("diff --git") && !l.starts_with("index "))
        .collect();
    let mut shown: Vec<String> = all
        .iter()
        .take(DIFF_LINES)
        .map(|l| format!("      {}", visible(l)))
        .collect();
    if all.len() > DIFF_LINES {
        shown.push(format!("      ... {} more lines", all.len() - DIFF_LINES));
    }
    shown
}

/// Whether `path` is `bind` or beneath it.
pub(crate) fn within(path: &str, bind: &str) -> bool {
    let bind = bind.trim_end_matches('/');
    Path::new(path).starts_with(bind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_a_checkout_may_not_write_is_named() {
        for bad in [
            ".git/config",
            "a/.GIT/hooks/x",
            "a/.git./x",
            "a/.Git /x",
            "GIT~1/x",
            "a/../b",
            "./a",
            "a//b",
            "a\\b",
            "x/.g\u{200c}it/y",
        ] {
            assert!(crafted(bad).is_some(), "{bad}");
        }
        for good in [
            ".gitignore",
            "a/.github/x",
            "git",
            "src/.gitkeep",
            "a.git/b",
        ] {
            assert!(crafted(good).is_none(), "{good}");
        }
    }

    #[test]
    fn within_a_bind_is_by_parts() {
        assert!(within("build/x", "build"));
        assert!(within("build", "build/"));
        assert!(!within("builder/x", "build"));
    }
}
