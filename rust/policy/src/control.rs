//! Control inputs: every file that configures Chock, that an agent or
//! editor reads as instructions that run programs, or that runs programs on
//! the host when the person acts. This is the one list; every route takes
//! it from here:
//!
//! - the sandbox holds each one read-only in its mount tree (a missing
//!   name is held by a placeholder that lives as long as the sandboxes of
//!   the project, and is removed after them);
//! - the tool server's file tools refuse to write one in the person's
//!   project;
//! - an agent's own write through its hook is named
//!   [`control_write`] (`control.write.<kind>`), asked, never the
//!   ordinary `call.write_file` allow;
//! - the workspace apply names a change to one first, and refuses it
//!   unless the project's policy says otherwise;
//! - `chock sync` writes only the ones it owns, through descriptors.
//!
//! A reader of a project file takes its name from here ([`CHOCK_ZON`],
//! [`CHOCK_LOCK`], [`POLICIES_DIR`], [`CHOCK_DIR`], ...); a test fails when
//! one of these names is spelled anywhere else in the crates' sources.

use std::path::{Component, Path};

/// The project's rules.
pub const CHOCK_ZON: &str = "chock.zon";
/// The pins of the project's policy packages.
pub const CHOCK_LOCK: &str = "chock.lock";
/// The project's policy packages, one folder each.
pub const POLICIES_DIR: &str = ".agents/policies";
/// Chock's own per-project settings and markers (the stop marker).
pub const CHOCK_DIR: &str = ".chock";
/// The project's WebAssembly plugins, one folder each, pinned in
/// [`CHOCK_LOCK`].
pub const PLUGINS_DIR: &str = ".agents/plugins";
/// The project's skills, which agents read as instructions.
pub const SKILLS_DIR: &str = ".agents/skills";
/// The project's MCP servers, which agents start.
pub const MCP_JSON: &str = ".mcp.json";
/// The project's git directory.
pub const GIT_DIR: &str = ".git";
/// The operator's settings, beneath the configuration home.
pub const OPERATOR_CONFIG: &str = "chock/config.zon";
/// The operator's own skills, beneath the configuration home.
pub const OPERATOR_SKILLS: &str = "chock/skills";
/// The operator's own plugins, for every project, beneath the data home
/// (its `chock` folder is a control input as a whole).
pub const OPERATOR_PLUGINS: &str = "chock/plugins";

/// Why a file is a control input, which is also the last label of the
/// action an agent's write to it is asked under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ControlKind {
    /// Chock reads it as policy or configuration.
    Policy,
    /// An agent or editor reads it as instructions that run programs.
    Agent,
    /// It runs programs on the host when the person acts (git, direnv,
    /// pre-commit frameworks).
    Host,
}

impl ControlKind {
    /// The label, as in `control.write.policy`.
    pub fn label(self) -> &'static str {
        match self {
            ControlKind::Policy => "policy",
            ControlKind::Agent => "agent",
            ControlKind::Host => "host",
        }
    }
}

/// Whether a control input is a file or a folder (everything beneath it
/// counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlShape {
    File,
    Dir,
}

/// One control input of a project, relative to its top.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControlInput {
    /// Relative to the project's top, `/`-separated.
    pub path: &'static str,
    pub shape: ControlShape,
    pub kind: ControlKind,
    /// Who reads it, for the person and the docs.
    pub read_by: &'static str,
}

const fn input(
    path: &'static str,
    shape: ControlShape,
    kind: ControlKind,
    read_by: &'static str,
) -> ControlInput {
    ControlInput {
        path,
        shape,
        kind,
        read_by,
    }
}

use ControlKind::{Agent, Host, Policy};
use ControlShape::{Dir, File};

