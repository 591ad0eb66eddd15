//! Every action namer, in one place. Later crates name acts only through these
//! functions, so a host, a program or an attribute path is always spelled the
//! same way and a rule written against one spelling means what it says.
//!
//! Two conventions: host names are written label by label in reverse,
//! lower-cased (`docs.ziglang.org` → `org.ziglang.docs`), so a class rule about
//! a domain covers exactly the names under it; and a segment that is not a
//! host escapes `%` as `%25` and `.` as `%2E`, so a dot in a file or attribute
//! name can never forge a segment boundary.

#![forbid(unsafe_code)]

use std::path::{Component, Path, PathBuf};

impl From<chock_flakelock::HostError> for NameError {
    fn from(e: chock_flakelock::HostError) -> Self {
        NameError::Host {
            host: e.host,
            why: e.why,
        }
    }
}

/// Why a name could not be made; the act is then refused, never guessed at.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("host `{host}` cannot be named: {why}")]
    Host { host: String, why: &'static str },
    #[error("`{value}` cannot be one label of an action name: {why}")]
    Label { value: String, why: &'static str },
    #[error("attribute path cannot be named: {why}")]
    Attribute { why: String },
    #[error("flake reference `{reference}` cannot be named: {why}")]
    Flake {
        reference: String,
        why: &'static str,
    },
}

/// Which phase of a Nix build reaches a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Fetching flake inputs and evaluation-time fetchers.
    Eval,
    /// Fixed-output derivations, while building.
    Build,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Eval => "eval",
            Phase::Build => "build",
        }
    }
}

/// `docs.ziglang.org` → `org.ziglang.docs` (see
/// [`chock_flakelock::reversed_host`]).
pub fn reversed_host(host: &str) -> Result<String, NameError> {
    Ok(chock_flakelock::reversed_host(host)?)
}

/// `fetch_url`'s action: `net.fetch.<reversed host>`.
pub fn net_fetch(host: &str) -> Result<String, NameError> {
    Ok(format!("net.fetch.{}", reversed_host(host)?))
}

/// The sandbox opening a socket: `net.connect.<reversed host>.<port>`.
pub fn net_connect(host: &str, port: u16) -> Result<String, NameError> {
    Ok(format!("net.connect.{}.{port}", reversed_host(host)?))
}

/// A Nix build reaching a host in one phase: `nix.net.<phase>.<reversed>.<port>`.
pub fn nix_net(phase: Phase, host: &str, port: u16) -> Result<String, NameError> {
    Ok(format!(
        "nix.net.{}.{}.{port}",
        phase.as_str(),
        reversed_host(host)?
    ))
}

/// The either-phase name, `nix.net.<reversed>.<port>`, consulted beside the
/// phase name so a rule on the host covers both phases.
pub fn nix_net_either(host: &str, port: u16) -> Result<String, NameError> {
    Ok(format!("nix.net.{}.{port}", reversed_host(host)?))
}

/// A port of a background command, reachable from this machine: `net.serve.<port>`.
pub fn net_serve(port: u16) -> String {
    format!("net.serve.{port}")
}

/// `.` → `%2E` and `%` → `%25`, so a segment never adds a segment boundary.
pub fn escape_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for c in segment.chars() {
        match c {
            '%' => out.push_str("%25"),
            '.' => out.push_str("%2E"),
            c => out.push(c),
        }
    }
    out
}

/// The most attribute segments `nix_build` names.
pub const MAX_ATTRIBUTE_SEGMENTS: usize = 16;

