//! What the daemon's operations take and return.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::hash::Hash;
use crate::store_path::{ContentAddress, StorePath};

/// What to build or fetch: a path as it is, or outputs of a derivation.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DerivedPath {
    /// A store path that must be valid (substituted if missing); a bare
    /// `.drv` here is only made valid, not built.
    Opaque(StorePath),
    /// Outputs of a derivation: `drv!*` or `drv!out,dev`.
    Built {
        drv: StorePath,
        outputs: OutputsSpec,
    },
}

/// Which outputs of a derivation.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OutputsSpec {
    All,
    Names(BTreeSet<String>),
}

impl DerivedPath {
    /// `drv!*`: every output of `drv`.
    pub fn all_outputs(drv: StorePath) -> DerivedPath {
        DerivedPath::Built {
            drv,
            outputs: OutputsSpec::All,
        }
    }
}

impl fmt::Display for DerivedPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DerivedPath::Opaque(p) => write!(f, "{p}"),
            DerivedPath::Built {
                drv,
                outputs: OutputsSpec::All,
            } => write!(f, "{drv}!*"),
            DerivedPath::Built {
                drv,
                outputs: OutputsSpec::Names(names),
            } => {
                let joined: Vec<&str> = names.iter().map(String::as_str).collect();
                write!(f, "{drv}!{}", joined.join(","))
            }
        }
    }
}

/// What the store knows about a valid path (`ValidPathInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathInfo {
    pub path: StorePath,
    pub deriver: Option<StorePath>,
    /// SHA-256 of the path's NAR.
    pub nar_hash: Hash,
    pub references: BTreeSet<StorePath>,
    /// Seconds since the epoch.
    pub registration_time: u64,
    pub nar_size: u64,
    /// Whether this store built it (rather than received it).
    pub ultimate: bool,
    pub signatures: BTreeSet<String>,
    /// The content address as the daemon wrote it (`text:sha256:…`,
    /// `fixed:r:sha256:…`), if any. Kept as text so forms newer than 2.8
    /// still read; [`PathInfo::content_address`] parses it.
    pub ca: Option<String>,
}

impl PathInfo {
    /// The content address, when it is one of the forms Nix 2.8 knows.
    pub fn content_address(&self) -> Option<ContentAddress> {
        self.ca
            .as_deref()
            .and_then(|ca| ContentAddress::parse(ca).ok())
    }

    /// Describes a NAR to upload with [`super::DaemonConnection::add_to_store_nar`].
    pub fn for_upload(
        path: StorePath,
        nar_hash: Hash,
        nar_size: u64,
        references: BTreeSet<StorePath>,
        ca: Option<ContentAddress>,
    ) -> PathInfo {
        PathInfo {
            path,
            deriver: None,
            nar_hash,
            references,
            registration_time: 0,
            nar_size,
            ultimate: false,
            signatures: BTreeSet::new(),
            ca: ca.map(|c| c.to_string()),
        }
    }
}

/// How AddToStore hashes what it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddMethod {
    /// A text object (raw bytes, SHA-256), as `builtins.toFile`.
    Text,
    /// Raw bytes of a single file, hashed with the algorithm.
    Flat(crate::hash::HashAlgo),
    /// A NAR, hashed with the algorithm (sha256 gives a `source` path).
    Recursive(crate::hash::HashAlgo),
}

impl AddMethod {
    /// The `camStr` of AddToStore (protocol ≥ 1.25).
    pub fn wire_name(self) -> String {
        match self {
            AddMethod::Text => "text:sha256".to_owned(),
            AddMethod::Flat(a) => format!("fixed:{a}"),
            AddMethod::Recursive(a) => format!("fixed:r:{a}"),
        }
    }
}

/// Normal build, repair, or check (rebuild and compare).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BuildMode {
    #[default]
    Normal,
    Repair,
    Check,
}

impl BuildMode {
    pub(crate) fn wire(self) -> u64 {
        match self {
            BuildMode::Normal => 0,
            BuildMode::Repair => 1,
            BuildMode::Check => 2,
        }
    }
}

/// `BuildResult::Status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildStatus {
    Built,
    Substituted,
    AlreadyValid,
    PermanentFailure,
    InputRejected,
    OutputRejected,
    TransientFailure,
    CachedFailure,
    TimedOut,
    MiscFailure,
    DependencyFailed,
    LogLimitExceeded,
    NotDeterministic,
    ResolvesToAlreadyValid,
    NoSubstituters,
    /// A status newer than this client knows.
    Other(u64),
}

