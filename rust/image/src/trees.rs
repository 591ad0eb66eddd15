//! The image trees under `images/` in Chock's state directory, and the two
//! locks that keep them safe.
//!
//! `images/<reference>/` holds `rootfs/` (the tree every tool call binds
//! read-only) and `image.json` (what it was written from). Next to it:
//!
//! - `<reference>.lock`, held exclusively while anyone reads or writes
//!   the tree's record, so two sessions that start cold never write over
//!   each other: the second waits, then finds the tree the first wrote;
//! - `<reference>.use`, held shared by every session on the tree from its
//!   start to its end. Replacing or removing the tree takes it exclusively,
//!   without waiting: a session that needs different files while another
//!   uses the tree is refused at once. The kernel drops a `flock` when the
//!   process that held it ends, however it ends.
//!
//! A new tree is written into `.new-<reference>-<pid>/` and renamed into
//! place only once every layer was written and checked, so a tree that
//! is half written is never used; what a crash leaves is removed by the
//! next writer of that reference.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use rustix::fs::FlockOperation;

use crate::extract::{LayerError, Limits, Stats, Writer, remove_tree};
use crate::reference::Reference;
use crate::source::{self, Plan, SourceFault};

/// Bumped whenever a tree or its record changes meaning.
pub const FORMAT: &str = "chock-image-v1";

/// Why an image cannot be the toolchain.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// Not on this machine: nothing is fetched during a session.
    #[error(
        "the image {reference} is not on this machine ({found}); nothing is fetched during a session, so put it there first: {how}, then run again"
    )]
    NotOnMachine {
        /// The reference as written.
        reference: String,
        /// Where it was looked for.
        found: String,
        /// The command that puts it there.
        how: String,
    },
    /// On the machine, and not an image Chock can write.
    #[error(
        "the image {reference} from {from} cannot be used: {message}; make it again (pull or save it again) and run again"
    )]
    Bad {
        /// The reference as written.
        reference: String,
        /// Where it was read from.
        from: String,
        /// What is wrong.
        message: String,
    },
    /// Another session uses the tree this one would replace.
    #[error(
        "the image {reference} needs different files in {dir}, and another session is using that tree now; run again later, when no session uses {reference}"
    )]
    InUse {
        /// The reference as written.
        reference: String,
        /// The tree's directory.
        dir: PathBuf,
    },
    /// Chock's own directory could not be read or written.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// Where.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Neither HOME nor an XDG variable says where state lives.
    #[error(
        "neither CHOCK_STATE_DIR, XDG_STATE_HOME nor HOME is set, so Chock cannot tell where to keep image trees; set HOME"
    )]
    NoHome,
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> ImageError + 'a {
    move |source| ImageError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// What a tree was written from, kept as `image.json` beside it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Record {
    /// [`FORMAT`].
    pub format: String,
    /// The full reference.
    pub reference: String,
    /// Where it was read from (a path, or `podman`/`docker`).
    pub source: String,
    /// What identifies the image at its source: the configuration's
    /// digest, or the engine's image id.
    pub source_id: String,
    /// `sha256:` of the configuration.
    pub config_digest: String,
    /// The environment the image names.
    pub env: BTreeMap<String, String>,
    /// What its layers held.
    pub stats: Stats,
    /// How long writing it took, in milliseconds.
    pub millis: u64,
}

/// Where an image comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Want {
    /// The reference.
    pub reference: Reference,
    /// An OCI layout directory or an archive; `None` asks podman, then docker.
    pub path: Option<PathBuf>,
}

/// A tree ready to bind, and held for this process's life.
#[derive(Clone, Debug)]
pub struct Tree {
    /// The reference.
    pub reference: Reference,
    /// `images/<reference>/rootfs`.
    pub rootfs: PathBuf,
    /// What it was written from.
    pub record: Record,
    /// Whether this call wrote it.
    pub written: bool,
}

/// One tree on the machine, for `chock doctor` and `chock cache`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Listed {
    /// Its directory.
    pub dir: PathBuf,
    /// Its record, when readable.
    pub record: Option<Record>,
    /// Whether some session holds it now.
    pub in_use: bool,
}