/// Building one attribute: `nix.build.<segment>.<segment>...`, each escaped.
pub fn nix_build(attribute: &[&str]) -> Result<String, NameError> {
    if attribute.is_empty() {
        return Err(NameError::Attribute {
            why: "it is empty: name at least one attribute".into(),
        });
    }
    if attribute.len() > MAX_ATTRIBUTE_SEGMENTS {
        return Err(NameError::Attribute {
            why: format!("it has more than {MAX_ATTRIBUTE_SEGMENTS} segments"),
        });
    }
    if attribute.iter().any(|s| s.is_empty()) {
        return Err(NameError::Attribute {
            why: "a segment is empty".into(),
        });
    }
    if attribute.iter().any(|s| s.chars().any(char::is_control)) {
        return Err(NameError::Attribute {
            why: "a segment holds a control character".into(),
        });
    }
    let segments: Vec<String> = attribute.iter().map(|s| escape_segment(s)).collect();
    Ok(format!("nix.build.{}", segments.join(".")))
}

/// The flake a build comes from: `nix.build.flake.` + the reference without
/// `#...` or `?...`, split on `:` and `/` (empty pieces dropped), each piece
/// escaped: `github:NixOS/nixpkgs#hello` → `nix.build.flake.github.NixOS.nixpkgs`.
pub fn nix_build_flake(reference: &str) -> Result<String, NameError> {
    let refuse = |why| NameError::Flake {
        reference: reference.to_string(),
        why,
    };
    if reference.is_empty() || reference.len() > 512 {
        return Err(refuse("a reference is 1 to 512 bytes"));
    }
    if reference.starts_with('-') {
        return Err(refuse("a reference cannot start with `-`"));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || ":/.-_+~@%?=&,#".contains(c);
    if !reference.chars().all(allowed) {
        return Err(refuse(
            "a reference holds only letters, digits and : / . - _ + ~ @ % ? = & , #",
        ));
    }
    let base = reference.split(['#', '?']).next().unwrap_or("");
    let pieces: Vec<String> = base
        .split([':', '/'])
        .filter(|p| !p.is_empty())
        .map(escape_segment)
        .collect();
    if pieces.is_empty() {
        return Err(refuse("it names no flake before `#` or `?`"));
    }
    Ok(format!("nix.build.flake.{}", pieces.join(".")))
}

/// What the exec namer needs to know about the session.
#[derive(Debug, Clone, Copy)]
pub struct ExecContext<'a> {
    /// The project's workspace root.
    pub workspace: &'a Path,
    /// Store paths in the closure of the dev shell this session mounted.
    pub dev_shell_paths: &'a [PathBuf],
    /// The Nix store directory, usually `/nix/store`.
    pub store_dir: &'a Path,
    /// The directories a container image shows at the top of the sandbox
    /// (`/usr`, `/bin`...), when the toolchain is an image; else empty.
    pub image_dirs: &'a [PathBuf],
}

/// The action for running `program`, by the class it belongs to:
/// - a bare name looked up on PATH: `exec.path.<name>` (`jq` → `exec.path.jq`);
/// - a path in the workspace, relative or absolute: `exec.workspace.<segments>`
///   (`./build.sh` → `exec.workspace.build%2Esh`, `./build/sh` → `exec.workspace.build.sh`);
/// - a store path in the dev shell closure: `exec.devshell.<name>.<segments>`;
/// - any other store path: `exec.nix.store.<name>.<segments>`;
/// - a path in a directory the project's container image shows:
///   `exec.image.<segments>` (`/usr/bin/gcc` → `exec.image.usr.bin.gcc`);
/// - anything Chock will not resolve lexically (`..`, a path outside both the
///   workspace and the store, an empty or control-character name): `exec.unparsed`.
pub fn exec_program(program: &str, ctx: &ExecContext<'_>) -> String {
    const UNPARSED: &str = "exec.unparsed";
    if program.is_empty() || program.chars().any(char::is_control) {
        return UNPARSED.into();
    }
    if !program.contains('/') {
        return format!("exec.path.{}", escape_segment(program));
    }
    let Some(parts) = lexical_parts(Path::new(program)) else {
        return UNPARSED.into();
    };
    let path = Path::new(program);
    if path.is_relative() {
        return segments_name("exec.workspace", &parts);
    }
    if let Some(rest) = strip_parts(&parts, ctx.workspace) {
        return segments_name("exec.workspace", rest);
    }
    if ctx
        .image_dirs
        .iter()
        .any(|dir| strip_parts(&parts, dir).is_some())
    {
        return segments_name("exec.image", &parts);
    }
    if let Some(rest) = strip_parts(&parts, ctx.store_dir) {
        let Some(store_name) = rest.first() else {
            return UNPARSED.into();
        };
        let store_path = ctx.store_dir.join(store_name);
        let class = if ctx.dev_shell_paths.contains(&store_path) {
            "exec.devshell"
        } else {
            "exec.nix.store"
        };
        return segments_name(class, rest);
    }
    UNPARSED.into()
}

