//! A file as it was read: its path and exact text, so every refusal inside it
//! reads `FILE:LINE:COL: message` with the offending line, and the shape each
//! kind of file must have.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chock_zon::{Span, Spanned};

use crate::ConfigError;

/// Blocks some Chock documents and this one does not implement yet: each
/// refuses the file that holds it, by name, rather than be ignored.
pub const NOT_IMPLEMENTED: &[&str] = &["sandbox"];

/// A loaded file: its path and exact text, for placing later refusals.
pub struct Source<'a> {
    pub file: &'a Path,
    pub text: &'a str,
    /// The path once more, shared by everything read from the file that
    /// keeps it (each rule's source).
    pub shared: Arc<PathBuf>,
}

impl<'a> Source<'a> {
    pub fn new(file: &'a Path, text: &'a str) -> Self {
        Source {
            file,
            text,
            shared: Arc::new(file.to_path_buf()),
        }
    }

    /// The line `span` starts on.
    pub fn line(&self, span: Span) -> u32 {
        chock_zon::line_col(self.text, span.start).0
    }

    /// A refusal at `span`, read as `FILE:LINE:COL: message`.
    pub fn error(&self, span: Span, message: impl Into<String>) -> ConfigError {
        chock_zon::Error::at(Some(self.file), self.text, span, message).into()
    }

    /// The whole file as `T`.
    pub fn read<T: serde::de::DeserializeOwned>(&self) -> Result<T, ConfigError> {
        Ok(chock_zon::from_str_in(Some(self.file), self.text)?)
    }

    /// Reads the file as `kind` after refusing, by name, what the typed
    /// read would only call unknown: a block this Chock does not implement
    /// yet, and a block of another file's shape (a bundle written as
    /// `chock.zon`, rules in `config.zon`). The first in the file is named.
    pub fn read_as<T: serde::de::DeserializeOwned>(
        &self,
        kind: FileKind,
    ) -> Result<T, ConfigError> {
        use serde::de::IgnoredAny;
        // A top level that is not a struct is left to the typed read, which
        // says what it must be. Keys ordered by span are in file order.
        let top: BTreeMap<Spanned<String>, IgnoredAny> =
            chock_zon::from_str_in(Some(self.file), self.text).unwrap_or_default();
        for Spanned { span, value: name } in top.into_keys() {
            if NOT_IMPLEMENTED.contains(&name.as_str()) {
                return Err(self.error(
                    span,
                    format!(
                        "`.{name}` is not implemented yet in this Chock, and a block that is not read would bind nothing: remove it, or use a Chock that implements it"
                    ),
                ));
            }
            if let Some(why) = kind.misplaced(&name) {
                return Err(self.error(span, why));
            }
        }
        self.read()
    }
}

/// Which file a [`Source`] is, for the shape it must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Project,
    Operator,
    Bundle,
}

impl FileKind {
    /// Why the top-level block `name` does not belong in this kind of file.
    fn misplaced(self, name: &str) -> Option<String> {
        match (self, name) {
            (FileKind::Project, "rules") => Some(
                "the rules of chock.zon go in `.policy.rules`: `.{ .policy = .{ .rules = .{ .{ .action = \"git.push\", .decision = .ask } } } }`".into(),
            ),
            (FileKind::Project, "search") => Some(
                "the search engine is the operator's to name, never a project's: move `.search` to your config.zon ($XDG_CONFIG_HOME/chock/config.zon)".into(),
            ),
            (FileKind::Operator | FileKind::Bundle, "style") => Some(
                "style rules are the project's: move `.style` to the project's chock.zon (an organisation that wants none writes a rule on style.parse)".into(),
            ),
            (FileKind::Operator | FileKind::Bundle, "lsp") => Some(
                "language servers are the project's: move `.lsp` to the project's chock.zon (an organisation that wants none writes a rule on lsp.*)".into(),
            ),
            (FileKind::Operator | FileKind::Bundle, "devices") => Some(
                "devices are the project's: move `.devices` to the project's chock.zon (an organisation that wants none writes a rule on device.*)".into(),
            ),
            (FileKind::Bundle, "search" | "skills") => Some(format!(
                "an organisation bundle holds rules, not `.{name}`: the search engine is named in config.zon, and which skills are read is decided by rules on skill.read.<layer>"
            )),
            (FileKind::Operator, "policy" | "rules") => Some(format!(
                "config.zon holds no rules (only settings: .nix, .limits, .log, .secrets, .providers, .prices, .search, .skills): move `.{name}` to the project's chock.zon under .policy.rules, or to an organisation bundle to bind every project"
            )),
            (_, "plugins") => Some(
                "no file holds a `.plugins` block: a plugin is installed with `chock plugins install DIR` (pinned in chock.lock), and what it may do is decided by rules on plugin.<id>.tool.<tool> and on each capability's action".into(),
            ),
            (FileKind::Bundle, "policy") => Some(
                "this is chock.zon's shape, and an organisation bundle holds its rules at the top: `.{ .version = 1, .rules = .{ .{ .action = \"sandbox.jit\", .decision = .deny } } }`; a bundle in chock.zon's shape would bind nothing".into(),
            ),
            _ => None,
        }
    }
}
