//! `chock new plugin <id>`: a Rust plugin that builds as written with
//! `cargo build --release --target wasm32-wasip2`, for a person to change:
//! Chock's world (`wit/plugin.wit`, the same file the host is built from),
//! a manifest with one tool and no capability, and the tool itself.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::error::PluginError;
use crate::manifest::MANIFEST_FILE;
use crate::store::COMPONENT_FILE;

/// The world the host links, as a plugin's bindings are generated from.
const WORLD: &str = include_str!("../wit/plugin.wit");

/// Writes the plugin `id` into the new folder `dir` and returns the files
/// written. A folder that exists is never written into.
pub fn new_plugin(dir: &Path, id: &str) -> Result<Vec<PathBuf>, PluginError> {
    chock_names::label(id)
        .map_err(|e| PluginError::Refused(format!("`{id}` is no plugin id: {e}")))?;
    let refused = |e: std::io::Error| PluginError::Refused(format!("{}: {e}", dir.display()));
    std::fs::create_dir(dir).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            PluginError::Refused(format!(
                "{} already exists: give another folder with --dir, or edit that plugin",
                dir.display()
            ))
        } else {
            refused(e)
        }
    })?;
    let files = [
        ("Cargo.toml", cargo_toml(id)),
        (MANIFEST_FILE, manifest(id)),
        ("wit/plugin.wit", WORLD.to_owned()),
        ("src/lib.rs", LIB_RS.to_owned()),
        (".gitignore", format!("/target\n/{COMPONENT_FILE}\n")),
    ];
    let mut written = Vec::new();
    for (rel, text) in files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(refused)?;
        }
        std::fs::File::create_new(&path)
            .and_then(|mut file| file.write_all(text.as_bytes()))
            .map_err(refused)?;
        written.push(path);
    }
    Ok(written)
}

/// What to run in the plugin's folder to build it and install it.
pub fn build_steps(id: &str) -> String {
    format!(
        "cargo build --release --target wasm32-wasip2 && cp target/wasm32-wasip2/release/{crate_name}.wasm {COMPONENT_FILE} && chock plugins install .",
        crate_name = id.replace('-', "_")
    )
}

fn cargo_toml(id: &str) -> String {
    format!(
        r#"[package]
name = "{id}"
version = "0.1.0"
edition = "2024"
publish = false

# A component of Chock's world: `cargo build --release --target wasm32-wasip2`.
[lib]
crate-type = ["cdylib"]

[dependencies]
serde_json = "1"
wit-bindgen = "0.57"

[profile.release]
opt-level = "s"
strip = true

# Its own workspace, wherever the folder lies.
[workspace]
"#
    )
}

fn manifest(id: &str) -> String {
    format!(
        r#".{{
    .id = "{id}",
    .version = "0.1.0",
    .tools = .{{
        .{{
            // A session offers it as plugin__{id}__greet; each call is
            // decided at plugin.{id}.tool.greet.
            .name = "greet",
            .description = "Greets the name it is given.",
            .input_schema = .{{
                .type = "object",
                .properties = .{{ .name = .{{ .type = "string" }} }},
                .required = .{{ "name" }},
            }},
            // What the tool may do, each decided at session start and
            // linked only when allowed outright: "fs.read" and "fs.write"
            // beneath the workspace (decided as file.read, file.write),
            // "net.fetch:<host>" (decided as net.fetch.<reversed host>).
            .capabilities = .{{}},
        }},
    }},
}}
"#
    )
}

const LIB_RS: &str = r#"//! A Chock plugin: each tool of plugin.zon is called with its input as JSON
//! and answers JSON, or the text of what went wrong.

wit_bindgen::generate!({ world: "plugin", path: "wit" });

use serde_json::{Value, json};

struct Plugin;

impl exports::chock::plugin::tool::Guest for Plugin {
    fn call(name: String, input: String) -> Result<String, String> {
        let input: Value = serde_json::from_str(&input).map_err(|e| e.to_string())?;
        let answer = match name.as_str() {
            "greet" => greet(&input)?,
            other => return Err(format!("there is no tool named `{other}`")),
        };
        Ok(answer.to_string())
    }
}

fn greet(input: &Value) -> Result<Value, String> {
    let name = input["name"].as_str().ok_or("`name` is a string")?;
    // A tool granted "fs.read" reads beneath the workspace with
    // chock::plugin::fs_read::read("path"); "fs.write" writes with
    // chock::plugin::fs_write::write("path", bytes); "net.fetch:<host>"
    // fetches with chock::plugin::net_fetch::fetch("https://<host>/...").
    Ok(json!({ "greeting": format!("Hello, {name}!") }))
}

export!(Plugin);
"#;
