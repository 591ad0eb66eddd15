//! `chock install SOURCE#ID` and `chock install`: copying a policy package
//! from a catalog (a directory, or a git repository at a commit) into
//! `.agents/policies/<id>/`, pinned in `chock.lock`.
//!
//! A catalog holds a package at `<id>/`, `policies/<id>/` or
//! `.agents/policies/<id>/`. A package already installed whose content
//! differs is never replaced unasked: the difference is shown as a diff,
//! and only `--yes` (or a person's yes at the terminal) replaces it. The
//! new content is written beside the old and swapped in by renames.

use std::path::{Path, PathBuf};
use std::process::Command;

use chock_policy::package::{MANIFEST, POLICIES_DIR, read_package};

use crate::lock::{Lock, Locked, content_hash, files};
use crate::{PackageError, io};

/// A package fetched into a scratch folder.
pub struct Fetched {
    _scratch: tempfile::TempDir,
    /// The package's folder inside the scratch folder.
    pub dir: PathBuf,
    /// The commit, for a git catalog.
    pub commit: String,
    pub hash: String,
}

/// What an install did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Installed {
    /// It was not there and is now.
    New { id: String, hash: String },
    /// It was there with the same content.
    Unchanged { id: String, hash: String },
    /// It was there with other content, and was replaced.
    Replaced { id: String, hash: String },
}

/// A changed package that was not replaced: the diff a person reads first.
#[derive(Debug, Clone)]
pub struct Pending {
    pub id: String,
    pub diff: String,
}

/// Splits `SOURCE#ID`.
pub fn parse_spec(spec: &str) -> Result<(&str, &str), PackageError> {
    match spec.rsplit_once('#') {
        Some((source, id)) if !source.is_empty() && !id.is_empty() => Ok((source, id)),
        _ => Err(PackageError::Refused(format!(
            "`{spec}` names no policy: write SOURCE#ID, such as `../catalog#no-large-files`"
        ))),
    }
}

