//! From a tool call to the Chock action names it is decided under.
//!
//! Every name comes from `chock_policy::names`, so an act is spelled the same
//! whether an agent's hook, Chock's tool server or the sandbox asks about it;
//! a shell command is read and named by chock-shell, as `chock exec` and
//! `run_command` read theirs. A call that holds several acts (a shell
//! command with three programs, a patch touching five files) gets one name
//! per act; the answer is their minimum. An act that cannot be named is
//! refused, never guessed at.

use std::path::{Path, PathBuf};

use chock_policy::{control, names};
use chock_shell::naming::{self as shell_naming, FILE_WRITE, WRITE_FILE};

use crate::agent::Agent;
use crate::payload::{Request, ToolCall};

/// The act name for a web search.
pub const WEB_SEARCH: &str = "web.search";

/// One act of a tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    /// An action the policy answers, and what it is about (a program, a
    /// path, a host), by name only.
    Act {
        action: String,
        subject: Option<String>,
    },
    /// An act Chock cannot give a name: it is refused.
    Unnameable { subject: String, why: String },
}

impl Named {
    fn act(action: impl Into<String>, subject: Option<String>) -> Named {
        Named::Act {
            action: action.into(),
            subject,
        }
    }
}

fn named_or_refused(result: Result<String, names::NameError>, subject: Option<String>) -> Named {
    match result {
        Ok(action) => Named::act(action, subject),
        Err(error) => Named::Unnameable {
            subject: subject.unwrap_or_default(),
            why: error.to_string(),
        },
    }
}

/// Where the call happens: chock-shell's place of a command, which for a
/// hook is the host (`confined: false`, every write an act) with no dev
/// shell known.
pub use chock_shell::naming::Place;

/// Names every act of one call, in order, without repeats.
pub fn name(call: &ToolCall, agent: Agent, place: &Place<'_>) -> Vec<Named> {
    let mut out = Vec::new();
    match &call.request {
        Request::Shell { command, dir } => {
            let cwd = dir
                .clone()
                .or_else(|| call.cwd.clone())
                .unwrap_or_else(|| place.project.to_path_buf());
            out.extend(
                shell_naming::name_script(command, &cwd, place)
                    .into_iter()
                    .map(|n| shell_act(n, place)),
            );
        }
        Request::Read { paths } => out.push(Named::act("call.read_file", subject_of(paths))),
        Request::Write { paths } => file_acts("call.write_file", paths, place, &mut out),
        Request::Edit { paths } => file_acts("call.edit_file", paths, place, &mut out),
        Request::Glob => out.push(Named::act("call.glob", None)),
        Request::Grep => out.push(Named::act("call.grep", None)),
        Request::List => out.push(Named::act("call.list_directory", None)),
        Request::Fetch { urls } => {
            if urls.is_empty() {
                out.push(Named::Unnameable {
                    subject: call.tool.clone(),
                    why: "the fetch names no http or https URL Chock can read".to_owned(),
                });
            }
            for url in urls {
                out.push(fetch(url));
            }
        }
        Request::Search => out.push(Named::act(WEB_SEARCH, None)),
        Request::Mcp {
            server,
            tool,
            endpoint,
        } => {
            if let Some(named) = mcp(
                agent,
                call,
                server.as_deref(),
                tool,
                endpoint.as_deref(),
                place,
            ) {
                out.push(named);
            }
        }
        Request::Memory => out.push(named_or_refused(names::call("write_memory"), None)),
        Request::Conversation => {}
        Request::Other => {
            out.push(named_or_refused(
                names::call(&call.tool),
                Some(call.tool.clone()),
            ));
        }
    }
    let mut unique = Vec::with_capacity(out.len());
    for named in out {
        if !unique.contains(&named) {
            unique.push(named);
        }
    }
    unique
}

fn subject_of(paths: &[PathBuf]) -> Option<String> {
    match paths {
        [] => None,
        [one] => Some(one.display().to_string()),
        many => Some(
            many.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        ),
    }
}

/// A shell command's act: a write chock-shell reports the path of is
/// `control.write.<kind>` when that path is a control input.
fn shell_act(named: shell_naming::Named, place: &Place<'_>) -> Named {
    let control = match (&named.action, &named.subject) {
        (action, Some(path)) if action == WRITE_FILE => control_write(Path::new(path), place),
        _ => None,
    };
    match control {
        Some(action) => Named::act(action, named.subject),
        None => Named::act(named.action, named.subject),
    }
}

