//! `chock acp`: Chock's own agent session served to an editor over the
//! Agent Client Protocol on stdio (chock-acp). Stdout carries the
//! protocol alone; how each session's work ended is said on stderr, which
//! editors keep as the agent's log.

use std::process::ExitCode;

use chock_mcp::local::Finished;

use crate::commands::run::SessionArgs;
use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub session: SessionArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // Each session's project is the directory the editor names.
    let options = args.session.options(None, "chock acp");
    let ended = chock_acp::serve(
        options,
        &mut std::io::stdin().lock(),
        Box::new(std::io::stdout()),
    );
    for end in ended {
        if let Some(left) = &end.closed.scratchpad_left {
            eprintln!("chock acp: session {}: {left}", end.id);
        }
        let what = match end.closed.workspace {
            Finished::Applied(said) => format!("applied: {said}"),
            Finished::NoWorkspace | Finished::Nothing => "the workspace held no work".to_owned(),
            Finished::Kept(why) => format!("not applied: {why}"),
        };
        eprintln!(
            "chock acp: session {} in {}: {what}",
            end.id,
            end.project.display()
        );
    }
    Ok(exit::SUCCESS.into())
}