impl Listed {
    /// Its reference (its directory when the record cannot be read) and
    /// the bytes of its files.
    pub fn shown(&self) -> (String, u64) {
        self.record.as_ref().map_or_else(
            || (self.dir.display().to_string(), 0),
            |r| (r.reference.clone(), r.stats.bytes),
        )
    }
}

/// What removing unused trees did to one.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Removal {
    /// Its directory.
    pub dir: PathBuf,
    /// Bytes of files it held, when known.
    pub bytes: u64,
    /// Removed, or kept because a session holds it or writes it.
    pub removed: bool,
}

/// The use locks this process holds, one per tree, until it ends.
static HELD: Mutex<Vec<(PathBuf, File)>> = Mutex::new(Vec::new());

/// The image trees of this user.
#[derive(Clone, Debug)]
pub struct Images {
    dir: PathBuf,
    limits: Limits,
}

fn open_lock(path: &Path) -> Result<File, ImageError> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc_o_nofollow())
        .open(path)
        .map_err(io("opening the lock", path))
}

fn libc_o_nofollow() -> i32 {
    nix::fcntl::OFlag::O_NOFOLLOW.bits()
}

fn lock(file: &File, op: FlockOperation, path: &Path) -> Result<bool, ImageError> {
    match rustix::fs::flock(file.as_fd(), op) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(e) => Err(io("locking", path)(e.into())),
    }
}

/// Removes a directory of this store by descriptor, never following a link.
fn remove_dir(path: &Path) -> Result<(), ImageError> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(());
    };
    let dir = nix::fcntl::open(
        parent,
        nix::fcntl::OFlag::O_DIRECTORY
            | nix::fcntl::OFlag::O_NOFOLLOW
            | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|e| io("opening", parent)(e.into()))?;
    remove_tree(&dir, name).map_err(|e| io("removing", path)(e.into()))
}

/// Removes the directory when dropped, unless disarmed: a tree that was
/// not finished is never left to be used.
struct Scratch(Option<PathBuf>);

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            let _ = remove_dir(&path);
            if path.is_file() {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

fn read_record(path: &Path) -> Option<Record> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice::<Record>(&bytes)
        .ok()
        .filter(|r| r.format == FORMAT)
}

fn sync_dir(path: &Path) {
    if let Ok(dir) = File::open(path) {
        let _ = dir.sync_all();
    }
}

/// Where the source was, in words.
/// The start of the file an engine's `save` writes the image into
/// (`<this><pid>.tar`): the tree's name with each `:` as `=` (no reference
/// holds one), since `podman save` refuses a file name with a `:` in it.
fn export_prefix(name: &str) -> String {
    format!(".export-{}-", name.replace(':', "="))
}

fn shown(want: &Want, engine: Option<&str>) -> String {
    match (&want.path, engine) {
        (Some(path), _) => path.display().to_string(),
        (None, Some(engine)) => format!("{engine}'s local store"),
        (None, None) => "podman's and docker's local stores".into(),
    }
}

/// The command that puts the image at `path`, or in an engine's store.
fn how_to_get(want: &Want) -> String {
    let written = &want.reference.written;
    match &want.path {
        Some(path) if path.extension().is_some_and(|e| e == "tar") => format!(
            "`podman pull {written} && podman save -o {0} {written}` (or the same with docker)",
            path.display()
        ),
        Some(path) => format!(
            "`skopeo copy docker://{} oci:{}:{}`",
            want.reference,
            path.display(),
            want.reference.tag.as_deref().unwrap_or("latest")
        ),
        None => want.reference.pull_command(),
    }
}

