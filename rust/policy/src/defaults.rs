//! The shipped defaults: the whole table, in one place. They are a lower
//! class of rule, read only when no rule in the project's own `chock.zon`
//! matches the key at all, so a project rule that matches wins outright
//! however broad it is. Every row names an action, never a tool alone.
//!
//! What is deliberately absent (and so answers `ask`): `git.push`,
//! `git.clone`, `git.fetch`, `git.pull`, `git.unknown`, `exec.unparsed`,
//! `net.connect.*`, `net.fetch.*`, `net.serve.*`, `nix.build.*`, `nix.net.*`
//! (but the opaque row), `device.*`, `mcp.*`, `plugin.*`, `style.parse`,
//! `policy.widen`, `sandbox.jit`, `workspace.apply`, `control.write.*` (an
//! agent's write to a control input, `crate::control`).

use std::sync::OnceLock;

use serde::Serialize;

use crate::decision::Decision;
use crate::index::RuleSet;
use crate::pattern::Pattern;
use crate::rule::Rule;

/// One shipped row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ShippedRule {
    pub action: &'static str,
    pub decision: Decision,
}

const fn row(action: &'static str, decision: Decision) -> ShippedRule {
    ShippedRule { action, decision }
}

use Decision::{Allow, Ask};

/// The table `chock policy defaults` prints.
pub static SHIPPED: &[ShippedRule] = &[
    // The ordinary tool calls.
    row("call.read_file", Allow),
    row("call.read_image", Allow),
    row("call.list_directory", Allow),
    row("call.glob", Allow),
    row("call.grep", Allow),
    row("call.write_file", Allow),
    row("call.edit_file", Allow),
    row("call.read_guidance", Allow),
    row("call.read_memory", Allow),
    row("call.write_memory", Allow),
    row("call.provide_tool", Allow),
    row("call.nix_eval", Allow),
    // Programs, by the class they belong to.
    row("exec.devshell.*", Allow),
    row("exec.image.*", Allow),
    row("exec.nix.store.*", Ask),
    row("exec.workspace.*", Allow),
    row("exec.path.*", Allow),
    // A build whose fixed-output derivations name no URL at all.
    row("nix.net.build.opaque", Allow),
    row("lsp.*", Allow),
    row("web.search", Ask),
    row("skill.read.operator", Allow),
    row("skill.read.project", Ask),
    row("skill.read.packaged", Ask),
    row("secret.use.*", Ask),
    // git subcommands that change only the session's own workspace.
    row("git.add", Allow),
    row("git.am", Allow),
    row("git.apply", Allow),
    row("git.bisect", Allow),
    row("git.branch", Allow),
    row("git.branch.delete", Allow),
    row("git.checkout", Allow),
    row("git.cherry-pick", Allow),
    row("git.clean", Allow),
    row("git.commit", Allow),
    row("git.config", Allow),
    row("git.filter-branch", Allow),
    row("git.fsck", Allow),
    row("git.gc", Allow),
    row("git.hash-object", Allow),
    row("git.init", Allow),
    row("git.merge", Allow),
    row("git.mv", Allow),
    row("git.notes", Allow),
    row("git.prune", Allow),
    row("git.rebase", Allow),
    row("git.reflog", Allow),
    row("git.remote", Allow),
    row("git.repack", Allow),
    row("git.replace", Allow),
    row("git.reset", Allow),
    row("git.restore", Allow),
    row("git.revert", Allow),
    row("git.rm", Allow),
    row("git.stash", Allow),
    row("git.submodule", Allow),
    row("git.switch", Allow),
    row("git.symbolic-ref", Allow),
    row("git.tag", Allow),
    row("git.update-index", Allow),
    row("git.update-ref", Allow),
    row("git.worktree", Allow),
];

/// The shipped table as an indexed rule set, built once.
pub fn shipped_rules() -> &'static RuleSet {
    static SET: OnceLock<RuleSet> = OnceLock::new();
    SET.get_or_init(|| {
        RuleSet::new(
            SHIPPED
                .iter()
                .filter_map(|r| {
                    Pattern::parse(r.action)
                        .ok()
                        .map(|p| Rule::new(Some(p), r.decision))
                })
                .collect(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rule::Key;

    #[test]
    fn every_row_is_a_well_formed_action_and_none_repeats() {
        assert_eq!(shipped_rules().len(), SHIPPED.len());
        let mut seen = std::collections::HashSet::new();
        for r in SHIPPED {
            assert!(Pattern::parse(r.action).is_ok(), "{}", r.action);
            assert!(seen.insert(r.action), "{} twice", r.action);
        }
    }

    #[test]
    fn every_row_and_control_name_is_in_a_known_namespace() {
        for row in SHIPPED {
            assert!(crate::names::known_namespace(row.action), "{}", row.action);
        }
        let control = crate::control::control_write(crate::control::ControlKind::Policy);
        assert!(crate::names::known_namespace(&control), "{control}");
    }

    #[test]
    fn the_documented_rows_answer_as_documented() {
        let answer = |a: &str| shipped_rules().best(&Key::new(a)).map(|r| r.decision);
        assert_eq!(answer("call.write_file"), Some(Allow));
        assert_eq!(answer("exec.devshell.abc-zig.bin.zig"), Some(Allow));
        assert_eq!(answer("exec.image.usr.bin.gcc"), Some(Allow));
        assert_eq!(answer("exec.nix.store.abc-jq.bin.jq"), Some(Ask));
        assert_eq!(answer("nix.net.build.opaque"), Some(Allow));
        assert_eq!(answer("skill.read.operator"), Some(Allow));
        assert_eq!(answer("git.commit"), Some(Allow));
        assert_eq!(answer("lsp.zls"), Some(Allow));
        for unnamed in [
            "git.push",
            "git.clone",
            "git.fetch",
            "git.pull",
            "git.unknown",
            "exec.unparsed",
            "net.connect.com.github.443",
            "net.fetch.org.ziglang",
            "nix.build.packages",
            "nix.net.build.org.gnu.ftpmirror.443",
            "device.usb.1d50.6018",
            "mcp.time.tool.x",
            "plugin.hello.tool.greet",
            "policy.widen",
            "sandbox.jit",
            "workspace.apply",
            "call.run_command",
            "call.fetch_url",
            "style.parse",
            "net.serve.3000",
        ] {
            assert_eq!(answer(unnamed), None, "{unnamed} has no shipped row");
        }
    }

    #[test]
    fn every_default_names_an_action() {
        assert!(
            shipped_rules()
                .rules()
                .iter()
                .all(|r| r.action.is_some() && r.tool.is_none())
        );
    }
}

/// The table as a ZON document (a tuple of rules), as `chock policy defaults` prints it.
pub fn shipped_as_zon() -> String {
    chock_zon::to_string(SHIPPED).unwrap_or_default()
}

#[cfg(test)]
mod zon_tests {
    use super::*;

    #[test]
    fn the_printed_table_reads_back_as_rules() {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Row {
            action: String,
            decision: Decision,
        }
        let rows: Vec<Row> =
            chock_zon::from_str(&shipped_as_zon()).expect("the printed table is ZON");
        assert_eq!(rows.len(), SHIPPED.len());
        for (row, shipped) in rows.iter().zip(SHIPPED) {
            assert_eq!(
                (row.action.as_str(), row.decision),
                (shipped.action, shipped.decision)
            );
        }
    }
}
