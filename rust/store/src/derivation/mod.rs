//! Derivations: the `.drv` ATerm ([`aterm`]), hashDerivationModulo and output
//! paths ([`modulo`]), the JSON of `nix show-derivation` ([`json`]) and
//! reading closures from the store ([`closure`]).

pub mod aterm;
pub mod closure;
pub mod json;
pub mod modulo;

use std::collections::{BTreeMap, BTreeSet};

use thiserror::Error;

use crate::hash::{Hash, HashAlgo, HashError};
use crate::store_path::{self, FileIngestionMethod, FixedOutputHash, StorePath, StorePathError};

pub use closure::{read_closure, read_derivation};
pub use modulo::{DrvHash, DrvHashKind, DrvHashes};

/// A derivation as Nix 2.8 models it. The name is not in the ATerm: it is
/// the `.drv` file's store-path name without `.drv`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Derivation {
    pub name: String,
    pub outputs: BTreeMap<String, DerivationOutput>,
    pub input_drvs: BTreeMap<StorePath, BTreeSet<String>>,
    pub input_srcs: BTreeSet<StorePath>,
    pub platform: String,
    pub builder: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
}

/// One output, in the five forms an output tuple can take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DerivationOutput {
    /// `("out","/nix/store/…","","")`: the path comes from hashDerivationModulo.
    InputAddressed(StorePath),
    /// `("out","/nix/store/…","r:sha256","<hex>")`: a fixed-output derivation.
    /// The path is not stored: it is always recomputed from hash and name,
    /// and the parser refuses a file whose stated path differs.
    CaFixed(FixedOutputHash),
    /// `("out","","r:sha256","")` (ca-derivations).
    CaFloating {
        method: FileIngestionMethod,
        algo: HashAlgo,
    },
    /// `("out","","","")`: input-addressed, path not known yet.
    Deferred,
    /// `("out","","r:sha256","impure")` (impure-derivations).
    Impure {
        method: FileIngestionMethod,
        algo: HashAlgo,
    },
}

/// What kind a derivation is, from its outputs (`BasicDerivation::type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DerivationKind {
    InputAddressed,
    DeferredInputAddressed,
    FixedOutput,
    Floating,
    Impure,
}

/// Why a derivation could not be read, computed or checked.
#[derive(Debug, Error)]
pub enum DerivationError {
    #[error("derivation {name:?} is malformed at byte {offset}: expected {expected}")]
    Syntax {
        name: String,
        offset: usize,
        expected: &'static str,
    },
    #[error("derivation {name:?} has trailing data after byte {offset}")]
    TrailingData { name: String, offset: usize },
    #[error(
        "derivation {name:?} uses the versioned ATerm form (DrvWithVersion) of a newer Nix with dynamic derivations; Nix 2.8 and Chock read only Derive(...)"
    )]
    Versioned { name: String },
    #[error("derivation {name:?}: {source}")]
    BadPath {
        name: String,
        source: StorePathError,
    },
    #[error("derivation {name:?}, output {output:?}: {source}")]
    BadHash {
        name: String,
        output: String,
        source: HashError,
    },
    #[error(
        "derivation {name:?}, output {output:?}: the hash algorithm {algo:?} is not one of md5, sha1, sha256, sha512 (with an optional r: prefix)"
    )]
    BadHashAlgo {
        name: String,
        output: String,
        algo: String,
    },
    #[error("derivation {name:?}, output {output:?}: {problem}")]
    BadOutput {
        name: String,
        output: String,
        problem: String,
    },
    #[error(
        "derivation {name:?} states output {output:?} at {stated} but its fixed hash puts it at {computed}; rewrite the .drv with Nix"
    )]
    WrongFixedPath {
        name: String,
        output: String,
        stated: String,
        computed: String,
    },
    #[error("derivation {name:?} mixes output kinds or has an invalid fixed output: {problem}")]
    BadKind { name: String, problem: String },
    #[error(
        "derivation {name:?} depends on output {output:?} of {input}, which that derivation does not have"
    )]
    MissingInputOutput {
        name: String,
        input: String,
        output: String,
    },
    #[error(
        "derivation {drv} is part of a dependency cycle; a store cannot hold one, so the files are corrupt"
    )]
    Cycle { drv: String },
    #[error("{path} is not a derivation: its name does not end in .drv")]
    NotADerivation { path: String },
    #[error("cannot read derivation {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("derivation {path} is not valid UTF-8; Chock reads only UTF-8 derivations")]
    NotUtf8 { path: String },
    /// The file's own error follows the path once: the inner error is the
    /// message, not a `source` an error chain would print a second time.
    #[error("in {path}: {inner}")]
    InFile {
        path: String,
        inner: Box<DerivationError>,
    },
    #[error(
        "derivation {path} is {size} bytes, more than the {limit} bytes Chock reads of one .drv (the largest in nixpkgs hold a few hundred kilobytes); nothing was read of it: if it is meant to be that large, `nix show-derivation` reads it"
    )]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error(
        "derivation {path} is {what}, not a regular file: a .drv in the store is always a regular file, so nothing was read of it; check what made {path}"
    )]
    NotRegular { path: String, what: &'static str },
    #[error(
        "derivation {path} changed size while it was read ({size} bytes when opened); files in the store never change, so something is writing to it: stop that and run the command again"
    )]
    Changed { path: String, size: u64 },
    #[error("derivation {name:?} has output {output:?} at {stated} but Nix computes {computed}")]
    WrongOutputPath {
        name: String,
        output: String,
        stated: String,
        computed: String,
    },
    #[error("derivation {name:?} sets ${output} to {stated:?} but the output is {expected}")]
    WrongOutputEnv {
        name: String,
        output: String,
        stated: String,
        expected: String,
    },
    #[error("derivation name: {0}")]
    BadName(StorePathError),
    #[error("cannot write the derivations' JSON: {0}")]
    Output(std::io::Error),
}