impl Images {
    /// The trees in `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> Images {
        Images {
            dir: dir.into(),
            limits: Limits::default(),
        }
    }

    /// The same trees, writing a tree only while its layers stay within
    /// `limits` (by default [`Limits::default`]).
    pub fn with_limits(self, limits: Limits) -> Images {
        Images { limits, ..self }
    }

    /// `$CHOCK_STATE_DIR/images`, else `$XDG_STATE_HOME/chock/images`,
    /// else `~/.local/state/chock/images`.
    pub fn from_env() -> Result<Images, ImageError> {
        let absolute = |var: &str| {
            std::env::var_os(var)
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
        };
        let dir = if let Some(state) = absolute("CHOCK_STATE_DIR") {
            state.join("images")
        } else if let Some(state) = absolute("XDG_STATE_HOME") {
            state.join("chock/images")
        } else {
            absolute("HOME")
                .ok_or(ImageError::NoHome)?
                .join(".local/state/chock/images")
        };
        Ok(Images::at(dir))
    }

    /// The directory the trees are in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn ensure(&self) -> Result<(), ImageError> {
        std::fs::create_dir_all(&self.dir).map_err(io("creating", &self.dir))?;
        std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))
            .map_err(io("securing", &self.dir))
    }

    fn lock_path(&self, name: &str, kind: &str) -> PathBuf {
        self.dir.join(format!("{name}.{kind}"))
    }

    /// The tree for `want`, written first when it is missing or was written
    /// from another image, and held (the use lock, shared) until this
    /// process ends.
    pub fn prepare(&self, want: &Want) -> Result<Tree, ImageError> {
        self.ensure()?;
        let name = want.reference.dir_name();
        let tree_dir = self.dir.join(&name);
        // A session keeps the tree it started with to its end: the image
        // may have moved since, and is picked up by the next session.
        if self.holds(&tree_dir)
            && let Some(record) = read_record(&tree_dir.join("image.json"))
        {
            return Ok(Tree {
                reference: want.reference.clone(),
                rootfs: tree_dir.join("rootfs"),
                record,
                written: false,
            });
        }
        let extract_path = self.lock_path(&name, "lock");
        let extract = open_lock(&extract_path)?;
        if !lock(
            &extract,
            FlockOperation::NonBlockingLockExclusive,
            &extract_path,
        )? {
            tracing::info!(target: "chock_progress", "waiting for another session writing the image {}", want.reference);
            lock(&extract, FlockOperation::LockExclusive, &extract_path)?;
        }
        let missing = |found: String| ImageError::NotOnMachine {
            reference: want.reference.written.clone(),
            found,
            how: how_to_get(want),
        };
        let bad = |from: String, message: String| ImageError::Bad {
            reference: want.reference.written.clone(),
            from,
            message,
        };
        let fault = |fault: SourceFault, from: String| match fault {
            SourceFault::Missing(found) => missing(found),
            SourceFault::Bad(message) => bad(from, message),
        };
        // What the source holds now.
        let (found, source_id, from) = match &want.path {
            Some(path) => {
                let plan = source::read_path(path, &want.reference)
                    .map_err(|f| fault(f, shown(want, None)))?;
                let id = plan.config_digest.clone();
                (Found::Plan(plan), id, shown(want, None))
            }
            None => {
                let engine = source::find_in_engines(&want.reference).map_err(|said| {
                    missing(if said.is_empty() {
                        "neither podman nor docker is installed, and chock.zon names no .path"
                            .into()
                    } else {
                        said.join("; ")
                    })
                })?;
                let id = engine.id.clone();
                let from = shown(want, Some(engine.program));
                (Found::Engine(engine), id, from)
            }
        };
        let use_path = self.lock_path(&name, "use");
        let in_use = open_lock(&use_path)?;
        let rootfs = tree_dir.join("rootfs");
        if let Some(record) = read_record(&tree_dir.join("image.json"))
            && record.source_id == source_id
            && rootfs.is_dir()
        {
            // Nobody takes the use lock exclusively without the extraction
            // lock, which this process holds: this does not wait.
            lock(&in_use, FlockOperation::LockShared, &use_path)?;
            self.hold(&tree_dir, in_use);
            return Ok(Tree {
                reference: want.reference.clone(),
                rootfs,
                record,
                written: false,
            });
        }
        if !lock(&in_use, FlockOperation::NonBlockingLockExclusive, &use_path)? {
            return Err(ImageError::InUse {
                reference: want.reference.written.clone(),
                dir: tree_dir,
            });
        }
        self.clear_leftovers(&name);
        let pid = std::process::id();
        let new_dir = self.dir.join(format!(".new-{name}-{pid}"));
        let scratch = Scratch(Some(new_dir.clone()));
        let new_rootfs = new_dir.join("rootfs");
        std::fs::create_dir_all(&new_rootfs).map_err(io("creating", &new_rootfs))?;
        std::fs::set_permissions(&new_rootfs, std::fs::Permissions::from_mode(0o755))
            .map_err(io("creating", &new_rootfs))?;
        let mut export = Scratch(None);
        let plan = match found {
            Found::Plan(plan) => plan,
            Found::Engine(engine) => {
                let archive = self.dir.join(format!("{}{pid}.tar", export_prefix(&name)));
                export = Scratch(Some(archive.clone()));
                tracing::info!(target: "chock_progress", "saving {} from {}", want.reference, engine.program);
                source::export(&engine, &want.reference, &archive)
                    .map_err(|f| fault(f, from.clone()))?
            }
        };
        let started = Instant::now();
        let stats = write_layers(&plan, &new_rootfs, &want.reference, self.limits)
            .map_err(|m| bad(from.clone(), m.to_string()))?;
        drop(export);
        let record = Record {
            format: FORMAT.into(),
            reference: want.reference.to_string(),
            source: from,
            source_id,
            config_digest: plan.config_digest.clone(),
            env: plan.config.env(),
            stats,
            millis: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        };
        let record_path = new_dir.join("image.json");
        let bytes = serde_json::to_vec_pretty(&record)
            .map_err(|e| io("writing", &record_path)(e.into()))?;
        let mut file = File::create(&record_path).map_err(io("writing", &record_path))?;
        file.write_all(&bytes)
            .map_err(io("writing", &record_path))?;
        file.sync_all().map_err(io("writing", &record_path))?;
        // Swap: the old tree (nobody uses it: this process holds the use
        // lock exclusively) goes aside, the new one takes its name.
        if tree_dir.symlink_metadata().is_ok() {
            let old = self.dir.join(format!(".old-{name}-{pid}"));
            std::fs::rename(&tree_dir, &old).map_err(io("moving aside", &tree_dir))?;
            std::fs::rename(&new_dir, &tree_dir).map_err(io("renaming into place", &tree_dir))?;
            let _ = remove_dir(&old);
        } else {
            std::fs::rename(&new_dir, &tree_dir).map_err(io("renaming into place", &tree_dir))?;
        }
        let mut scratch = scratch;
        scratch.0 = None;
        sync_dir(&self.dir);
        // Still under the extraction lock, so nobody can slip in while the
        // lock turns from exclusive to shared.
        lock(&in_use, FlockOperation::LockShared, &use_path)?;
        self.hold(&tree_dir, in_use);
        Ok(Tree {
            reference: want.reference.clone(),
            rootfs: tree_dir.join("rootfs"),
            record,
            written: true,
        })
    }

    fn holds(&self, tree_dir: &Path) -> bool {
        HELD.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .any(|(dir, _)| dir == tree_dir)
    }

    fn hold(&self, tree_dir: &Path, lock: File) {
        let mut held = HELD
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !held.iter().any(|(dir, _)| dir == tree_dir) {
            held.push((tree_dir.to_path_buf(), lock));
        }
    }

    /// What a writer of `name` that crashed left (this process holds both
    /// of its locks, so nobody else writes them).
    fn clear_leftovers(&self, name: &str) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let prefixes = [
            format!(".new-{name}-"),
            format!(".old-{name}-"),
            export_prefix(name),
        ];
        for entry in entries.filter_map(Result::ok) {
            let file = entry.file_name();
            let file = file.to_string_lossy();
            let ours = prefixes.iter().any(|prefix| {
                file.strip_prefix(prefix.as_str()).is_some_and(|pid| {
                    pid.trim_end_matches(".tar")
                        .bytes()
                        .all(|b| b.is_ascii_digit())
                })
            });
            if ours {
                let path = entry.path();
                if path.is_dir() {
                    let _ = remove_dir(&path);
                } else {
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
    }

    fn names(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('.'))
            .collect();
        names.sort();
        names
    }

    /// Every tree, whether a session holds it now, and what it holds.
    pub fn list(&self) -> Vec<Listed> {
        self.names()
            .into_iter()
            .map(|name| {
                let dir = self.dir.join(&name);
                Listed {
                    record: read_record(&dir.join("image.json")),
                    in_use: !self.free(&name),
                    dir,
                }
            })
            .collect()
    }

    /// Whether no session holds the tree `name` and none is writing it:
    /// the use lock is tried only under the extraction lock, so the try
    /// can never make a session that is starting see the tree as in use.
    fn free(&self, name: &str) -> bool {
        let try_lock = |kind: &str| -> Option<File> {
            let path = self.lock_path(name, kind);
            let file = File::open(&path).ok()?;
            lock(&file, FlockOperation::NonBlockingLockExclusive, &path)
                .ok()
                .filter(|got| *got)
                .map(|_| file)
        };
        let Some(_extract) = try_lock("lock") else {
            return !self.lock_path(name, "lock").exists();
        };
        try_lock("use").is_some() || !self.lock_path(name, "use").exists()
    }

    /// Removes every tree no session holds and none is writing.
    pub fn remove_unused(&self) -> Result<Vec<Removal>, ImageError> {
        let mut out = Vec::new();
        for name in self.names() {
            let dir = self.dir.join(&name);
            let bytes = read_record(&dir.join("image.json")).map_or(0, |r| r.stats.bytes);
            let extract_path = self.lock_path(&name, "lock");
            let use_path = self.lock_path(&name, "use");
            let extract = open_lock(&extract_path)?;
            let in_use = open_lock(&use_path)?;
            let free = lock(
                &extract,
                FlockOperation::NonBlockingLockExclusive,
                &extract_path,
            )? && lock(&in_use, FlockOperation::NonBlockingLockExclusive, &use_path)?;
            if free {
                self.clear_leftovers(&name);
                let aside = self.dir.join(format!(".old-{name}-{}", std::process::id()));
                std::fs::rename(&dir, &aside).map_err(io("moving aside", &dir))?;
                remove_dir(&aside)?;
            }
            out.push(Removal {
                dir,
                bytes,
                removed: free,
            });
        }
        Ok(out)
    }
}

