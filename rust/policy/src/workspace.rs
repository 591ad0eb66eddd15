//! The session workspace's settings in `chock.zon`: how an approved apply
//! lands (`.apply = .{ .mode = .merge }`), the paths the git worktree does
//! not carry that a session may see (`.workspace = .{ .{ .name = "...",
//! .mode = .read_only } }`), and the files it never reads (`.deny_read`,
//! also in an organisation bundle). What a path names on disk (a folder, a
//! link) is checked when a workspace is made; here, what the text alone can
//! refuse, each refusal at its file, line and column.

use std::path::{Component, Path, PathBuf};

use chock_zon::Spanned;
use serde::Deserialize;

use crate::decision::Decision;
use chock_config::ConfigError;
use chock_config::Source;

/// At most this many binds in the `workspace` block.
pub const MAX_BINDS: usize = 64;
/// At most this many `deny_read` paths in one file.
pub const MAX_DENY_READ: usize = 256;

/// Where an approved apply lands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApplyMode {
    /// Parked at `refs/chock/<session>`; no branch moves.
    Ref,
    /// A merge of the session's commits into the branch checked out (a
    /// fast-forward when the branch has not moved).
    #[default]
    Merge,
    /// The session's commits replayed on the branch checked out.
    Rebase,
    /// One commit on the branch checked out holding all of the session's work.
    Squash,
}

impl ApplyMode {
    /// The mode as `chock.zon` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ApplyMode::Ref => "ref",
            ApplyMode::Merge => "merge",
            ApplyMode::Rebase => "rebase",
            ApplyMode::Squash => "squash",
        }
    }
}

/// How a bind shows its path inside the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BindMode {
    /// The person's own path, read-only.
    ReadOnly,
    /// A copy made at start and thrown away with the workspace.
    TempCopy,
    /// The person's own path, writable once the fold answers allow.
    Write,
    /// A copy made at start, written back only through an approved apply.
    Copy,
}

impl BindMode {
    /// The mode as `chock.zon` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            BindMode::ReadOnly => "read_only",
            BindMode::TempCopy => "temp_copy",
            BindMode::Write => "write",
            BindMode::Copy => "copy",
        }
    }
}

/// One entry of the `workspace` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bind {
    /// The path relative to the project, as written; also the name it is
    /// asked under (`workspace.bind.<name>`).
    pub name: String,
    pub mode: BindMode,
    /// The block's own ceiling on writing (`.write`), folded with the rule.
    pub write: Decision,
    /// Where it is written.
    pub file: PathBuf,
    pub line: u32,
}

/// One path no session reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DenyRead {
    /// Relative to the project.
    pub path: PathBuf,
    /// The file that names it, and the line when known.
    pub file: PathBuf,
    pub line: Option<u32>,
}

impl DenyRead {
    /// Where it is named: `FILE:LINE`, or the file alone.
    pub fn place(&self) -> String {
        match self.line {
            Some(line) => format!("{}:{line}", self.file.display()),
            None => self.file.display().to_string(),
        }
    }
}

/// The workspace settings of one project.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkspaceSettings {
    pub apply_mode: ApplyMode,
    pub binds: Vec<Bind>,
    pub deny_read: Vec<DenyRead>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "the `.apply` block: `.{ .mode = .merge }`"
)]
pub(crate) struct ApplyBlock {
    #[serde(default)]
    mode: ApplyMode,
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a bind `.{ .name = \"scripts/release\", .mode = .read_only }`"
)]
pub(crate) struct BindFields {
    name: String,
    mode: BindMode,
    write: Option<Decision>,
}

/// Why a path cannot be named in `deny_read` or the `workspace` block, from
/// its text alone; `None` when it can.
pub fn path_fault(text: &str) -> Option<&'static str> {
    if text.is_empty() || text.contains('\0') {
        return Some("the path is empty or holds a NUL byte");
    }
    if text.contains(['*', '?', '[', ']', '{', '}']) {
        return Some("globs are not read here: name each file by its path in the project");
    }
    let path = Path::new(text);
    if path.is_absolute() {
        return Some(
            "the path is absolute: name it relative to the project (the workspace holds only the project)",
        );
    }
    if path
        .components()
        .any(|c| !matches!(c, Component::Normal(_)))
    {
        return Some("the path holds `.` or `..`: name it plainly, relative to the project");
    }
    if path == Path::new(crate::PROJECT_FILE) {
        return Some("chock.zon is always held read-only; it cannot be named here");
    }
    None
}

