//! `chock install-skills`: writes Chock's own skills (the policy-init skill
//! first) into the person's agents, each as `<agent home>/skills/<name>/`
//! (Claude Code's `~/.claude/skills`, Codex's `$CODEX_HOME/skills`,
//! Gemini CLI's `~/.gemini/skills`). Idempotent: a skill already as shipped
//! is left alone, one Chock wrote and nobody changed is brought up to
//! date, and one that is the person's own (or edited since) is never
//! touched. `--remove` takes back exactly what Chock wrote and nobody
//! changed. A marker beside each `SKILL.md` holds the SHA-256 of what was
//! written, so an edit is told from an older version.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use sha2::{Digest, Sha256};

use crate::exit;

/// The marker beside an installed `SKILL.md`: the hash of what was written.
const MARKER: &str = ".chock-installed";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The agents to write into, comma-separated: claude, codex, gemini (default: those whose folder exists in your home).
    #[arg(long, value_delimiter = ',')]
    pub agents: Vec<String>,
    /// Take back the skills Chock wrote (a skill edited since is left, and named).
    #[arg(long)]
    pub remove: bool,
}

/// One agent's user-level skills folder.
struct Agent {
    name: &'static str,
    home: PathBuf,
}

fn agents(chosen: &[String]) -> anyhow::Result<Vec<Agent>> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .context("HOME is not set, so no agent's folder can be found")?;
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let all = [
        Agent {
            name: "claude",
            home: var("CLAUDE_CONFIG_DIR").unwrap_or_else(|| home.join(".claude")),
        },
        Agent {
            name: "codex",
            home: var("CODEX_HOME").unwrap_or_else(|| home.join(".codex")),
        },
        Agent {
            name: "gemini",
            home: home.join(".gemini"),
        },
    ];
    if chosen.is_empty() {
        let found: Vec<Agent> = all.into_iter().filter(|a| a.home.is_dir()).collect();
        if found.is_empty() {
            bail!(
                "no agent's folder is in {} (.claude, .codex, .gemini): name the agents with --agents claude,codex,gemini",
                home.display()
            );
        }
        return Ok(found);
    }
    for name in chosen {
        if !all.iter().any(|a| a.name == name) {
            bail!(
                "`{name}` is not an agent install-skills writes into: name claude, codex or gemini"
            );
        }
    }
    Ok(all
        .into_iter()
        .filter(|a| chosen.iter().any(|c| c == a.name))
        .collect())
}

fn digest(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// What is at a skill's folder now.
enum Found {
    Missing,
    /// Exactly the shipped text.
    Current,
    /// What Chock wrote, unchanged since (an older version).
    Ours,
    /// The person's own, or edited since Chock wrote it.
    Theirs(String),
}

fn found(dir: &Path, shipped: &str) -> anyhow::Result<Found> {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Missing),
        Err(e) => return Err(e).with_context(|| format!("{} cannot be read", dir.display())),
    };
    if !meta.is_dir() {
        return Ok(Found::Theirs("is not a folder (a link or a file)".into()));
    }
    let skill = dir.join(chock_skills::SKILL_FILE);
    let bytes = match std::fs::symlink_metadata(&skill) {
        Ok(m) if m.is_file() => {
            std::fs::read(&skill).with_context(|| format!("{} cannot be read", skill.display()))?
        }
        Ok(_) => {
            return Ok(Found::Theirs(format!(
                "{} is not a regular file",
                skill.display()
            )));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Found::Theirs(format!(
                "holds no {}",
                chock_skills::SKILL_FILE
            )));
        }
        Err(e) => return Err(e).with_context(|| format!("{} cannot be read", skill.display())),
    };
    let marker = std::fs::read_to_string(dir.join(MARKER)).ok();
    let ours = marker.as_deref().map(str::trim) == Some(digest(&bytes).as_str());
    Ok(if bytes == shipped.as_bytes() && ours {
        Found::Current
    } else if ours {
        Found::Ours
    } else if bytes == shipped.as_bytes() {
        // As shipped, but without the marker: Chock's text, now marked.
        Found::Ours
    } else {
        Found::Theirs("differs from what Chock wrote (your own, or edited since)".into())
    })
}

/// Writes `text` at `path` whole: a temporary file beside it, renamed over.
fn write_whole(path: &Path, text: &[u8]) -> anyhow::Result<()> {
    let temporary = path.with_extension("chock-tmp");
    std::fs::write(&temporary, text)
        .and_then(|()| std::fs::rename(&temporary, path))
        .with_context(|| format!("{} cannot be written", path.display()))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut left = 0;
    for agent in agents(&args.agents)? {
        let skills = agent.home.join("skills");
        for (name, text) in chock_skills::SHIPPED {
            let dir = skills.join(name);
            let shown = dir.display();
            match (found(&dir, text)?, args.remove) {
                (Found::Missing, false) | (Found::Ours, false) => {
                    std::fs::create_dir_all(&dir)
                        .with_context(|| format!("{shown} cannot be made"))?;
                    write_whole(&dir.join(chock_skills::SKILL_FILE), text.as_bytes())?;
                    write_whole(
                        &dir.join(MARKER),
                        format!("{}\n", digest(text.as_bytes())).as_bytes(),
                    )?;
                    outln!("{}: wrote {name} in {shown}", agent.name);
                }
                (Found::Current, false) => {
                    outln!("{}: {name} is up to date in {shown}", agent.name)
                }
                (Found::Missing, true) => outln!("{}: {name} is not installed", agent.name),
                (Found::Current | Found::Ours, true) => {
                    for file in [chock_skills::SKILL_FILE, MARKER] {
                        std::fs::remove_file(dir.join(file))
                            .with_context(|| format!("{shown}/{file} cannot be removed"))?;
                    }
                    match std::fs::remove_dir(&dir) {
                        Ok(()) => outln!("{}: removed {name} from {shown}", agent.name),
                        Err(_) => outln!(
                            "{}: removed {name}'s {} from {shown}; the folder holds files of yours, so it is kept",
                            agent.name,
                            chock_skills::SKILL_FILE
                        ),
                    }
                }
                (Found::Theirs(why), remove) => {
                    left += 1;
                    eprintln!(
                        "chock: {}: {shown} {why}, so it is left as it is; {}",
                        agent.name,
                        if remove {
                            "remove it yourself if it should go"
                        } else {
                            "move it aside to install Chock's"
                        }
                    );
                }
            }
        }
        // A skills folder left empty by a removal holds nothing of anyone's.
        if args.remove && std::fs::read_dir(&skills).is_ok_and(|mut d| d.next().is_none()) {
            std::fs::remove_dir(&skills).ok();
        }
    }
    Ok(if left == 0 {
        exit::SUCCESS
    } else {
        exit::FAILURE
    }
    .into())
}
