//! The workspace of a project that is not a git repository: an overlay.
//!
//! Each sandbox mounts overlayfs in its own user namespace at the
//! project's path: the project itself is the lower layer, read through and
//! never written; every write lands in the upper layer, a folder under the
//! workspace's (`upper/`, with overlayfs's `work/` beside it). A deleted
//! file is a whiteout there (a character device 0:0), a folder put in the
//! place of one of the project's is marked opaque (`user.overlay.opaque`).
//! So the upper layer *is* the session's work, and an apply reads it on the
//! host: what to write into the project and what to remove.
//!
//! There is no commit to compare with, so a change the person made after
//! the workspace was made is seen by its inode change time: a file of the
//! project the session also changed, whose `ctime` is later than the
//! workspace, is a conflict, and the apply writes nothing at all.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::apply::FileChange;
use super::frozen::Frozen;
use super::git::Git;
use super::{SessionWorkspace, WorkspaceError, io};

/// The upper layer, under the workspace's folder.
pub(crate) const UPPER: &str = "upper";
/// overlayfs's work folder, beside it.
pub(crate) const WORK: &str = "work";

/// One change the upper layer holds against the project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// Written as the upper layer has it: a file, a link, or a folder that
    /// is new or replaces the project's whole.
    Write(PathBuf),
    /// Removed from the project.
    Remove(PathBuf),
}

impl Change {
    pub(crate) fn rel(&self) -> &Path {
        match self {
            Change::Write(rel) | Change::Remove(rel) => rel,
        }
    }
}

/// At most this many entries of the upper layer are read, so a runaway
/// session is refused rather than walked for an hour.
const MAX_ENTRIES: usize = 200_000;

/// Every change the upper layer `upper` holds against `project`, in path
/// order. A file the session opened for writing but left as it was is no
/// change.
pub(crate) fn changes(upper: &Path, project: &Path) -> Result<Vec<Change>, WorkspaceError> {
    let mut out = Vec::new();
    let mut seen = 0;
    walk(upper, project, Path::new(""), &mut out, &mut seen)?;
    Ok(out)
}

fn walk(
    upper: &Path,
    project: &Path,
    rel: &Path,
    out: &mut Vec<Change>,
    seen: &mut usize,
) -> Result<(), WorkspaceError> {
    let dir = upper.join(rel);
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .map_err(io("reading", &dir))?
        .flatten()
        .map(|e| e.file_name())
        .collect();
    names.sort();
    for name in names {
        *seen += 1;
        if *seen > MAX_ENTRIES {
            return Err(WorkspaceError::Refused(format!(
                "{} holds more than {MAX_ENTRIES} changed entries, more than Chock reads for an apply",
                upper.display()
            )));
        }
        let rel = rel.join(name);
        let ours = upper.join(&rel);
        let meta = std::fs::symlink_metadata(&ours).map_err(io("reading", &ours))?;
        let theirs = std::fs::symlink_metadata(project.join(&rel)).ok();
        let kind = meta.file_type();
        if kind.is_char_device() && meta.rdev() == 0 {
            if theirs.is_some() {
                out.push(Change::Remove(rel));
            }
        } else if meta.is_dir() {
            let merged = theirs.as_ref().is_some_and(std::fs::Metadata::is_dir)
                && !crate::sys::overlay_opaque(&ours);
            if merged {
                walk(upper, project, &rel, out, seen)?;
            } else {
                if theirs.is_some() {
                    out.push(Change::Remove(rel.clone()));
                }
                out.push(Change::Write(rel));
            }
        } else if (kind.is_file() || kind.is_symlink())
            && !theirs.is_some_and(|t| same(&ours, &meta, &project.join(&rel), &t))
        {
            out.push(Change::Write(rel));
        }
    }
    Ok(())
}

/// Whether the upper layer's file is the project's as it is (copied up but
/// not changed): same kind, mode, size and bytes, or the same link target.
fn same(ours: &Path, meta: &std::fs::Metadata, theirs: &Path, their: &std::fs::Metadata) -> bool {
    if meta.file_type() != their.file_type() || meta.mode() != their.mode() {
        return false;
    }
    if meta.file_type().is_symlink() {
        return std::fs::read_link(ours).ok() == std::fs::read_link(theirs).ok();
    }
    meta.len() == their.len()
        && matches!((std::fs::read(ours), std::fs::read(theirs)), (Ok(a), Ok(b)) if a == b)
}

/// Every file and link under `root/rel` (or `rel` itself when it is one).
fn files_under(root: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    let path = root.join(rel);
    let Ok(meta) = std::fs::symlink_metadata(&path) else {
        return;
    };
    if !meta.is_dir() {
        if meta.is_file() || meta.file_type().is_symlink() {
            out.push(rel.to_path_buf());
        }
        return;
    }
    let mut names: Vec<_> = std::fs::read_dir(&path)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    names.sort();
    for name in names {
        files_under(root, &rel.join(name), out);
    }
}