/// `control.write.<kind>` when `path` (absolute) is, or lies beneath, a
/// control input of the project or one of the person's own (their
/// `config.zon`, an agent's user settings): judged on where it leads on
/// disk, links in the part that exists followed (`src/../.claude/x`,
/// `notes/link/x` with `link -> ../.claude`), as the agent's write would
/// follow them.
fn control_write(path: &Path, place: &Place<'_>) -> Option<String> {
    let path = chock_shell::normalize(path);
    if !path.is_absolute() {
        return None;
    }
    let real = shell_naming::resolved(&path);
    let project = shell_naming::resolved(place.project);
    let kind = match real.strip_prefix(&project) {
        Ok(rel) => control::control_input(rel).map(|input| input.kind),
        Err(_) => control::operator_input(&real).map(|input| input.kind),
    };
    kind.map(control::control_write)
}

/// `call.write_file` or `call.edit_file` for the files, `control.write.<kind>`
/// instead for each that is a control input (an act of its own, which no
/// shipped rule answers, so it asks), and `file.write` for each one
/// outside the project (or with no path Chock can read).
fn file_acts(action: &str, paths: &[PathBuf], place: &Place<'_>, out: &mut Vec<Named>) {
    let mut ordinary = Vec::new();
    let mut controls = Vec::new();
    for path in paths {
        match control_write(path, place) {
            Some(control) => controls.push(Named::act(control, Some(path.display().to_string()))),
            None => ordinary.push(path.clone()),
        }
    }
    if paths.is_empty() {
        // Which file is not said: it may be any, a control input too.
        out.push(Named::Unnameable {
            subject: action.to_owned(),
            why: "the call names no file it writes".to_owned(),
        });
        return;
    }
    if !ordinary.is_empty() {
        out.push(Named::act(action, subject_of(&ordinary)));
    }
    out.extend(controls);
    for path in paths {
        let path = chock_shell::normalize(path);
        if !path.is_absolute() || !shell_naming::contains(place.project, &path) {
            out.push(Named::act(FILE_WRITE, Some(path.display().to_string())));
        }
    }
}

/// `net.fetch.<reversed host>` for one URL.
fn fetch(url: &str) -> Named {
    let refuse = |why: &str| Named::Unnameable {
        subject: url.to_owned(),
        why: why.to_owned(),
    };
    let Some((scheme, rest)) = url.split_once("://") else {
        return refuse("it is not an http or https URL");
    };
    if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") {
        return refuse("it is not an http or https URL");
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or(authority);
    if host_port.starts_with('[') {
        return refuse("Chock does not name hosts written as IPv6 addresses");
    }
    let host = host_port.split(':').next().unwrap_or(host_port);
    named_or_refused(names::net_fetch(host), Some(host.to_owned()))
}

