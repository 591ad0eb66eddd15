//! The mount tree of a sandbox, planned in the parent as a list of steps and
//! carried out by the child without allocating.
//!
//! The tree starts empty: a small tmpfs becomes the root (`pivot_root`), the
//! host's root stays reachable at [`OLD_ROOT`] only while the binds are made,
//! and is detached before the program starts. So what the program sees is
//! exactly the list below and nothing of the host by accident:
//!
//! - the workspace, read-write, at its own path (`nosuid`, `nodev`), with
//!   `chock.zon` and what git runs or reads in the git directory (hooks,
//!   config, info, see `git.rs`) bound read-only over themselves;
//! - the dev shell closure, each store path read-only at its own path on a
//!   store tmpfs of its own (or, with no flake, the whole store and the
//!   host's system directories, read-only);
//! - `/run/chock/cache` (read-write, from the host's data directory) and
//!   `/run/chock/tmp` (a tmpfs with a size cap, also bound at `/tmp`);
//! - `/run/chock/scratch` (read-write, a session's scratchpad on the host),
//!   only when the run is given one;
//! - `/run/chock/secrets` (a read-only tmpfs of its own, mode 0500) with
//!   one file of mode 0400 per secret the run was granted as a file, only
//!   when there is one; it lives in the sandbox's mount namespace, so it is
//!   gone when the run ends;
//! - `/etc` with generated `passwd`, `group`, `hosts` and `nsswitch.conf`
//!   and the host's time zone; `/dev` with six device nodes, a private
//!   `devpts` and a capped `/dev/shm`; a fresh read-only `/proc` with the
//!   entries that tell about the host masked.
//!
//! The root tmpfs is made read-only last, so the program can create nothing
//! outside the workspace, the cache and the tmpfs even before Landlock.

use std::collections::BTreeSet;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::anchor::{Anchored, Placeholder};
use crate::sys::{
    FileId, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOEXEC, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY,
};

/// Where the host's root hangs while the tree is built.
pub const OLD_ROOT: &str = "/.chock-host-root";
/// The directory the new root tmpfs is first mounted over (in the new mount
/// namespace only, so the host never sees it).
const BASE: &str = "/tmp";
/// Chock's own directory inside the sandbox.
pub const RUN_CHOCK: &str = "/run/chock";
/// The per-project writable cache, `HOME` and `XDG_CACHE_HOME` point into it.
pub const CACHE_MOUNT: &str = "/run/chock/cache";
/// The capped tmpfs, `TMPDIR`.
pub const TMP_MOUNT: &str = "/run/chock/tmp";
/// Where a session's scratchpad is shown, read-write, when it has one.
pub const SCRATCH_MOUNT: &str = "/run/chock/scratch";
/// Where the secrets a run was granted as files are, one file each.
pub const SECRETS_MOUNT: &str = "/run/chock/secrets";
/// The most bytes all of a run's secret files may hold together.
pub const MAX_SECRET_FILE_BYTES: usize = 4 << 20;

/// One secret given to a run as a file, `SECRETS_MOUNT/<name>`. Its
/// contents never show in a `Debug` print (a failed run describes its
/// steps, never their contents).
#[derive(Clone, PartialEq, Eq)]
pub struct SecretFile {
    /// The file's name: a plain name, no `/`, not `.` or `..`.
    pub name: String,
    /// What the file holds.
    pub contents: Vec<u8>,
}

impl std::fmt::Debug for SecretFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SecretFile({}, {} bytes)",
            self.name,
            self.contents.len()
        )
    }
}

impl SecretFile {
    /// Whether `name` can be a file's name directly under [`SECRETS_MOUNT`].
    pub fn is_plain_name(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= 255
            && name != "."
            && name != ".."
            && !name.bytes().any(|b| b == b'/' || b == 0)
    }
}

pub(crate) const READ_ONLY: u64 = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
pub(crate) const WRITABLE: u64 = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;

/// Device nodes the sandbox gets from the host, each bound alone.
pub const DEVICE_NODES: [&str; 6] = ["null", "zero", "full", "random", "urandom", "tty"];

/// Entries of `/proc` that describe the host (kernel memory, symbols, keys,
/// timers, hardware) rather than the sandbox; a root caller owns them, so
/// they are covered even though the program has no capabilities.
pub const PROC_MASKED_FILES: [&str; 14] = [
    "kcore",
    "kmsg",
    "kallsyms",
    "keys",
    "key-users",
    "kpagecount",
    "kpageflags",
    "kpagecgroup",
    "latency_stats",
    "timer_list",
    "sched_debug",
    "sysrq-trigger",
    "config.gz",
    "vmallocinfo",
];
/// Directories of `/proc` covered by an empty read-only tmpfs (one, bound
/// over each).
pub const PROC_MASKED_DIRS: [&str; 6] = ["acpi", "asound", "bus", "irq", "scsi", "driver"];

