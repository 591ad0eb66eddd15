//! WebAssembly plugins: tools a third party ships as a component of the
//! component model, run by wasmtime.
//!
//! A plugin exports the `chock:plugin/tool` interface of the world in
//! `wit/plugin.wit` (JSON in, JSON out) and imports only the capabilities
//! its tools declare: `fs-read`, `fs-write`, `net-fetch`, each priced under
//! an ordinary action (`file.read`, `file.write`, `net.fetch.<host>`). The host
//! is built once, before any guest code runs, from what was granted: a
//! capability that was not allowed is not linked, so a component importing
//! it does not instantiate ([`Host::load`]). Every call runs in a fresh
//! instance bounded in fuel, memory and the size of its answer
//! ([`Bounds`]).

#![forbid(unsafe_code)]

mod capability;
mod error;
#[cfg(feature = "fixtures")]
pub mod fixtures;
mod host;
pub mod manifest;
pub mod offer;
mod offered;
mod reach;
pub mod scaffold;
mod session;
pub mod store;

pub use capability::{Capability, CapabilityError, FetchHost, Grants};
pub use error::PluginError;
pub use host::{Bounds, Host, Loaded};
pub use offered::PluginTools;
pub use reach::Reach;
pub use session::{Plugins, Started};
