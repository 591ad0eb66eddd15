//! git subcommands that reach another host and that no act carries out:
//! `git clone`, `git fetch` and `git pull` are asked about like every other
//! `git.*` action, and even with a yes they do not run, because a command in
//! the sandbox has no network to reach a remote with. The agent is told
//! what is missing rather than only that it was refused.

use chock_shell::naming::Named;

/// The subcommands that are asked and never carried out.
const NOT_CARRIED_OUT: [&str; 3] = ["git.clone", "git.fetch", "git.pull"];

/// The sentence for a command that holds one of them, once its acts were
/// allowed; `None` when it holds none.
pub fn not_carried_out(acts: &[Named], command: &str) -> Option<String> {
    let action = acts
        .iter()
        .map(|act| act.action.as_str())
        .find(|action| NOT_CARRIED_OUT.contains(action))?;
    let subcommand = action.trim_start_matches("git.");
    Some(format!(
        "run_command: {action} was allowed, and it is still not carried out: `git {subcommand}` reaches a remote, and a command in the sandbox has no network for it (no act fetches on its behalf). Nothing ran. What is missing is a network for this command: ask the person to run `{command}` in their own terminal; what it brings into the repository is there for your next call."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_fetching_subcommands_are_held_back() {
        let named = |action: &str| Named {
            action: action.into(),
            subject: None,
        };
        assert!(
            not_carried_out(&[named("exec.path.git"), named("git.commit")], "git commit").is_none()
        );
        let said = not_carried_out(
            &[named("exec.path.git"), named("git.fetch")],
            "git fetch origin",
        )
        .expect("held back");
        assert!(
            said.contains("git.fetch was allowed") && said.contains("`git fetch origin`"),
            "{said}"
        );
    }
}
