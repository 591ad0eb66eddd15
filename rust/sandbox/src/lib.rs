//! The Linux sandbox for run_command: namespaces, mounts, Landlock, seccomp,
//! resource limits, the project's Nix dev shell as toolchain, the per-project
//! cache and the probes `chock doctor` runs.
//!
//! The layers are independent and each is a wall of its own: the mount tree
//! decides what exists inside, Landlock what may be done to it, seccomp which
//! kernel calls may be made, and the dropped capabilities and rlimits what
//! the process may claim. See `docs/sandbox.md` for the user's view.

// Unsafe code is denied outside `sys`, the one syscall layer beside nix:
// each call nix lacks (or makes only by allocating, where that is
// forbidden) is a safe function there.
#![deny(unsafe_code)]

mod anchor;
pub mod cache;
mod caps;
mod child;
pub mod devices;
pub mod devshell;
pub mod doctor;
mod error;
pub mod exec;
pub mod git;
pub mod image;
mod layout;
mod lease;
mod limits;
mod mounts;
pub mod net;
pub mod netmode;
pub mod project;
pub mod publish;
mod seccomp;
mod spawn;
#[allow(unsafe_code)]
mod sys;
mod walls;
pub mod workspace;

pub use caps::current as current_capabilities;
pub use error::SandboxError;
pub use layout::{
    HOST_SYSTEM, POLICY_FILE, Toolchain, on_path, resolve as resolve_layout, store_dir,
};
pub use lease::{PlaceholderHold, hold_placeholders};
pub use limits::{CgroupEvents, Delegation, Limits, delegation};
pub use mounts::{
    CACHE_MOUNT, Entry, EntryKind, ImageEntry, Layout, MAX_SECRET_FILE_BYTES, PROC_MASKED_DIRS,
    RUN_CHOCK, SCRATCH_MOUNT, SECRETS_MOUNT, SecretFile, StoreView, TMP_MOUNT,
};
pub use seccomp::{KILLED_CALLS, WriteExecute};
pub use spawn::{
    Command, Exit, Finished, ProbeOutcome, Running, Sandbox, SignalForwarding, SignalHandle, Stdio,
};
pub use walls::{LandlockSupport, support as landlock_support};
