//! Policy packages as a unit a person authors, checks, installs and keeps:
//! `chock new policy`, `new skill`, `new subagent` ([`skeleton`]), `chock
//! check` ([`check`]), `chock compile`: the control of each hook point
//! ([`compile`]), `INDEX.md` and the pointer in `AGENTS.md` ([`index`]), `chock.lock` and
//! `chock install` ([`lock`], [`install`]), `chock remove`, `disable` and
//! `enable` ([`manage`]), and `chock witness export`
//! ([`witness`]). Reading a manifest and compiling a package's rules into
//! the policy is `chock-policy`'s; running a guard is `chock-hook`'s.

#![forbid(unsafe_code)]

pub mod beneath;
pub mod check;
pub mod compile;
pub mod evals;
pub mod index;
pub mod install;
pub mod lock;
pub mod manage;
pub mod skeleton;
pub mod witness;

/// Why a package command could not do its work.
#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    #[error("{}: {action}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        action: &'static str,
        source: std::io::Error,
    },
    #[error(transparent)]
    Policy(#[from] chock_policy::PolicyError),
    /// Anything else, said in full with what to do.
    #[error("{0}")]
    Refused(String),
}

pub(crate) fn io<'a>(
    path: &'a std::path::Path,
    action: &'static str,
) -> impl FnOnce(std::io::Error) -> PackageError + 'a {
    move |source| PackageError::Io {
        path: path.to_path_buf(),
        action,
        source,
    }
}
