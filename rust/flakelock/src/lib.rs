//! `flake.lock`, read without fetching anything: the locked inputs
//! ([`Lock`], bounded, `follows` resolved), the source each one names
//! ([`Input`], [`Source`]: the store path its narHash puts it at, where it
//! is fetched from and the hosts that reaches, or why Chock refuses it),
//! and the one reader of the host and port a URL reaches
//! ([`url_endpoint`]), which nix_build's fetches use too.
//!
//! Its own crate so that fix (the evaluator, which reads a flake's lock to
//! find its inputs in the store) and chock-inputs (which asks about the
//! hosts and fetches) share it without the evaluator linking the policy
//! engine or a fetcher. See `docs/inputs.md`.

#![forbid(unsafe_code)]

mod endpoint;
mod lock;
mod source;

pub use endpoint::{Endpoint, EndpointError, HostError, SCHEMES, reversed_host, url_endpoint};
pub use lock::{Follows, Lock, LockError, LockedNode, MAX_LOCK_BYTES, MAX_NODES};
pub use source::{DEFAULT_NAME, Fetch, Input, InputRefusal, InputType, Location, Refusal, Source};
