//! The WAT plugins of chock-plugins' fixtures.

#![allow(unused_imports)]

pub use chock_plugins::fixtures::{on_error, plugin};
