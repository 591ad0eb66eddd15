//! Fetching an input's tree: archives over HTTPS (reqwest on tokio, rustls
//! with the system's trust store and `SSL_CERT_FILE`), git revisions with
//! the `git` command, and local paths.
//!
//! Nothing here decides a host. The caller has already allowed every host
//! the input names; a redirect to any other host is put to the caller's
//! [`HopGate`] before a connection is opened, and a hop the gate does not
//! allow ends the fetch there. Sizes and times are bounded ([`Limits`]).
//! The tree lands in a private temporary directory; only the store step
//! ([`crate::store`]) moves anything further, after the narHash matched.

mod git;
mod http;
mod tls;
pub(crate) mod tree;
mod unpack;

use std::path::{Path, PathBuf};
use std::time::Duration;

use chock_policy::Endpoint;

use crate::progress::{Event, Reporter};
use chock_flakelock::{Fetch, Location, Source};

/// Bounds on one fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most bytes one download (or one git fetch) may bring: 1 GiB.
    pub max_download_bytes: u64,
    /// The most bytes of file contents one unpacked tree may hold: 4 GiB.
    pub max_tree_bytes: u64,
    /// The most entries (files, directories, links) one tree may hold.
    pub max_tree_entries: u64,
    /// The longest wait for a connection.
    pub connect_timeout: Duration,
    /// The longest silence in the middle of a transfer.
    pub idle_timeout: Duration,
    /// The longest one input's transfer may take.
    pub total_timeout: Duration,
    /// The most redirects one download follows.
    pub max_redirects: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_download_bytes: 1 << 30,
            max_tree_bytes: 4 << 30,
            max_tree_entries: 2_000_000,
            connect_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            total_timeout: Duration::from_secs(30 * 60),
            max_redirects: 10,
        }
    }
}

/// Decides a redirect's next hop. A hop is never asked about: only a host
/// already allowed (by a rule, or by a person for this fetch) is followed.
pub trait HopGate: Send {
    /// Whether the fetch may go on to `url`, which reaches `endpoint`.
    fn allow_hop(&mut self, url: &str, endpoint: &Endpoint) -> bool;
}

/// Why an input's tree could not be fetched. Nothing reached the store.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("cannot set up HTTPS: {0}")]
    Tls(String),
    #[error("cannot read the certificates in SSL_CERT_FILE={}: {why}", path.display())]
    CaFile { path: PathBuf, why: String },
    #[error("GET {url}: {why}")]
    Network { url: String, why: String },
    #[error("GET {url}: the server answered {status}")]
    Http { url: String, status: u16 },
    #[error(
        "GET {url}: more than {limit} bytes; the limit is there so a server cannot fill your disk"
    )]
    TooLarge { url: String, limit: u64 },
    #[error("GET {url}: no answer within {secs} s")]
    Timeout { url: String, secs: u64 },
    #[error("GET {url}: it redirects to `{to}`, which Chock cannot follow: {why}")]
    BadRedirect {
        url: String,
        to: String,
        why: String,
    },
    #[error(
        "GET {url}: it redirects to {host}:{port}, which no rule allows ({action}); a redirect is never asked about, so the fetch stops there without contacting it"
    )]
    HopRefused {
        url: String,
        host: String,
        port: u16,
        action: String,
    },
    #[error("GET {url}: more than {limit} redirects")]
    TooManyRedirects { url: String, limit: usize },
    #[error("the archive is refused: {why}")]
    Archive { why: String },
    #[error("the unpacked tree is larger than {limit}")]
    TreeTooLarge { limit: String },
    #[error("git {step} failed: {stderr}")]
    Git { step: String, stderr: String },
    #[error("cannot run git: {0}; install git")]
    GitMissing(std::io::Error),
    #[error(
        "Chock does not fetch Mercurial inputs; fetch this one with `nix flake archive` and Chock finds it in the store"
    )]
    Mercurial,
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "NAR hash mismatch: the lock pins {expected} and what was fetched hashes to {got}; nothing was written to the store (if the lock is right, the server changed what it serves)"
    )]
    NarHashMismatch { expected: String, got: String },
    #[error("the Nix daemon: {0}")]
    Daemon(#[from] chock_store::daemon::DaemonError),
    #[error(
        "the store answered {answered} for {path}, not what Chock computed ({computed}); nothing is used from it"
    )]
    StoreMismatch {
        path: String,
        answered: String,
        computed: String,
    },
    #[error("hashing the tree: {0}")]
    Nar(#[from] chock_store::nar::NarError),
}

/// A fetched tree in its private temporary directory.
#[derive(Debug)]
pub struct Fetched {
    /// The tree (a directory, or one file for `file` inputs).
    pub root: PathBuf,
    _work: tempfile::TempDir,
}

/// Fetches trees; one per session, shared by every input.
#[derive(Debug, Clone)]
pub struct Fetcher {
    client: reqwest::Client,
    limits: Limits,
    ca_file: Option<PathBuf>,
    temp_dir: Option<PathBuf>,
}

