//! Reading the host to decide what a sandbox shows: which store paths exist
//! as what, which system directories a project without a flake gets, the
//! generated `/etc` files and the time zone.

use std::path::{Path, PathBuf};

use crate::anchor::Placeholder;
use crate::error::SandboxError;
use crate::mounts::{CACHE_MOUNT, Entry, EntryKind, Layout, StoreView};

/// Where the toolchain comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Toolchain {
    /// The dev shell's closure, and the links (`/bin/sh`, `/usr/bin/env`)
    /// pointing into it.
    DevShell {
        /// Every store path of the closure.
        store_paths: Vec<PathBuf>,
        /// Links to make inside (target, link).
        links: Vec<(PathBuf, PathBuf)>,
    },
    /// A container image's tree (`images/<reference>/rootfs`), read-only,
    /// and no Nix store.
    Image {
        /// The tree on the host.
        rootfs: PathBuf,
    },
    /// No flake: the whole store read-only, plus the host's system
    /// directories, so the host's own programs run.
    Host,
}

/// The host directories a project without a flake gets, read-only.
pub const HOST_SYSTEM: [&str; 9] = [
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc/alternatives",
    "/etc/ld.so.cache",
];

/// The first `name` on this process's `PATH` that is an executable file,
/// in the order `execvp` tries them.
pub fn on_path(name: &str) -> Option<PathBuf> {
    on_paths(name, &std::env::var_os("PATH")?)
}

