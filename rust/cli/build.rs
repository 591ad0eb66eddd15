//! Names the commit the binary is built from, for `chock --version`.
//!
//! `CHOCK_COMMIT` wins when set: the Nix package builds from a copy of the
//! tree with no `.git` and passes the flake's revision there (`dirty` for a
//! tree with uncommitted changes). Otherwise git is asked for `HEAD`, and
//! the build script runs again when `HEAD` or the branch moves. Without
//! either (a source tarball, no git installed) the commit is "unknown".

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=CHOCK_COMMIT");
    let built_from = match std::env::var("CHOCK_COMMIT") {
        Ok(commit) if commit == "dirty" => "a tree with uncommitted changes".to_owned(),
        Ok(commit) if !commit.is_empty() => format!("commit {commit}"),
        _ => match git(&["rev-parse", "--short=12", "HEAD"]) {
            Some(commit) => {
                watch_head();
                format!("commit {commit}")
            }
            None => "commit unknown".to_owned(),
        },
    };
    println!("cargo:rustc-env=CHOCK_BUILT_FROM={built_from}");
}

/// Runs again when HEAD changes: the HEAD file, the branch it names, and
/// packed refs (where a branch lives after `git pack-refs`). Only paths
/// that exist are named, since cargo reruns on every build for a missing one.
fn watch_head() {
    let mut files = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    files.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for file in files {
        if let Some(path) = git(&["rev-parse", "--path-format=absolute", "--git-path", &file])
            && PathBuf::from(&path).exists()
        {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}

/// git's answer, trimmed, or `None` when git is missing, fails or says nothing.
fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (output.status.success() && !text.is_empty()).then(|| text.to_owned())
}
