//! Nix store formats and a client for the Nix daemon's worker protocol.
//!
//! Formats (always built, no async runtime): [`nix32`], [`hash`],
//! [`store_path`], [`derivation`] (`.drv` ATerm, hashDerivationModulo, the
//! JSON of `nix show-derivation`) and [`nar`]. The [`daemon`] client needs
//! the `daemon` feature (on by default); `default-features = false` leaves
//! tokio out, which is what an evaluator that only computes paths wants.
//! See `docs/store.md` for the guide.

#[cfg(feature = "daemon")]
pub mod daemon;
pub mod hash;
pub mod nar;
pub mod nix32;
pub mod store_path;

pub use hash::{Encoding, Hash, HashAlgo, HashError};
pub use store_path::{
    ContentAddress, FileIngestionMethod, FixedOutputHash, STORE_DIR, StorePath, StorePathError,
};

pub mod derivation;
pub use derivation::{Derivation, DerivationError, DerivationOutput, DrvHash, DrvHashes};
