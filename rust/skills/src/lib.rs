//! Skills: folders holding a `SKILL.md` (frontmatter `name` and
//! `description`, then the instructions) and the files beside it, in the
//! format Claude Code's Agent Skills use, from three layers:
//!
//! - operator: `$XDG_CONFIG_HOME/chock/skills/<name>/` (what the person
//!   put there), read as `skill.read.operator`;
//! - project: `.agents/skills/<name>/` ([`chock_policy::control::SKILLS_DIR`],
//!   a control input, so read-only in the sandbox), `skill.read.project`;
//! - packaged: `.agents/policies/<id>/skills/<name>/` of each policy
//!   package in force, `skill.read.packaged`.
//!
//! The model is shown each skill's name and description only; the rest
//! is read at the call, after the gate answers its layer's action. A skill
//! widens nothing: its `allowed-tools` is text shown beside it, never a
//! permission. Beneath a layer's folder every folder and file is opened
//! with `O_NOFOLLOW` from the descriptor above it, a file only when it is
//! regular (a FIFO never blocks a read), and the read is from that
//! descriptor: a link planted in a skill cannot lead out of it.

#![forbid(unsafe_code)]

mod error;
pub mod frontmatter;

use std::ffi::OsStr;
use std::fmt;
use std::io::Read as _;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use chock_policy::control::{OPERATOR_SKILLS, POLICIES_DIR, SKILLS_DIR};
use chock_policy::{Policy, SkillLayer, SkillSettings};
use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;

pub use error::SkillError;

/// The file a skill's folder holds.
pub const SKILL_FILE: &str = "SKILL.md";
/// A policy package's folder of skills.
pub const PACKAGE_SKILLS: &str = "skills";
/// At most this many skills are listed from one layer's folder.
pub const MAX_SKILLS_PER_FOLDER: usize = 256;
/// The longest name (as the Agent Skills format bounds it).
pub const MAX_NAME: usize = 64;
/// The longest description (as the Agent Skills format bounds it).
pub const MAX_DESCRIPTION: usize = 1024;
/// At most this many files beside a `SKILL.md` are named to the model.
pub const MAX_FILES_NAMED: usize = 64;
/// How deep beneath a skill's folder files are named.
const MAX_DEPTH: usize = 4;

/// Chock's own skills, which `chock install-skills` writes into the
/// person's agents: each folder's name and its `SKILL.md`.
pub const SHIPPED: &[(&str, &str)] = &[(
    "policy-init",
    include_str!("../shipped/policy-init/SKILL.md"),
)];

/// Where each layer's skills are.
#[derive(Debug, Clone)]
pub struct Layers {
    /// The operator's skills folder (`None` when neither
    /// `XDG_CONFIG_HOME` nor `HOME` says where it is).
    pub operator: Option<PathBuf>,
    /// The project's top.
    pub project: PathBuf,
    /// The folder names of the policy packages in force, in their order.
    pub packages: Vec<String>,
}

impl Layers {
    /// The layers of `project` as `policy` holds it: its packages in
    /// force, and the operator's folder from the environment.
    pub fn of(policy: &Policy, project: &Path) -> Layers {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let config_home = var("XDG_CONFIG_HOME").or_else(|| var("HOME").map(|h| h.join(".config")));
        Layers {
            operator: config_home.map(|c| c.join(OPERATOR_SKILLS)),
            project: project.to_path_buf(),
            packages: policy
                .packages()
                .iter()
                .filter_map(|p| p.dir.file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .collect(),
        }
    }

    /// Each folder of `layer`: a base opened as it is, then the parts
    /// beneath it opened without following a link; with the package each
    /// belongs to.
    fn folders(&self, layer: SkillLayer) -> Vec<Folder> {
        match layer {
            SkillLayer::Operator => self
                .operator
                .iter()
                .map(|base| Folder {
                    base: base.clone(),
                    beneath: Vec::new(),
                    package: None,
                })
                .collect(),
            SkillLayer::Project => vec![Folder {
                base: self.project.clone(),
                beneath: SKILLS_DIR.split('/').map(str::to_owned).collect(),
                package: None,
            }],
            SkillLayer::Packaged => self
                .packages
                .iter()
                .map(|id| Folder {
                    base: self.project.clone(),
                    beneath: POLICIES_DIR
                        .split('/')
                        .map(str::to_owned)
                        .chain([id.clone(), PACKAGE_SKILLS.to_owned()])
                        .collect(),
                    package: Some(id.clone()),
                })
                .collect(),
        }
    }
}

struct Folder {
    base: PathBuf,
    beneath: Vec<String>,
    package: Option<String>,
}

impl Folder {
    fn path(&self) -> PathBuf {
        self.beneath
            .iter()
            .fold(self.base.clone(), |p, c| p.join(c))
    }