/// `root/rel` and every entry under it (folders too), no link followed.
fn entries_under(root: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    let path = root.join(rel);
    let Ok(meta) = std::fs::symlink_metadata(&path) else {
        return;
    };
    out.push(rel.to_path_buf());
    if !meta.is_dir() {
        return;
    }
    let names: Vec<_> = std::fs::read_dir(&path)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    for name in names {
        entries_under(root, &rel.join(name), out);
    }
}

/// Lines added and removed from `old` to `new` (either may be missing), as
/// git counts them; `None` for a binary file.
fn lines(project: &Path, old: &Path, new: &Path) -> Option<(u64, u64)> {
    let side = |p: &Path| {
        if p.symlink_metadata().is_ok() {
            p.to_path_buf()
        } else {
            PathBuf::from("/dev/null")
        }
    };
    let (old, new) = (side(old), side(new));
    let out = Git::host(project)
        .output(
            [
                "diff".as_ref(),
                "--no-index".as_ref(),
                "--no-ext-diff".as_ref(),
                "--numstat".as_ref(),
                "--".as_ref(),
                old.as_os_str(),
                new.as_os_str(),
            ],
            None,
        )
        .ok()?;
    let text = out.text();
    let mut parts = text.split('\t');
    let (added, removed) = (parts.next()?, parts.next()?);
    match (added.parse(), removed.parse()) {
        (Ok(a), Ok(r)) => Some((a, r)),
        // No line printed: the two are the same text.
        _ if text.is_empty() => Some((0, 0)),
        _ => None,
    }
}

/// The unified diff of what an overlay apply writes: for each file of
/// `files`, the project's as it is against the one `frozen` holds (the
/// upper layer's changes copied out, see `frozen`), those that decide what
/// runs first, bounded as a git apply's is; `upper` is named for the
/// whole diff. A side that is no
/// file or link (absent, or a whiteout) is `/dev/null`; the names git
/// prints for the two sides (the project's and the workspace's paths) are
/// replaced by the file's path in the project.
pub(crate) fn overlay_diff(
    project: &Path,
    frozen: &Path,
    upper: &Path,
    files: &[FileChange],
) -> Vec<String> {
    let side = |p: PathBuf| match p.symlink_metadata() {
        Ok(meta) if meta.is_file() || meta.file_type().is_symlink() => Some(p),
        _ => None,
    };
    let mut ordered: Vec<&FileChange> = files.iter().collect();
    ordered.sort_by_key(|f| !super::apply::decides_what_runs(&f.path));
    let mut text = Vec::new();
    for file in ordered {
        let old = side(project.join(&file.path));
        let new = side(frozen.join(&file.path));
        let null = Path::new("/dev/null");
        let out = Git::host(project).output(
            [
                "diff".as_ref(),
                "--no-index".as_ref(),
                "--no-color".as_ref(),
                "--no-ext-diff".as_ref(),
                "--no-textconv".as_ref(),
                "--".as_ref(),
                old.as_deref().unwrap_or(null).as_os_str(),
                new.as_deref().unwrap_or(null).as_os_str(),
            ],
            None,
        );
        let Ok(out) = out else {
            text.extend(format!("diff of {}: git could not be run\n", file.path).into_bytes());
            continue;
        };
        relabelled(
            &out.stdout,
            &file.path,
            (old.is_some(), new.is_some()),
            &mut text,
        );
    }
    super::apply::bounded(
        &text,
        &format!(
            "`git diff --no-index {} {}` shows it whole",
            project.display(),
            upper.display()
        ),
    )
}

/// `diff` (one file's, from `git diff --no-index`) with its header lines
/// naming `path` in the project instead of the two paths compared.
fn relabelled(diff: &[u8], path: &str, (old, new): (bool, bool), out: &mut Vec<u8>) {
    let text = String::from_utf8_lossy(diff);
    let mut in_header = true;
    for line in text.lines() {
        if line.starts_with("@@") {
            in_header = false;
        }
        let replaced = match line {
            _ if !in_header => None,
            l if l.starts_with("diff --git ") => Some(format!("diff --git a/{path} b/{path}")),
            l if l.starts_with("--- ") => Some(if old {
                format!("--- a/{path}")
            } else {
                "--- /dev/null".into()
            }),
            l if l.starts_with("+++ ") => Some(if new {
                format!("+++ b/{path}")
            } else {
                "+++ /dev/null".into()
            }),
            l if l.starts_with("Binary files ") => Some(format!("Binary file {path} differs")),
            _ => None,
        };
        out.extend(replaced.as_deref().unwrap_or(line).as_bytes());
        out.push(b'\n');
    }
}

