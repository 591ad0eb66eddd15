//! What the benchmark examples share: `chock mcp` started on a fresh
//! project, with its own HOME, XDG folders and decision log.

use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Starts `chock mcp --no-approve` in `project`, every folder it writes
/// under `root`, with its stdin and stdout piped.
pub fn start_mcp(chock: &str, root: &Path, project: &Path) -> Child {
    Command::new(chock)
        .args(["mcp", "--no-approve"])
        .current_dir(project)
        .env("HOME", root)
        .env("XDG_STATE_HOME", root.join("state"))
        .env("XDG_CONFIG_HOME", root.join("config"))
        .env("XDG_DATA_HOME", root.join("data"))
        .env_remove("CHOCK_STATE_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("chock mcp starts")
}
