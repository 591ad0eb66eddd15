//! Nix store formats and a client for the Nix daemon's worker protocol.
//!
//! Formats (always built, no async runtime): [`nix32`], [`hash`],
//! [`store_path`], [`derivation`] (`.drv` ATerm, hashDerivationModulo, the
//! JSON of `nix show-derivation`) and [`nar`]. The [`daemon`] client needs
//! the `daemon` feature (on by default); `default-features = false` leaves
//! tokio out, which is what an evaluator that only computes paths wants.
//! See `docs/store.md` for the guide.
//!
//! What the evaluator does for `derivation { ... }`, in short:
//!
//! ```
//! use chock_store::{Derivation, DerivationError, DerivationOutput, DrvHashes, StorePath};
//!
//! let mut drv = Derivation::new("hello");
//! drv.platform = "x86_64-linux".into();
//! drv.builder = "/bin/sh".into();
//! drv.args = vec!["-c".into(), "echo hi > $out".into()];
//! for (k, v) in [("builder", "/bin/sh"), ("name", "hello"), ("system", "x86_64-linux")] {
//!     drv.env.insert(k.into(), v.into());
//! }
//! drv.outputs.insert("out".into(), DerivationOutput::Deferred);
//!
//! let mut hashes = DrvHashes::new();
//! let mut no_store = |p: &StorePath| Err(DerivationError::NotADerivation { path: p.to_string() });
//! let outputs = drv.fill_in_output_paths(&mut hashes, &mut no_store)?;
//! assert_eq!(drv.env["out"], outputs["out"].to_string());
//!
//! let aterm = drv.to_aterm();
//! let drv_path = drv.drv_path()?;
//! assert_eq!(Derivation::parse(&aterm, "hello")?, drv);
//! assert!(drv_path.to_string().ends_with("-hello.drv"));
//! # Ok::<(), DerivationError>(())
//! ```

#![forbid(unsafe_code)]

#[cfg(feature = "daemon")]
pub mod daemon;
pub mod derivation;
pub mod fs;
pub mod hash;
pub mod nar;
pub mod nix32;
pub mod registry;
pub mod store_path;

pub use derivation::{Derivation, DerivationError, DerivationOutput, DrvHash, DrvHashes};
pub use hash::{Encoding, Hash, HashAlgo, HashError};
pub use registry::Registry;
pub use store_path::{
    ContentAddress, FileIngestionMethod, FixedOutputHash, STORE_DIR, StorePath, StorePathError,
};