/// Whether a change at `rel` reaches the project at all: never `.git` (a
/// repository the session made would bring its hooks and config into the
/// person's tree), never a path under a `temp_copy` bind or a `copy` bind
/// not written back, never a `read_only` or `write` bind (a mount of the
/// person's own path, written or not there directly).
fn carried(workspace: &SessionWorkspace, rel: &Path) -> bool {
    if rel.components().any(|c| c.as_os_str() == ".git") {
        return false;
    }
    !workspace
        .meta
        .binds
        .iter()
        .any(|b| rel.starts_with(&b.name) && !b.write_back)
}

/// What an apply of an overlay workspace would carry: the files written
/// and removed (each with its lines), and the paths it leaves out. Refused,
/// naming them, when any change touches `chock.zon` or a `deny_read` file.
pub(crate) struct Carried {
    pub(crate) changes: Vec<Change>,
    pub(crate) files: Vec<FileChange>,
    pub(crate) left_out: Vec<String>,
    /// What the changes write, copied out of the upper layer once: the
    /// question is read from it and the landing writes it.
    pub(crate) frozen: Frozen,
}

impl SessionWorkspace {
    pub(crate) fn upper(&self) -> PathBuf {
        self.dir.join(UPPER)
    }

    /// The upper layer read against the project.
    pub(crate) fn overlay_changes(&self) -> Result<Carried, WorkspaceError> {
        let (upper, project) = (self.upper(), &self.meta.project);
        let mut kept = Vec::new();
        let mut left_out = Vec::new();
        let mut guarded = Vec::new();
        for change in changes(&upper, project)? {
            let rel = change.rel();
            let notice = self.meta.deny_read.iter().find(|c| c.rel == rel);
            if let Some(cover) = notice {
                // The notice Chock wrote, still as it was, is no change.
                let untouched = matches!(&change, Change::Write(_))
                    && std::fs::read(upper.join(rel)).is_ok_and(|b| b == super::view::NOTICE)
                    && std::fs::symlink_metadata(upper.join(rel))
                        .is_ok_and(|m| (m.dev(), m.ino()) == (cover.dev, cover.ino));
                if !untouched {
                    guarded.push(rel.display().to_string());
                }
                continue;
            }
            // What no apply carries (a `.git` the session made, a bind not
            // written back) is left out before it is judged.
            if !carried(self, rel) {
                left_out.push(rel.display().to_string());
            } else if crate::layout::only_a_person_edits(rel) {
                guarded.push(rel.display().to_string());
            } else {
                kept.push(change);
            }
        }
        if !guarded.is_empty() {
            return Err(WorkspaceError::Refused(format!(
                "the session changed {}, which no apply carries ({}); nothing was applied: undo those changes in the workspace and apply again, or remove it with `chock workspace clear`",
                guarded
                    .iter()
                    .map(|g| chock_policy::visible(g).into_owned())
                    .collect::<Vec<_>>()
                    .join(", "),
                crate::layout::WHY_NO_APPLY_CARRIES
            )));
        }
        let denied: Vec<PathBuf> = self.meta.deny_read.iter().map(|c| c.rel.clone()).collect();
        let frozen = Frozen::freeze(&upper, &self.dir, &kept, &self.denied())?;
        let written = frozen.path();
        let mut files: Vec<FileChange> = Vec::new();
        for change in &kept {
            let mut paths = Vec::new();
            match change {
                Change::Write(rel) => files_under(written, rel, &mut paths),
                Change::Remove(rel) => files_under(project, rel, &mut paths),
            }
            for rel in paths.into_iter().filter(|p| !denied.contains(p)) {
                let (old, new) = match change {
                    Change::Write(_) => (project.join(&rel), written.join(&rel)),
                    Change::Remove(_) => (project.join(&rel), PathBuf::from("/nonexistent")),
                };
                let path = rel.display().to_string();
                if let Some(known) = files.iter_mut().find(|f| f.path == path) {
                    // A folder replaced whole: removed, then written.
                    known.lines = lines(project, &old, &new);
                } else {
                    files.push(FileChange {
                        path,
                        lines: lines(project, &old, &new),
                    });
                }
            }
        }
        Ok(Carried {
            changes: kept,
            files,
            left_out,
            frozen,
        })
    }

