//! The evaluator a build uses: fix, in this process. The attribute is
//! evaluated with the flake's inputs taken from the store (never fetched),
//! nothing is written, and the registry of what the evaluation produced
//! (derivations, sources, text files, each at the path fix computed) is what
//! the build writes through the daemon, which checks every path.

use chock_fix::{EvalOptions, FixError};

use crate::evaluator::{EvalError, EvalRequest, Evaluation, Evaluator, MissingInput};

/// Evaluates with fix. The options are a template: an evaluation with no
/// roots of its own reads the request's project and nothing else.
#[derive(Clone, Default)]
pub struct FixEvaluator {
    pub options: EvalOptions,
}

impl FixEvaluator {
    pub fn new(options: EvalOptions) -> FixEvaluator {
        FixEvaluator { options }
    }

    /// Pure, with the project's `max_object_bytes` (the `nix` block of
    /// chock.zon) as the cap on each object the evaluation produces.
    pub fn for_policy(policy: &chock_policy::Policy) -> FixEvaluator {
        FixEvaluator::new(EvalOptions {
            max_object_bytes: policy.config().nix_settings().max_object_bytes,
            ..EvalOptions::default()
        })
    }
}

impl Evaluator for FixEvaluator {
    fn evaluate(&self, request: &EvalRequest<'_>) -> Result<Evaluation, EvalError> {
        let mut options = self.options.clone();
        if options.roots.is_empty() {
            options.roots = vec![request.project.to_path_buf()];
        }
        let started = std::time::Instant::now();
        let output =
            chock_fix::evaluate_flake_attribute(&options, request.flake_dir, request.attribute)
                .map_err(|e| eval_error(request, e))?;
        tracing::debug!(
            "fix evaluated {} in {:.1} ms",
            request.installable,
            started.elapsed().as_secs_f64() * 1e3
        );
        let Some(drv_path) = output.drv_path else {
            return Err(EvalError::NotADerivation {
                installable: request.installable.to_owned(),
                found: format!("a {}", output.type_name),
            });
        };
        Ok(Evaluation {
            drv_path,
            registry: output.registry,
        })
    }
}

fn eval_error(request: &EvalRequest<'_>, error: FixError) -> EvalError {
    match error {
        FixError::MissingInputs { inputs } => EvalError::MissingInputs {
            inputs: inputs
                .into_iter()
                .map(|i| MissingInput {
                    name: i.name,
                    path: i.path,
                    host: i.host,
                })
                .collect(),
        },
        other => EvalError::Failed {
            installable: request.installable.to_owned(),
            message: other.to_string(),
        },
    }
}
