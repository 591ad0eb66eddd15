//! The evaluator that stands in until fix evaluates derivations and flakes:
//! the system's `nix eval` names the derivation, and Chock's own parser reads
//! its closure back from the store into a [`Registry`].
//!
//! What differs from fix, and goes when fix is wired in: Nix writes the
//! `.drv` files while it evaluates (so they are already valid when the build
//! writes them again, and the store's answer is checked all the same), and
//! every source the derivations use is already in the store, so the registry
//! records it as [`SourceContents::InStore`]. Nothing is fetched: a flake
//! input missing from the store is an error naming it, as it is for fix.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use chock_store::derivation::read_closure;
use chock_store::registry::{Source, SourceContents};
use chock_store::store_path::make_source_path;
use chock_store::{Hash, Registry, StorePath};

use crate::evaluator::{EvalError, EvalRequest, Evaluation, Evaluator, MissingInput};

/// What the expression throws for a value that is not a derivation.
const NOT_A_DERIVATION: &str = "chock: not a derivation: ";

/// Evaluates with `nix eval` through the daemon (see the module notes).
#[derive(Debug, Clone)]
pub struct NixEvaluator {
    program: PathBuf,
}

impl Default for NixEvaluator {
    fn default() -> NixEvaluator {
        NixEvaluator {
            program: PathBuf::from("nix"),
        }
    }
}

impl Evaluator for NixEvaluator {
    fn evaluate(&self, request: &EvalRequest<'_>) -> Result<Evaluation, EvalError> {
        let failed = |message: String| EvalError::Failed {
            installable: request.installable.to_owned(),
            message,
        };
        inputs_in_store(request.flake_dir)?;
        let started = std::time::Instant::now();
        let output = Command::new(&self.program)
            .args([
                "--extra-experimental-features",
                "nix-command flakes",
                "eval",
                "--raw",
                "--impure",
                "--offline",
                "--no-update-lock-file",
                "--no-write-lock-file",
                "--expr",
                &expression(request.flake_dir, request.attribute),
            ])
            .output()
            .map_err(|e| {
                failed(format!(
                    "cannot run {}: {e}; install Nix (scripts/setup)",
                    self.program.display()
                ))
            })?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            if let Some(found) = stderr
                .lines()
                .find_map(|l| l.split(NOT_A_DERIVATION).nth(1))
            {
                return Err(EvalError::NotADerivation {
                    installable: request.installable.to_owned(),
                    found: found.trim().to_owned(),
                });
            }
            return Err(failed(first_error(&stderr)));
        }
        let text = String::from_utf8_lossy(&output.stdout);
        let drv_path = StorePath::from_absolute_path(text.trim())
            .ok()
            .filter(StorePath::is_derivation)
            .ok_or_else(|| failed(format!("nix eval answered `{text}`, not a .drv path")))?;
        tracing::debug!(
            "nix eval answered in {:.1} ms",
            started.elapsed().as_secs_f64() * 1e3
        );
        let reading = std::time::Instant::now();
        let derivations = read_closure(std::slice::from_ref(&drv_path), true)
            .map_err(|e| failed(e.to_string()))?;
        tracing::debug!(
            "read the closure of {} derivations in {:.1} ms",
            derivations.len(),
            reading.elapsed().as_secs_f64() * 1e3
        );
        let mut registry = Registry::new();
        let sources: BTreeSet<&StorePath> = derivations
            .values()
            .flat_map(|d| d.input_srcs.iter())
            .filter(|p| !p.is_derivation())
            .collect();
        for path in sources {
            registry.sources.insert(
                path.clone(),
                Source {
                    name: path.name().to_owned(),
                    contents: SourceContents::InStore,
                },
            );
        }
        registry.derivations = derivations;
        Ok(Evaluation { drv_path, registry })
    }
}

