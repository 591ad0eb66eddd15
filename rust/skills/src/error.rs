//! Why a skill, or a file of it, cannot be read.

use std::path::PathBuf;

/// Why [`crate::open`] or [`crate::Opened::read`] gave nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillError {
    /// The name asked for cannot name a skill.
    #[error("`{0}` is not a skill's name (lowercase letters, digits and `-`)")]
    NotAName(String),
    /// No layer the session lists holds a skill of that name.
    #[error("there is no skill named `{name}` in the layers this session lists ({layers})")]
    NotFound { name: String, layers: String },
    /// A skill of that name is there, but its folder or `SKILL.md` cannot be read.
    #[error("the skill `{name}` cannot be read: {problem}")]
    Unreadable { name: String, problem: String },
    /// The file asked for is not a path inside the skill's folder.
    #[error("`{0}` is not a file of the skill: name one relative to its folder, without `..`")]
    NotAFile(String),
    /// The file is there but is not text.
    #[error("{}: is not UTF-8 text, and read_skill reads text", .0.display())]
    NotText(PathBuf),
    /// A folder or file beneath the layer could not be opened, and why.
    #[error("{0}")]
    Refused(String),
}
