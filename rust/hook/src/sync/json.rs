//! Adding Chock's entry to an agent's JSON hook file without disturbing the
//! person's: their other hooks, settings, comments, key order and layout
//! stay as they were, and a file that already holds exactly Chock's entry is
//! not written at all.
//!
//! Two layouts exist. Claude Code, Gemini CLI and Codex nest handlers in
//! matcher groups (`hooks.<Event>[].hooks[]`); Cursor lists handlers
//! directly (`hooks.<event>[]`) beside a `version` field.

use std::path::Path;

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstArray, CstInputValue, CstObject, CstRootNode};
use serde_json::Value;

use crate::HookError;

/// The options a settings file is read with: JSON, and comments (Gemini's
/// settings allow them), nothing looser.
fn options() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        ..ParseOptions::default()
    }
}

/// One hook file being edited.
pub struct Document<'a> {
    path: &'a Path,
    root: CstRootNode,
    original: String,
}

impl<'a> Document<'a> {
    /// Parses `text` (an empty or missing file is an empty object).
    pub fn parse(path: &'a Path, text: Option<&str>) -> Result<Document<'a>, HookError> {
        let original = text.unwrap_or("").to_owned();
        let source = if original.trim().is_empty() {
            "{}\n"
        } else {
            original.as_str()
        };
        let root =
            CstRootNode::parse(source, &options()).map_err(|error| HookError::Unparsable {
                path: path.to_owned(),
                message: format!("not valid JSON: {error}"),
            })?;
        if root.value().is_some_and(|v| v.as_object().is_none()) {
            return Err(unexpected(path, "the top level is not an object"));
        }
        Ok(Document {
            path,
            root,
            original,
        })
    }

    /// The new text, or `None` when nothing changed.
    pub fn changed_text(&self) -> Option<String> {
        let text = self.root.to_string();
        let text = if text.ends_with('\n') {
            text
        } else {
            format!("{text}\n")
        };
        (text != self.original).then_some(text)
    }

    fn root_object(&self) -> CstObject {
        self.root.object_value_or_set()
    }

    /// `hooks.<event>` as an array, created when missing.
    fn event_array(&self, event: &str) -> Result<CstArray, HookError> {
        let root = self.root_object();
        let hooks = match root.get("hooks") {
            Some(prop) => prop
                .object_value()
                .ok_or_else(|| unexpected(self.path, "`hooks` is not an object"))?,
            None => root.object_value_or_set("hooks"),
        };
        match hooks.get(event) {
            Some(prop) => prop
                .array_value()
                .ok_or_else(|| unexpected(self.path, &format!("`hooks.{event}` is not a list"))),
            None => Ok(hooks.array_value_or_set(event)),
        }
    }

    /// Makes `version` present (Cursor's files carry `"version": 1`).
    pub fn ensure_field(&self, name: &str, value: CstInputValue) {
        let root = self.root_object();
        if root.get(name).is_none() {
            root.insert(0, name, value);
        }
    }

    /// Nested layout: makes `hooks.<event>` hold exactly one matcher group
    /// with Chock's handler, `group`, and no other handler of Chock's.
    pub fn ensure_nested(
        &self,
        event: &str,
        group: &Value,
        is_ours: impl Fn(&Value) -> bool,
    ) -> Result<(), HookError> {
        let groups = self.event_array(event)?;
        let mut ours_in_place = 0;
        let mut ours_elsewhere = false;
        for element in groups.elements() {
            let value = element.to_serde_value().unwrap_or(Value::Null);
            let handlers = value.get("hooks").and_then(Value::as_array);
            let mine = handlers.map_or(0, |h| h.iter().filter(|h| is_ours(h)).count());
            if mine == 0 {
                continue;
            }
            if value == *group {
                ours_in_place += 1;
            } else {
                ours_elsewhere = true;
            }
        }
        if ours_in_place == 1 && !ours_elsewhere {
            return Ok(());
        }
        // Take every handler of Chock's out, then add the one group back.
        take_nested(&groups, &is_ours);
        groups.ensure_multiline();
        groups.append(input(group));
        Ok(())
    }

    /// Flat layout: makes `hooks.<event>` hold exactly one handler of
    /// Chock's, `handler`.
    pub fn ensure_flat(
        &self,
        event: &str,
        handler: &Value,
        is_ours: impl Fn(&Value) -> bool,
    ) -> Result<(), HookError> {
        let handlers = self.event_array(event)?;
        let ours: Vec<Value> = handlers
            .elements()
            .iter()
            .filter_map(|e| e.to_serde_value())
            .filter(|v| is_ours(v))
            .collect();
        if ours.len() == 1 && ours.first() == Some(handler) {
            return Ok(());
        }
        take_flat(&handlers, &is_ours);
        handlers.ensure_multiline();
        handlers.append(input(handler));
        Ok(())
    }

    /// `chock sync --remove`: takes every handler of Chock's out of
    /// `hooks.<event>` (`nested`: out of its matcher groups, and a group
    /// it leaves empty with it), then the event and `hooks` when that
    /// leaves them empty, as sync found them. The person's own handlers,
    /// settings and layout stay.
    pub fn remove(
        &self,
        event: &str,
        nested: bool,
        is_ours: impl Fn(&Value) -> bool,
    ) -> Result<(), HookError> {
        let root = self.root_object();
        let Some(hooks_prop) = root.get("hooks") else {
            return Ok(());
        };
        let hooks = hooks_prop
            .object_value()
            .ok_or_else(|| unexpected(self.path, "`hooks` is not an object"))?;
        let Some(event_prop) = hooks.get(event) else {
            return Ok(());
        };
        let list = event_prop
            .array_value()
            .ok_or_else(|| unexpected(self.path, &format!("`hooks.{event}` is not a list")))?;
        if nested {
            take_nested(&list, &is_ours);
        } else {
            take_flat(&list, &is_ours);
        }
        if list.elements().is_empty() {
            event_prop.remove();
        }
        if hooks.properties().is_empty() {
            hooks_prop.remove();
        }
        Ok(())
    }
}

/// Takes Chock's handlers out of each matcher group of `groups`, and a
/// group that holds none then.
fn take_nested(groups: &CstArray, is_ours: &impl Fn(&Value) -> bool) {
    for element in groups.elements() {
        let Some(object) = element.as_object() else {
            continue;
        };
        let Some(handlers) = object.get("hooks").and_then(|p| p.array_value()) else {
            continue;
        };
        let had = handlers.elements().len();
        take_flat(&handlers, is_ours);
        if had > 0 && handlers.elements().is_empty() {
            element.remove();
        }
    }
}

/// Takes Chock's handlers out of `handlers`.
fn take_flat(handlers: &CstArray, is_ours: &impl Fn(&Value) -> bool) {
    for element in handlers.elements() {
        if element.to_serde_value().is_some_and(|v| is_ours(&v)) {
            element.remove();
        }
    }
}

fn unexpected(path: &Path, message: &str) -> HookError {
    HookError::Unexpected {
        path: path.to_owned(),
        message: message.to_owned(),
    }
}

/// A serde value as the CST's input value (object keys keep their order).
pub fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        Value::Object(map) => {
            CstInputValue::Object(map.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ours(handler: &Value) -> bool {
        handler
            .get("command")
            .and_then(Value::as_str)
            .is_some_and(|c| c.starts_with("chock hook"))
    }

    fn group() -> Value {
        json!({"matcher": "*", "hooks": [{"type": "command", "command": "chock hook claude"}]})
    }

    fn nested(text: Option<&str>) -> Result<Option<String>, HookError> {
        let path = Path::new("settings.json");
        let doc = Document::parse(path, text)?;
        doc.ensure_nested("PreToolUse", &group(), ours)?;
        Ok(doc.changed_text())
    }

    #[test]
    fn an_empty_file_gets_the_entry() -> Result<(), HookError> {
        let text = nested(None)?.unwrap_or_default();
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        assert_eq!(value, json!({"hooks": {"PreToolUse": [group()]}}));
        // The second time nothing changes.
        assert_eq!(nested(Some(&text))?, None);
        Ok(())
    }

    #[test]
    fn the_person_s_settings_and_comments_stay() -> Result<(), HookError> {
        let before = r#"{
  // my model
  "model": "opus",
  "hooks": {
    "PreToolUse": [
      { "matcher": "Bash", "hooks": [ { "type": "command", "command": "./mine.sh" } ] }
    ]
  }
}
"#;
        let after = nested(Some(before))?.unwrap_or_default();
        assert!(after.contains("// my model"), "{after}");
        assert!(after.contains("./mine.sh"), "{after}");
        assert!(after.contains("chock hook claude"), "{after}");
        assert!(after.find("\"model\"") < after.find("\"hooks\""), "{after}");
        assert_eq!(nested(Some(&after))?, None);
        Ok(())
    }

    #[test]
    fn an_old_entry_of_chock_s_is_replaced_not_doubled() -> Result<(), HookError> {
        let before = r#"{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"chock hook claude --old"},{"type":"command","command":"./mine.sh"}]}]}}"#;
        let after = nested(Some(before))?.unwrap_or_default();
        assert_eq!(after.matches("chock hook claude").count(), 1, "{after}");
        assert!(!after.contains("--old"), "{after}");
        assert!(after.contains("./mine.sh"), "{after}");
        Ok(())
    }

    #[test]
    fn a_file_that_is_not_json_is_refused() {
        for bad in [
            "{",
            "{'a': 1}",
            "[1]",
            r#"{"hooks": 3}"#,
            r#"{"hooks": {"PreToolUse": {}}}"#,
        ] {
            assert!(nested(Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_flat_layout_keeps_other_handlers() -> Result<(), HookError> {
        let path = Path::new("hooks.json");
        let before = r#"{"version": 1, "hooks": {"preToolUse": [{"command": "./audit.sh"}]}}"#;
        let handler = json!({"command": "chock hook cursor", "failClosed": true});
        let doc = Document::parse(path, Some(before))?;
        doc.ensure_flat("preToolUse", &handler, ours)?;
        let after = doc.changed_text().unwrap_or_default();
        assert!(
            after.contains("./audit.sh") && after.contains("chock hook cursor"),
            "{after}"
        );
        let doc = Document::parse(path, Some(&after))?;
        doc.ensure_flat("preToolUse", &handler, ours)?;
        assert_eq!(doc.changed_text(), None);
        Ok(())
    }
}