impl BuildStatus {
    pub(crate) fn from_wire(n: u64) -> BuildStatus {
        use BuildStatus::*;
        const KNOWN: [BuildStatus; 15] = [
            Built,
            Substituted,
            AlreadyValid,
            PermanentFailure,
            InputRejected,
            OutputRejected,
            TransientFailure,
            CachedFailure,
            TimedOut,
            MiscFailure,
            DependencyFailed,
            LogLimitExceeded,
            NotDeterministic,
            ResolvesToAlreadyValid,
            NoSubstituters,
        ];
        usize::try_from(n)
            .ok()
            .and_then(|i| KNOWN.get(i).copied())
            .unwrap_or(Other(n))
    }

    /// Whether the outputs are now valid.
    pub fn is_success(self) -> bool {
        matches!(
            self,
            BuildStatus::Built
                | BuildStatus::Substituted
                | BuildStatus::AlreadyValid
                | BuildStatus::ResolvesToAlreadyValid
        )
    }
}

/// The outcome of building one derived path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildResult {
    /// The derived path this is about (`None` for BuildDerivation).
    pub path: Option<String>,
    pub status: BuildStatus,
    pub error: String,
    pub times_built: u64,
    pub non_deterministic: bool,
    pub start_time: u64,
    pub stop_time: u64,
    /// CPU time in microseconds (protocol ≥ 1.37).
    pub cpu_user: Option<i64>,
    pub cpu_system: Option<i64>,
    /// Output name → the store path it was built or found at.
    pub built_outputs: BTreeMap<String, StorePath>,
}

/// What QueryMissing says building some paths would take.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Missing {
    pub will_build: BTreeSet<StorePath>,
    pub will_substitute: BTreeSet<StorePath>,
    pub unknown: BTreeSet<StorePath>,
    pub download_size: u64,
    pub nar_size: u64,
}

/// Log levels of the daemon (`Verbosity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    Error = 0,
    Warn = 1,
    Notice = 2,
    Info = 3,
    Talkative = 4,
    Chatty = 5,
    Debug = 6,
    Vomit = 7,
}

/// The settings a client sends with SetOptions. They last for the
/// connection only: the daemon's own configuration is never changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientOptions {
    pub keep_failed: bool,
    pub keep_going: bool,
    pub try_fallback: bool,
    pub verbosity: Verbosity,
    /// 0 means nothing may be built here: substitution only.
    pub max_build_jobs: u64,
    pub max_silent_time: u64,
    pub build_cores: u64,
    pub use_substitutes: bool,
    /// Settings by name (`builders`, `substituters`, ...). Untrusted users
    /// get only a few honoured; we run as a trusted user.
    pub overrides: BTreeMap<String, String>,
}

impl Default for ClientOptions {
    fn default() -> ClientOptions {
        ClientOptions {
            keep_failed: false,
            keep_going: false,
            try_fallback: false,
            verbosity: Verbosity::Info,
            max_build_jobs: 1,
            max_silent_time: 0,
            build_cores: 0,
            use_substitutes: true,
            overrides: BTreeMap::new(),
        }
    }
}

impl ClientOptions {
    /// Realise by substitution only: no local build slots, no remote builders.
    pub fn substitute_only() -> ClientOptions {
        let mut o = ClientOptions {
            max_build_jobs: 0,
            ..ClientOptions::default()
        };
        o.overrides.insert("builders".to_owned(), String::new());
        o
    }

    /// Sets the substituters (space-separated URLs) for this connection.
    pub fn with_substituters(mut self, urls: &[&str]) -> ClientOptions {
        self.overrides
            .insert("substituters".to_owned(), urls.join(" "));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_path_strings() {
        let drv =
            StorePath::from_absolute_path("/nix/store/q4mzjdlh5px6977h7v5fdsk1p33yg583-source.drv")
                .unwrap();
        assert_eq!(
            DerivedPath::all_outputs(drv.clone()).to_string(),
            format!("{drv}!*")
        );
        let some = DerivedPath::Built {
            drv: drv.clone(),
            outputs: OutputsSpec::Names(["out".to_owned(), "dev".to_owned()].into()),
        };
        assert_eq!(some.to_string(), format!("{drv}!dev,out"));
        assert_eq!(
            DerivedPath::Opaque(drv.clone()).to_string(),
            drv.to_string()
        );
    }

    #[test]
    fn substitute_only_options() {
        let o = ClientOptions::substitute_only().with_substituters(&["file:///a", "file:///b"]);
        assert_eq!(o.max_build_jobs, 0);
        assert_eq!(o.overrides["builders"], "");
        assert_eq!(o.overrides["substituters"], "file:///a file:///b");
        assert_eq!(BuildStatus::from_wire(1), BuildStatus::Substituted);
        assert_eq!(BuildStatus::from_wire(99), BuildStatus::Other(99));
    }
}