fn mcp(
    agent: Agent,
    call: &ToolCall,
    server: Option<&str>,
    tool: &str,
    endpoint: Option<&str>,
    place: &Place<'_>,
) -> Option<Named> {
    let subject = |server: &str| Some(format!("{server}/{tool}"));
    if let Some(server) = server {
        return Some(named_or_refused(
            names::mcp_tool(server, tool),
            subject(server),
        ));
    }
    if let Some(endpoint) = endpoint {
        let files = crate::cursor_mcp::config_files(place.project, place.home);
        return Some(match crate::cursor_mcp::server_for(endpoint, &files) {
            Some(server) => named_or_refused(names::mcp_tool(&server, tool), subject(&server)),
            None => Named::Unnameable {
                subject: format!("{endpoint} ({tool})"),
                why: "Chock could not tell which MCP server this is: give it a name in .cursor/mcp.json"
                    .to_owned(),
            },
        });
    }
    if agent == Agent::Cursor && call.event == "preToolUse" {
        // Cursor's preToolUse does not name the server; the same call comes
        // through beforeMCPExecution, which `chock sync` also wires, with it.
        return None;
    }
    Some(Named::Unnameable {
        subject: tool.to_owned(),
        why: "the payload does not say which MCP server the tool belongs to".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place() -> Place<'static> {
        Place::on_host(
            Path::new("/work/project"),
            Some(Path::new("/home/me")),
            false,
            Path::new("/nix/store"),
        )
    }

    fn call(request: Request) -> ToolCall {
        ToolCall {
            event: "PreToolUse".into(),
            tool: "Bash".into(),
            request,
            cwd: Some("/work/project".into()),
            model: None,
        }
    }

    fn actions(request: Request) -> Vec<String> {
        name(&call(request), Agent::Claude, &place())
            .into_iter()
            .map(|n| match n {
                Named::Act { action, .. } => action,
                Named::Unnameable { why, .. } => format!("refused: {why}"),
            })
            .collect()
    }

    fn shell(command: &str) -> Vec<String> {
        actions(Request::Shell {
            command: command.into(),
            dir: None,
        })
    }

    #[test]
    fn writes_outside_the_project_are_file_write() {
        // A shell command is read by chock-shell (its own tests say how).
        assert_eq!(
            shell("echo x >> ~/.bashrc"),
            vec!["call.write_file", "file.write", "exec.path.echo"]
        );
        assert_eq!(
            actions(Request::Write {
                paths: vec!["/etc/hosts".into()]
            }),
            vec!["call.write_file", "file.write"]
        );
        assert_eq!(
            actions(Request::Edit {
                paths: vec!["/work/project/src/a.rs".into()]
            }),
            vec!["call.edit_file"]
        );
        let unnamed = actions(Request::Write { paths: vec![] });
        assert!(
            unnamed.len() == 1 && unnamed[0].starts_with("refused"),
            "{unnamed:?}"
        );
    }

    #[test]
    fn a_write_to_a_control_input_is_its_own_act() {
        let project = tempfile::tempdir().expect("tempdir");
        let top = project.path().canonicalize().expect("canonical");
        std::fs::create_dir_all(top.join("src")).expect("src");
        std::os::unix::fs::symlink("../.codex", top.join("src/link")).expect("link");
        let place = Place::on_host(&top, None, false, Path::new("/nix/store"));
        let named = |request: Request| -> Vec<String> {
            name(&call(request), Agent::Codex, &place)
                .into_iter()
                .map(|n| match n {
                    Named::Act { action, .. } => action,
                    Named::Unnameable { why, .. } => format!("refused: {why}"),
                })
                .collect()
        };
        let at = |rel: &str| top.join(rel);
        assert_eq!(
            named(Request::Write {
                paths: vec![at("src/a.rs"), at("chock.lock"), at("src/link/hooks.json")]
            }),
            vec![
                "call.write_file",
                "control.write.policy",
                "control.write.agent"
            ]
        );
        assert_eq!(
            named(Request::Edit {
                paths: vec![at("src/../.envrc")]
            }),
            vec!["control.write.host"]
        );
        assert_eq!(
            named(Request::Shell {
                command: "echo x > .husky/pre-commit".into(),
                dir: Some(top.clone()),
            }),
            vec!["control.write.host", "exec.path.echo"]
        );
    }

    /// The person's own control inputs, outside any project: their
    /// agents' user settings (which hold Chock's hooks) and Chock's
    /// configuration, reached by a path or through a link in the project.
    #[test]
    fn a_write_to_the_person_s_own_control_input_is_its_own_act() {
        use chock_policy::control::{Base, base_dir};
        let home = base_dir(Base::Home).expect("HOME is set");
        let config = base_dir(Base::ConfigHome).expect("a configuration home");
        let project = tempfile::tempdir().expect("tempdir");
        let top = project.path().canonicalize().expect("canonical");
        std::os::unix::fs::symlink(home.join(".claude"), top.join("cfg")).expect("link");
        let place = Place::on_host(&top, Some(&home), false, Path::new("/nix/store"));
        let named = |request: Request| -> Vec<String> {
            name(&call(request), Agent::Claude, &place)
                .into_iter()
                .map(|n| match n {
                    Named::Act { action, .. } => action,
                    Named::Unnameable { why, .. } => format!("refused: {why}"),
                })
                .collect()
        };
        assert_eq!(
            named(Request::Write {
                paths: vec![config.join("chock/config.zon")]
            }),
            vec!["control.write.policy", "file.write"]
        );
        assert_eq!(
            named(Request::Edit {
                paths: vec![top.join("cfg/settings.json")]
            }),
            vec!["control.write.agent", "file.write"]
        );
        assert_eq!(
            named(Request::Shell {
                command: "echo x > ~/.claude.json".into(),
                dir: Some(top.clone()),
            }),
            vec!["control.write.agent", "file.write", "exec.path.echo"]
        );
        let state = base_dir(Base::ChockState).expect("a state folder");
        assert_eq!(
            named(Request::Write {
                paths: vec![state.join("overrides/0123456789abcdef")]
            }),
            vec!["control.write.policy", "file.write"]
        );
        assert_eq!(
            named(Request::Write {
                paths: vec![home.join("notes.txt")]
            }),
            vec!["call.write_file", "file.write"]
        );
    }

    #[test]
    fn fetches_are_named_by_reversed_host() {
        assert_eq!(
            actions(Request::Fetch {
                urls: vec!["https://user@docs.ziglang.org:443/x?y".into()]
            }),
            vec!["net.fetch.org.ziglang.docs"]
        );
        let refused = actions(Request::Fetch {
            urls: vec!["file:///etc/passwd".into()],
        });
        assert!(refused[0].starts_with("refused"), "{refused:?}");
    }

    #[test]
    fn mcp_tools_and_other_tools() {
        assert_eq!(
            actions(Request::Mcp {
                server: Some("github".into()),
                tool: "create_issue".into(),
                endpoint: None,
            }),
            vec!["mcp.github.tool.create_issue"]
        );
        assert_eq!(actions(Request::Search), vec!["web.search"]);
        assert_eq!(actions(Request::Conversation), Vec::<String>::new());
        assert_eq!(actions(Request::Other), vec!["call.Bash"]);
    }
}