/// Every control input of a project. `.git` is one as a whole for the file
/// tools, the hook and the apply; the sandbox holds only what git runs or
/// reads there (its hooks and config) read-only, so `git commit` still
/// works inside.
#[rustfmt::skip]
pub const CONTROL_INPUTS: &[ControlInput] = &[
    input(CHOCK_ZON, File, Policy, "Chock: the project's rules"),
    input(CHOCK_LOCK, File, Policy, "Chock: the pins of policy packages"),
    input(POLICIES_DIR, Dir, Policy, "Chock: policy packages' rules and guards"),
    input(CHOCK_DIR, Dir, Policy, "Chock: per-project settings and markers"),
    input(PLUGINS_DIR, Dir, Policy, "Chock: WebAssembly plugins, their tools offered to sessions"),
    input(SKILLS_DIR, Dir, Agent, "agents and Chock: the project's skills, read as instructions"),
    input(".claude", Dir, Agent, "Claude Code: hooks, settings, commands"),
    input(".codex", Dir, Agent, "Codex: hooks and settings"),
    input(".gemini", Dir, Agent, "Gemini CLI: hooks and settings"),
    input(".cursor", Dir, Agent, "Cursor: hooks, rules and MCP servers"),
    input(".vscode", Dir, Agent, "VS Code: tasks and settings that run programs"),
    input(".idea", Dir, Agent, "JetBrains IDEs: run configurations"),
    input(MCP_JSON, File, Agent, "agents: the project's MCP servers"),
    input(GIT_DIR, Dir, Host, "git: hooks and config it runs"),
    input(".envrc", File, Host, "direnv: runs it on entering the folder"),
    input(".husky", Dir, Host, "husky: git hooks"),
    input(".pre-commit-config.yaml", File, Host, "pre-commit: git hooks"),
    input("lefthook.yml", File, Host, "lefthook: git hooks"),
    input("lefthook.yaml", File, Host, "lefthook: git hooks"),
    input(".lefthook.yml", File, Host, "lefthook: git hooks"),
    input(".lefthook.yaml", File, Host, "lefthook: git hooks"),
];

/// One control input of the person's own, outside any project: where it
/// lies beneath a folder of the environment's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OperatorInput {
    /// The folder it lies beneath.
    pub base: Base,
    /// Relative to that folder, `/`-separated.
    pub path: &'static str,
    pub shape: ControlShape,
    pub kind: ControlKind,
    pub read_by: &'static str,
}

/// The folders the person's own control inputs lie beneath.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base {
    /// `$HOME`.
    Home,
    /// `$XDG_CONFIG_HOME`, else `~/.config`.
    ConfigHome,
    /// `$XDG_DATA_HOME`, else `~/.local/share`.
    DataHome,
    /// `/`: the machine's.
    Root,
    /// Chock's state folder ([`state_dir_from`]): the log, its keys, a
    /// person's stops and one-time yeses, sessions' records.
    ChockState,
}

const fn operator(
    base: Base,
    path: &'static str,
    shape: ControlShape,
    kind: ControlKind,
    read_by: &'static str,
) -> OperatorInput {
    OperatorInput {
        base,
        path,
        shape,
        kind,
        read_by,
    }
}

/// Every control input of the person's, outside a project: Chock's own
/// settings, skills and organisation bundles, and the agents' user-wide
/// settings that hold Chock's hooks. No sandbox shows them; an agent's own
/// write to one through its hook is `control.write.<kind>`, as a
/// project's is.
#[rustfmt::skip]
pub const OPERATOR_INPUTS: &[OperatorInput] = &[
    operator(Base::ConfigHome, "chock", Dir, Policy, "Chock: the operator's config.zon and skills"),
    operator(Base::DataHome, "chock", Dir, Policy, "Chock: organisation bundles and compiled policies"),
    operator(Base::Root, "etc/chock", Dir, Policy, "Chock: the machine's organisation bundle"),
    operator(Base::ChockState, "log", Dir, Policy, "Chock: the decision log, its checkpoint, sinks' cursors, approval sockets"),
    operator(Base::ChockState, "keys", Dir, Policy, "Chock: the log's signing key"),
    operator(Base::ChockState, "overrides", Dir, Policy, "Chock: a person's one-time yes to a policy's refusal"),
    operator(Base::ChockState, "stop", File, Policy, "Chock: a person's stop for every project"),
    operator(Base::ChockState, "sessions", Dir, Policy, "Chock: each session's hash-chained record"),
    operator(Base::Home, ".claude", Dir, Agent, "Claude Code: user hooks and settings"),
    operator(Base::Home, ".claude.json", File, Agent, "Claude Code: user MCP servers"),
    operator(Base::Home, ".codex", Dir, Agent, "Codex: user hooks and settings"),
    operator(Base::Home, ".gemini", Dir, Agent, "Gemini CLI: user hooks and settings"),
    operator(Base::Home, ".cursor", Dir, Agent, "Cursor: user hooks and MCP servers"),
];