/// The normal components of a path, or `None` when it holds `..` (which
/// Chock refuses to resolve lexically).
fn lexical_parts(path: &Path) -> Option<Vec<String>> {
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str()?.to_string()),
            Component::ParentDir | Component::Prefix(_) => return None,
            Component::RootDir | Component::CurDir => {}
        }
    }
    Some(parts)
}

fn strip_parts<'p>(parts: &'p [String], base: &Path) -> Option<&'p [String]> {
    let base = lexical_parts(base)?;
    if base.is_empty() || parts.len() <= base.len() {
        return None;
    }
    let (head, rest) = parts.split_at(base.len());
    (head == base.as_slice()).then_some(rest)
}

fn segments_name(class: &str, parts: &[String]) -> String {
    if parts.is_empty() {
        return "exec.unparsed".into();
    }
    let escaped: Vec<String> = parts.iter().map(|p| escape_segment(p)).collect();
    format!("{class}.{}", escaped.join("."))
}

/// Checks that `value` can be one label of an action name: not empty, no
/// `.`, `*`, whitespace or control character.
pub fn label(value: &str) -> Result<&str, NameError> {
    let refuse = |why| NameError::Label {
        value: value.to_string(),
        why,
    };
    if value.is_empty() {
        return Err(refuse("it is empty"));
    }
    if value.contains('.') {
        return Err(refuse("it holds a `.`"));
    }
    if value.contains('*') {
        return Err(refuse("it holds a `*`"));
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(refuse("it holds a space or a control character"));
    }
    Ok(value)
}

/// An ordinary tool call: `call.<tool>`.
pub fn call(tool: &str) -> Result<String, NameError> {
    Ok(format!("call.{}", label(tool)?))
}

/// Starting a language server, after the last part of its program path:
/// `/nix/store/aaa/bin/zls` → `lsp.zls`.
pub fn lsp(program: &str) -> Result<String, NameError> {
    let last = program.rsplit('/').next().unwrap_or(program);
    Ok(format!("lsp.{}", label(last)?))
}

/// A provider instance, read with the ceiling reading for `model.select`.
pub fn provider(instance: &str) -> Result<String, NameError> {
    Ok(format!("provider.{}", label(instance)?))
}

/// Putting one query to the operator's search engine: one name, no host.
pub const WEB_SEARCH: &str = "web.search";

/// Reading one skill of `layer` (`operator`, `project`, `packaged`): the
/// name is the layer, never the skill, so no name a package chose enters
/// the action namespace.
pub fn skill_read(layer: &str) -> String {
    format!("skill.read.{layer}")
}

/// One model at a provider instance; the model id is escaped (ids like
/// `gpt-4.1` hold dots).
pub fn provider_model(instance: &str, model: &str) -> Result<String, NameError> {
    if model.is_empty() {
        return Err(NameError::Label {
            value: model.into(),
            why: "it is empty",
        });
    }
    Ok(format!(
        "provider.{}.{}",
        label(instance)?,
        escape_segment(model)
    ))
}

/// A tool of an MCP server: `mcp.<server>.tool.<tool>`.
pub fn mcp_tool(server: &str, tool: &str) -> Result<String, NameError> {
    Ok(format!("mcp.{}.tool.{}", label(server)?, label(tool)?))
}