    /// Opens the folder; `Ok(None)` when it does not exist.
    fn open(&self) -> Result<Option<OwnedFd>, SkillError> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let mut fd = match rustix::fs::open(&self.base, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => {
                return Err(SkillError::Refused(format!(
                    "{}: cannot be opened ({e})",
                    self.base.display()
                )));
            }
        };
        let mut at = self.base.clone();
        for part in &self.beneath {
            at.push(part);
            fd = match open_dir_at(&fd, OsStr::new(part)) {
                Ok(next) => next,
                Err(Errno::NOENT) => return Ok(None),
                Err(e) => return Err(SkillError::Refused(refusal(&at, e))),
            };
        }
        Ok(Some(fd))
    }
}

fn refusal(at: &Path, e: Errno) -> String {
    match e {
        Errno::LOOP | Errno::NOTDIR => format!(
            "{}: is a symbolic link or not a folder, and a skill is read only from real folders beneath its layer: replace it with the folder itself",
            at.display()
        ),
        e => format!("{}: cannot be opened ({e})", at.display()),
    }
}

fn open_dir_at(fd: &OwnedFd, name: &OsStr) -> Result<OwnedFd, Errno> {
    rustix::fs::openat(
        fd,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Opens a regular file beneath `fd` without following a link or waiting
/// on a FIFO, and reads at most `limit` bytes; the flag says it was cut.
fn read_file_at(fd: &OwnedFd, name: &OsStr, limit: u64) -> Result<(Vec<u8>, bool), Errno> {
    let file = rustix::fs::openat(
        fd,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let stat = rustix::fs::fstat(&file)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(Errno::NOTSUP);
    }
    let mut bytes = Vec::new();
    std::fs::File::from(file)
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
    let cut = bytes.len() as u64 > limit;
    bytes.truncate(limit as usize);
    Ok((bytes, cut))
}

fn file_refusal(at: &Path, e: Errno) -> String {
    match e {
        Errno::LOOP | Errno::NOTSUP | Errno::NXIO => format!(
            "{}: is a symbolic link or not a regular file, and a skill's files are read only as regular files inside its folder",
            at.display()
        ),
        Errno::NOENT => format!("{}: there is no such file", at.display()),
        e => format!("{}: cannot be read ({e})", at.display()),
    }
}

/// One skill, as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub layer: SkillLayer,
    /// The policy package that ships it (packaged layer).
    pub package: Option<String>,
    /// `allowed-tools`, as written: advisory, never a permission.
    pub allowed_tools: Vec<String>,
    /// Its `SKILL.md`, for sentences that name it.
    pub file: PathBuf,
}

/// A skill that is not listed, and why, at its file (and line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub why: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file.display(), self.why),
            None => write!(f, "{}: {}", self.file.display(), self.why),
        }
    }
}

/// Every skill of the layers `settings` lists, and every one that could
/// not be read.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub skills: Vec<Skill>,
    pub problems: Vec<Problem>,
}

/// Whether `name` is a skill's name: lowercase ASCII letters, digits and
/// `-`, not starting or ending with `-`, at most [`MAX_NAME`] bytes.
pub fn is_skill_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.starts_with('-')
        && !name.ends_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Lists the skills of every layer `settings` names, in layer order. A
/// name taken by an earlier layer is not listed again (the operator's own
/// skill is never shadowed by a project's or a package's).
pub fn list(layers: &Layers, settings: &SkillSettings) -> Catalog {
    let mut catalog = Catalog::default();
    for layer in &settings.layers {
        for folder in layers.folders(*layer) {
            list_folder(&folder, *layer, settings.max_bytes, &mut catalog);
        }
    }
    catalog
}