/// Where the environment puts each base folder, as Chock's readers find
/// them; `None` for one it does not say.
pub fn base_dir(base: Base) -> Option<std::path::PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    match base {
        Base::Home => var("HOME"),
        Base::ConfigHome => {
            var("XDG_CONFIG_HOME").or_else(|| var("HOME").map(|h| h.join(".config")))
        }
        Base::DataHome => {
            var("XDG_DATA_HOME").or_else(|| var("HOME").map(|h| h.join(".local/share")))
        }
        Base::Root => Some(std::path::PathBuf::from("/")),
        Base::ChockState => state_dir_from(|name| std::env::var_os(name)),
    }
}

/// Chock's state folder as `var` says: `$CHOCK_STATE_DIR`, else
/// `$XDG_STATE_HOME/chock`, else `~/.local/state/chock`; empty and
/// relative values are ignored, as the XDG base directory spec asks.
/// `None` when none of them is set.
pub fn state_dir_from(
    var: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Option<std::path::PathBuf> {
    let absolute = |name: &str| {
        var(name)
            .map(std::path::PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    absolute("CHOCK_STATE_DIR")
        .or_else(|| absolute("XDG_STATE_HOME").map(|state| state.join("chock")))
        .or_else(|| absolute("HOME").map(|home| home.join(".local/state/chock")))
}

/// The person's control input the absolute path `path` is, or lies
/// beneath (compared by its parts, as it is given: resolve links first).
pub fn operator_input(path: &Path) -> Option<&'static OperatorInput> {
    // A base reached through a link (`/home` a link elsewhere) is compared
    // where it leads, as the path is.
    operator_input_under(path, |base| {
        base_dir(base).map(|dir| std::fs::canonicalize(&dir).unwrap_or(dir))
    })
}

fn operator_input_under(
    path: &Path,
    base_dir: impl Fn(Base) -> Option<std::path::PathBuf>,
) -> Option<&'static OperatorInput> {
    OPERATOR_INPUTS.iter().find(|input| {
        base_dir(input.base).is_some_and(|base| {
            let at = base.join(input.path);
            match input.shape {
                ControlShape::Dir => path.starts_with(&at),
                ControlShape::File => path == at,
            }
        })
    })
}

/// The control input `rel` (relative to the project's top) is, or lies
/// beneath. A path is compared by its normal parts, so `./.claude/x` and
/// `.claude//x` are `.claude`; a path with `..` in it is treated as a
/// control input of the [`Policy`] kind, since what it names cannot be told
/// from the string (resolve it first).
pub fn control_input(rel: &Path) -> Option<&'static ControlInput> {
    let mut parts = Vec::new();
    for part in rel.components() {
        match part {
            Component::Normal(name) => parts.push(name),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) | Component::ParentDir => {
                return Some(&CONTROL_INPUTS[0]);
            }
        }
    }
    CONTROL_INPUTS.iter().find(|input| {
        let own: Vec<&str> = input.path.split('/').collect();
        parts.len() >= own.len() && own.iter().zip(&parts).all(|(a, b)| b.to_str() == Some(*a))
    })
}

/// Whether `rel` (relative to the project's top) is, or lies beneath, a
/// control input.
pub fn is_control_input(rel: &Path) -> bool {
    control_input(rel).is_some()
}

