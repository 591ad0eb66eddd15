//! The flake inputs a build's evaluation finds missing, fetched for the
//! commands that build through chock-nix: `chock build`, and `chock exec`
//! when its dev shell changed. One fetcher, so both ask and log alike.

use std::path::Path;

use chock_inputs::{Asking, FlakeInputs, HostAnswer, Report};
use chock_log::Log;
use chock_nix::{FetchError, InputFetcher, MissingInput};
use chock_policy::{Asker, Policy};

/// Fetches as at build time: the rules first, one question for the hosts
/// they leave open, each answer logged as `asking` says (its route and
/// tool are the caller's). A host left unanswered is told on stderr with
/// the rule that would allow it; the build's second evaluation then names
/// the input still missing.
pub struct ProjectInputs<'a> {
    pub policy: &'a Policy,
    pub log: &'a Log,
    /// Who asks, and the route and tool the log lines carry.
    pub asking: Asking,
}

impl InputFetcher for ProjectInputs<'_> {
    fn fetch_missing(
        &self,
        flake_dir: &Path,
        missing: &[MissingInput],
        asker: &dyn Asker,
    ) -> Result<(), FetchError> {
        let Some(mut inputs) = FlakeInputs::open(flake_dir).map_err(FetchError::failed)? else {
            return Ok(());
        };
        let paths = missing.iter().map(|m| m.path.clone()).collect();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(FetchError::failed)?;
        let report = runtime
            .block_on(inputs.fetch_for_build(self.policy, self.log, &self.asking, paths, asker))
            .map_err(FetchError::failed)?;
        tell_refused_hosts(&report);
        Ok(())
    }
}

/// Each host fetching was not granted, what answered it, and the rule to
/// add when one would allow it.
fn tell_refused_hosts(report: &Report) {
    crate::progress::suspend(|| {
        for refusal in report.hosts.iter().filter_map(HostAnswer::refusal) {
            eprintln!("chock: {refusal}");
        }
    });
}
