//! What can stop a sandbox from starting, in words a person can act on.

use std::path::PathBuf;

use nix::errno::Errno;

/// Why a sandbox could not be built or a program could not be started in it.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The kernel lacks a layer the sandbox will not run without.
    #[error("{0}")]
    Unsupported(String),
    /// No Landlock: refused rather than run with one wall fewer.
    #[error(
        "Landlock is not available ({reason}), and Chock does not run a command with one wall fewer; boot a kernel with Landlock enabled (lsm=landlock,...) and see `chock doctor`"
    )]
    NoLandlock {
        /// What the kernel answered.
        reason: String,
    },
    /// Building the Landlock ruleset failed.
    #[error("could not build the Landlock rules: {0}")]
    Landlock(String),
    /// Building the seccomp filters failed.
    #[error("could not build the seccomp filters: {0}")]
    Seccomp(String),
    /// The workspace cannot be a sandbox's workspace.
    #[error("the workspace {path} cannot be mounted: {reason}")]
    Workspace {
        /// The workspace as given.
        path: PathBuf,
        /// Why not, and what to do.
        reason: String,
    },
    /// Reading or preparing something on the host failed.
    #[error("{what} {path}: {source}")]
    Host {
        /// What was being done.
        what: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The operating system's answer.
        #[source]
        source: std::io::Error,
    },
    /// A step inside the new namespaces failed before the program started.
    #[error("the sandbox could not be set up: {step} failed with {errno} ({desc}); run `chock doctor` to see which layer this machine lacks", desc = errno.desc())]
    Setup {
        /// The step, as a sentence fragment.
        step: String,
        /// The errno it failed with.
        errno: Errno,
    },
    /// A path the sandbox holds was no longer the object Chock checked when
    /// the sandbox's first process came to bind it.
    #[error(
        "the sandbox was not built, so nothing ran: {step} found another file there than the one Chock checked (another command in the project may have swapped it meanwhile); run the command again"
    )]
    Changed {
        /// The step, as a sentence fragment.
        step: String,
    },
    /// The program itself could not be executed inside the sandbox.
    #[error("{program} could not be started in the sandbox: {desc}", desc = errno.desc())]
    Exec {
        /// The program.
        program: PathBuf,
        /// The errno `execve` gave.
        errno: Errno,
    },
    /// A system call in Chock's own process failed.
    #[error("{what} failed: {desc}", desc = errno.desc())]
    Sys {
        /// What was being done.
        what: &'static str,
        /// The errno.
        errno: Errno,
    },
}

impl SandboxError {
    /// Whether the program did not exist (the shell's 127) rather than
    /// could not be executed (126).
    pub fn is_program_missing(&self) -> bool {
        matches!(
            self,
            SandboxError::Exec {
                errno: Errno::ENOENT,
                ..
            }
        )
    }

    pub(crate) fn host(
        what: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        Self::Host {
            what,
            path: path.into(),
            source,
        }
    }
}