enum Found {
    Plan(Plan),
    Engine(source::Engine),
}

/// Why an image's layers were not written into its tree.
#[derive(Debug, thiserror::Error)]
enum WriteError {
    #[error(transparent)]
    Tree(#[from] LayerError),
    #[error("layer {at} of {count} ({blob}): {cause}")]
    Layer {
        at: usize,
        count: usize,
        blob: String,
        cause: LayerError,
    },
}

fn write_layers(
    plan: &Plan,
    rootfs: &Path,
    reference: &Reference,
    limits: Limits,
) -> Result<Stats, WriteError> {
    let mut writer = Writer::new(rootfs)?.with_limits(limits);
    let count = plan.layers.len();
    for (i, layer) in plan.layers.iter().enumerate() {
        tracing::info!(target: "chock_progress", "writing layer {} of {count} of {reference}", i + 1);
        let at = |cause| WriteError::Layer {
            at: i + 1,
            count,
            blob: layer.blob.clone(),
            cause,
        };
        let stored = plan
            .blobs
            .open(&layer.blob)
            .map_err(|e| at(LayerError::Unreadable(e)))?;
        writer.layer(stored, layer).map_err(at)?;
    }
    Ok(writer.finish()?)
}

/// Whether `inside` (an absolute path as the sandbox shows it) names an
/// executable file in the tree, resolved as the image resolves it: every
/// link, absolute ones too, inside the tree.
pub fn executable(rootfs: &Path, inside: &Path) -> bool {
    use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
    let Ok(root) = nix::fcntl::open(
        rootfs,
        OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    ) else {
        return false;
    };
    let relative = inside.strip_prefix("/").unwrap_or(inside);
    let how = OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_IN_ROOT | ResolveFlag::RESOLVE_NO_MAGICLINKS);
    let Ok(fd) = nix::fcntl::openat2(root.as_fd(), relative, how) else {
        return false;
    };
    nix::sys::stat::fstat(fd.as_fd()).is_ok_and(|s| {
        nix::sys::stat::SFlag::from_bits_truncate(s.st_mode) & nix::sys::stat::SFlag::S_IFMT
            == nix::sys::stat::SFlag::S_IFREG
            && s.st_mode & 0o111 != 0
    })
}
