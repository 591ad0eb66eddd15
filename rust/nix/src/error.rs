//! Why a build did not happen, in four kinds the caller tells apart: the
//! request itself was wrong, the policy or a person refused, the evaluation
//! failed, or the machine failed (the daemon, the network, the builder).

use std::path::PathBuf;

use chock_policy::{NameError, Question, Verdict};
use chock_store::StorePath;
use chock_store::daemon::DaemonError;

use crate::evaluator::EvalError;

/// Why a build did not happen.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Request(#[from] RequestError),
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error(transparent)]
    Eval(#[from] EvalError),
    #[error(transparent)]
    Fault(#[from] Fault),
}

/// The request cannot be read: fix the command line.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error(transparent)]
    Name(NameError),
    #[error("{}: cannot read the project directory: {source}", dir.display())]
    Project {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{}: there is no flake.nix here; chock build builds an attribute of a flake, so add one or name the directory inside the project that holds one with --flake",
        dir.display()
    )]
    NoFlake { dir: PathBuf },
}

/// Refused, by a rule, a person, or a check that no rule can lift.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error(
        "the flake `{reference}` is not this project ({}), and a flake from anywhere else is refused whatever the rules say because what its inputs fetch is written in a lock file nobody can read until the flake itself is fetched, so build an attribute of this project instead",
        project.display()
    )]
    ForeignFlake { reference: String, project: PathBuf },
    #[error("{}", denied_text(action, subject.as_deref(), verdict))]
    Denied {
        action: String,
        subject: Option<String>,
        verdict: Box<Verdict>,
    },
    #[error("{action}: the person asked said no ({summary})")]
    Declined { action: String, summary: String },
    #[error("{}{}", question.unanswered(), dismissed_words(*cancelled))]
    Unanswered {
        question: Box<Question>,
        /// The client dismissed the question: no person answered it.
        cancelled: bool,
    },
    #[error(
        "{drv} was not produced by this evaluation{}, so it is not built: a derivation nobody evaluated here could run any builder; evaluate the attribute that produces it instead",
        needed_by.as_ref().map(|n| format!(" (it is an input of {n})")).unwrap_or_default()
    )]
    NotEvaluated {
        drv: StorePath,
        needed_by: Option<StorePath>,
    },
    #[error(
        "{path} is needed by {needed_by}, but it is not in the store and this evaluation did not produce it; make it part of what the attribute evaluates"
    )]
    MissingPath {
        path: StorePath,
        needed_by: StorePath,
    },
    #[error(
        "the store put the {kind} `{name}` at {stored}, but the evaluation computed {computed}; the build was refused there and then, because what the store holds is not what was evaluated"
    )]
    PathMismatch {
        kind: &'static str,
        name: String,
        computed: StorePath,
        stored: StorePath,
    },
    #[error(
        "{path} holds at least {bytes} bytes, more than nix.max_object_bytes ({cap} bytes) allows for one object; raise .nix.max_object_bytes in chock.zon if it should be built"
    )]
    ObjectTooLarge { path: String, bytes: u64, cap: u64 },
    #[error(
        "writing {path} ({bytes} bytes) would take this session's store writes to {total} bytes, past nix.max_session_bytes ({cap} bytes); raise .nix.max_session_bytes in chock.zon, or start a new session"
    )]
    SessionFull {
        path: String,
        bytes: u64,
        total: u64,
        cap: u64,
    },
    #[error(
        "{drv} fetches `{url}`, which names no host and port Chock can rule on ({why}); the build was refused, because a fetch nobody can name is a fetch nobody can answer for"
    )]
    Unnameable {
        drv: StorePath,
        url: String,
        why: String,
    },
    #[error(
        "{drv} fetches from the mirror site `{site}`, which its mirrors file {file} does not list; the build was refused"
    )]
    MirrorSiteUnknown {
        drv: StorePath,
        site: String,
        file: String,
    },
    #[error(
        "{drv} names the mirrors file {file}, which no derivation of this build produces; the build was refused, because its mirrors cannot be read"
    )]
    MirrorsNotProduced { drv: StorePath, file: String },
    #[error(
        "{drv} fetches through mirror:// URLs but names no mirrors file (mirrorsFile), so the site cannot be turned into hosts; the build was refused"
    )]
    NoMirrorsFile { drv: StorePath },
    #[error(
        "the mirrors file {file} (for {drv}) is not in the store and no substituter has it, and Chock will not run a builder for it before the rules have answered: {message}"
    )]
    MirrorsNeedBuilder {
        drv: StorePath,
        file: String,
        message: String,
    },
    #[error("the mirrors file {file} cannot be read: {why}")]
    MirrorsUnreadable { file: String, why: String },
    #[error(
        "the mirror site `{site}` (for {drv}) has no mirror Chock may use: {why}; the build was refused"
    )]
    NoMirror {
        site: String,
        drv: StorePath,
        why: String,
    },
    #[error(
        "{drv} has no output to build (it is not a derivation of a kind Nix 2.8 builds here); the build was refused"
    )]
    NoOutputs { drv: StorePath },
    #[error(
        "the build would still run {} with URLs that were not pinned to the approved hosts; it was refused before anything was built",
        drvs.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
    )]
    Unpinned { drvs: Vec<StorePath> },
}

/// Why nobody answered, when the client dismissed the question.
fn dismissed_words(cancelled: bool) -> String {
    if !cancelled {
        return String::new();
    }
    let refusal = chock_gate::Refusal {
        why: chock_gate::Refused::Cancelled,
        change: chock_gate::Change::Nothing,
    };
    format!("\n  ({})", refusal.why_words())
}

fn denied_text(action: &str, subject: Option<&str>, verdict: &Verdict) -> String {
    let about = subject.map(|s| format!(" ({s})")).unwrap_or_default();
    let mut text = format!(
        "{action}{about} is answered {} by {}; the build was refused with nobody asked",
        verdict.decision,
        crate::decide::describe(verdict)
    );
    let why = match verdict.decision {
        chock_policy::Decision::AgentThenHuman => chock_gate::Refused::NoReviewer,
        _ => chock_gate::Refused::Denied,
    };
    let refusal = chock_gate::Refusal::new(why, verdict);
    if why == chock_gate::Refused::NoReviewer {
        text.push_str(&format!(" ({})", refusal.why_words()));
    }
    text.push_str(&refusal.advice(chock_gate::Layout::Lines));
    text
}

/// The machine failed: the daemon, the network, or the build itself.
#[derive(Debug, thiserror::Error)]
pub enum Fault {
    #[error(
        "the Nix daemon could not be reached at {socket}: {reason}; a build goes through your Nix daemon, so start it (scripts/setup, or nix-daemon) or set NIX_DAEMON_SOCKET_PATH to its socket"
    )]
    DaemonUnreachable { socket: String, reason: String },
    #[error(
        "{drv} could not reach the host it fetches from (no network, or the host is down): {line}"
    )]
    NoNetwork { drv: String, line: String },
    #[error("building {drv} failed: {line}")]
    BuildFailed { drv: String, line: String },
    #[error(transparent)]
    Daemon(#[from] DaemonError),
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Nar(#[from] chock_store::nar::NarError),
    #[error("cannot start the runtime that talks to the Nix daemon: {0}")]
    Runtime(std::io::Error),
    #[error("the missing flake inputs were not fetched: {message}")]
    Inputs { message: String },
}
