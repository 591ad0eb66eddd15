//! nix_build: one attribute of the project's flake, built through the Nix
//! daemon after every host the build would reach has been answered.
//!
//! The order is the point. The names are answered first (`nix.build.<attr
//! path>`, and `nix.build.flake.<reference>` for a flake inside the
//! project; a flake anywhere else is refused). The attribute is evaluated,
//! and the [`Registry`](chock_store::Registry) of what that evaluation
//! produced is all that may be written or built. The `.drv` closure is
//! walked with Chock's own parser; every fixed-output derivation's URLs are
//! read and named (`nix.net.build.<host>.<port>`, mirror sites, opaque
//! fetches), rules answer each, and a person is asked once for the rest.
//! Then each object goes through the daemon with its path checked, the
//! fetching derivations are built first as copies pinned to the approved
//! URLs, and the requested derivation is built by path. Every answer is a
//! line in the decision log. `docs/build.md` has the whole design.
//!
//! ```no_run
//! use chock_nix::{BuildRequest, Context, FixEvaluator, Session, Who};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let policy = chock_policy::Policy::load(&chock_policy::LoadOptions::from_env("/src/demo", vec![])?)?;
//! let log = chock_log::Log::from_env(chock_log::Rotation::default())?;
//! let context = Context {
//!     policy: &policy,
//!     evaluator: &FixEvaluator::for_policy(&policy),
//!     asker: &chock_policy::Nobody,
//!     log: &log,
//!     route: chock_gate::Route::Build,
//!     daemon: Default::default(),
//! };
//! let request = BuildRequest {
//!     project: "/src/demo".into(),
//!     flake: None,
//!     attribute: vec!["packages".into(), "x86_64-linux".into(), "default".into()],
//!     who: Who::default(),
//! };
//! let built = chock_nix::build(&request, &context, &mut Session::default())?;
//! println!("{:?}", built.built);
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]

mod build;
mod closure;
mod daemon;
mod decide;
mod error;
mod evaluator;
mod fetches;
mod fix_evaluator;
mod mirrors;
mod network;
mod pin;
mod plan;
mod request;
mod write;

pub use build::{Context, build, build_fetching_inputs, plan};
pub use decide::Decided;
pub use error::{BuildError, Fault, Refusal, RequestError};
pub use evaluator::{
    EvalError, EvalRequest, Evaluation, Evaluator, FetchError, InputFetcher, MissingInput,
};
pub use fix_evaluator::FixEvaluator;
pub use mirrors::MAX_MIRRORS_FILE_BYTES;
pub use plan::{
    Built, Pinned, Plan, PlannedHashedMirror, PlannedHost, PlannedOpaque, PlannedSite, PlannedWrite,
};
pub use request::{
    BuildRequest, MAX_NAME_BYTES, MAX_REFERENCE_BYTES, MAX_SEGMENTS, Target, Who, check_attribute,
    check_reference,
};
pub use write::Session;