impl Derivation {
    /// An empty derivation called `name`, for building one up in code.
    pub fn new(name: impl Into<String>) -> Derivation {
        Derivation {
            name: name.into(),
            outputs: BTreeMap::new(),
            input_drvs: BTreeMap::new(),
            input_srcs: BTreeSet::new(),
            platform: String::new(),
            builder: String::new(),
            args: Vec::new(),
            env: BTreeMap::new(),
        }
    }

    /// The kind of the derivation, refusing the combinations Nix refuses.
    pub fn kind(&self) -> Result<DerivationKind, DerivationError> {
        let bad = |problem: &str| DerivationError::BadKind {
            name: self.name.clone(),
            problem: problem.to_owned(),
        };
        let mut kinds = self.outputs.values().map(|o| match o {
            DerivationOutput::InputAddressed(_) => DerivationKind::InputAddressed,
            DerivationOutput::Deferred => DerivationKind::DeferredInputAddressed,
            DerivationOutput::CaFixed(_) => DerivationKind::FixedOutput,
            DerivationOutput::CaFloating { .. } => DerivationKind::Floating,
            DerivationOutput::Impure { .. } => DerivationKind::Impure,
        });
        let first = kinds.next().ok_or_else(|| bad("it has no outputs"))?;
        if kinds.any(|k| k != first) {
            return Err(bad("all outputs must be of one kind"));
        }
        if first == DerivationKind::FixedOutput {
            if self.outputs.len() != 1 {
                return Err(bad("only one fixed output is allowed"));
            }
            if !self.outputs.contains_key("out") {
                return Err(bad("the single fixed output must be named \"out\""));
            }
        }
        Ok(first)
    }

    /// Whether the builder is one built into Nix (`builtin:fetchurl`).
    pub fn is_builtin(&self) -> bool {
        self.builder.starts_with("builtin:")
    }

    /// The fixed output's hash, if this is a fixed-output derivation.
    pub fn fixed_output(&self) -> Option<&FixedOutputHash> {
        match (self.outputs.len(), self.outputs.get("out")) {
            (1, Some(DerivationOutput::CaFixed(f))) => Some(f),
            _ => None,
        }
    }

    /// The path of output `output`, when the derivation states or implies one.
    pub fn output_path(&self, output: &str) -> Result<Option<StorePath>, DerivationError> {
        match self.outputs.get(output) {
            Some(DerivationOutput::InputAddressed(p)) => Ok(Some(p.clone())),
            Some(DerivationOutput::CaFixed(f)) => f
                .store_path(&store_path::output_path_name(&self.name, output))
                .map(Some)
                .map_err(|source| DerivationError::BadPath {
                    name: self.name.clone(),
                    source,
                }),
            _ => Ok(None),
        }
    }

    /// What the `.drv` file references: its input sources and input derivations.
    pub fn references(&self) -> BTreeSet<StorePath> {
        let mut refs = self.input_srcs.clone();
        refs.extend(self.input_drvs.keys().cloned());
        refs
    }

    /// The store path of this derivation's `.drv` file.
    pub fn drv_path(&self) -> Result<StorePath, DerivationError> {
        store_path::text_path(
            &format!("{}.drv", self.name),
            self.to_aterm(),
            &self.references(),
        )
        .map_err(DerivationError::BadName)
    }

    /// Gives a fixed-output derivation its output (`out`) and `$out`, as
    /// `derivationStrict` does for a derivation with `outputHash`.
    pub fn set_fixed_output(
        &mut self,
        fixed: FixedOutputHash,
    ) -> Result<StorePath, DerivationError> {
        let path = fixed
            .store_path(&self.name)
            .map_err(DerivationError::BadName)?;
        self.outputs.clear();
        self.outputs
            .insert("out".to_owned(), DerivationOutput::CaFixed(fixed));
        self.env.insert("out".to_owned(), path.to_string());
        Ok(path)
    }
}

/// Hashes in `.drv` outputs are base16 of a known algorithm.
fn hash_for_output(
    name: &str,
    output: &str,
    method_algo: &str,
    digest: &str,
) -> Result<FixedOutputHash, DerivationError> {
    let (method, algo) = split_method_algo(name, output, method_algo)?;
    let hash = Hash::decode(algo, digest).map_err(|source| DerivationError::BadHash {
        name: name.to_owned(),
        output: output.to_owned(),
        source,
    })?;
    Ok(FixedOutputHash { method, hash })
}

fn split_method_algo(
    name: &str,
    output: &str,
    method_algo: &str,
) -> Result<(FileIngestionMethod, HashAlgo), DerivationError> {
    let (method, algo) = match method_algo.strip_prefix("r:") {
        Some(a) => (FileIngestionMethod::Recursive, a),
        None => (FileIngestionMethod::Flat, method_algo),
    };
    let algo = algo
        .parse::<HashAlgo>()
        .map_err(|_| DerivationError::BadHashAlgo {
            name: name.to_owned(),
            output: output.to_owned(),
            algo: method_algo.to_owned(),
        })?;
    Ok((method, algo))
}
