//! What an embedding decides: purity, the allowed roots, the bounds.
//! fix knows nothing of Chock's policy; the caller turns its policy into
//! these options.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// One `-I` entry: `prefix=path`, or a bare path (empty prefix).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchPathEntry {
    pub prefix: String,
    pub path: String,
}

impl SearchPathEntry {
    /// Parses `prefix=path` or `path` (the `-I` and `NIX_PATH` syntax).
    pub fn parse(text: &str) -> Self {
        match text.split_once('=') {
            Some((prefix, path)) => SearchPathEntry {
                prefix: prefix.to_string(),
                path: path.to_string(),
            },
            None => SearchPathEntry {
                prefix: String::new(),
                path: text.to_string(),
            },
        }
    }
}

/// Experimental language features, off by default as in Nix.
#[derive(Clone, Debug, Default)]
pub struct Features {
    /// `|>` and `<|` (Nix's `pipe-operators`).
    pub pipe_operators: bool,
    /// TOML date-times as `{ _type = "timestamp"; value = ...; }` (Nix's
    /// `parse-toml-timestamps`).
    pub parse_toml_timestamps: bool,
}

/// What to do about a discouraged literal (Nix 2.34's `lint-*` settings).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LintLevel {
    /// Accept it silently (the default, as in Nix).
    #[default]
    Ignore,
    /// Accept it with a warning.
    Warn,
    /// Refuse the file, as a parse error.
    Fatal,
}

/// A word that names no [`LintLevel`].
#[derive(Debug, thiserror::Error)]
#[error("'{0}' is not a lint level; use ignore, warn or fatal")]
pub struct UnknownLintLevel(String);

impl std::str::FromStr for LintLevel {
    type Err = UnknownLintLevel;
    fn from_str(s: &str) -> Result<Self, UnknownLintLevel> {
        match s {
            "ignore" => Ok(LintLevel::Ignore),
            "warn" => Ok(LintLevel::Warn),
            "fatal" => Ok(LintLevel::Fatal),
            other => Err(UnknownLintLevel(other.to_owned())),
        }
    }
}

/// The literal lints, checked while a file is parsed.
#[derive(Clone, Copy, Debug, Default)]
pub struct Lints {
    /// `http://example.com` unquoted (`lint-url-literals`).
    pub url_literals: LintLevel,
    /// `foo/bar` instead of `./foo/bar` (`lint-short-path-literals`).
    pub short_path_literals: LintLevel,
    /// `/abs/path` and `~/path` (`lint-absolute-path-literals`).
    pub absolute_path_literals: LintLevel,
}

/// Where `builtins.trace` output goes.
pub type TraceSink = Arc<dyn Fn(&str) + Send + Sync>;

#[derive(Clone)]
pub struct EvalOptions {
    /// Pure (the default): the environment is empty, the search path and
    /// `~` answer nothing, `currentTime` is absent and only paths inside
    /// `roots` and the store can be read.
    pub pure: bool,
    /// Directories a pure evaluation may read (the workspace).
    pub roots: Vec<PathBuf>,
    pub store_dir: String,
    /// The deepest nesting of calls (Nix's `max-call-depth`).
    pub max_call_depth: usize,
    /// The most memory the evaluation's values may hold, in bytes (by
    /// default a quarter of the machine's memory, at most 8 GiB).
    pub max_memory: Option<usize>,
    /// `-I` entries, then `NIX_PATH`'s; used only when impure.
    pub search_path: Vec<SearchPathEntry>,
    pub current_system: String,
    /// For `~/` paths; used only when impure.
    pub home: Option<PathBuf>,
    pub features: Features,
    /// Literal lints (all ignored by default).
    pub lints: Lints,
    /// Set to stop the evaluation (Ctrl-C).
    pub interrupt: Option<Arc<AtomicBool>>,
    /// The evaluation stops when this moment has passed (`--timeout`; the
    /// agent route's [`crate::AGENT_TIME_LIMIT`]). Looked at with Ctrl-C.
    pub deadline: Option<std::time::Instant>,
    /// Receives `builtins.trace` and warnings; stderr when `None`.
    pub trace: Option<TraceSink>,
    /// Make `builtins.warn` an error, to find where a warning comes from
    /// (Nix's `abort-on-warn`).
    pub abort_on_warn: bool,
    /// The largest object (a `.drv`, a `toFile` text, a copied source's
    /// NAR) the evaluation may produce (`max_object_bytes` of the `nix`
    /// block in chock.zon; 16 MiB by default).
    pub max_object_bytes: u64,
}

/// The call depth Nix allows by default.
pub const DEFAULT_MAX_CALL_DEPTH: usize = 10_000;

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            pure: true,
            roots: Vec::new(),
            store_dir: "/nix/store".to_string(),
            max_call_depth: DEFAULT_MAX_CALL_DEPTH,
            max_memory: default_max_memory(),
            search_path: Vec::new(),
            current_system: default_system(),
            home: None,
            features: Features::default(),
            lints: Lints::default(),
            interrupt: None,
            deadline: None,
            trace: None,
            abort_on_warn: false,
            max_object_bytes: crate::store::DEFAULT_MAX_OBJECT_BYTES,
        }
    }
}

/// A quarter of the machine's memory, at most 8 GiB: a runaway evaluation
/// (an endless `genericClosure`, a string doubled in a loop) stops with an
/// error long before it pushes the machine into swap or the allocator
/// fails. Evaluating nixpkgs' larger package sets needs 2 to 4 GiB.
pub fn default_max_memory() -> Option<usize> {
    let total = crate::sys::physical_memory_bytes()?;
    Some((total / 4).min(8 << 30))
}

/// The Nix system name of this machine, e.g. `x86_64-linux`.
pub fn default_system() -> String {
    let arch = match std::env::consts::ARCH {
        "x86" => "i686",
        other => other,
    };
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    format!("{arch}-{os}")
}