pub(crate) fn read(
    source: &Source<'_>,
    apply: Option<Spanned<ApplyBlock>>,
    binds: Spanned<Vec<Spanned<BindFields>>>,
    deny_read: Spanned<Vec<Spanned<String>>>,
) -> Result<WorkspaceSettings, ConfigError> {
    if binds.value.len() > MAX_BINDS {
        return Err(source.error(
            binds.span,
            format!("the workspace block names at most {MAX_BINDS} paths"),
        ));
    }
    if deny_read.value.len() > MAX_DENY_READ {
        return Err(source.error(
            deny_read.span,
            format!("deny_read names at most {MAX_DENY_READ} paths"),
        ));
    }
    let mut settings = WorkspaceSettings {
        apply_mode: apply.map(|a| a.value.mode).unwrap_or_default(),
        ..WorkspaceSettings::default()
    };
    for Spanned { span, value } in binds.value {
        if let Some(fault) = path_fault(&value.name) {
            return Err(source.error(span, format!("workspace bind `{}`: {fault}", value.name)));
        }
        if settings.binds.iter().any(|b| b.name == value.name) {
            return Err(source.error(
                span,
                format!("workspace bind `{}` is named twice: keep one", value.name),
            ));
        }
        settings.binds.push(Bind {
            name: value.name,
            mode: value.mode,
            write: value.write.unwrap_or(Decision::Allow),
            file: source.file.to_path_buf(),
            line: source.line(span),
        });
    }
    for Spanned { span, value } in deny_read.value {
        if let Some(fault) = path_fault(&value) {
            return Err(source.error(span, format!("deny_read `{value}`: {fault}")));
        }
        settings.deny_read.push(DenyRead {
            path: PathBuf::from(value),
            file: source.file.to_path_buf(),
            line: Some(source.line(span)),
        });
    }
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<crate::Policy, crate::PolicyError> {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("chock.zon"), text).expect("write");
        crate::Policy::load(&crate::LoadOptions {
            project_dir: dir.path().to_path_buf(),
            operator_config: None,
            discovered_bundles: Vec::new(),
            org_bundles: Vec::new(),
        })
    }

    #[test]
    fn the_apply_mode_binds_and_deny_read_are_read() {
        let policy = load(
            ".{ .apply = .{ .mode = .rebase },\n\
             .workspace = .{ .{ .name = \"scripts/release\", .mode = .read_only },\n\
             .{ .name = \"data\", .mode = .write, .write = .ask } },\n\
             .deny_read = .{ \"secrets/prod.env\" } }\n",
        )
        .expect("loads");
        let ws = policy.workspace();
        assert_eq!(ws.apply_mode, ApplyMode::Rebase);
        assert_eq!(ws.binds.len(), 2);
        assert_eq!(
            (ws.binds[1].mode, ws.binds[1].write, ws.binds[1].line),
            (BindMode::Write, Decision::Ask, 3)
        );
        assert_eq!(ws.deny_read[0].path, PathBuf::from("secrets/prod.env"));
        assert_eq!(ws.deny_read[0].line, Some(4));
    }

    #[test]
    fn no_block_means_merge_and_nothing_bound() {
        let policy = load(".{}\n").expect("loads");
        assert_eq!(policy.workspace().apply_mode, ApplyMode::Merge);
        assert!(policy.workspace().binds.is_empty());
    }

    #[test]
    fn globs_absolute_paths_and_chock_zon_are_refused_at_their_line() {
        for (bad, words) in [
            ("secrets/*.env", "globs"),
            ("/etc/shadow", "absolute"),
            ("chock.zon", "chock.zon"),
            ("a/../b", "`..`"),
        ] {
            let error = load(&format!(".{{\n.deny_read = .{{ \"{bad}\" }} }}\n"))
                .expect_err(bad)
                .to_string();
            assert!(
                error.contains("chock.zon:2:") && error.contains(words),
                "{bad}: {error}"
            );
        }
        let error = load(".{ .apply = .{ .mode = .fast } }")
            .expect_err("mode")
            .to_string();
        assert!(error.contains("fast"), "{error}");
    }
}
