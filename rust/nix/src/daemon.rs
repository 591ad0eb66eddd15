//! The daemon connection a build uses, driven from synchronous code: one
//! current-thread runtime and one connection, so every call here is one
//! round trip (or one build) and its errors are told apart as faults.

use std::collections::BTreeSet;

use chock_store::StorePath;
use chock_store::daemon::{
    AddMethod, BuildMode, BuildResult, ClientOptions, DaemonConnection, DaemonError, DaemonOptions,
    DerivedPath, Missing, OutputsSpec,
};

use crate::error::Fault;

/// One connection to the daemon, with the runtime that drives it.
pub(crate) struct Store {
    runtime: tokio::runtime::Runtime,
    conn: DaemonConnection,
}

impl Store {
    /// Connects and sends `client` (the options last for this connection only).
    pub(crate) fn connect(options: &DaemonOptions, client: &ClientOptions) -> Result<Store, Fault> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(Fault::Runtime)?;
        let unreachable = |reason: String| Fault::DaemonUnreachable {
            socket: options.socket.display().to_string(),
            reason,
        };
        let mut conn = match runtime.block_on(DaemonConnection::connect(options)) {
            Ok(conn) => conn,
            Err(DaemonError::Connect { source, .. }) => {
                return Err(unreachable(source.to_string()));
            }
            Err(e @ (DaemonError::Timeout { .. } | DaemonError::Closed { .. })) => {
                return Err(unreachable(e.to_string()));
            }
            Err(e) => return Err(e.into()),
        };
        runtime.block_on(conn.set_options(client))?;
        Ok(Store { runtime, conn })
    }

    /// Which of `paths` are valid (no substitution).
    pub(crate) fn valid(
        &mut self,
        paths: &BTreeSet<StorePath>,
    ) -> Result<BTreeSet<StorePath>, Fault> {
        if paths.is_empty() {
            return Ok(BTreeSet::new());
        }
        Ok(self
            .runtime
            .block_on(self.conn.query_valid_paths(paths, false))?)
    }

    /// Keeps each path from garbage collection while this connection lives.
    pub(crate) fn temp_roots<'p>(
        &mut self,
        paths: impl IntoIterator<Item = &'p StorePath>,
    ) -> Result<(), Fault> {
        for path in paths {
            self.runtime.block_on(self.conn.add_temp_root(path))?;
        }
        Ok(())
    }

    /// AddTextToStore: the path the store put the text at.
    pub(crate) fn add_text(
        &mut self,
        name: &str,
        contents: &[u8],
        references: &BTreeSet<StorePath>,
    ) -> Result<StorePath, Fault> {
        Ok(self
            .runtime
            .block_on(self.conn.add_text_to_store(name, contents, references))?)
    }

    /// AddToStore of a NAR (`Recursive`) or a file's bytes (`Flat`): the path
    /// the store put it at.
    pub(crate) fn add(
        &mut self,
        name: &str,
        method: AddMethod,
        data: &[u8],
    ) -> Result<StorePath, Fault> {
        let mut reader = data;
        let info = self.runtime.block_on(self.conn.add_to_store(
            name,
            method,
            &BTreeSet::new(),
            false,
            &mut reader,
        ))?;
        Ok(info.path)
    }

    /// BuildPathsWithResults for every output of each derivation.
    pub(crate) fn build(&mut self, drvs: &[StorePath]) -> Result<Vec<BuildResult>, Fault> {
        let paths = all_outputs(drvs);
        Ok(self.runtime.block_on(
            self.conn
                .build_paths_with_results(&paths, BuildMode::Normal),
        )?)
    }

    /// What realising every output of `drvs` would build.
    pub(crate) fn missing(&mut self, drvs: &[StorePath]) -> Result<Missing, Fault> {
        Ok(self
            .runtime
            .block_on(self.conn.query_missing(&all_outputs(drvs)))?)
    }
}

fn all_outputs(drvs: &[StorePath]) -> Vec<DerivedPath> {
    drvs.iter()
        .map(|d| DerivedPath::Built {
            drv: d.clone(),
            outputs: OutputsSpec::All,
        })
        .collect()
}

/// Makes the output path `output` valid by substitution alone (no local
/// build slot, no remote builders), on a connection of its own. The path is
/// asked for by itself, so the derivation that makes it need not be in the
/// store (an evaluation writes none).
pub(crate) fn substitute(options: &DaemonOptions, output: &StorePath) -> Result<(), Unsubstituted> {
    let mut store = Store::connect(options, &ClientOptions::substitute_only())
        .map_err(|e| Unsubstituted::Connect(Box::new(e)))?;
    let path = DerivedPath::Opaque(output.clone());
    let results = store.runtime.block_on(
        store
            .conn
            .build_paths_with_results(&[path], BuildMode::Normal),
    )?;
    match results.first() {
        Some(r) if r.status.is_success() => Ok(()),
        Some(r) => Err(Unsubstituted::Nix(crate::build::last_line(&r.error))),
        None => Err(Unsubstituted::NoAnswer),
    }
}

/// Why an output path was not substituted.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unsubstituted {
    #[error(transparent)]
    Connect(Box<Fault>),
    #[error(transparent)]
    Daemon(#[from] chock_store::daemon::DaemonError),
    /// Nix's own message, its last line.
    #[error("{0}")]
    Nix(String),
    #[error("the daemon answered nothing")]
    NoAnswer,
}