/// The action an agent's write to a control input of `kind` is decided
/// under: `control.write.<kind>`. No shipped rule answers it, so it asks.
pub fn control_write(kind: ControlKind) -> String {
    format!("control.write.{}", kind.label())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_at_and_beneath_each_input() {
        for input in CONTROL_INPUTS {
            let at = Path::new(input.path);
            assert_eq!(control_input(at), Some(input), "{}", input.path);
            let beneath = at.join("x/y");
            assert_eq!(control_input(&beneath), Some(input), "{}", input.path);
        }
        assert_eq!(
            control_input(Path::new("./.agents//policies/evil/manifest.zon")).map(|i| i.path),
            Some(POLICIES_DIR)
        );
        let skill = control_input(Path::new(".agents/skills/deploy/SKILL.md"));
        assert_eq!(skill.map(|i| (i.path, i.kind)), Some((SKILLS_DIR, Agent)));
    }

    #[test]
    fn leaves_ordinary_paths_alone() {
        for rel in [
            "src/main.rs",
            "chock.zon.bak",
            ".agents",
            ".agents/skillsx",
            ".agents/other/x",
            ".claudex",
            "docs/.claude",
            "README.md",
        ] {
            assert_eq!(control_input(Path::new(rel)), None, "{rel}");
        }
    }

    #[test]
    fn the_person_s_own_inputs_are_named_beneath_their_folders() {
        let bases = |base: Base| {
            Some(std::path::PathBuf::from(match base {
                Base::Home => "/home/p",
                Base::ConfigHome => "/home/p/.config",
                Base::DataHome => "/home/p/.local/share",
                Base::Root => "/",
                Base::ChockState => "/home/p/.local/state/chock",
            }))
        };
        let named =
            |path: &str| operator_input_under(Path::new(path), bases).map(|i| (i.path, i.kind));
        assert_eq!(
            named("/home/p/.config/chock/config.zon"),
            Some(("chock", Policy))
        );
        assert_eq!(
            named("/home/p/.config/chock/skills/a/SKILL.md"),
            Some(("chock", Policy))
        );
        assert_eq!(
            named("/home/p/.local/share/chock/org-policy.zon"),
            Some(("chock", Policy))
        );
        assert_eq!(
            named("/etc/chock/org-policy.zon"),
            Some(("etc/chock", Policy))
        );
        assert_eq!(
            named("/home/p/.claude/settings.json"),
            Some((".claude", Agent))
        );
        assert_eq!(named("/home/p/.claude.json"), Some((".claude.json", Agent)));
        for state in [
            "log/decisions.jsonl",
            "keys/checkpoint.key",
            "overrides/0a",
            "stop",
            "sessions/s/log",
        ] {
            let path = format!("/home/p/.local/state/chock/{state}");
            assert_eq!(named(&path).map(|(_, kind)| kind), Some(Policy), "{state}");
        }
        for ordinary in [
            "/home/p/.local/state/chock/workspaces/w/tree/src/main.rs",
            "/home/p/.local/state/chock/stopped",
            "/home/p/.claude.json.bak",
            "/home/p/.config/chockx/a",
            "/home/p/notes.txt",
            "/etc/passwd",
        ] {
            assert_eq!(named(ordinary), None, "{ordinary}");
        }
    }

    #[test]
    fn a_path_that_climbs_is_held() {
        assert!(is_control_input(Path::new("src/../chock.zon")));
        assert!(is_control_input(Path::new("/etc/passwd")));
    }

    #[test]
    fn a_write_is_its_own_action() {
        assert_eq!(control_write(ControlKind::Policy), "control.write.policy");
        assert_eq!(control_write(ControlKind::Host), "control.write.host");
    }

    /// Every reader takes a control input's name from this module: the
    /// names are spelled nowhere else in the crates' own sources (tests
    /// and fixtures aside), so a new reader cannot open one this list does
    /// not hold.
    #[test]
    fn no_reader_spells_a_control_input_itself() {
        let rust = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let spelled: Vec<String> = [
            CHOCK_ZON,
            CHOCK_LOCK,
            POLICIES_DIR,
            PLUGINS_DIR,
            CHOCK_DIR,
            SKILLS_DIR,
            MCP_JSON,
        ]
        .iter()
        .map(|name| format!("\"{name}\""))
        .collect();
        let mut found = Vec::new();
        for crate_dir in std::fs::read_dir(&rust).expect("the crates") {
            let src = crate_dir.expect("a crate").path().join("src");
            scan(&src, &spelled, &mut found);
        }
        assert!(
            found.is_empty(),
            "control inputs spelled outside rust/policy/src/control.rs (take the constant from there): {found:#?}"
        );
    }

    fn scan(dir: &Path, spelled: &[String], found: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n == "tests") {
                    continue;
                }
                scan(&path, spelled, found);
            } else if path.extension().is_some_and(|e| e == "rs")
                && !path.ends_with("policy/src/control.rs")
            {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                let code = text.split("#[cfg(test)]").next().unwrap_or("");
                for (n, line) in code.lines().enumerate() {
                    let line_code = line.split("//").next().unwrap_or("");
                    if spelled.iter().any(|s| line_code.contains(s.as_str())) {
                        found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                    }
                }
            }
        }
    }
}