/// What a path on the host is, as far as mounting it goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A directory: an empty directory is made as its mount point.
    Dir,
    /// Any other non-link file: an empty file is made as its mount point.
    File,
    /// A symbolic link: recreated with the same target rather than bound.
    Symlink(PathBuf),
}

/// One host path to show read-only at the same path inside.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The path, on the host and inside.
    pub path: PathBuf,
    /// Its kind on the host.
    pub kind: EntryKind,
}

/// One entry of a container image's tree, shown read-only in the sandbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageEntry {
    /// Its path in the tree, on the host.
    pub host: PathBuf,
    /// Where it shows inside, and what it is.
    pub entry: Entry,
    /// The object `host` named when the layout was read (none for a link,
    /// which is made as a link): it is bound only if it still is that one.
    pub(crate) id: Option<FileId>,
}

/// What of the store (and of the host's system) the sandbox shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreView {
    /// The dev shell closure: these store paths and nothing else of the store.
    Closure {
        /// The store directory (`/nix/store`).
        store_dir: PathBuf,
        /// Each store path of the closure.
        entries: Vec<Entry>,
    },
    /// A container image's tree: each entry at its top (and in its `/etc`,
    /// less the files Chock writes there) read-only at its place inside,
    /// and no Nix store.
    Image {
        /// The tree on the host (`images/<reference>/rootfs`).
        rootfs: PathBuf,
        /// Each entry, where it shows.
        entries: Vec<ImageEntry>,
    },
    /// No flake: the whole store, plus the host's system directories.
    Host {
        /// The store directory, if it exists on this machine.
        store_dir: Option<PathBuf>,
        /// `/usr`, `/bin`, `/lib`... as they are on the host.
        system: Vec<Entry>,
    },
}

/// Everything the mount plan needs, resolved on the host beforehand.
#[derive(Clone, Debug)]
pub struct Layout {
    /// The project, read-write at its own path.
    pub workspace: PathBuf,
    /// Folders inside the workspace bound over themselves, writable, so
    /// they cannot be renamed away (the git directory); shallowest first.
    pub pinned: Vec<PathBuf>,
    /// Files and folders inside the workspace bound read-only over
    /// themselves (`chock.zon`, what git runs or reads).
    pub read_only: Vec<PathBuf>,
    /// Guarded names inside the workspace that did not exist: made before
    /// the sandbox starts (see `anchor`), then bound read-only.
    pub missing: Vec<(PathBuf, Placeholder)>,
    /// Those of `missing` that last only while the project's sandboxes
    /// run (control inputs that did not exist), and the hold on the record
    /// that says which were made, taken before the layout was read (see
    /// `lease`).
    pub passing: Vec<PathBuf>,
    pub(crate) lease: Option<std::sync::Arc<crate::lease::Lease>>,
    /// The host directory shown at [`CACHE_MOUNT`].
    pub cache_dir: PathBuf,
    /// The host directory shown at [`SCRATCH_MOUNT`], when there is one.
    pub scratch_dir: Option<PathBuf>,
    /// The size cap of [`TMP_MOUNT`], in bytes.
    pub tmp_bytes: u64,
    /// The store and toolchain.
    pub store: StoreView,
    /// Files written into the sandbox's `/etc` (name, contents).
    pub etc_files: Vec<(String, Vec<u8>)>,
    /// Host files and folders bound read-only into the sandbox (host path,
    /// sandbox path).
    pub file_binds: Vec<(PathBuf, PathBuf)>,
    /// Symbolic links made inside (target, link), e.g. `/bin/sh`.
    pub links: Vec<(PathBuf, PathBuf)>,
    /// A session workspace shown at `workspace` instead of the project:
    /// then `pinned`, `read_only` and `missing` lie in its tree.
    pub session: Option<crate::workspace::View>,
    /// Secrets given as files under [`SECRETS_MOUNT`].
    pub secret_files: Vec<SecretFile>,
    /// Device nodes the project named and the policy allowed, each bound
    /// alone into `/dev` (see `devices`).
    pub devices: Vec<crate::devices::Granted>,
}

