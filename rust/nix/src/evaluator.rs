//! The seam between a build and the evaluator. A build asks for one
//! attribute of one flake and gets back the derivation it names and the
//! [`Registry`] of every object the evaluation produced, with the path
//! computed for each. Only what is in that registry is written, and only the
//! derivations in it are built.
//!
//! [`crate::FixEvaluator`] implements it with fix, Chock's own evaluator,
//! in process; the tests implement it with made-up registries.

use std::path::Path;

use chock_store::{Registry, StorePath};

/// One attribute of one flake to evaluate.
#[derive(Debug, Clone, Copy)]
pub struct EvalRequest<'a> {
    /// The project: what the evaluation may read.
    pub project: &'a Path,
    /// The directory holding `flake.nix` (the project, or a directory inside it).
    pub flake_dir: &'a Path,
    /// The attribute path under the flake's outputs, one name per entry.
    pub attribute: &'a [String],
    /// `<reference>#<a>.<b>`, for messages.
    pub installable: &'a str,
}

/// What an evaluation produced.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// The `.drv` path of the derivation the attribute names.
    pub drv_path: StorePath,
    /// Every object the evaluation produced, by computed path.
    pub registry: Registry,
}

/// Evaluates a flake attribute to a derivation.
pub trait Evaluator {
    fn evaluate(&self, request: &EvalRequest<'_>) -> Result<Evaluation, EvalError>;
}

/// Why an evaluation gave no derivation.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("evaluating {installable} failed: {message}")]
    Failed {
        installable: String,
        message: String,
    },
    #[error("{installable} is not a derivation ({found}); chock build builds derivations")]
    NotADerivation { installable: String, found: String },
    #[error("{}", missing_text(inputs))]
    MissingInputs { inputs: Vec<MissingInput> },
}

/// A flake input the lock names that is not in the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingInput {
    /// Its name in the lock (`nixpkgs`, `utils/systems`).
    pub name: String,
    /// Where its `narHash` puts it.
    pub path: StorePath,
    /// The host it is fetched from, when the evaluator knows it.
    pub host: Option<String>,
}

fn missing_text(inputs: &[MissingInput]) -> String {
    let named: Vec<String> = inputs
        .iter()
        .map(|i| match &i.host {
            Some(host) => format!("`{}` ({}, from {host})", i.name, i.path),
            None => format!("`{}` ({})", i.name, i.path),
        })
        .collect();
    format!(
        "the flake {} {} not in the store, and the evaluation takes inputs only from there; fetch {} with `chock inputs --fetch`",
        if inputs.len() == 1 { "input" } else { "inputs" },
        if inputs.len() == 1 {
            format!("{} is", named.join(""))
        } else {
            format!("{} are", named.join(", "))
        },
        if inputs.len() == 1 { "it" } else { "them" },
    )
}

/// Fetches flake inputs an evaluation found missing, asking a person once
/// about the hosts no rule answers (the flake-inputs crate does this); the
/// build then evaluates once more, and a second miss is the answer.
pub trait InputFetcher {
    fn fetch_missing(
        &self,
        flake_dir: &Path,
        missing: &[MissingInput],
        asker: &dyn chock_policy::Asker,
    ) -> Result<(), FetchError>;
}

/// Why inputs a build found missing were not fetched.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// Hosts the policy did not let the fetch reach: each one's sentence,
    /// naming the rule that would allow it.
    #[error("{}", .0.join("\n"))]
    Refused(Vec<String>),
    /// The fetch could not be made (the lock unreadable, the store or the
    /// runtime unavailable).
    #[error(transparent)]
    Failed(Box<dyn std::error::Error + Send + Sync>),
}

impl FetchError {
    /// A fetch that could not be made, for `why`.
    pub fn failed(why: impl std::error::Error + Send + Sync + 'static) -> FetchError {
        FetchError::Failed(Box::new(why))
    }
}
