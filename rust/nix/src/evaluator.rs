//! The seam between a build and the evaluator. A build asks for one
//! attribute of one flake and gets back the derivation it names and the
//! [`Registry`] of every object the evaluation produced, with the path
//! computed for each. Only what is in that registry is written, and only the
//! derivations in it are built.
//!
//! fix (Chock's evaluator) implements [`Evaluator`] once it evaluates
//! derivations and flakes; until then [`crate::NixEvaluator`] stands in.

use std::path::Path;

use chock_store::{Registry, StorePath};

/// One attribute of one flake to evaluate.
#[derive(Debug, Clone, Copy)]
pub struct EvalRequest<'a> {
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
    #[error(
        "the flake input `{input}` is not in the store (it would be {path}); fetch it first with `chock inputs --fetch`"
    )]
    MissingInput { input: String, path: String },
}
