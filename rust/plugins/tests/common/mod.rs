//! The WAT plugins of chock-plugins' fixtures.

#![allow(unused_imports)]

pub use chock_plugins::fixtures::{COPIER_MANIFEST, copier, on_error, plugin};
