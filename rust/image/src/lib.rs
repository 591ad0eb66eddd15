//! Container images as a project's toolchain.
//!
//! A project that names an image in the `container` block of `chock.zon`
//! gets its toolchain from that image and never from Nix. The image is read
//! on the host, before any sandbox exists, from what is already on the
//! machine ([`source`]): an OCI image layout directory, a `docker save` or
//! `podman save` archive, or podman's or docker's local store through their
//! own `save`. Nothing is fetched. Its root file system is written once,
//! confined and checked against its digests ([`extract`]), into a tree per
//! reference that every session on it shares under two locks ([`trees`]);
//! the sandbox binds that tree read-only on every tool call.

#![forbid(unsafe_code)]

pub mod extract;
pub mod manifest;
pub mod reference;
pub mod source;
pub mod trees;

pub use extract::Limits;
pub use reference::{Reference, ReferenceError};
pub use trees::{ImageError, Images, Listed, Record, Removal, Tree, Want, executable};