fn list_folder(folder: &Folder, layer: SkillLayer, limit: u64, catalog: &mut Catalog) {
    let path = folder.path();
    let dir = match folder.open() {
        Ok(Some(dir)) => dir,
        Ok(None) => return,
        Err(why) => {
            catalog.problems.push(Problem {
                file: path,
                line: None,
                why: why.to_string(),
            });
            return;
        }
    };
    let mut names = match entries(&dir) {
        Ok(names) => names,
        Err(e) => {
            catalog.problems.push(Problem {
                file: path,
                line: None,
                why: format!("cannot be listed ({e})"),
            });
            return;
        }
    };
    names.sort_by(|a, b| a.0.cmp(&b.0));
    let mut listed = 0;
    for (name, kind) in names {
        let at = path.join(&name);
        if kind == FileType::Symlink {
            catalog.problems.push(Problem {
                file: at,
                line: None,
                why: "is a symbolic link, and a skill is a real folder in its layer: replace the link with the folder".into(),
            });
            continue;
        }
        if kind != FileType::Directory {
            continue;
        }
        if listed == MAX_SKILLS_PER_FOLDER {
            catalog.problems.push(Problem {
                file: path,
                line: None,
                why: format!(
                    "holds more than {MAX_SKILLS_PER_FOLDER} skills; the rest are not listed"
                ),
            });
            return;
        }
        match read_skill_file(&dir, &name, &at, limit) {
            Ok((front, _, _)) => {
                let skill = Skill {
                    name: front.name,
                    description: front.description,
                    layer,
                    package: folder.package.clone(),
                    allowed_tools: front.allowed_tools,
                    file: at.join(SKILL_FILE),
                };
                if let Some(first) = catalog.skills.iter().find(|s| s.name == skill.name) {
                    catalog.problems.push(Problem {
                        file: skill.file,
                        line: None,
                        why: format!(
                            "`{}` is already a skill of the {} layer ({}), which is listed first: this one is not listed; rename its folder and name",
                            first.name,
                            first.layer.label(),
                            first.file.display()
                        ),
                    });
                    continue;
                }
                listed += 1;
                catalog.skills.push(skill);
            }
            Err(problem) => catalog.problems.push(problem),
        }
    }
}

/// The entries of a folder, by name and kind, hidden ones left out.
fn entries(dir: &OwnedFd) -> Result<Vec<(String, FileType)>, Errno> {
    let mut out = Vec::new();
    for entry in rustix::fs::Dir::read_from(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name.starts_with(b".") {
            continue;
        }
        let Ok(name) = std::str::from_utf8(name) else {
            continue;
        };
        out.push((name.to_owned(), entry.file_type()));
    }
    Ok(out)
}

/// Opens the skill folder `name` beneath `dir` and reads its `SKILL.md`:
/// its frontmatter, its text, and the folder's descriptor.
fn read_skill_file(
    dir: &OwnedFd,
    name: &str,
    at: &Path,
    limit: u64,
) -> Result<(frontmatter::Frontmatter, String, OwnedFd), Problem> {
    let folder = open_dir_at(dir, OsStr::new(name)).map_err(|e| Problem {
        file: at.to_path_buf(),
        line: None,
        why: refusal(at, e),
    })?;
    read_skill_in(folder, name, at, limit)
}

/// Reads the `SKILL.md` of the open skill folder `folder` (named `name`).
fn read_skill_in(
    folder: OwnedFd,
    name: &str,
    at: &Path,
    limit: u64,
) -> Result<(frontmatter::Frontmatter, String, OwnedFd), Problem> {
    let problem = |line, why: String| Problem {
        file: at.join(SKILL_FILE),
        line,
        why,
    };
    let (bytes, cut) = read_file_at(&folder, OsStr::new(SKILL_FILE), limit)
        .map_err(|e| problem(None, file_refusal(&at.join(SKILL_FILE), e)))?;
    let text = String::from_utf8(bytes).map_err(|_| {
        problem(
            None,
            if cut {
                format!("is longer than the {limit} bytes a skill may be (.skills.max_bytes)")
            } else {
                "is not UTF-8 text".into()
            },
        )
    })?;
    let front = frontmatter::parse(&text).map_err(|e| problem(Some(e.line), e.why))?;
    if !is_skill_name(&front.name) || front.name != name {
        return Err(problem(
            Some(2),
            format!(
                "the name `{}` must be the folder's name (`{name}`), in lowercase letters, digits and `-`, at most {MAX_NAME} characters",
                front.name
            ),
        ));
    }
    if front.description.chars().count() > MAX_DESCRIPTION {
        return Err(problem(
            None,
            format!("the description is longer than {MAX_DESCRIPTION} characters: shorten it"),
        ));
    }
    let body = if cut {
        format!(
            "{}\n\n[cut at {limit} bytes: .skills.max_bytes bounds one read]",
            &text[front.body_start.min(text.len())..]
        )
    } else {
        text[front.body_start.min(text.len())..].to_owned()
    };
    Ok((front, body, folder))
}