/// One step of building the tree. Every path is already a C string so the
/// child only makes system calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Op {
    /// Stop mount events flowing between the host and the new namespace.
    MakePrivate,
    /// A fresh tmpfs at `target`.
    Tmpfs {
        target: CString,
        data: CString,
        flags: libc::c_ulong,
    },
    /// A directory (an existing one is fine).
    MkDir { path: CString },
    /// An empty file to bind a file over (an existing one is fine).
    MkFile { path: CString },
    /// A bind mount, with everything mounted beneath the source.
    Bind {
        source: CString,
        target: CString,
        optional: bool,
    },
    /// A host folder (the workspace, the cache) bound at `target` with
    /// `set`, but only if the folder `source` names, opened with no link
    /// followed, is still the object Chock checked (`id`).
    BindChecked {
        source: CString,
        id: FileId,
        target: CString,
        set: u64,
    },
    /// Binds the host path `source` (opened with no link followed, checked
    /// to be `id`) over the workspace's `rel` (opened beneath the workspace
    /// with no link followed) with `set`: a workspace bind.
    BindInto {
        source: CString,
        id: FileId,
        rel: CString,
        set: u64,
        shown: CString,
    },
    /// Covers the workspace's `rel`, opened beneath the workspace with no
    /// link followed and checked to be `id`, with the file `notice`,
    /// read-only, through that descriptor: a `deny_read` file.
    Cover {
        rel: CString,
        id: FileId,
        notice: CString,
        shown: CString,
    },
    /// An overlayfs at `target` (`nosuid`, `nodev`): the host folders
    /// `lower`, `upper` and `work`, each opened with no link followed and
    /// checked to be its id, given to overlayfs by descriptor
    /// (`/proc/self/fd/N`), with its attributes in `user.` xattrs, as a
    /// user namespace mounts it. An overlay workspace.
    Overlay {
        lower: CString,
        lower_id: FileId,
        upper: CString,
        upper_id: FileId,
        work: CString,
        work_id: FileId,
        target: CString,
    },
    /// Opens the workspace as mounted at `path` inside, for [`Op::Hold`].
    OpenWorkspace { path: CString },
    /// Binds the workspace's `rel` over itself with `set`: opened once
    /// beneath the workspace with no link followed, checked to be `id`,
    /// and bound through that descriptor. `shown` is the path, for errors.
    Hold {
        rel: CString,
        id: FileId,
        set: u64,
        shown: CString,
    },
    /// Add mount attributes (read-only, nosuid...) to the mount at `path`.
    SetAttr {
        path: CString,
        set: u64,
        recursive: bool,
    },
    /// A symbolic link (an existing one is fine).
    Symlink { target: CString, link: CString },
    /// A new file with fixed contents and permission bits `mode`.
    WriteFile {
        path: CString,
        contents: Vec<u8>,
        mode: libc::mode_t,
    },
    /// A fresh read-only procfs for the new PID namespace.
    Proc { target: CString },
    /// A private devpts instance.
    Devpts { target: CString },
    /// One empty read-only tmpfs over each of `targets` that exists:
    /// mounted over the first, then bound over the others (a bind costs
    /// the kernel far less than a new file system).
    MaskDirs { targets: Vec<CString> },
    /// `pivot_root` into `new_root`, the old root going to `put_old`.
    PivotRoot { new_root: CString, put_old: CString },
    /// Change directory.
    Chdir { path: CString },
    /// Detach the mount at `path` and everything beneath it.
    Detach { path: CString },
    /// Remove an empty directory.
    RmDir { path: CString },
    /// Bring the loopback interface of the new network namespace up.
    LoopbackUp,
}

impl Op {
    /// The step in words, for the error a person reads when it fails.
    pub(crate) fn describe(&self) -> String {
        let s = |c: &CString| c.to_string_lossy().into_owned();
        match self {
            Op::MakePrivate => "making the mount namespace private".into(),
            Op::Tmpfs { target, data, .. } => {
                format!("mounting a tmpfs ({}) at {}", s(data), s(target))
            }
            Op::MkDir { path } => format!("creating the directory {}", s(path)),
            Op::MkFile { path } => format!("creating the mount point {}", s(path)),
            Op::Bind { source, target, .. } => format!("binding {} at {}", s(source), s(target)),
            Op::BindChecked { source, target, .. } => {
                format!("binding {} at {}", s(source), s(target))
            }
            Op::Overlay {
                lower,
                upper,
                target,
                ..
            } => format!(
                "mounting an overlay of {} (changes to {}) at {}",
                s(lower),
                s(upper),
                s(target)
            ),
            Op::OpenWorkspace { path } => format!("opening the workspace {} inside", s(path)),
            Op::BindInto { source, shown, .. } => {
                format!("binding {} at {}", s(source), s(shown))
            }
            Op::Cover { shown, .. } => format!("covering the deny_read file {}", s(shown)),
            Op::Hold { shown, set, .. } => {
                format!("holding {} ({}) over itself", s(shown), attr_words(*set))
            }
            Op::SetAttr { path, set, .. } => format!("setting {} on {}", attr_words(*set), s(path)),
            Op::Symlink { target, link } => format!("linking {} to {}", s(link), s(target)),
            Op::WriteFile { path, .. } => format!("writing {}", s(path)),
            Op::Proc { target } => format!("mounting a fresh procfs at {}", s(target)),
            Op::Devpts { target } => format!("mounting a private devpts at {}", s(target)),
            Op::MaskDirs { targets } => format!(
                "masking {}",
                targets.iter().map(&s).collect::<Vec<_>>().join(", ")
            ),
            Op::PivotRoot { new_root, .. } => format!("pivot_root into {}", s(new_root)),
            Op::Chdir { path } => format!("changing directory to {}", s(path)),
            Op::Detach { path } => format!("detaching {}", s(path)),
            Op::RmDir { path } => format!("removing {}", s(path)),
            Op::LoopbackUp => "bringing up the loopback interface".into(),
        }
    }
}

