//! `chock install SOURCE#ID` and `chock install`: copying a policy package
//! from a catalog (a directory, or a git repository at a commit) into
//! `.agents/policies/<id>/`, pinned in `chock.lock`.
//!
//! A catalog holds a package at `<id>/`, `policies/<id>/` or
//! `.agents/policies/<id>/`. A package already installed whose content
//! differs is never replaced unasked: the difference is shown as a diff,
//! and only `--yes` (or a person's yes at the terminal) replaces it. The
//! new content is written beside the old and swapped in by renames.
//!
//! A package id is one label ([`chock_policy::package::valid_id`]) wherever
//! it comes from (the command line, `chock.lock`, the manifest), and each
//! folder the package is found in inside the catalog must be a real one,
//! not a link. The write goes through descriptors ([`crate::beneath`]):
//! only beneath `.agents/policies/<id>/`, never through a link planted on
//! the way.

use std::path::{Path, PathBuf};
use std::process::Command;

use chock_policy::package::{ID_RULE, MANIFEST, POLICIES_DIR, read_package, valid_id};

use crate::beneath::{Beneath, PackageFile, fd_path};
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

/// Splits `SOURCE#ID`, refusing an id that is not one label.
pub fn parse_spec(spec: &str) -> Result<(&str, &str), PackageError> {
    match spec.rsplit_once('#') {
        Some((source, id)) if !source.is_empty() && !id.is_empty() => {
            check_id(id)?;
            Ok((source, id))
        }
        _ => Err(PackageError::Refused(format!(
            "`{spec}` names no policy: write SOURCE#ID, such as `../catalog#no-large-files`"
        ))),
    }
}

/// Refuses `id` unless it is one label: it names the folder
/// `.agents/policies/<id>/` and nothing else.
pub fn check_id(id: &str) -> Result<(), PackageError> {
    if valid_id(id) {
        Ok(())
    } else {
        Err(PackageError::Refused(format!(
            "`{id}` is not a policy id: {ID_RULE}"
        )))
    }
}

/// Whether every step from `root` down `steps` is a real folder (no link,
/// no file), so a catalog cannot point a package's folder elsewhere.
fn real_folders(root: &Path, steps: &[&str]) -> bool {
    let mut path = root.to_path_buf();
    steps.iter().all(|step| {
        path.push(step);
        std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir())
    })
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

/// A catalog read into a scratch folder: a git repository cloned (at a
/// commit when given), a plain folder copied.
pub struct Catalog {
    _scratch: tempfile::TempDir,
    source: String,
    root: PathBuf,
    /// The commit read; empty for a plain folder.
    pub commit: String,
}

/// The places a catalog holds the package `id`, as steps from its root.
fn layouts(id: &str) -> [Vec<&str>; 3] {
    let policies: Vec<&str> = POLICIES_DIR.split('/').chain([id]).collect();
    [vec![id], vec!["policies", id], policies]
}

/// Reads the catalog `source`; a relative one is read from `project`, so
/// the lock means the same wherever `chock install` runs.
pub fn open_catalog(
    project: &Path,
    source: &str,
    commit: Option<&str>,
) -> Result<Catalog, PackageError> {
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
    Ok(Catalog {
        _scratch: scratch,
        source: source.to_owned(),
        root,
        commit,
    })
}

impl Catalog {
    /// The folder of the package `id`: the first of `<id>/`,
    /// `policies/<id>/` and `.agents/policies/<id>/` that is a real folder
    /// holding a manifest.
    pub fn package_dir(&self, id: &str) -> Result<PathBuf, PackageError> {
        check_id(id)?;
        layouts(id)
            .into_iter()
            .filter(|steps| real_folders(&self.root, steps))
            .map(|steps| steps.iter().fold(self.root.clone(), |dir, step| dir.join(step)))
            .find(|d| std::fs::symlink_metadata(d.join(MANIFEST)).is_ok_and(|m| m.is_file()))
            .ok_or_else(|| {
                PackageError::Refused(format!(
                    "{} holds no policy `{id}` (looked for {id}/, policies/{id}/ and {POLICIES_DIR}/{id}/ with a {MANIFEST})",
                    self.source
                ))
            })
    }

    /// Every package the catalog holds, in the order of their ids: each
    /// folder name in its three places that is an id and holds a
    /// manifest. One whose manifest does not read is an error naming it.
    pub fn packages(&self) -> Result<Vec<chock_policy::PolicyPackage>, PackageError> {
        let mut ids = std::collections::BTreeSet::new();
        for place in [
            PathBuf::new(),
            PathBuf::from("policies"),
            PathBuf::from(POLICIES_DIR),
        ] {
            let dir = self.root.join(&place);
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if valid_id(&name)
                    && std::fs::symlink_metadata(entry.path().join(MANIFEST))
                        .is_ok_and(|m| m.is_file())
                {
                    ids.insert(name);
                }
            }
        }
        ids.iter()
            .map(|id| Ok(read_package(&self.package_dir(id)?)?))
            .collect()
    }
}