/// A skill found by name, its folder open: what is read of it is read
/// from that descriptor, so it is the skill its layer was decided for.
pub struct Opened {
    pub skill: Skill,
    folder: OwnedFd,
    body: String,
    limit: u64,
}

/// Finds the skill `name` in the layers `settings` lists and opens it.
pub fn open(layers: &Layers, settings: &SkillSettings, name: &str) -> Result<Opened, SkillError> {
    if !is_skill_name(name) {
        return Err(SkillError::NotAName(name.to_owned()));
    }
    let mut known = Vec::new();
    for layer in &settings.layers {
        for folder in layers.folders(*layer) {
            let path = folder.path();
            let Some(dir) = folder.open()? else {
                continue;
            };
            let at = path.join(name);
            let skill_dir = match open_dir_at(&dir, OsStr::new(name)) {
                Ok(skill_dir) => skill_dir,
                Err(Errno::NOENT) => continue,
                Err(e) => {
                    known.push(refusal(&at, e));
                    continue;
                }
            };
            match read_skill_in(skill_dir, name, &at, settings.max_bytes) {
                Ok((front, body, fd)) => {
                    return Ok(Opened {
                        skill: Skill {
                            name: front.name,
                            description: front.description,
                            layer: *layer,
                            package: folder.package,
                            allowed_tools: front.allowed_tools,
                            file: at.join(SKILL_FILE),
                        },
                        folder: fd,
                        body,
                        limit: settings.max_bytes,
                    });
                }
                Err(problem) => known.push(problem.to_string()),
            }
        }
    }
    match known.into_iter().next() {
        Some(problem) => Err(SkillError::Unreadable {
            name: name.to_owned(),
            problem,
        }),
        None => Err(SkillError::NotFound {
            name: name.to_owned(),
            layers: settings
                .layers
                .iter()
                .map(|l| l.label())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

impl Opened {
    /// The instructions: the `SKILL.md` after its frontmatter.
    pub fn body(&self) -> &str {
        &self.body
    }

    /// The files beside `SKILL.md`, relative to the skill's folder (at
    /// most [`MAX_FILES_NAMED`], links and hidden files left out).
    pub fn files(&self) -> Vec<String> {
        let mut out = Vec::new();
        walk(&self.folder, "", 0, &mut out);
        out.sort();
        out
    }

    /// Reads the file `rel` (`reference/forms.md`) of the skill's folder,
    /// each part opened beneath the one before without following a link;
    /// the flag says it was cut at the bound.
    pub fn read(&self, rel: &str) -> Result<(String, bool), SkillError> {
        let shown = self.skill.file.with_file_name(rel);
        let parts: Vec<&str> = rel.split('/').collect();
        if rel.is_empty()
            || parts
                .iter()
                .any(|p| p.is_empty() || *p == "." || *p == ".." || p.as_bytes().contains(&0))
        {
            return Err(SkillError::NotAFile(rel.to_owned()));
        }
        let (last, dirs) = parts.split_last().unwrap_or((&"", &[]));
        let mut fd = None::<OwnedFd>;
        for part in dirs {
            let next = open_dir_at(fd.as_ref().unwrap_or(&self.folder), OsStr::new(part))
                .map_err(|e| SkillError::Refused(refusal(&shown, e)))?;
            fd = Some(next);
        }
        let (bytes, cut) = read_file_at(
            fd.as_ref().unwrap_or(&self.folder),
            OsStr::new(last),
            self.limit,
        )
        .map_err(|e| SkillError::Refused(file_refusal(&shown, e)))?;
        match String::from_utf8(bytes) {
            Ok(text) => Ok((text, cut)),
            Err(e) if cut => {
                let valid = e.utf8_error().valid_up_to();
                let mut bytes = e.into_bytes();
                bytes.truncate(valid);
                Ok((String::from_utf8(bytes).unwrap_or_default(), true))
            }
            Err(_) => Err(SkillError::NotText(shown)),
        }
    }
}

fn walk(dir: &OwnedFd, prefix: &str, depth: usize, out: &mut Vec<String>) {
    let Ok(names) = entries(dir) else {
        return;
    };
    for (name, kind) in names {
        if out.len() >= MAX_FILES_NAMED {
            return;
        }
        let rel = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        match kind {
            FileType::RegularFile if !(depth == 0 && name == SKILL_FILE) => out.push(rel),
            FileType::Directory if depth + 1 < MAX_DEPTH => {
                if let Ok(sub) = open_dir_at(dir, OsStr::from_bytes(name.as_bytes())) {
                    walk(&sub, &rel, depth + 1, out);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