fn attr_words(set: u64) -> String {
    let names = [
        (MOUNT_ATTR_RDONLY, "read-only"),
        (MOUNT_ATTR_NOSUID, "nosuid"),
        (MOUNT_ATTR_NODEV, "nodev"),
        (MOUNT_ATTR_NOEXEC, "noexec"),
    ];
    names
        .iter()
        .filter(|(bit, _)| set & bit != 0)
        .map(|(_, n)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Turns a path into a C string; paths come from the file system or from
/// `Path::join`, so an interior NUL cannot occur, and one that did would be
/// replaced by an impossible path rather than truncated.
pub(crate) fn cstring(path: impl AsRef<Path>) -> CString {
    CString::new(path.as_ref().as_os_str().as_bytes())
        .unwrap_or_else(|_| c"/.chock-invalid-path".to_owned())
}

pub(crate) fn under_old_root(host: &Path) -> PathBuf {
    let relative = host.strip_prefix("/").unwrap_or(host);
    Path::new(OLD_ROOT).join(relative)
}

/// Builds the ordered list of steps, keeping track of the directories made
/// so far so each is made once.
pub(crate) struct Planner {
    ops: Vec<Op>,
    made: BTreeSet<PathBuf>,
}

impl Planner {
    #[cfg(test)]
    pub(crate) fn new() -> Planner {
        Planner {
            ops: Vec::new(),
            made: BTreeSet::new(),
        }
    }

    #[cfg(test)]
    pub(crate) fn into_ops(self) -> Vec<Op> {
        self.ops
    }

    pub(crate) fn push(&mut self, op: Op) {
        self.ops.push(op);
    }

    /// `mkdir -p`, one step per missing ancestor.
    pub(crate) fn mkdir_all(&mut self, path: &Path) {
        let mut ancestors: Vec<&Path> = path.ancestors().filter(|p| *p != Path::new("/")).collect();
        ancestors.reverse();
        for dir in ancestors {
            if self.made.insert(dir.to_path_buf()) {
                self.ops.push(Op::MkDir { path: cstring(dir) });
            }
        }
    }

    fn mount_point(&mut self, path: &Path, kind: &EntryKind) {
        match kind {
            EntryKind::Dir => self.mkdir_all(path),
            EntryKind::File | EntryKind::Symlink(_) => {
                if let Some(parent) = path.parent() {
                    self.mkdir_all(parent);
                }
                self.push(Op::MkFile {
                    path: cstring(path),
                });
            }
        }
    }

    /// Shows a host entry read-only at the same path (a link is recreated).
    fn show_read_only(&mut self, entry: &Entry) {
        self.show_read_only_from(&entry.path, entry);
    }

    /// Shows the host path `host` read-only at `entry.path` (a link is recreated).
    fn show_read_only_from(&mut self, host: &Path, entry: &Entry) {
        if let EntryKind::Symlink(target) = &entry.kind {
            if let Some(parent) = entry.path.parent() {
                self.mkdir_all(parent);
            }
            self.push(Op::Symlink {
                target: cstring(target),
                link: cstring(&entry.path),
            });
            return;
        }
        self.mount_point(&entry.path, &entry.kind);
        self.push(Op::Bind {
            source: cstring(under_old_root(host)),
            target: cstring(&entry.path),
            optional: false,
        });
        self.push(Op::SetAttr {
            path: cstring(&entry.path),
            set: READ_ONLY,
            recursive: true,
        });
    }
}

/// The whole plan, in the order the child carries it out.
pub(crate) fn plan(layout: &Layout, anchored: &Anchored) -> Vec<Op> {
    let mut p = Planner {
        ops: Vec::new(),
        made: BTreeSet::new(),
    };
    p.push(Op::MakePrivate);
    p.push(Op::Tmpfs {
        target: cstring(BASE),
        data: c"mode=0755,size=8m".to_owned(),
        flags: 0,
    });
    p.push(Op::MkDir {
        path: cstring(Path::new(BASE).join(OLD_ROOT.trim_start_matches('/'))),
    });
    p.push(Op::PivotRoot {
        new_root: cstring(BASE),
        put_old: cstring(Path::new(BASE).join(OLD_ROOT.trim_start_matches('/'))),
    });
    p.push(Op::Chdir {
        path: c"/".to_owned(),
    });

    plan_run_chock(&mut p, layout, anchored);
    plan_store(&mut p, &layout.store);
    plan_etc(&mut p, layout);
    for (target, link) in &layout.links {
        if let Some(parent) = link.parent() {
            p.mkdir_all(parent);
        }
        p.push(Op::Symlink {
            target: cstring(target),
            link: cstring(link),
        });
    }
    plan_dev(&mut p, &layout.devices);
    plan_proc(&mut p);
    plan_workspace(&mut p, layout, anchored);
    p.push(Op::LoopbackUp);
    p.push(Op::Detach {
        path: cstring(OLD_ROOT),
    });
    p.push(Op::RmDir {
        path: cstring(OLD_ROOT),
    });
    p.push(Op::SetAttr {
        path: c"/".to_owned(),
        set: READ_ONLY,
        recursive: false,
    });
    p.ops
}

fn plan_run_chock(p: &mut Planner, layout: &Layout, anchored: &Anchored) {
    p.mkdir_all(Path::new(TMP_MOUNT));
    p.push(Op::Tmpfs {
        target: cstring(TMP_MOUNT),
        data: cstring(format!("mode=1777,size={}", layout.tmp_bytes)),
        flags: (libc::MS_NOSUID | libc::MS_NODEV) as libc::c_ulong,
    });
    // Programs that ignore TMPDIR still find the same capped space at /tmp.
    p.mkdir_all(Path::new("/tmp"));
    p.push(Op::Bind {
        source: cstring(TMP_MOUNT),
        target: c"/tmp".to_owned(),
        optional: false,
    });
    p.mkdir_all(Path::new(CACHE_MOUNT));
    p.push(Op::BindChecked {
        source: cstring(under_old_root(&layout.cache_dir)),
        id: anchored.cache,
        target: cstring(CACHE_MOUNT),
        set: WRITABLE,
    });
    if let (Some(dir), Some(id)) = (&layout.scratch_dir, anchored.scratch) {
        p.mkdir_all(Path::new(SCRATCH_MOUNT));
        p.push(Op::BindChecked {
            source: cstring(under_old_root(dir)),
            id,
            target: cstring(SCRATCH_MOUNT),
            set: WRITABLE,
        });
    }
    plan_secret_files(p, &layout.secret_files);
}

/// A tmpfs of its own for the secret files, owned by the sandbox's user
/// (the caller's uid, mapped to itself), the directory 0500 and each file
/// 0400, made read-only once written. Nothing is mounted when there are none.
fn plan_secret_files(p: &mut Planner, files: &[SecretFile]) {
    if files.is_empty() {
        return;
    }
    const PAGE: usize = 4096;
    let bytes: usize = files
        .iter()
        .map(|f| f.contents.len().div_ceil(PAGE).max(1) * PAGE)
        .sum::<usize>()
        + PAGE;
    p.mkdir_all(Path::new(SECRETS_MOUNT));
    p.push(Op::Tmpfs {
        target: cstring(SECRETS_MOUNT),
        data: cstring(format!("mode=0500,size={bytes}")),
        flags: (libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC) as libc::c_ulong,
    });
    for file in files {
        p.push(Op::WriteFile {
            path: cstring(Path::new(SECRETS_MOUNT).join(&file.name)),
            contents: file.contents.clone(),
            mode: 0o400,
        });
    }
    p.push(Op::SetAttr {
        path: cstring(SECRETS_MOUNT),
        set: READ_ONLY | MOUNT_ATTR_NOEXEC,
        recursive: false,
    });
}

fn plan_store(p: &mut Planner, store: &StoreView) {
    match store {
        StoreView::Closure { store_dir, entries } => {
            p.mkdir_all(store_dir);
            p.push(Op::Tmpfs {
                target: cstring(store_dir),
                data: c"mode=0755,size=4m".to_owned(),
                flags: (libc::MS_NOSUID | libc::MS_NODEV) as libc::c_ulong,
            });
            for entry in entries {
                match &entry.kind {
                    EntryKind::Symlink(target) => p.push(Op::Symlink {
                        target: cstring(target),
                        link: cstring(&entry.path),
                    }),
                    kind => {
                        let target = cstring(&entry.path);
                        match kind {
                            EntryKind::Dir => p.push(Op::MkDir {
                                path: target.clone(),
                            }),
                            _ => p.push(Op::MkFile {
                                path: target.clone(),
                            }),
                        }
                        p.push(Op::Bind {
                            source: cstring(under_old_root(&entry.path)),
                            target,
                            optional: false,
                        });
                    }
                }
            }
            // One call makes the store tmpfs and every bind on it read-only.
            p.push(Op::SetAttr {
                path: cstring(store_dir),
                set: READ_ONLY,
                recursive: true,
            });
        }
        StoreView::Image { entries, .. } => {
            for shown in entries {
                match (&shown.entry.kind, shown.id) {
                    // Bound by descriptor, checked to be the object read.
                    (kind @ (EntryKind::Dir | EntryKind::File), Some(id)) => {
                        p.mount_point(&shown.entry.path, kind);
                        p.push(Op::BindChecked {
                            source: cstring(under_old_root(&shown.host)),
                            id,
                            target: cstring(&shown.entry.path),
                            set: READ_ONLY,
                        });
                    }
                    (EntryKind::Symlink(_), _) => p.show_read_only_from(&shown.host, &shown.entry),
                    // Never made so (`image::entries` opens every non-link):
                    // shown as nothing rather than by path.
                    (_, None) => {}
                }
            }
        }
        StoreView::Host { store_dir, system } => {
            if let Some(store_dir) = store_dir {
                p.show_read_only(&Entry {
                    path: store_dir.clone(),
                    kind: EntryKind::Dir,
                });
            }
            for entry in system {
                p.show_read_only(entry);
            }
        }
    }
}

fn plan_etc(p: &mut Planner, layout: &Layout) {
    p.mkdir_all(Path::new("/etc"));
    for (name, contents) in &layout.etc_files {
        p.push(Op::WriteFile {
            path: cstring(Path::new("/etc").join(name)),
            contents: contents.clone(),
            mode: 0o444,
        });
    }
    for (host, inside) in &layout.file_binds {
        let kind = if host.is_dir() {
            EntryKind::Dir
        } else {
            EntryKind::File
        };
        p.mount_point(inside, &kind);
        p.push(Op::Bind {
            source: cstring(under_old_root(host)),
            target: cstring(inside),
            optional: false,
        });
        p.push(Op::SetAttr {
            path: cstring(inside),
            set: READ_ONLY,
            recursive: false,
        });
    }
}

fn plan_dev(p: &mut Planner, devices: &[crate::devices::Granted]) {
    p.mkdir_all(Path::new("/dev"));
    p.push(Op::Tmpfs {
        target: c"/dev".to_owned(),
        data: c"mode=0755,size=64k".to_owned(),
        flags: (libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC) as libc::c_ulong,
    });
    for node in DEVICE_NODES {
        let path = Path::new("/dev").join(node);
        p.push(Op::MkFile {
            path: cstring(&path),
        });
        p.push(Op::Bind {
            source: cstring(under_old_root(&path)),
            target: cstring(&path),
            optional: false,
        });
    }
    for (link, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
        ("ptmx", "pts/ptmx"),
    ] {
        p.push(Op::Symlink {
            target: cstring(target),
            link: cstring(Path::new("/dev").join(link)),
        });
    }
    for device in devices {
        p.mount_point(&device.inside, &EntryKind::File);
        p.push(Op::BindChecked {
            source: cstring(under_old_root(&device.node)),
            id: device.id,
            target: cstring(&device.inside),
            set: MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC,
        });
    }
    p.push(Op::MkDir {
        path: c"/dev/pts".to_owned(),
    });
    p.push(Op::Devpts {
        target: c"/dev/pts".to_owned(),
    });
    p.push(Op::MkDir {
        path: c"/dev/shm".to_owned(),
    });
    p.push(Op::Tmpfs {
        target: c"/dev/shm".to_owned(),
        data: c"mode=1777,size=64m".to_owned(),
        flags: (libc::MS_NOSUID | libc::MS_NODEV) as libc::c_ulong,
    });
    p.push(Op::SetAttr {
        path: c"/dev".to_owned(),
        set: MOUNT_ATTR_RDONLY,
        recursive: false,
    });
}

fn plan_proc(p: &mut Planner) {
    p.mkdir_all(Path::new("/proc"));
    p.push(Op::Proc {
        target: c"/proc".to_owned(),
    });
    for name in PROC_MASKED_FILES {
        p.push(Op::Bind {
            source: c"/dev/null".to_owned(),
            target: cstring(Path::new("/proc").join(name)),
            optional: true,
        });
    }
    p.push(Op::MaskDirs {
        targets: PROC_MASKED_DIRS
            .iter()
            .map(|name| cstring(Path::new("/proc").join(name)))
            .collect(),
    });
}

fn plan_workspace(p: &mut Planner, layout: &Layout, anchored: &Anchored) {
    let host = layout
        .session
        .as_ref()
        .map_or(&layout.workspace, |s| &s.source);
    p.mkdir_all(&layout.workspace);
    let overlay = match (&layout.session, &anchored.session) {
        (Some(view), Some(session)) => crate::workspace::plan_overlay(
            view,
            session,
            (host, anchored.workspace),
            &layout.workspace,
        ),
        _ => None,
    };
    let overlaid = overlay.is_some();
    p.push(overlay.unwrap_or_else(|| Op::BindChecked {
        source: cstring(under_old_root(host)),
        id: anchored.workspace,
        target: cstring(&layout.workspace),
        set: WRITABLE,
    }));
    p.push(Op::OpenWorkspace {
        path: cstring(&layout.workspace),
    });
    // Each bound over itself: the program sees the same file or folder, and
    // cannot rename or remove it, since it is a mount point. Pins go first,
    // so the read-only mounts beneath them sit on them. Over an overlay the
    // object inside is overlayfs's, not the one checked on the host, so the
    // host's own (checked) is bound over the name instead.
    for held in &anchored.held {
        let rel = std::ffi::OsStr::from_bytes(held.rel.as_bytes());
        let shown = cstring(layout.workspace.join(rel));
        let set = if held.writable { WRITABLE } else { READ_ONLY };
        p.push(if overlaid {
            Op::BindInto {
                source: cstring(under_old_root(&host.join(rel))),
                id: held.id,
                rel: held.rel.clone(),
                set,
                shown,
            }
        } else {
            Op::Hold {
                rel: held.rel.clone(),
                id: held.id,
                set,
                shown,
            }
        });
    }
    if let (Some(view), Some(session)) = (&layout.session, &anchored.session) {
        crate::workspace::plan_session(p, view, session, &layout.workspace);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(store: StoreView) -> Layout {
        Layout {
            workspace: PathBuf::from("/home/ada/project"),
            pinned: vec![PathBuf::from("/home/ada/project/.git")],
            read_only: vec![
                PathBuf::from("/home/ada/project/chock.zon"),
                PathBuf::from("/home/ada/project/.git/hooks"),
            ],
            missing: Vec::new(),
            passing: Vec::new(),
            lease: None,
            cache_dir: PathBuf::from("/home/ada/.local/share/chock/cache/project-1"),
            tmp_bytes: 256 << 20,
            store,
            etc_files: vec![(
                "passwd".into(),
                b"ada:x:1000:1000::/run/chock/cache:/bin/sh\n".to_vec(),
            )],
            file_binds: vec![(
                PathBuf::from("/usr/share/zoneinfo/UTC"),
                PathBuf::from("/etc/localtime"),
            )],
            devices: Vec::new(),
            links: vec![(
                PathBuf::from("/nix/store/aaa-bash/bin/bash"),
                PathBuf::from("/bin/sh"),
            )],
            session: None,
            secret_files: Vec::new(),
            scratch_dir: None,
        }
    }

    fn id(ino: u64) -> FileId {
        FileId {
            dev: 1,
            ino,
            kind: libc::S_IFDIR,
        }
    }

    /// The workspace, the cache, `.git` pinned, `chock.zon` and `.git/hooks` held read-only.
    fn anchored() -> Anchored {
        let held = |rel: &std::ffi::CStr, ino, writable| crate::anchor::Held {
            rel: rel.to_owned(),
            id: id(ino),
            writable,
        };
        Anchored {
            workspace: id(1),
            cache: id(2),
            scratch: None,
            held: vec![
                held(c".git", 3, true),
                held(c"chock.zon", 4, false),
                held(c".git/hooks", 5, false),
            ],
            session: None,
        }
    }

    fn plan(layout: &Layout) -> Vec<Op> {
        super::plan(layout, &anchored())
    }

    fn closure() -> StoreView {
        StoreView::Closure {
            store_dir: PathBuf::from("/nix/store"),
            entries: vec![
                Entry {
                    path: PathBuf::from("/nix/store/aaa-bash"),
                    kind: EntryKind::Dir,
                },
                Entry {
                    path: PathBuf::from("/nix/store/bbb-script"),
                    kind: EntryKind::File,
                },
                Entry {
                    path: PathBuf::from("/nix/store/ccc-link"),
                    kind: EntryKind::Symlink(PathBuf::from("/nix/store/aaa-bash")),
                },
            ],
        }
    }

    fn position(ops: &[Op], wanted: &Op) -> usize {
        ops.iter()
            .position(|op| op == wanted)
            .unwrap_or_else(|| panic!("missing {wanted:?}"))
    }

    #[test]
    fn every_store_path_is_bound_before_the_store_goes_read_only() {
        let ops = plan(&layout(closure()));
        let read_only = position(
            &ops,
            &Op::SetAttr {
                path: c"/nix/store".to_owned(),
                set: READ_ONLY,
                recursive: true,
            },
        );
        let bind = position(
            &ops,
            &Op::Bind {
                source: c"/.chock-host-root/nix/store/aaa-bash".to_owned(),
                target: c"/nix/store/aaa-bash".to_owned(),
                optional: false,
            },
        );
        assert!(bind < read_only);
        assert!(ops.contains(&Op::MkFile {
            path: c"/nix/store/bbb-script".to_owned()
        }));
        assert!(ops.contains(&Op::Symlink {
            target: c"/nix/store/aaa-bash".to_owned(),
            link: c"/nix/store/ccc-link".to_owned()
        }));
    }

    #[test]
    fn the_host_root_is_gone_and_the_root_read_only_at_the_end() {
        let ops = plan(&layout(closure()));
        let n = ops.len();
        assert_eq!(
            ops[n - 3],
            Op::Detach {
                path: cstring(OLD_ROOT)
            }
        );
        assert_eq!(
            ops[n - 1],
            Op::SetAttr {
                path: c"/".to_owned(),
                set: READ_ONLY,
                recursive: false
            }
        );
    }

    #[test]
    fn the_workspace_is_bound_checked_then_each_held_path_by_descriptor_in_order() {
        let ops = plan(&layout(closure()));
        let ws = position(
            &ops,
            &Op::BindChecked {
                source: c"/.chock-host-root/home/ada/project".to_owned(),
                id: id(1),
                target: c"/home/ada/project".to_owned(),
                set: WRITABLE,
            },
        );
        let open = position(
            &ops,
            &Op::OpenWorkspace {
                path: c"/home/ada/project".to_owned(),
            },
        );
        let holds: Vec<(usize, &Op)> = ops
            .iter()
            .enumerate()
            .filter(|(_, op)| matches!(op, Op::Hold { .. }))
            .collect();
        assert!(ws < open && holds.iter().all(|(i, _)| *i > open));
        let Op::Hold {
            rel, set, shown, ..
        } = holds[0].1
        else {
            unreachable!()
        };
        assert_eq!(
            (rel.as_c_str(), *set, shown.as_c_str()),
            (c".git", WRITABLE, c"/home/ada/project/.git")
        );
        let Op::Hold { rel, set, .. } = holds[2].1 else {
            unreachable!()
        };
        assert_eq!((rel.as_c_str(), *set), (c".git/hooks", READ_ONLY));
        // Nothing in the workspace is mounted by a path string.
        assert!(!ops.iter().any(|op| matches!(op,
            Op::Bind { target, .. } | Op::SetAttr { path: target, .. }
                if target.to_bytes().starts_with(b"/home/ada/project"))));
    }

    #[test]
    fn secret_files_get_a_tmpfs_of_their_own_written_0400_then_read_only() {
        let mut shown = layout(closure());
        assert!(
            !plan(&shown)
                .iter()
                .any(|op| matches!(op, Op::Tmpfs { target, .. } if target.as_c_str() == c"/run/chock/secrets")),
            "no secret, no mount"
        );
        shown.secret_files = vec![SecretFile {
            name: "API_KEY".into(),
            contents: b"v".to_vec(),
        }];
        let ops = plan(&shown);
        let at = |wanted: &dyn Fn(&Op) -> bool| ops.iter().position(wanted).expect("planned");
        let mounted = at(&|op| {
            matches!(op, Op::Tmpfs { target, data, .. }
                if target.as_c_str() == c"/run/chock/secrets" && data.as_c_str() == c"mode=0500,size=8192")
        });
        let written = at(&|op| {
            matches!(op, Op::WriteFile { path, mode: 0o400, .. }
                if path.as_c_str() == c"/run/chock/secrets/API_KEY")
        });
        let sealed = at(&|op| {
            matches!(op, Op::SetAttr { path, set, .. }
                if path.as_c_str() == c"/run/chock/secrets" && set & MOUNT_ATTR_RDONLY != 0)
        });
        assert!(mounted < written && written < sealed, "{ops:?}");
        assert!(!format!("{:?}", shown.secret_files).contains('v'));
        assert!(SecretFile::is_plain_name("API_KEY"));
        for bad in ["", ".", "..", "a/b"] {
            assert!(!SecretFile::is_plain_name(bad), "{bad}");
        }
    }

    #[test]
    fn each_directory_is_made_once() {
        let ops = plan(&layout(closure()));
        let made: Vec<_> = ops
            .iter()
            .filter_map(|op| {
                if let Op::MkDir { path } = op {
                    Some(path)
                } else {
                    None
                }
            })
            .collect();
        let unique: BTreeSet<_> = made.iter().collect();
        assert_eq!(made.len(), unique.len(), "{made:?}");
    }

    #[test]
    fn with_no_flake_the_whole_store_and_the_system_directories_are_read_only() {
        let ops = plan(&layout(StoreView::Host {
            store_dir: Some(PathBuf::from("/nix/store")),
            system: vec![
                Entry {
                    path: PathBuf::from("/usr"),
                    kind: EntryKind::Dir,
                },
                Entry {
                    path: PathBuf::from("/bin"),
                    kind: EntryKind::Symlink(PathBuf::from("usr/bin")),
                },
            ],
        }));
        assert!(ops.contains(&Op::SetAttr {
            path: c"/nix/store".to_owned(),
            set: READ_ONLY,
            recursive: true
        }));
        assert!(ops.contains(&Op::SetAttr {
            path: c"/usr".to_owned(),
            set: READ_ONLY,
            recursive: true
        }));
        assert!(ops.contains(&Op::Symlink {
            target: c"usr/bin".to_owned(),
            link: c"/bin".to_owned()
        }));
    }

    #[test]
    fn nothing_is_bound_from_the_host_home() {
        let ops = plan(&layout(closure()));
        for op in &ops {
            if let Op::Bind { source, .. } = op {
                let s = source.to_string_lossy();
                assert!(
                    !s.starts_with("/.chock-host-root/home/ada/")
                        || s.contains("/project")
                        || s.contains("/chock/cache/"),
                    "{s}"
                );
            }
        }
    }
}