/// `(builtins.getFlake "<dir>")."a"."b"`: the attribute path exactly as
/// given, with none of the prefixes (`packages.<system>.`) an installable
/// would try first. The names were checked to hold no quote or `$`.
fn expression(flake_dir: &Path, attribute: &[String]) -> String {
    let path: String = attribute.iter().map(|a| format!(".\"{a}\"")).collect();
    let dir = flake_dir
        .display()
        .to_string()
        .replace(['\\', '"', '$'], "");
    format!(
        "let v = (builtins.getFlake \"{dir}\"){path}; in \
         if (v.type or null) == \"derivation\" then v.drvPath \
         else throw \"{NOT_A_DERIVATION}a ${{builtins.typeOf v}}\""
    )
}

/// The first line Nix starts with `error:`, or the whole text.
fn first_error(stderr: &str) -> String {
    stderr
        .lines()
        .find(|l| l.trim_start().starts_with("error:"))
        .map(|l| l.trim().trim_start_matches("error:").trim().to_owned())
        .unwrap_or_else(|| stderr.trim().to_owned())
}

/// Every input `flake.lock` locks by hash must already be in the store,
/// because this evaluator must not fetch (`path` inputs are local). The
/// error names each one missing.
fn inputs_in_store(flake_dir: &Path) -> Result<(), EvalError> {
    let lock = flake_dir.join("flake.lock");
    let Ok(text) = std::fs::read_to_string(&lock) else {
        return Ok(());
    };
    let unreadable = |message: String| EvalError::Failed {
        installable: flake_dir.display().to_string(),
        message: format!("{}: {message}", lock.display()),
    };
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| unreadable(format!("not JSON: {e}")))?;
    let Some(nodes) = json.get("nodes").and_then(|n| n.as_object()) else {
        return Ok(());
    };
    let mut missing = Vec::new();
    for (name, node) in nodes {
        let locked = node.get("locked");
        let kind = locked.and_then(|l| l.get("type")).and_then(|t| t.as_str());
        let nar_hash = locked
            .and_then(|l| l.get("narHash"))
            .and_then(|h| h.as_str());
        let (Some(kind), Some(nar_hash)) = (kind, nar_hash) else {
            continue;
        };
        if kind == "path" {
            continue;
        }
        let path = Hash::parse(nar_hash, None)
            .ok()
            .and_then(|h| make_source_path("source", &h, &BTreeSet::new()).ok())
            .ok_or_else(|| {
                unreadable(format!(
                    "input `{name}` has the narHash `{nar_hash}`, which is not a hash"
                ))
            })?;
        if !Path::new(&path.to_absolute()).exists() {
            missing.push(MissingInput {
                name: name.clone(),
                path,
                host: None,
            });
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(EvalError::MissingInputs { inputs: missing })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_expression_selects_the_exact_path() {
        let e = expression(
            Path::new("/p/x"),
            &["packages".into(), "x86_64-linux".into()],
        );
        assert!(
            e.starts_with("let v = (builtins.getFlake \"/p/x\").\"packages\".\"x86_64-linux\";"),
            "{e}"
        );
    }

    #[test]
    fn an_input_missing_from_the_store_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lock = r#"{"nodes":{"root":{"inputs":{"dep":"dep"}},
            "dep":{"locked":{"type":"github","owner":"a","repo":"b","rev":"0000000000000000000000000000000000000000",
            "narHash":"sha256-7911PZM08m7ZxxYjg5SJhVCITSvLRPgEJbAESRJELbc="}},
            "local":{"locked":{"type":"path","path":"/x","narHash":"not checked: a path input is local"}}},
            "root":"root","version":7}"#;
        std::fs::write(dir.path().join("flake.lock"), lock).expect("write");
        let error = inputs_in_store(dir.path()).expect_err("an input is missing");
        assert!(
            error.to_string().contains("chock inputs --fetch"),
            "{error}"
        );
        let EvalError::MissingInputs { inputs } = error else {
            panic!("another error than a missing input")
        };
        assert_eq!(inputs.len(), 1, "the path input is local");
        assert_eq!(inputs[0].name, "dep");
        assert_eq!(inputs[0].path.name(), "source");
    }

    #[test]
    fn errors_are_read_from_nix_output() {
        assert_eq!(
            first_error("warning: x\nerror: attribute 'nope' missing\n\n at «string»"),
            "attribute 'nope' missing"
        );
    }
}