    /// The paths the session changed that the person changed too since the
    /// workspace was made, by inode change time (which every write,
    /// removal, rename and new name in a folder moves):
    ///
    /// - a path the project still has: it, or anything under it, changed
    ///   since (a file edited, replaced by a folder or a link, a folder
    ///   made in the place of a file);
    /// - a path the project no longer has: the nearest folder above it that
    ///   is still there changed since, so the person may have removed or
    ///   moved it (a file the session made new in a folder the person
    ///   changed counts too: the two cannot be told apart, and a conflict
    ///   keeps the work rather than undo a removal of the person's).
    pub(crate) fn overlay_conflicts(&self, changes: &[Change]) -> Vec<String> {
        let since = self.meta.applied_ms.unwrap_or(self.meta.created_ms);
        let made_ns = u128::from(since) * 1_000_000;
        let project = &self.meta.project;
        let changed_since = |path: &Path| {
            std::fs::symlink_metadata(path)
                .ok()
                .map(|meta| ctime_ns(&meta) > made_ns)
        };
        let mut conflicts = Vec::new();
        for change in changes {
            let rel = change.rel();
            if std::fs::symlink_metadata(project.join(rel)).is_ok() {
                let mut paths = Vec::new();
                entries_under(project, rel, &mut paths);
                conflicts.extend(
                    paths
                        .into_iter()
                        .filter(|p| changed_since(&project.join(p)) == Some(true))
                        .map(|p| p.display().to_string()),
                );
                continue;
            }
            let mut above = rel.parent();
            while let Some(dir) = above {
                if let Some(changed) = changed_since(&project.join(dir)) {
                    if changed {
                        conflicts.push(rel.display().to_string());
                    }
                    break;
                }
                above = dir.parent();
            }
        }
        conflicts.sort();
        conflicts.dedup();
        conflicts
    }

    /// Writes `changes` into the project, all or none, by descriptor and
    /// never through a link of the project's (see `land.rs`), under the
    /// apply's journal, which the caller ends once the upper layer is
    /// cleared too.
    pub(crate) fn overlay_write(
        &self,
        carried: &Carried,
    ) -> Result<super::journal::Held, WorkspaceError> {
        let denied = self.denied();
        super::journal::write_tree(self, carried.frozen.path(), &carried.changes, &denied)
    }

    /// After `changes` were written into the project: each is taken out of
    /// the upper layer (the project now shows it), and the time is kept,
    /// so the next apply carries only what came after and counts only the
    /// person's changes after it as conflicts.
    pub(crate) fn overlay_applied(&mut self, changes: &[Change]) -> Result<(), WorkspaceError> {
        super::frozen::remove_landed(&self.upper(), changes)?;
        self.meta.applied_ms = Some(super::now_ms().max(self.latest_change_ms(changes)));
        self.save()
    }

    /// After a landing of `changes` was taken back: the entries it moved
    /// (and moved back) changed, by Chock, not by the person, so the time
    /// the next apply counts the person's changes from is after them.
    pub(crate) fn overlay_touched(&mut self, changes: &[Change]) -> Result<(), WorkspaceError> {
        let latest = self.latest_change_ms(changes);
        self.meta.applied_ms = Some(self.meta.applied_ms.unwrap_or(0).max(latest));
        self.save()
    }

    /// The latest inode change time, rounded up to the millisecond, of what
    /// an apply of `changes` touched in the project: each path, what is
    /// under it, and the folders above it. The apply's own writes are then
    /// never taken for the person's, however close the clock's millisecond.
    fn latest_change_ms(&self, changes: &[Change]) -> u64 {
        let project = &self.meta.project;
        let mut touched = Vec::new();
        for change in changes {
            entries_under(project, change.rel(), &mut touched);
            touched.extend(change.rel().ancestors().skip(1).map(Path::to_path_buf));
        }
        touched
            .iter()
            .filter_map(|rel| std::fs::symlink_metadata(project.join(rel)).ok())
            .map(|meta| u64::try_from(ctime_ns(&meta).div_ceil(1_000_000)).unwrap_or(u64::MAX))
            .max()
            .unwrap_or(0)
    }
}

/// An entry's inode change time in nanoseconds since the epoch.
fn ctime_ns(meta: &std::fs::Metadata) -> u128 {
    (meta.ctime() as i128 * 1_000_000_000 + meta.ctime_nsec() as i128).max(0) as u128
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The workspace's time is taken just after its placeholder is made,
    /// and the apply reads a later change time as the person's: so no
    /// entry changed before the time is taken may read as changed after
    /// it, in the same millisecond either.
    #[test]
    fn an_entry_changed_before_the_time_is_taken_is_never_after_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        for round in 0..500 {
            let path = dir.path().join(format!("f{round}"));
            std::fs::write(&path, "x").expect("write");
            let taken = u128::from(crate::workspace::now_ms()) * 1_000_000;
            let changed = ctime_ns(&std::fs::symlink_metadata(&path).expect("stat"));
            let parent = ctime_ns(&std::fs::symlink_metadata(dir.path()).expect("stat"));
            assert!(
                changed <= taken && parent <= taken,
                "round {round}: changed at {changed} / {parent} ns, time taken {taken} ns"
            );
        }
    }
}
