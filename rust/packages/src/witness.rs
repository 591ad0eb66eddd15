//! `chock witness export`: one JSON document a person can keep elsewhere —
//! the decision log's head and whether its chain is intact, the `verify`
//! stage's result, and every hash the lock pins. A head kept this way is
//! what `chock status --verify-log --head SEQ:SHA` later confirms.

use std::path::Path;

use serde_json::{Value, json};

use crate::PackageError;
use crate::check;
use crate::lock::Lock;

/// The witness format's version.
pub const WITNESS_VERSION: u32 = 1;

/// The witness for `project`, with the log in `log`.
pub fn export(project: &Path, log: &chock_log::Log) -> Result<Value, PackageError> {
    let verification = log
        .verify(None)
        .map_err(|e| PackageError::Refused(format!("the decision log cannot be read: {e}")))?;
    let lock = Lock::read(project)?;
    let verify = check::run(project, &["verify"], false);
    Ok(json!({
        "witness": WITNESS_VERSION,
        "project": project.display().to_string(),
        "log": {
            "dir": log.dir().display().to_string(),
            "head": verification.head.as_ref().map(ToString::to_string),
            "lines": verification.lines,
            "intact": verification.intact(),
        },
        "verify": verify.first(),
        "lock": lock.policies,
    }))
}