/// The host a remote MCP server is reached at: `mcp.<server>.host.<reversed>`.
pub fn mcp_host(server: &str, host: &str) -> Result<String, NameError> {
    Ok(format!(
        "mcp.{}.host.{}",
        label(server)?,
        reversed_host(host)?
    ))
}

/// Whether a command server has a network: `mcp.<server>.network`.
pub fn mcp_network(server: &str) -> Result<String, NameError> {
    Ok(format!("mcp.{}.network", label(server)?))
}

/// A tool of a plugin: `plugin.<plugin>.tool.<tool>`.
pub fn plugin_tool(plugin: &str, tool: &str) -> Result<String, NameError> {
    Ok(format!("plugin.{}.tool.{}", label(plugin)?, label(tool)?))
}

/// A secret a project's secrets block names: letters, digits and `_` only.
pub fn secret_use(name: &str) -> Result<String, NameError> {
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(NameError::Label {
            value: name.into(),
            why: "a secret's name holds only letters, digits and `_`",
        });
    }
    Ok(format!("secret.use.{name}"))
}

/// A USB device by identity: `device.usb.<vendor>.<product>`, lower-case hex.
pub fn device_usb(vendor: u16, product: u16) -> String {
    format!("device.usb.{vendor:04x}.{product:04x}")
}

/// A serial adapter with a serial number of its own: `device.tty.serial.<serial>`.
pub fn device_tty_serial(serial: &str) -> Result<String, NameError> {
    Ok(format!("device.tty.serial.{}", label(serial)?))
}

/// A serial adapter without one: `device.tty.<vendor>.<product>`.
pub fn device_tty(vendor: u16, product: u16) -> String {
    format!("device.tty.{vendor:04x}.{product:04x}")
}

/// A git subcommand the shim classified: `git.<subcommand>`.
pub fn git(subcommand: &str) -> Result<String, NameError> {
    Ok(format!("git.{}", label(subcommand)?))
}

/// Every first label an action name has: those the namers above make, the
/// shipped defaults' and the acts Chock asks about by a fixed name
/// (`workspace.apply`, `sandbox.jit`, `policy.widen`, `model.select`,
/// `file.write`, `style.parse`, `control.write.*`). A rule whose action
/// starts with anything else can never match (`exce.path.rm`), so the
/// readers refuse it.
pub const NAMESPACES: &[&str] = &[
    "call",
    "control",
    "device",
    "exec",
    "file",
    "git",
    "lsp",
    "mcp",
    "model",
    "net",
    "nix",
    "plugin",
    "policy",
    "provider",
    "sandbox",
    "secret",
    "skill",
    "style",
    "web",
    "workspace",
];

/// The first label of an action name or pattern: `exec` of `exec.path.*`.
pub fn namespace(action: &str) -> &str {
    action.split('.').next().unwrap_or(action)
}