/// [`on_path`] over `paths`; a relative folder (`.`, an empty entry) is
/// never searched, so no program is taken from wherever Chock was started.
fn on_paths(name: &str, paths: &std::ffi::OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    std::env::split_paths(paths)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|path| {
            std::fs::metadata(path)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The store directory, `NIX_STORE_DIR` or `/nix/store`.
pub fn store_dir() -> PathBuf {
    std::env::var_os("NIX_STORE_DIR").map_or_else(|| PathBuf::from("/nix/store"), PathBuf::from)
}

/// The name of the file that holds a project's policy, bound read-only.
pub const POLICY_FILE: &str = chock_policy::control::CHOCK_ZON;

/// What Chock writes as `chock.zon` where a project had none, before the
/// first sandbox starts: no rule, which is what no file meant, and a file
/// that exists can be bound read-only, so no program can write one.
pub const POLICY_PLACEHOLDER: &[u8] =
    b"// This project's rules for Chock (docs/policy.md). Chock made this file,\n\
// holding no rule, before it first ran a program here, so that no program\n\
// in its sandbox can write one; edit it to add yours.\n\
.{}\n";

/// Whether a change at `rel` (relative to a project) is one no apply of a
/// session carries: a control input (`chock_policy::control`). A person
/// edits these alone, on the host.
pub fn only_a_person_edits(rel: &Path) -> bool {
    chock_policy::control::is_control_input(rel)
}

/// Why an apply refuses to carry a change to what a person edits alone
/// ([`only_a_person_edits`]) or to a `deny_read` file.
pub const WHY_NO_APPLY_CARRIES: &str = "what configures Chock or an agent, or runs programs on the host (chock.zon, chock.lock, .agents/policies, .chock, .claude, .codex, .gemini, .cursor, .vscode, .idea, .mcp.json, .git, .envrc, .husky, pre-commit and lefthook files; `chock policy controls` lists them), is edited by a person alone, on the host; a deny_read file was never readable in the workspace";

/// [`resolve`] for a sandbox whose workspace is the project itself, with
/// every control input held as well (`chock_policy::control`): each that
/// exists read-only; for each that does not, the shallowest missing name on
/// its way is made an empty folder and held read-only while the project's
/// sandboxes run, then removed (`lease`, recorded in `lease_record`). A
/// session workspace's copy is the agent's to write instead, and no apply
/// carries a change there ([`only_a_person_edits`]).
pub fn resolve_project(
    workspace: &Path,
    cache_dir: &Path,
    lease_record: &Path,
    toolchain: &Toolchain,
    tmp_bytes: u64,
) -> Result<Layout, SandboxError> {
    // Held before the project is read, so the end of another sandbox
    // cannot sweep a placeholder this layout counts on finding.
    let canonical = workspace
        .canonicalize()
        .map_err(|e| SandboxError::host("reading the workspace", workspace, e))?;
    let lease = crate::lease::Lease::take(lease_record, &canonical)?;
    let mut layout = resolve(workspace, cache_dir, toolchain, tmp_bytes)?;
    hold_control_inputs(&mut layout)?;
    layout.lease = Some(std::sync::Arc::new(lease));
    Ok(layout)
}

/// Holds each control input of `layout`'s workspace but the two held for
/// every workspace (`chock.zon`, and what git runs: [`resolve`]). A link
/// on the way is refused: what it names could not be held.
fn hold_control_inputs(layout: &mut Layout) -> Result<(), SandboxError> {
    use chock_policy::control::{CHOCK_ZON, CONTROL_INPUTS, GIT_DIR};
    for input in CONTROL_INPUTS {
        if input.path == CHOCK_ZON || input.path == GIT_DIR {
            continue;
        }
        // A folder between the top and the input (`.agents`) is bound over
        // itself, so it cannot be renamed away with the input in it and
        // made afresh without.
        let rel = Path::new(input.path);
        for folder in rel.ancestors().skip(1) {
            let path = layout.workspace.join(folder);
            if !folder.as_os_str().is_empty()
                && path.symlink_metadata().is_ok_and(|m| m.is_dir())
                && !layout.pinned.contains(&path)
            {
                layout.pinned.push(path);
            }
        }
        match hold_for(&layout.workspace, rel)? {
            Hold::ReadOnly(rel) => layout.read_only.push(layout.workspace.join(rel)),
            Hold::Placeholder(rel) => {
                let path = layout.workspace.join(rel);
                if !layout.passing.contains(&path) {
                    layout.missing.push((path.clone(), Placeholder::Dir));
                    layout.passing.push(path);
                }
            }
        }
    }
    layout.pinned.sort_by_key(|p| p.components().count());
    Ok(())
}

/// How a control input is held.
enum Hold {
    /// This name, which exists: bound read-only over itself.
    ReadOnly(PathBuf),
    /// This name, the shallowest missing one on the input's way: made an
    /// empty folder, then bound read-only.
    Placeholder(PathBuf),
}

/// How to hold the control input `rel` beneath `workspace`: the input
/// itself when it exists, a file on its way when there is one (nothing can
/// be made beneath a file, and it must not be replaced by a folder), else
/// the shallowest missing name.
fn hold_for(workspace: &Path, rel: &Path) -> Result<Hold, SandboxError> {
    let mut at = PathBuf::new();
    for part in rel.components() {
        at.push(part);
        let path = workspace.join(&at);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(SandboxError::Workspace {
                    path,
                    reason: "it is a symbolic link, and what configures Chock or an agent, or runs programs on the host, must be held read-only in the sandbox; make it a real folder or file".into(),
                });
            }
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Ok(Hold::ReadOnly(at)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Hold::Placeholder(at)),
            Err(e) => return Err(SandboxError::host("reading", &path, e)),
        }
    }
    Ok(Hold::ReadOnly(at))
}