fn git(dir: &Path, args: &[&str]) -> Result<String, PackageError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(io(dir, "running git"))?;
    if !out.status.success() {
        return Err(PackageError::Refused(format!(
            "{}: git {} failed: {}",
            dir.display(),
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn is_git_root(source: &Path) -> bool {
    source.join(".git").exists()
        || Command::new("git")
            .arg("-C")
            .arg(source)
            .args(["rev-parse", "--is-bare-repository"])
            .output()
            .is_ok_and(|o| o.status.success() && o.stdout.starts_with(b"true"))
}

/// Fetches `id` from `source` (at `commit` when given, for a git catalog).
/// A relative `source` is read from `project`, so the lock means the same
/// wherever `chock install` runs.
pub fn fetch(
    project: &Path,
    source: &str,
    id: &str,
    commit: Option<&str>,
) -> Result<Fetched, PackageError> {
    let path = &project.join(source);
    if !path.is_dir() {
        return Err(PackageError::Refused(format!(
            "{source}: no such catalog; give a directory or a local git repository"
        )));
    }
    let scratch =
        tempfile::tempdir().map_err(io(Path::new("/tmp"), "creating a scratch folder"))?;
    let (root, commit) = if is_git_root(path) {
        let clone = scratch.path().join("catalog");
        let out = Command::new("git")
            .args(["clone", "--quiet", "--no-hardlinks", "--"])
            .arg(path)
            .arg(&clone)
            .output()
            .map_err(io(path, "running git clone"))?;
        if !out.status.success() {
            return Err(PackageError::Refused(format!(
                "{source}: git clone failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        if let Some(commit) = commit.filter(|c| !c.is_empty()) {
            git(&clone, &["checkout", "--quiet", "--detach", commit])?;
        }
        let head = git(&clone, &["rev-parse", "HEAD"])?;
        (clone, head)
    } else {
        let copy = scratch.path().join("catalog");
        copy_tree(path, &copy)?;
        (copy, String::new())
    };
    let candidates = [
        root.join(id),
        root.join("policies").join(id),
        root.join(POLICIES_DIR).join(id),
    ];
    let dir = candidates
        .into_iter()
        .find(|d| d.join(MANIFEST).is_file())
        .ok_or_else(|| {
            PackageError::Refused(format!(
                "{source} holds no policy `{id}` (looked for {id}/, policies/{id}/ and {POLICIES_DIR}/{id}/ with a {MANIFEST})"
            ))
        })?;
    read_package(&dir)?;
    let hash = content_hash(&dir)?;
    Ok(Fetched {
        _scratch: scratch,
        dir,
        commit,
        hash,
    })
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), PackageError> {
    std::fs::create_dir_all(to).map_err(io(to, "creating"))?;
    for rel in files(from)? {
        if rel
            .components()
            .next()
            .is_some_and(|c| c.as_os_str() == ".git")
        {
            continue;
        }
        let target = to.join(&rel);
        if let Some(dir) = target.parent() {
            std::fs::create_dir_all(dir).map_err(io(dir, "creating"))?;
        }
        std::fs::copy(from.join(&rel), &target).map_err(io(&target, "copying"))?;
    }
    Ok(())
}

/// The difference between the installed package and the fetched one, as
/// `git diff --no-index` shows it.
pub fn diff(installed: &Path, fetched: &Path) -> Result<String, PackageError> {
    let out = Command::new("git")
        .args(["diff", "--no-index", "--no-color", "--"])
        .arg(installed)
        .arg(fetched)
        .output()
        .map_err(io(installed, "running git diff"))?;
    let text = String::from_utf8_lossy(&out.stdout)
        .replace(&format!("{}/", fetched.display()), "upstream/")
        .replace(&format!("{}/", installed.display()), "installed/");
    Ok(text)
}

/// Puts `fetched` in place as `id` under `project`: written beside the old
/// folder, then swapped in.
fn place(project: &Path, id: &str, fetched: &Fetched) -> Result<(), PackageError> {
    let root = project.join(POLICIES_DIR);
    std::fs::create_dir_all(&root).map_err(io(&root, "creating"))?;
    let staging = tempfile::Builder::new()
        .prefix(&format!(".{id}.new"))
        .tempdir_in(&root)
        .map_err(io(&root, "creating"))?;
    let fresh = staging.path().join(id);
    copy_tree(&fetched.dir, &fresh)?;
    let target = root.join(id);
    if target.exists() {
        let old = staging.path().join("old");
        std::fs::rename(&target, &old).map_err(io(&target, "moving the old package aside"))?;
    }
    std::fs::rename(&fresh, &target).map_err(io(&target, "putting the package in place"))?;
    Ok(())
}

/// `chock install SOURCE#ID`: fetches, shows a change as a diff unless
/// `replace` says yes to it, installs and pins it.
pub fn install(
    project: &Path,
    source: &str,
    id: &str,
    replace: &mut dyn FnMut(&Pending) -> bool,
) -> Result<Installed, PackageError> {
    let fetched = fetch(project, source, id, None)?;
    let outcome = put(project, id, &fetched, replace)?;
    let mut lock = Lock::read(project)?;
    lock.put(Locked {
        id: id.to_owned(),
        source: source.to_owned(),
        commit: fetched.commit.clone(),
        hash: fetched.hash.clone(),
    });
    lock.write(project)?;
    Ok(outcome)
}

fn put(
    project: &Path,
    id: &str,
    fetched: &Fetched,
    replace: &mut dyn FnMut(&Pending) -> bool,
) -> Result<Installed, PackageError> {
    let target = project.join(POLICIES_DIR).join(id);
    let hash = fetched.hash.clone();
    if !target.exists() {
        place(project, id, fetched)?;
        return Ok(Installed::New {
            id: id.to_owned(),
            hash,
        });
    }
    if content_hash(&target)? == fetched.hash {
        return Ok(Installed::Unchanged {
            id: id.to_owned(),
            hash,
        });
    }
    let pending = Pending {
        id: id.to_owned(),
        diff: diff(&target, &fetched.dir)?,
    };
    if !replace(&pending) {
        return Err(PackageError::Refused(format!(
            "{}\nthe policy `{id}` differs from what is installed (above); nothing was replaced: run again with --yes to replace it",
            pending.diff
        )));
    }
    place(project, id, fetched)?;
    Ok(Installed::Replaced {
        id: id.to_owned(),
        hash,
    })
}

/// `chock install`: every package the lock names, exactly as pinned. A
/// source whose content at the pinned commit no longer has the pinned hash
/// is refused.
pub fn install_locked(
    project: &Path,
    replace: &mut dyn FnMut(&Pending) -> bool,
) -> Result<Vec<Installed>, PackageError> {
    let lock = Lock::read(project)?;
    let mut done = Vec::new();
    for locked in &lock.policies {
        let fetched = fetch(project, &locked.source, &locked.id, Some(&locked.commit))?;
        if fetched.hash != locked.hash {
            return Err(PackageError::Refused(format!(
                "{}#{}{}: its content is {} now, and chock.lock pins {}: the catalog changed under the pin; `chock install {}#{}` takes the new content (shown as a diff first)",
                locked.source,
                locked.id,
                if locked.commit.is_empty() {
                    String::new()
                } else {
                    format!(" at {}", locked.commit)
                },
                fetched.hash,
                locked.hash,
                locked.source,
                locked.id
            )));
        }
        done.push(put(project, &locked.id, &fetched, replace)?);
    }
    Ok(done)
}
