//! A plugin's manifest, `plugin.zon`: its id, version and tools, each with
//! a description, a JSON schema of its input and the capabilities it
//! declares. Read with chock-zon, so every error names FILE:LINE:COL.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Deserializer};

use crate::capability::Capability;
use crate::error::PluginError;

/// The manifest's name in a plugin's folder.
pub const MANIFEST_FILE: &str = "plugin.zon";
/// The most tools one plugin offers.
const MAX_TOOLS: usize = 64;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// One label: `plugin.<id>.tool.<tool>` names its tools' calls.
    #[serde(deserialize_with = "label")]
    pub id: String,
    pub version: String,
    pub tools: Vec<ToolManifest>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolManifest {
    #[serde(deserialize_with = "label")]
    pub name: String,
    pub description: String,
    /// A JSON schema of the input, an object (written in ZON).
    #[serde(deserialize_with = "schema")]
    pub input_schema: serde_json::Value,
    #[serde(default, deserialize_with = "capabilities")]
    pub capabilities: Vec<Capability>,
}

fn label<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let text = String::deserialize(d)?;
    chock_names::label(&text).map_err(serde::de::Error::custom)?;
    Ok(text)
}

fn schema<'de, D: Deserializer<'de>>(d: D) -> Result<serde_json::Value, D::Error> {
    let value = serde_json::Value::deserialize(d)?;
    if !value.is_object() {
        return Err(serde::de::Error::custom(
            "an input schema is a JSON schema object, such as .{ .type = \"object\" }",
        ));
    }
    Ok(value)
}

fn capabilities<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Capability>, D::Error> {
    let written = Vec::<String>::deserialize(d)?;
    written
        .iter()
        .map(|c| Capability::parse(c).map_err(serde::de::Error::custom))
        .collect()
}

impl Manifest {
    /// Reads `text` as the manifest `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Manifest, PluginError> {
        let manifest: Manifest = chock_zon::from_str_in(Some(path), text)
            .map_err(|e| PluginError::Refused(e.to_string()))?;
        manifest.check(path)?;
        Ok(manifest)
    }

    /// Reads the manifest file `path`.
    pub fn read(path: &Path) -> Result<Manifest, PluginError> {
        let text = chock_zon::read_text(path).map_err(|e| PluginError::Refused(e.to_string()))?;
        Manifest::parse(path, &text)
    }

    fn check(&self, path: &Path) -> Result<(), PluginError> {
        let refuse = |why: String| Err(PluginError::Refused(format!("{}: {why}", path.display())));
        if self.tools.is_empty() || self.tools.len() > MAX_TOOLS {
            return refuse(format!("a plugin offers 1 to {MAX_TOOLS} tools"));
        }
        let mut names = BTreeSet::new();
        for tool in &self.tools {
            if !names.insert(&tool.name) {
                return refuse(format!("the tool `{}` is declared twice", tool.name));
            }
        }
        Ok(())
    }

    pub fn tool(&self, name: &str) -> Option<&ToolManifest> {
        self.tools.iter().find(|t| t.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#".{
    .id = "notes",
    .version = "0.1.0",
    .tools = .{
        .{
            .name = "append",
            .description = "Appends a line to notes.txt",
            .input_schema = .{ .type = "object", .properties = .{ .line = .{ .type = "string" } } },
            .capabilities = .{ "fs.read", "fs.write", "net.fetch:example.com" },
        },
    },
}
"#;

    #[test]
    fn a_manifest_is_read_with_its_tools_schemas_and_capabilities() {
        let manifest = Manifest::parse(Path::new("plugin.zon"), GOOD).expect("it reads");
        assert_eq!(manifest.id, "notes");
        let tool = manifest.tool("append").expect("the tool");
        assert_eq!(tool.input_schema["properties"]["line"]["type"], "string");
        let actions: Vec<String> = tool.capabilities.iter().map(Capability::action).collect();
        assert_eq!(
            actions,
            ["file.read", "file.write", "net.fetch.com.example"]
        );
    }

    #[test]
    fn a_bad_manifest_is_refused_at_its_file_line_and_column() {
        let exec = GOOD.replace("\"fs.read\", ", "\"exec\", ");
        let why = Manifest::parse(Path::new("p/plugin.zon"), &exec)
            .expect_err("exec is refused")
            .to_string();
        assert!(why.contains("p/plugin.zon:9:"), "{why}");
        assert!(why.contains("never granted"), "{why}");
        let id = GOOD.replace("\"notes\"", "\"no.dots\"");
        let why = Manifest::parse(Path::new("p/plugin.zon"), &id)
            .expect_err("a dotted id is refused")
            .to_string();
        assert!(why.contains("p/plugin.zon:2:"), "{why}");
        let schema = GOOD.replace(
            ".input_schema = .{ .type = \"object\", .properties = .{ .line = .{ .type = \"string\" } } }",
            ".input_schema = \"object\"",
        );
        assert!(Manifest::parse(Path::new("p/plugin.zon"), &schema).is_err());
    }
}