/// Builds the layout of a sandbox for `workspace`.
pub fn resolve(
    workspace: &Path,
    cache_dir: &Path,
    toolchain: &Toolchain,
    tmp_bytes: u64,
) -> Result<Layout, SandboxError> {
    let workspace = workspace
        .canonicalize()
        .map_err(|e| SandboxError::host("reading the workspace", workspace, e))?;
    std::fs::create_dir_all(cache_dir)
        .map_err(|e| SandboxError::host("creating the cache", cache_dir, e))?;
    let cache_dir = cache_dir
        .canonicalize()
        .map_err(|e| SandboxError::host("reading the cache", cache_dir, e))?;
    let policy = workspace.join(POLICY_FILE);
    let git = crate::git::guard(&workspace)?;
    let mut read_only = git.read_only;
    let mut missing = git.missing;
    match std::fs::symlink_metadata(&policy) {
        Ok(meta) if meta.file_type().is_file() => read_only.push(policy),
        Ok(_) => {
            return Err(SandboxError::Workspace {
                path: policy,
                reason: "it is not a plain file, so Chock cannot hold it read-only; make it a file with the project's rules".into(),
            });
        }
        Err(_) => missing.push((policy, Placeholder::File(POLICY_PLACEHOLDER))),
    }
    let (store, links) = match toolchain {
        Toolchain::DevShell { store_paths, links } => {
            let entries = store_paths
                .iter()
                .map(|p| entry(p))
                .collect::<Result<Vec<_>, _>>()?;
            (
                StoreView::Closure {
                    store_dir: store_dir(),
                    entries,
                },
                links.clone(),
            )
        }
        Toolchain::Image { rootfs } => (
            StoreView::Image {
                entries: crate::image::entries(rootfs, &workspace)?,
                rootfs: rootfs.clone(),
            },
            Vec::new(),
        ),
        Toolchain::Host => {
            let store = store_dir();
            let system = HOST_SYSTEM
                .iter()
                .map(Path::new)
                .filter(|p| p.symlink_metadata().is_ok())
                .map(entry)
                .collect::<Result<Vec<_>, _>>()?;
            (
                StoreView::Host {
                    store_dir: store.is_dir().then_some(store),
                    system,
                },
                Vec::new(),
            )
        }
    };
    let mut file_binds = Vec::new();
    if let Ok(zone) = Path::new("/etc/localtime").canonicalize()
        && zone.is_file()
    {
        file_binds.push((zone, PathBuf::from("/etc/localtime")));
    }
    Ok(Layout {
        workspace,
        pinned: git.pinned,
        read_only,
        missing,
        passing: Vec::new(),
        lease: None,
        cache_dir,
        tmp_bytes,
        store,
        etc_files: etc_files(),
        file_binds,
        links,
        session: None,
        secret_files: Vec::new(),
        scratch_dir: None,
        devices: Vec::new(),
    })
}

pub(crate) fn entry(path: &Path) -> Result<Entry, SandboxError> {
    let meta =
        std::fs::symlink_metadata(path).map_err(|e| SandboxError::host("reading", path, e))?;
    let kind = if meta.file_type().is_symlink() {
        EntryKind::Symlink(
            std::fs::read_link(path)
                .map_err(|e| SandboxError::host("reading the link", path, e))?,
        )
    } else if meta.is_dir() {
        EntryKind::Dir
    } else {
        EntryKind::File
    };
    Ok(Entry {
        path: path.to_path_buf(),
        kind,
    })
}

/// Who runs Chock, looked up once.
pub(crate) struct Caller {
    pub(crate) uid: nix::unistd::Uid,
    pub(crate) gid: nix::unistd::Gid,
    pub(crate) user: String,
    pub(crate) group: String,
}

pub(crate) fn caller() -> &'static Caller {
    static CALLER: std::sync::OnceLock<Caller> = std::sync::OnceLock::new();
    CALLER.get_or_init(|| {
        let uid = nix::unistd::getuid();
        let gid = nix::unistd::getgid();
        let name = |n: Option<String>| n.unwrap_or_else(|| "chock".to_owned());
        // The local files first, where a machine's own users are, and NSS
        // (directories, sssd...) only for an id they do not name: NSS
        // starts by reading nsswitch.conf and trying the nscd socket, a
        // cost every sandbox start would pay.
        Caller {
            uid,
            gid,
            user: name(name_in("/etc/passwd", uid.as_raw()).or_else(|| {
                nix::unistd::User::from_uid(uid)
                    .ok()
                    .flatten()
                    .map(|u| u.name)
            })),
            group: name(name_in("/etc/group", gid.as_raw()).or_else(|| {
                nix::unistd::Group::from_gid(gid)
                    .ok()
                    .flatten()
                    .map(|g| g.name)
            })),
        }
    })
}

/// The name `file` (`/etc/passwd` or `/etc/group`: `name:password:id:...`)
/// gives `id`, if a line names it.
fn name_in(file: &str, id: u32) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    names_id(&text, id).map(str::to_owned)
}

fn names_id(text: &str, id: u32) -> Option<&str> {
    text.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let found = fields.nth(1)?.parse::<u32>().ok()?;
        // `+name` and `-name` are NIS compat entries, not names.
        (found == id && !name.is_empty() && !name.starts_with(['+', '-'])).then_some(name)
    })
}

