//! The GitHub Actions workflow `chock sync --ci` writes: on each pull
//! request it runs every stage of `chock check` and the commit and push
//! gates again over the pull request's commits (`base...HEAD`, the base
//! from the event), as CI, where no person can be asked.
//!
//! The file is Chock's whole: its first line says so, and a file at the same
//! path without that line is someone else's and is left alone.

use std::path::{Path, PathBuf};

use crate::HookError;

/// The workflow's place in the project.
pub fn path(project: &Path) -> PathBuf {
    project.join(".github").join("workflows").join("chock.yml")
}

/// The first line, which marks the file as Chock's.
pub const MARK: &str = "# Written by `chock sync --ci`; Chock rewrites this file on every sync.";

/// The workflow's text. Chock is installed from its repository at the
/// version that wrote the file.
pub fn text() -> String {
    let repository = env!("CARGO_PKG_REPOSITORY");
    let version = env!("CARGO_PKG_VERSION");
    format!(
        "{MARK}
# Put steps of your own in another workflow file.
name: chock
on:
  pull_request:
permissions:
  contents: read
jobs:
  gate:
    name: chock policy and gates
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1 # v7.0.1
        with:
          # The gate reads every commit since the base: the whole history.
          fetch-depth: 0
          persist-credentials: false
      - name: Install chock {version}
        run: cargo install --locked --git {repository} chock
      - name: Check the policy (every stage of chock check)
        run: chock check --ci
      - name: Gate the pull request's commits (git.commit) and its push (git.push)
        run: |
          chock hook pre-commit --ci
          chock hook pre-push --ci
"
    )
}

/// The new text for the workflow's current text, or `None` when unchanged.
pub fn updated(path: &Path, current: Option<&str>) -> Result<Option<String>, HookError> {
    let wanted = text();
    match current {
        None => Ok(Some(wanted)),
        Some(current) if current == wanted => Ok(None),
        Some(current) if current.starts_with(MARK) => Ok(Some(wanted)),
        Some(_) => Err(HookError::Unexpected {
            path: path.to_owned(),
            message: "this workflow was not written by Chock".to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workflow_is_written_once_and_kept() -> Result<(), HookError> {
        let file = Path::new("chock.yml");
        let first = updated(file, None)?.unwrap_or_default();
        assert!(first.contains("run: chock check --ci\n"));
        assert!(first.contains("fetch-depth: 0"));
        assert!(first.contains("chock hook pre-push --ci"));
        assert_eq!(updated(file, Some(&first))?, None);
        let stale = format!("{MARK}\nname: old\n");
        assert_eq!(updated(file, Some(&stale))?, Some(first));
        assert!(updated(file, Some("name: mine\n")).is_err());
        Ok(())
    }
}