/// Fetches `id` from `source` (at `commit` when given, for a git catalog).
pub fn fetch(
    project: &Path,
    source: &str,
    id: &str,
    commit: Option<&str>,
) -> Result<Fetched, PackageError> {
    check_id(id)?;
    let catalog = open_catalog(project, source, commit)?;
    let dir = catalog.package_dir(id)?;
    read_package(&dir)?;
    let hash = content_hash(&dir)?;
    Ok(Fetched {
        _scratch: catalog._scratch,
        dir,
        commit: catalog.commit,
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
/// `git diff --no-index` shows it, its files named `installed/...` and
/// `upstream/...`.
pub fn diff(installed: &Path, fetched: &Path) -> Result<String, PackageError> {
    let out = Command::new("git")
        .args(["diff", "--no-index", "--no-color", "--no-prefix", "--"])
        .arg(installed)
        .arg(fetched)
        .output()
        .map_err(io(installed, "running git diff"))?;
    // git names each file by the path given, less its leading `/`.
    let shown = |dir: &Path| format!("{}/", dir.display().to_string().trim_start_matches('/'));
    let text = String::from_utf8_lossy(&out.stdout)
        .replace(&shown(fetched), "upstream/")
        .replace(&shown(installed), "installed/");
    Ok(text)
}

/// The files of the fetched package, read into memory (a package is small:
/// [`files`] bounds how many).
fn package_files(fetched: &Fetched) -> Result<Vec<PackageFile>, PackageError> {
    use std::os::unix::fs::PermissionsExt as _;
    files(&fetched.dir)?
        .into_iter()
        .map(|rel| {
            let path = fetched.dir.join(&rel);
            let bytes = std::fs::read(&path).map_err(io(&path, "reading"))?;
            let mode = std::fs::symlink_metadata(&path)
                .map_err(io(&path, "reading"))?
                .permissions()
                .mode();
            Ok(PackageFile {
                rel,
                bytes,
                executable: mode & 0o111 != 0,
            })
        })
        .collect()
}

/// `chock install SOURCE#ID`: fetches, shows a change as a diff unless
/// `replace` says yes to it, installs and pins it.
pub fn install(
    project: &Path,
    source: &str,
    id: &str,
    replace: &mut dyn FnMut(&Pending) -> bool,
) -> Result<Installed, PackageError> {
    let mut lock = Lock::read(project)?;
    if lock.get(id).is_some_and(|l| l.disabled) {
        return Err(PackageError::Refused(format!(
            "the policy `{id}` is disabled: `chock enable {id}` first, then install it again"
        )));
    }
    let fetched = fetch(project, source, id, None)?;
    let outcome = put(&Beneath::policies(project)?, id, &fetched, replace)?;
    lock.put(Locked {
        id: id.to_owned(),
        source: source.to_owned(),
        commit: fetched.commit.clone(),
        hash: fetched.hash.clone(),
        disabled: false,
    });
    lock.write(project)?;
    Ok(outcome)
}

fn put(
    policies: &Beneath,
    id: &str,
    fetched: &Fetched,
    replace: &mut dyn FnMut(&Pending) -> bool,
) -> Result<Installed, PackageError> {
    let hash = fetched.hash.clone();
    let Some(installed) = policies.installed(id)? else {
        policies.put(id, &package_files(fetched)?, false)?;
        return Ok(Installed::New {
            id: id.to_owned(),
            hash,
        });
    };
    // The folder as opened, not the name again: a link swapped in after
    // the check is not what is read.
    let target = fd_path(&installed);
    if content_hash(&target)? == fetched.hash {
        return Ok(Installed::Unchanged {
            id: id.to_owned(),
            hash,
        });
    }
    // git runs in a process of its own, where this process's descriptors
    // do not exist: it diffs a copy read through the opened folder.
    let scratch =
        tempfile::tempdir().map_err(io(Path::new("/tmp"), "creating a scratch folder"))?;
    let copy = scratch.path().join(id);
    copy_tree(&target, &copy)?;
    let pending = Pending {
        id: id.to_owned(),
        diff: diff(&copy, &fetched.dir)?,
    };
    if !replace(&pending) {
        return Err(PackageError::Refused(format!(
            "{}\nthe policy `{id}` differs from what is installed (above); nothing was replaced: run again with --yes to replace it",
            pending.diff
        )));
    }
    policies.put(id, &package_files(fetched)?, true)?;
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
        // A disabled package is put back where it waits, out of force.
        let policies = if locked.disabled {
            Beneath::disabled(project)?
        } else {
            Beneath::policies(project)?
        };
        done.push(put(&policies, &locked.id, &fetched, replace)?);
    }
    Ok(done)
}