/// Whether `action` (a name or a pattern) starts with a namespace Chock names.
pub fn known_namespace(action: &str) -> bool {
    NAMESPACES.contains(&namespace(action))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_chock_makes_is_in_a_known_namespace() {
        let image = ExecContext {
            workspace: Path::new("/p"),
            dev_shell_paths: &[],
            store_dir: Path::new("/nix/store"),
            image_dirs: &[],
        };
        let made = [
            net_fetch("a.org").unwrap(),
            net_connect("a.org", 1).unwrap(),
            nix_net(Phase::Eval, "a.org", 1).unwrap(),
            nix_net_either("a.org", 1).unwrap(),
            net_serve(1),
            nix_build(&["x"]).unwrap(),
            nix_build_flake("github:a/b").unwrap(),
            exec_program("jq", &image),
            exec_program("a/../b", &image),
            call("x").unwrap(),
            lsp("zls").unwrap(),
            provider("x").unwrap(),
            provider_model("x", "y").unwrap(),
            mcp_tool("x", "y").unwrap(),
            mcp_host("x", "a.org").unwrap(),
            mcp_network("x").unwrap(),
            plugin_tool("x", "y").unwrap(),
            secret_use("X").unwrap(),
            device_usb(1, 2),
            device_tty(1, 2),
            device_tty_serial("x").unwrap(),
            git("push").unwrap(),
            skill_read("project"),
            WEB_SEARCH.to_string(),
        ];
        for name in made.iter().map(String::as_str) {
            assert!(known_namespace(name), "{name}");
        }
        for fixed in [
            "workspace.apply",
            "workspace.integrate",
            "sandbox.jit",
            "policy.widen",
            "model.select",
            "file.write",
            "style.parse",
            "web.search",
        ] {
            assert!(known_namespace(fixed), "{fixed}");
        }
        assert!(!known_namespace("exce.path.rm"));
        assert_eq!(namespace("exec"), "exec");
    }

    #[test]
    fn hosts_are_reversed_and_lower_cased() {
        assert_eq!(
            reversed_host("docs.ziglang.org").as_deref(),
            Ok("org.ziglang.docs")
        );
        assert_eq!(
            reversed_host("API.GitHub.com").as_deref(),
            Ok("com.github.api")
        );
        assert_eq!(reversed_host("localhost").as_deref(), Ok("localhost"));
        assert_eq!(reversed_host("10.0.0.1").as_deref(), Ok("1.0.0.10"));
        assert_eq!(
            net_fetch("docs.ziglang.org").as_deref(),
            Ok("net.fetch.org.ziglang.docs")
        );
        assert_eq!(
            net_connect("api.github.com", 443).as_deref(),
            Ok("net.connect.com.github.api.443")
        );
        assert_eq!(
            nix_net(Phase::Build, "ftpmirror.gnu.org", 443).as_deref(),
            Ok("nix.net.build.org.gnu.ftpmirror.443")
        );
        assert_eq!(
            nix_net(Phase::Eval, "github.com", 443).as_deref(),
            Ok("nix.net.eval.com.github.443")
        );
        assert_eq!(
            nix_net_either("github.com", 443).as_deref(),
            Ok("nix.net.com.github.443")
        );
    }

    #[test]
    fn hosts_that_cannot_be_named_are_refused() {
        for bad in [
            "",
            "a..b",
            ".a.b",
            "a.b.",
            "*.github.com",
            "git hub.com",
            "a/b",
            "bücher.de",
            "[::1]",
            "a:80",
        ] {
            assert!(reversed_host(bad).is_err(), "{bad:?}");
            assert!(net_fetch(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn segments_escape_dots_and_percents() {
        assert_eq!(escape_segment("a.b%c"), "a%2Eb%25c");
        assert_eq!(
            nix_build(&["packages", "x86_64-linux", "default"]).as_deref(),
            Ok("nix.build.packages.x86_64-linux.default")
        );
        assert_eq!(
            nix_build(&["python3.12", "50%"]).as_deref(),
            Ok("nix.build.python3%2E12.50%25")
        );
        assert!(nix_build(&[]).is_err());
        assert!(nix_build(&["a", ""]).is_err());
        assert!(nix_build(&["a"; 17]).is_err());
        assert!(nix_build(&["a"; 16]).is_ok());
    }

    #[test]
    fn flake_references_name_their_source() {
        assert_eq!(
            nix_build_flake("github:NixOS/nixpkgs#hello").as_deref(),
            Ok("nix.build.flake.github.NixOS.nixpkgs")
        );
        assert_eq!(
            nix_build_flake("git+https://example.com/a.git?ref=main").as_deref(),
            Ok("nix.build.flake.git+https.example%2Ecom.a%2Egit")
        );
        assert!(nix_build_flake("").is_err());
        assert!(nix_build_flake("-x").is_err());
        assert!(nix_build_flake("a b").is_err());
        assert!(nix_build_flake("#x").is_err());
    }

    #[test]
    fn programs_are_named_by_class_as_the_reference_shows() {
        let dev = PathBuf::from("/nix/store/dev-zig");
        let ctx = ExecContext {
            workspace: Path::new("/home/u/proj"),
            dev_shell_paths: std::slice::from_ref(&dev),
            image_dirs: &[],
            store_dir: Path::new("/nix/store"),
        };
        let name = |p: &str| exec_program(p, &ctx);
        assert_eq!(
            name("/nix/store/dev-zig/bin/zig"),
            "exec.devshell.dev-zig.bin.zig"
        );
        assert_eq!(
            name("/nix/store/abc-jq/bin/jq"),
            "exec.nix.store.abc-jq.bin.jq"
        );
        assert_eq!(name("./build.sh"), "exec.workspace.build%2Esh");
        assert_eq!(name("/home/u/proj/build.sh"), "exec.workspace.build%2Esh");
        assert_eq!(name("build.sh"), "exec.path.build%2Esh");
        assert_eq!(name("./build/sh"), "exec.workspace.build.sh");
        assert_eq!(name("jq"), "exec.path.jq");
        assert_eq!(name("a/../b"), "exec.unparsed");
        assert_eq!(name("/usr/bin/env"), "exec.unparsed");
        assert_eq!(name("/nix/store"), "exec.unparsed");
        assert_eq!(name("/home/u/project2/x"), "exec.unparsed");
        assert_eq!(name(""), "exec.unparsed");
        assert_eq!(
            name("/nix/store/abc-jq-1.7/bin/jq"),
            "exec.nix.store.abc-jq-1%2E7.bin.jq"
        );
        // With a container image as the toolchain, what it shows is `exec.image.*`.
        let image_dirs = [PathBuf::from("/usr"), PathBuf::from("/bin")];
        let image = ExecContext {
            image_dirs: &image_dirs,
            dev_shell_paths: &[],
            ..ctx
        };
        assert_eq!(
            exec_program("/usr/bin/gcc-12", &image),
            "exec.image.usr.bin.gcc-12"
        );
        assert_eq!(exec_program("/bin/sh", &image), "exec.image.bin.sh");
        assert_eq!(exec_program("/usr", &image), "exec.unparsed");
        assert_eq!(exec_program("/opt/x", &image), "exec.unparsed");
        assert_eq!(exec_program("/usr/../etc/x", &image), "exec.unparsed");
        assert_eq!(exec_program("/home/u/proj/x", &image), "exec.workspace.x");
    }

    #[test]
    fn the_small_namers() {
        assert_eq!(call("write_file").as_deref(), Ok("call.write_file"));
        assert!(call("a.b").is_err());
        assert_eq!(lsp("/nix/store/aaa/bin/zls").as_deref(), Ok("lsp.zls"));
        assert!(lsp("/bin/").is_err());
        assert_eq!(
            provider_model("work", "gpt-4.1").as_deref(),
            Ok("provider.work.gpt-4%2E1")
        );
        assert_eq!(
            mcp_tool("time", "get_current_time").as_deref(),
            Ok("mcp.time.tool.get_current_time")
        );
        assert_eq!(
            mcp_host("notion", "mcp.notion.com").as_deref(),
            Ok("mcp.notion.host.com.notion.mcp")
        );
        assert_eq!(
            plugin_tool("hello", "greet").as_deref(),
            Ok("plugin.hello.tool.greet")
        );
        assert_eq!(secret_use("API_KEY").as_deref(), Ok("secret.use.API_KEY"));
        assert!(secret_use("a.b").is_err());
        assert_eq!(device_usb(0x1d50, 0x6018), "device.usb.1d50.6018");
        assert_eq!(device_tty(0x0403, 0x6001), "device.tty.0403.6001");
        assert_eq!(
            device_tty_serial("A10K").as_deref(),
            Ok("device.tty.serial.A10K")
        );
        assert_eq!(git("push").as_deref(), Ok("git.push"));
        assert_eq!(net_serve(3000), "net.serve.3000");
    }
}
