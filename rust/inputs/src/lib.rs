//! Flake inputs: the hosts a `flake.lock` names, asked before anything is
//! fetched, and inputs fetched into the store with their narHash checked.
//!
//! fix, Chock's evaluator, has no fetcher: a flake input reaches an
//! evaluation only when it is already in the store. This crate puts it
//! there. It reads the project's `flake.lock` with chock-flakelock ([`Lock`],
//! [`Input`], [`Source`]: each node and the hosts it is fetched from; a node
//! that names no host is refused, naming the input), answers each host
//! under `nix.net.eval.<reversed host>.<port>` and the either-phase name, fetches what was allowed ([`Fetcher`]), and
//! adds a tree to the store only when its NAR hash is the lock's `narHash`.
//!
//! The two moments, on one [`FlakeInputs`] kept for the session:
//!
//! ```no_run
//! # async fn demo(project: &std::path::Path, policy: &chock_policy::Policy,
//! #   log: &chock_log::Log, asker: &dyn chock_policy::Asker) -> Result<(), Box<dyn std::error::Error>> {
//! use chock_inputs::{Asking, Env, FlakeInputs, Fetcher, Limits, Silent, Wanted};
//! let fetcher = Fetcher::from_env(Limits::default())?;
//! let env = Env { policy, log, fetcher: &fetcher, progress: &Silent };
//! let mut conn = chock_store::daemon::connect().await?;
//! if let Some(mut inputs) = FlakeInputs::open(project)? {
//!     // session start: rules only, nobody asked; the session starts whatever arrived
//!     let report = inputs.at_start(&env, &mut conn).await?;
//!     // later, a build's evaluation missed inputs: ask once, fetch, evaluate once more
//!     let report = inputs
//!         .at_build(&env, &mut conn, &Asking::at_build(Some("nix_build")), &Wanted::AllMissing, asker)
//!         .await?;
//! }
//! # Ok(()) }
//! ```
//!
//! See `docs/inputs.md`.

#![forbid(unsafe_code)]

mod decide;
#[cfg(feature = "fetch")]
mod fetch;
#[cfg(feature = "fetch")]
mod progress;
#[cfg(feature = "fetch")]
mod report;
#[cfg(feature = "fetch")]
mod session;
#[cfg(feature = "fetch")]
mod store;
#[cfg(feature = "testing")]
pub mod testing;

pub use chock_flakelock::{
    DEFAULT_NAME, Fetch, Follows, Input, InputRefusal, InputType, Location, Lock, LockError,
    LockedNode, MAX_LOCK_BYTES, MAX_NODES, Refusal, Source,
};
pub use decide::{Asking, HostVerdict, decide_host};
#[cfg(feature = "fetch")]
pub use fetch::{FetchError, Fetcher, HopGate, Limits};
#[cfg(feature = "fetch")]
pub use progress::{Event, Progress, Silent, Traced};
#[cfg(feature = "fetch")]
pub use report::{HostAnswer, InputReport, InputState, Report};
#[cfg(feature = "fetch")]
pub use session::{BuildFetchError, Env, FlakeInputs, HostPort, LOCK_FILE, Wanted};
#[cfg(feature = "fetch")]
pub use store::valid_paths;
