//! `read_guidance`: the instructions a project keeps for coding agents
//! (AGENTS.md, CLAUDE.md, GEMINI.md, `.github/copilot-instructions.md` and
//! the like), read from the session's workspace beneath it by descriptor
//! (a link never leads out), each file and the whole bounded.

use chock_mcp::local::InProcess;

use crate::own_tools::OwnToolError;

/// The files read, in this order, in each folder.
pub const FILES: [&str; 8] = [
    "AGENTS.md",
    "AGENT.md",
    "CLAUDE.md",
    "GEMINI.md",
    "CONVENTIONS.md",
    ".github/copilot-instructions.md",
    ".cursorrules",
    ".windsurfrules",
];
/// The most bytes one file may hold.
pub const FILE_BYTES: u64 = 64 << 10;
/// The most bytes one answer holds.
pub const ANSWER_BYTES: usize = 128 << 10;

/// The guidance of the workspace's root and of every folder down to
/// `folder` (relative to the workspace), each file under its path.
pub fn read(tools: &InProcess, folder: Option<&str>) -> Result<String, OwnToolError> {
    let mut folders = vec![String::new()];
    if let Some(folder) = folder {
        if folder.starts_with('/') {
            return Err(OwnToolError::Argument(
                "read_guidance: `path` is a folder relative to the workspace, e.g. `src/parser`"
                    .into(),
            ));
        }
        let mut at = String::new();
        for part in folder.split('/').filter(|p| !p.is_empty() && *p != ".") {
            if part == ".." {
                return Err(OwnToolError::Argument(
                    "read_guidance: `path` is a folder inside the workspace, without `..`".into(),
                ));
            }
            at = if at.is_empty() {
                part.to_owned()
            } else {
                format!("{at}/{part}")
            };
            folders.push(at.clone());
        }
    }
    let mut out = String::new();
    let mut notes = Vec::new();
    for folder in &folders {
        for name in FILES {
            let path = if folder.is_empty() {
                name.to_owned()
            } else {
                format!("{folder}/{name}")
            };
            match tools.read_text(&path, FILE_BYTES) {
                Ok(None) => {}
                Ok(Some(text)) if out.len() + text.len() > ANSWER_BYTES => notes.push(format!(
                    "{path} is not shown: the answer would pass {ANSWER_BYTES} bytes; read it with read_file"
                )),
                Ok(Some(text)) => {
                    out.push_str(&format!("--- {path} ---\n{text}"));
                    if !text.ends_with('\n') {
                        out.push('\n');
                    }
                }
                Err(why) => notes.push(format!("{path} is not shown: {why}")),
            }
        }
    }
    if out.is_empty() && notes.is_empty() {
        return Ok(format!(
            "no guidance files in {}: looked for {}",
            folders
                .last()
                .filter(|f| !f.is_empty())
                .map_or("the workspace's root", String::as_str),
            FILES.join(", ")
        ));
    }
    for note in notes {
        out.push_str(&format!("note: {note}\n"));
    }
    Ok(out)
}
