//! What a sandbox needs to show a session workspace instead of the
//! project: the tree (shown at the project's own path), the person's
//! objects read-only, each bind of a path of the person's, and each
//! `deny_read` file with the identity it must still have when it is covered;
//! or, for a project that is not a git repository, the overlay's layers.

use std::path::PathBuf;

/// Where the person's object directory is shown, read-only; git finds it
/// through `GIT_ALTERNATE_OBJECT_DIRECTORIES`.
pub const OBJECTS_MOUNT: &str = "/run/chock/objects";

/// A session workspace as one sandbox shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    /// The workspace's tree on the host.
    pub source: PathBuf,
    /// Where it is shown inside: the project's own path.
    pub shown: PathBuf,
    /// The person's object directory, shown at [`OBJECTS_MOUNT`].
    pub objects: Option<PathBuf>,
    /// Paths of the person's shown inside the tree.
    pub binds: Vec<BindMount>,
    /// Files covered by a notice.
    pub covers: Vec<Cover>,
    /// A project that is not a git repository: the tree is an overlay
    /// whose lower layer is `source` (the project) and whose upper layer
    /// takes every write.
    pub overlay: Option<Layers>,
}

/// The upper layer and overlayfs's work folder of an overlay workspace,
/// both on the host under the workspace's folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layers {
    pub upper: PathBuf,
    pub work: PathBuf,
}

/// One path of the person's project shown in the workspace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindMount {
    /// Relative to the workspace (and to the project).
    pub rel: PathBuf,
    /// The person's path on the host.
    pub host: PathBuf,
    pub writable: bool,
}

/// One `deny_read` file: covered only while it is still this object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cover {
    pub rel: PathBuf,
    pub dev: u64,
    pub ino: u64,
    /// Where it is named, for errors.
    pub named_in: String,
}

/// The layout of a sandbox that shows `view` at the project's path: the
/// tree's git directory and `chock.zon` held as a project's are.
pub(crate) fn fit(
    view: &View,
    cache_dir: &std::path::Path,
    toolchain: &crate::layout::Toolchain,
    tmp_bytes: u64,
) -> Result<crate::mounts::Layout, crate::error::SandboxError> {
    let mut layout = crate::layout::resolve(&view.source, cache_dir, toolchain, tmp_bytes)?;
    layout.session = Some(View {
        source: layout.workspace.clone(),
        ..view.clone()
    });
    layout.workspace = view.shown.clone();
    Ok(layout)
}

/// What a reader of a covered file finds.
pub const NOTICE: &[u8] =
    b"chock: this file is named in deny_read, so no program in a session workspace reads it.\n";