/// `passwd` and `group` with the caller alone (and nobody), so `id` and
/// `whoami` answer without the host's list of users; `hosts` and
/// `nsswitch.conf` for loopback names.
fn etc_files() -> Vec<(String, Vec<u8>)> {
    let Caller {
        uid,
        gid,
        user,
        group,
    } = caller();
    let mut passwd = format!("{user}:x:{uid}:{gid}::{CACHE_MOUNT}:/bin/sh\n");
    let mut groups = format!("{group}:x:{gid}:\n");
    if uid.as_raw() != 65534 {
        passwd.push_str("nobody:x:65534:65534::/nonexistent:/bin/false\n");
    }
    if gid.as_raw() != 65534 {
        groups.push_str("nogroup:x:65534:\n");
    }
    vec![
        ("passwd".into(), passwd.into_bytes()),
        ("group".into(), groups.into_bytes()),
        (
            "hosts".into(),
            b"127.0.0.1 localhost\n::1 localhost\n".to_vec(),
        ),
        (
            "nsswitch.conf".into(),
            b"passwd: files\ngroup: files\nhosts: files\n".to_vec(),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_is_the_first_executable_file_of_its_name_in_an_absolute_folder() {
        use std::os::unix::fs::PermissionsExt as _;
        let root = tempfile::tempdir().expect("tempdir");
        let folder = |name: &str| {
            let dir = root.path().join(name);
            std::fs::create_dir(&dir).expect("mkdir");
            dir
        };
        let (plain, folder_named, runnable) = (folder("plain"), folder("dir"), folder("bin"));
        std::fs::write(plain.join("tool"), "not executable").expect("write");
        std::fs::create_dir(folder_named.join("tool")).expect("mkdir");
        let tool = runnable.join("tool");
        std::fs::write(&tool, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let paths = std::env::join_paths([
            Path::new("bin"),
            Path::new(""),
            &plain,
            &folder_named,
            &runnable,
        ])
        .expect("join");
        assert_eq!(on_paths("tool", &paths), Some(tool));
        assert_eq!(on_paths("absent", &paths), None);
    }

    #[test]
    fn a_control_input_is_held_at_the_right_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let at = |rel: &str| match hold_for(dir.path(), Path::new(rel)).expect("hold") {
            Hold::ReadOnly(p) => format!("read-only {}", p.display()),
            Hold::Placeholder(p) => format!("placeholder {}", p.display()),
        };
        assert_eq!(at(".agents/policies"), "placeholder .agents");
        std::fs::create_dir(dir.path().join(".agents")).expect("mkdir");
        assert_eq!(at(".agents/policies"), "placeholder .agents/policies");
        std::fs::create_dir(dir.path().join(".agents/policies")).expect("mkdir");
        assert_eq!(at(".agents/policies"), "read-only .agents/policies");
        std::fs::write(dir.path().join(".husky"), "").expect("a file");
        assert_eq!(at(".husky/pre-commit"), "read-only .husky");
        std::os::unix::fs::symlink("/", dir.path().join(".envrc")).expect("link");
        assert!(hold_for(dir.path(), Path::new(".envrc")).is_err());
    }

    #[test]
    fn a_passwd_line_names_its_id_and_nis_entries_do_not() {
        let text = "+ada::1000:1000::/:/bin/sh\nroot:x:0:0:root:/root:/bin/bash\n\nbroken\nada:x:1000:1000::/home/ada:/bin/sh\n";
        assert_eq!(names_id(text, 1000), Some("ada"));
        assert_eq!(names_id(text, 0), Some("root"));
        assert_eq!(names_id(text, 7), None);
    }

    #[test]
    fn the_caller_is_named_as_nss_names_it() {
        let uid = nix::unistd::getuid();
        let gid = nix::unistd::getgid();
        let nss_user = nix::unistd::User::from_uid(uid)
            .ok()
            .flatten()
            .map(|u| u.name);
        let nss_group = nix::unistd::Group::from_gid(gid)
            .ok()
            .flatten()
            .map(|g| g.name);
        assert_eq!(
            Some(caller().user.clone()),
            nss_user.or(Some("chock".into()))
        );
        assert_eq!(
            Some(caller().group.clone()),
            nss_group.or(Some("chock".into()))
        );
    }
}
