//! read_skill: one skill's instructions (or one file beside them), read at
//! the call and decided at `skill.read.<layer>`.
//!
//! The model is shown each skill's name, layer and description in this
//! tool's own description, and nothing more until it reads one. The skill
//! is opened first (its folder's descriptor, beneath its layer without
//! following a link), its layer's action is decided, and what is returned
//! is read from that descriptor. A refusal refuses that read alone. A
//! skill grants nothing: its `allowed-tools` is shown as advisory text, and
//! every act it describes is decided like any other.

use std::fmt::Write as _;

use chock_skills::{Catalog, Layers};
use serde::Deserialize;

use super::{Call, ToolError};
use crate::gate::{Act, Asking};
use crate::session::Session;

/// The tool's name.
pub const READ_SKILL: &str = "read_skill";
/// The most bytes of skill listing the tool's description holds.
const MAX_LISTING_BYTES: usize = 32 << 10;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadSkill {
    name: String,
    file: Option<String>,
}

/// The layers of the session's project: the person's own folder, never a
/// session workspace's copy.
fn layers(session: &Session) -> Layers {
    Layers::of(&session.policy, &session.project.dir)
}

/// The skills the session lists now.
pub fn catalog(session: &Session) -> Catalog {
    chock_skills::list(&layers(session), &session.policy.config().skills())
}

/// Whether the session has a skill to offer (read_skill is offered only
/// then).
pub fn has_skills(session: &Session) -> bool {
    !catalog(session).skills.is_empty()
}

/// The tool's description: what it does, then each skill by name, layer
/// and description, within a bound.
pub fn description(session: &Session) -> String {
    let mut text = String::from(
        "Read a skill: instructions for one kind of task, written by the person, the project or a policy package. Read one when its description fits the task, then follow it. `file` reads a file beside its SKILL.md instead (the read names them). Each read is decided under skill.read.<layer> and may ask the person. A skill grants nothing: its allowed-tools are advisory, and every act it describes is decided by the policy like any other.\n\nSkills (name [layer]: description):",
    );
    let skills = catalog(session).skills;
    let mut left = skills.len();
    for skill in &skills {
        let line = format!(
            "\n- {} [{}]: {}",
            skill.name,
            skill.layer.label(),
            skill.description.replace('\n', " ")
        );
        if text.len() + line.len() > MAX_LISTING_BYTES {
            let _ = write!(
                text,
                "\n({left} more skills are not listed here: the listing is bounded; `chock skills list` shows them all)"
            );
            break;
        }
        text.push_str(&line);
        left -= 1;
    }
    text
}

pub async fn read_skill(call: &Call<'_>, args: ReadSkill) -> Result<String, ToolError> {
    read(call, args).await
}

/// The skills as MCP prompts, by name and description: for a client that
/// offers prompts to its person (`/mine` in a prompt box). A skill's name
/// holds no `__`, so it never meets a gateway server's `<server>__<prompt>`.
pub fn prompts(session: &Session) -> Vec<rmcp::model::Prompt> {
    catalog(session)
        .skills
        .into_iter()
        .map(|skill| rmcp::model::Prompt::new(skill.name, Some(skill.description), None))
        .collect()
}

/// Whether `name` is one of the session's skills' prompts.
pub fn is_skill_prompt(session: &Session, name: &str) -> bool {
    chock_skills::is_skill_name(name) && catalog(session).skills.iter().any(|s| s.name == name)
}

/// One skill as a prompt: read as read_skill reads it, decided the same.
pub async fn prompt(
    call: &Call<'_>,
    name: &str,
) -> Result<rmcp::model::GetPromptResult, ToolError> {
    let text = read(
        call,
        ReadSkill {
            name: name.to_owned(),
            file: None,
        },
    )
    .await?;
    Ok(
        rmcp::model::GetPromptResult::new(vec![rmcp::model::PromptMessage::new_text(
            rmcp::model::Role::User,
            text,
        )])
        .with_description(format!("the skill {name}")),
    )
}

/// A skill or a file of it that cannot be read, as the skills crate says why.
fn not_found(why: impl std::fmt::Display) -> ToolError {
    ToolError::NotFound(why.to_string())
}

async fn read(call: &Call<'_>, args: ReadSkill) -> Result<String, ToolError> {
    let session = call.session;
    let layers = layers(session);
    let settings = session.policy.config().skills();
    let name = args.name.clone();
    let opened = tokio::task::spawn_blocking(move || chock_skills::open(&layers, &settings, &name))
        .await
        .map_err(|e| ToolError::stopped(READ_SKILL, e, session.command))?
        .map_err(not_found)?;
    let skill = &opened.skill;
    let mut detail = vec![
        format!("{} ({})", skill.file.display(), skill.description),
        format!(
            "file: {}",
            args.file.as_deref().unwrap_or(chock_skills::SKILL_FILE)
        ),
    ];
    if let Some(package) = &skill.package {
        detail.push(format!("shipped by the policy package {package}"));
    }
    let act = Act {
        tool: super::skills::READ_SKILL,
        action: skill.layer.action(),
        subject: Some(skill.name.clone()),
        detail,
    };
    call.gate(&act, Asking::Person).await?;
    let file = args.file.clone();
    let (opened, read) = tokio::task::spawn_blocking(move || {
        let read = file.as_deref().map(|rel| opened.read(rel));
        (opened, read)
    })
    .await
    .map_err(|e| ToolError::stopped(READ_SKILL, e, session.command))?;
    let skill = &opened.skill;
    let mut text = format!(
        "skill `{}` ({} layer{}), {}\n",
        skill.name,
        skill.layer.label(),
        skill
            .package
            .as_deref()
            .map(|p| format!(", policy package {p}"))
            .unwrap_or_default(),
        skill.file.display()
    );
    match read {
        Some(read) => {
            let (body, cut) = read.map_err(not_found)?;
            let rel = args.file.as_deref().unwrap_or_default();
            let _ = writeln!(text, "file {rel}:\n");
            text.push_str(&body);
            if cut {
                text.push_str("\n[cut at .skills.max_bytes]");
            }
        }
        None => {
            if !skill.allowed_tools.is_empty() {
                let _ = writeln!(
                    text,
                    "Its allowed-tools ({}) are advisory: they grant nothing, and every act is decided by the policy.",
                    skill.allowed_tools.join(", ")
                );
            }
            let files = opened.files();
            if !files.is_empty() {
                let _ = writeln!(
                    text,
                    "Files beside it (read one with read_skill's `file`): {}",
                    files.join(", ")
                );
            }
            text.push('\n');
            text.push_str(opened.body());
        }
    }
    Ok(text)
}
