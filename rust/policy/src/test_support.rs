//! What the unit tests of several modules share.

use crate::{LoadOptions, Policy, PolicyError};

/// The policy of a project whose chock.zon is `project`.
pub fn with_project(project: &str) -> Result<Policy, PolicyError> {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join(crate::PROJECT_FILE), project).expect("write");
    Policy::load(&LoadOptions {
        project_dir: dir.path().to_path_buf(),
        operator_config: None,
        discovered_bundles: vec![],
        org_bundles: vec![],
    })
}

/// The policy of an empty project with `operator` as the operator's
/// config.zon.
pub fn with_operator_config(operator: &str) -> Result<Policy, PolicyError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.zon");
    std::fs::write(&path, operator).expect("write");
    Policy::load(&LoadOptions {
        project_dir: dir.path().to_path_buf(),
        operator_config: Some(path),
        discovered_bundles: vec![],
        org_bundles: vec![],
    })
}