impl Fetcher {
    /// The trust store is the system's plus every certificate in
    /// `SSL_CERT_FILE`, when it is set.
    pub fn from_env(limits: Limits) -> Result<Fetcher, FetchError> {
        let ca_file = std::env::var_os("SSL_CERT_FILE")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        Fetcher::new(limits, ca_file)
    }

    /// The trust store is the system's plus the certificates in `ca_file`.
    pub fn new(limits: Limits, ca_file: Option<PathBuf>) -> Result<Fetcher, FetchError> {
        let config = tls::client_config(ca_file.as_deref())?;
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(config)
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(limits.connect_timeout)
            .read_timeout(limits.idle_timeout)
            .user_agent(concat!("chock/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| FetchError::Tls(e.to_string()))?;
        Ok(Fetcher {
            client,
            limits,
            ca_file,
            temp_dir: None,
        })
    }

    /// Unpacks into `dir` instead of the system's temporary directory.
    pub fn with_temp_dir(mut self, dir: PathBuf) -> Fetcher {
        self.temp_dir = Some(dir);
        self
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    fn work_dir(&self) -> Result<tempfile::TempDir, FetchError> {
        let builder = {
            let mut b = tempfile::Builder::new();
            b.prefix("chock-input-");
            b
        };
        let made = match &self.temp_dir {
            Some(dir) => builder.tempdir_in(dir),
            None => builder.tempdir(),
        };
        made.map_err(|source| FetchError::Io {
            path: self.temp_dir.clone().unwrap_or_else(std::env::temp_dir),
            source,
        })
    }

    /// Fetches `source`'s tree. Every host `source` names must already be
    /// allowed; `gate` answers for redirects.
    pub(crate) async fn fetch(
        &self,
        source: &Source,
        gate: &mut dyn HopGate,
        report: &Reporter<'_>,
    ) -> Result<Fetched, FetchError> {
        let work = self.work_dir()?;
        let tree = work.path().join("tree");
        std::fs::create_dir(&tree).map_err(|e| tree::io_error(&tree, e))?;
        let root = match &source.fetch {
            Fetch::Archive(location) => {
                let archive = self.bring(location, work.path(), gate, report).await?;
                report.send(Event::Stage("unpacking"));
                let limits = self.limits;
                blocking(move || unpack::unpack(&archive, &tree, limits)).await?
            }
            Fetch::File(location) => {
                let file = self.bring(location, work.path(), gate, report).await?;
                let limits = self.limits;
                let root = tree.join("file");
                blocking(move || {
                    let mut writer = tree::TreeWriter::new(&tree, limits);
                    tree::copy_local(&mut writer, &file, Path::new("file"))
                })
                .await?;
                root
            }
            Fetch::Path(path) => {
                report.send(Event::Start {
                    from: &path.display().to_string(),
                    bytes: None,
                });
                let (from, limits) = (path.clone(), self.limits);
                let root = tree.join("source");
                blocking(move || {
                    let mut writer = tree::TreeWriter::new(&tree, limits);
                    tree::copy_local(&mut writer, &from, Path::new("source"))
                })
                .await?;
                root
            }
            Fetch::Git {
                location,
                rev,
                git_ref,
            } => {
                let setup = git::Git {
                    limits: self.limits,
                    ca_file: self.ca_file.clone(),
                };
                setup
                    .fetch(
                        location,
                        rev,
                        git_ref.as_deref(),
                        work.path(),
                        &tree,
                        report,
                    )
                    .await?;
                tree
            }
            Fetch::Hg { .. } => return Err(FetchError::Mercurial),
        };
        Ok(Fetched { root, _work: work })
    }

    /// The file at `location`: downloaded into `work`, or the local file.
    async fn bring(
        &self,
        location: &Location,
        work: &Path,
        gate: &mut dyn HopGate,
        report: &Reporter<'_>,
    ) -> Result<PathBuf, FetchError> {
        match location {
            Location::Local(path) => {
                // A FIFO or a device would hang the read or never end.
                let meta = std::fs::metadata(path).map_err(|e| tree::io_error(path, e))?;
                if !meta.is_file() {
                    return Err(FetchError::Archive {
                        why: format!("{} is not a regular file", path.display()),
                    });
                }
                Ok(path.clone())
            }
            Location::Url(url) => {
                let to = work.join("download");
                let fetch = http::download(&self.client, self.limits, url, &to, gate, report);
                match tokio::time::timeout(self.limits.total_timeout, fetch).await {
                    Ok(done) => done.map(|()| to),
                    Err(_) => Err(FetchError::Timeout {
                        url: url.clone(),
                        secs: self.limits.total_timeout.as_secs(),
                    }),
                }
            }
        }
    }
}

/// Runs blocking file work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, FetchError> + Send + 'static,
) -> Result<T, FetchError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| FetchError::Archive {
            why: format!("the worker stopped: {e}"),
        })?
}
