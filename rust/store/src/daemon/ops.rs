//! The operations: each writes its request, runs the stderr loop, and
//! reads its answer.

use std::collections::{BTreeMap, BTreeSet};

use tokio::io::AsyncRead;

use super::stderr;
use super::types::{
    AddMethod, BuildMode, BuildResult, BuildStatus, ClientOptions, DerivedPath, Missing, PathInfo,
};
use super::wire::{Request, limits, write_framed};
use super::{DaemonConnection, DaemonError};
use crate::derivation::Derivation;
use crate::hash::{Hash, HashAlgo};
use crate::store_path::StorePath;

mod code {
    pub const IS_VALID_PATH: u64 = 1;
    pub const ADD_TO_STORE: u64 = 7;
    pub const ADD_TEXT_TO_STORE: u64 = 8;
    pub const BUILD_PATHS: u64 = 9;
    pub const ENSURE_PATH: u64 = 10;
    pub const ADD_TEMP_ROOT: u64 = 11;
    pub const SET_OPTIONS: u64 = 19;
    pub const QUERY_PATH_INFO: u64 = 26;
    pub const QUERY_VALID_PATHS: u64 = 31;
    pub const BUILD_DERIVATION: u64 = 36;
    pub const ADD_TO_STORE_NAR: u64 = 39;
    pub const QUERY_MISSING: u64 = 40;
    pub const BUILD_PATHS_WITH_RESULTS: u64 = 46;
}

fn derived_paths(r: &mut Request, paths: &[DerivedPath]) {
    r.u64(paths.len() as u64);
    for p in paths {
        r.str(&p.to_string());
    }
}

impl DaemonConnection {
    /// Sends a request, then waits through the stderr loop for its answer.
    async fn call(
        &mut self,
        op: &'static str,
        request: &Request,
        long: bool,
    ) -> Result<(), DaemonError> {
        self.send(op, request).await?;
        let wait = long.then_some(self.build_timeout);
        stderr::drain(&mut self.reader, op, wait).await
    }

    /// Sends a request followed by framed `data`, reading the stderr loop
    /// at the same time (the daemon may log while it reads).
    async fn call_framed(
        &mut self,
        op: &'static str,
        request: &Request,
        data: &mut (impl AsyncRead + Unpin),
    ) -> Result<(), DaemonError> {
        self.send(op, request).await?;
        let timeout = self.reader.timeout;
        let writer = &mut self.writer;
        let reader = &mut self.reader;
        let upload = write_framed(writer, data, timeout);
        let answer = stderr::drain(reader, op, None);
        tokio::pin!(upload, answer);
        let mut sent: Option<std::io::Result<()>> = None;
        loop {
            tokio::select! {
                biased;
                result = &mut upload, if sent.is_none() => sent = Some(result),
                // The daemon's own error says more than the broken pipe it causes,
                // so its answer decides, and an unfinished upload is dropped.
                answered = &mut answer => {
                    answered?;
                    return match sent {
                        Some(Ok(())) => Ok(()),
                        Some(Err(source)) => Err(DaemonError::Upload { op, source }),
                        None => Err(DaemonError::Protocol {
                            op,
                            problem: "the daemon answered before it had read all the data".to_owned(),
                        }),
                    };
                }
            }
        }
    }

    async fn expect_one(&mut self, op: &'static str) -> Result<(), DaemonError> {
        match self.reader.u64(op).await? {
            1 => Ok(()),
            n => Err(DaemonError::Protocol {
                op,
                problem: format!("expected the answer 1, got {n}"),
            }),
        }
    }

    /// SetOptions: settings for this connection only.
    pub async fn set_options(&mut self, options: &ClientOptions) -> Result<(), DaemonError> {
        let op = "SetOptions";
        self.guarded(op, async |c| {
            let mut r = Request::op(code::SET_OPTIONS);
            r.bool(options.keep_failed)
                .bool(options.keep_going)
                .bool(options.try_fallback)
                .u64(options.verbosity as u64)
                .u64(options.max_build_jobs)
                .u64(options.max_silent_time)
                .u64(1) // useBuildHook, obsolete
                .u64(0) // verboseBuild: build logs at error level, so they reach us
                .u64(0) // logType
                .u64(0) // printBuildTrace
                .u64(options.build_cores)
                .bool(options.use_substitutes)
                .u64(options.overrides.len() as u64);
            for (k, v) in &options.overrides {
                r.str(k).str(v);
            }
            c.call(op, &r, false).await
        })
        .await
    }

    /// IsValidPath.
    pub async fn is_valid_path(&mut self, path: &StorePath) -> Result<bool, DaemonError> {
        let op = "IsValidPath";
        self.guarded(op, async |c| {
            let mut r = Request::op(code::IS_VALID_PATH);
            r.path(path);
            c.call(op, &r, false).await?;
            c.reader.bool(op).await
        })
        .await
    }

    /// QueryValidPaths: which of `paths` are valid; with `substitute`, the
    /// daemon first tries to substitute the missing ones.
    pub async fn query_valid_paths(
        &mut self,
        paths: &BTreeSet<StorePath>,
        substitute: bool,
    ) -> Result<BTreeSet<StorePath>, DaemonError> {
        let op = "QueryValidPaths";
        self.guarded(op, async |c| {
            let mut r = Request::op(code::QUERY_VALID_PATHS);
            r.paths(paths.iter()).bool(substitute);
            c.call(op, &r, substitute).await?;
            c.reader.paths(op).await
        })
        .await
    }

    /// QueryPathInfo: `None` when the path is not valid.
    pub async fn query_path_info(
        &mut self,
        path: &StorePath,
    ) -> Result<Option<PathInfo>, DaemonError> {
        let op = "QueryPathInfo";
        self.guarded(op, async |c| {
            let mut r = Request::op(code::QUERY_PATH_INFO);
            r.path(path);
            c.call(op, &r, false).await?;
            if !c.reader.bool(op).await? {
                return Ok(None);
            }
            c.read_path_info(op, path.clone()).await.map(Some)
        })
        .await
    }

    /// The fields of a ValidPathInfo after its path.
    async fn read_path_info(
        &mut self,
        op: &'static str,
        path: StorePath,
    ) -> Result<PathInfo, DaemonError> {
        let deriver = self.reader.optional_path(op).await?;
        let hash_text = self.reader.string(op, limits::SHORT).await?;
        let nar_hash =
            Hash::parse(&hash_text, Some(HashAlgo::Sha256)).map_err(|e| DaemonError::Protocol {
                op,
                problem: e.to_string(),
            })?;
        let references = self.reader.paths(op).await?;
        let registration_time = self.reader.u64(op).await?;
        let nar_size = self.reader.u64(op).await?;
        let ultimate = self.reader.bool(op).await?;
        let signatures = self.reader.strings(op, limits::SHORT).await?;
        let ca = self.reader.string(op, limits::SHORT).await?;
        Ok(PathInfo {
            path,
            deriver,
            nar_hash,
            references,
            registration_time,
            nar_size,
            ultimate,
            signatures,
            ca: (!ca.is_empty()).then_some(ca),
        })
    }

    /// AddTextToStore: writes a text object (a `.drv`, a `toFile`) and
    /// returns the path the daemon computed; compare it with
    /// [`crate::store_path::text_path`].
    pub async fn add_text_to_store(
        &mut self,
        name: &str,
        contents: &[u8],
        references: &BTreeSet<StorePath>,
    ) -> Result<StorePath, DaemonError> {
        let op = "AddTextToStore";
        self.guarded(op, async |c| {
            let mut r = Request::op(code::ADD_TEXT_TO_STORE);
            r.str(name).bytes(contents).paths(references.iter());
            c.call(op, &r, false).await?;
            c.reader.path(op).await
        })
        .await
    }

    /// AddToStore (content-address form): `data` is raw bytes for
    /// [`AddMethod::Text`] and [`AddMethod::Flat`], a NAR for
    /// [`AddMethod::Recursive`]. Returns the new path's info.
    pub async fn add_to_store(
        &mut self,
        name: &str,
        method: AddMethod,
        references: &BTreeSet<StorePath>,
        repair: bool,
        data: &mut (impl AsyncRead + Unpin),
    ) -> Result<PathInfo, DaemonError> {
        let op = "AddToStore";
        self.guarded(op, async |c| {
            let mut r = Request::op(code::ADD_TO_STORE);
            r.str(name)
                .str(&method.wire_name())
                .paths(references.iter())
                .bool(repair);
            c.call_framed(op, &r, data).await?;
            let path = c.reader.path(op).await?;
            c.read_path_info(op, path).await
        })
        .await
    }

    /// AddToStoreNar: uploads a NAR whose path, hash and size are in
    /// `info`. The daemon checks hash and size; untrusted clients also need
    /// a signature or a content address that matches.
    pub async fn add_to_store_nar(
        &mut self,
        info: &PathInfo,
        repair: bool,
        dont_check_signatures: bool,
        nar: &mut (impl AsyncRead + Unpin),
    ) -> Result<(), DaemonError> {
        let op = "AddToStoreNar";
        self.guarded(op, async |c| {
            let mut r = Request::op(code::ADD_TO_STORE_NAR);
            r.path(&info.path)
                .str(
                    &info
                        .deriver
                        .as_ref()
                        .map(StorePath::to_string)
                        .unwrap_or_default(),
                )
                .str(&info.nar_hash.to_base16())
                .paths(info.references.iter())
                .u64(info.registration_time)
                .u64(info.nar_size)
                .bool(info.ultimate)
                .strings(info.signatures.iter().map(String::as_str))
                .str(info.ca.as_deref().unwrap_or(""))
                .bool(repair)
                .bool(dont_check_signatures);
            c.call_framed(op, &r, nar).await
        })
        .await
    }

    /// BuildPaths: builds or substitutes; a failure is the daemon's error.
    pub async fn build_paths(
        &mut self,
        paths: &[DerivedPath],
        mode: BuildMode,
    ) -> Result<(), DaemonError> {
        let op = "BuildPaths";
        self.guarded(op, async |c| {
            let mut r = Request::op(code::BUILD_PATHS);
            derived_paths(&mut r, paths);
            r.u64(mode.wire());
            c.call(op, &r, true).await?;
            c.expect_one(op).await
        })
        .await
    }

    /// BuildPathsWithResults: like BuildPaths, with one result per path
    /// instead of one error for all.
    pub async fn build_paths_with_results(
        &mut self,
        paths: &[DerivedPath],
        mode: BuildMode,
    ) -> Result<Vec<BuildResult>, DaemonError> {
        let op = "BuildPathsWithResults";
        self.guarded(op, async |c| {
            let mut r = Request::op(code::BUILD_PATHS_WITH_RESULTS);
            derived_paths(&mut r, paths);
            r.u64(mode.wire());
            c.call(op, &r, true).await?;
            let n = c.reader.count(op, limits::ITEMS).await?;
            let mut results = Vec::new();
            for _ in 0..n {
                let path = c.reader.string(op, limits::SHORT).await?;
                results.push(c.read_build_result(op, Some(path)).await?);
            }
            Ok(results)
        })
        .await
    }

    /// BuildDerivation: builds `drv` (sent whole, without its input
    /// derivations) as `drv_path`; its inputs must already be valid.
    pub async fn build_derivation(
        &mut self,
        drv_path: &StorePath,
        drv: &Derivation,
        mode: BuildMode,
    ) -> Result<BuildResult, DaemonError> {
        let op = "BuildDerivation";
        self.guarded(op, async |c| {
            let mut r = Request::op(code::BUILD_DERIVATION);
            r.path(drv_path);
            r.u64(drv.outputs.len() as u64);
            for (name, output) in &drv.outputs {
                let (path, algo, hash) = drv.output_fields(name, output);
                r.str(name).str(&path).str(&algo).str(&hash);
            }
            r.paths(drv.input_srcs.iter())
                .str(&drv.platform)
                .str(&drv.builder)
                .strings(drv.args.iter().map(String::as_str))
                .u64(drv.env.len() as u64);
            for (k, v) in &drv.env {
                r.str(k).str(v);
            }
            r.u64(mode.wire());
            c.call(op, &r, true).await?;
            c.read_build_result(op, None).await
        })
        .await
    }

    async fn read_build_result(
        &mut self,
        op: &'static str,
        path: Option<String>,
    ) -> Result<BuildResult, DaemonError> {
        let status = BuildStatus::from_wire(self.reader.u64(op).await?);
        let error = stderr::strip_ansi(&self.reader.string(op, limits::MESSAGE).await?);
        let times_built = self.reader.u64(op).await?;
        let non_deterministic = self.reader.bool(op).await?;
        let start_time = self.reader.u64(op).await?;
        let stop_time = self.reader.u64(op).await?;
        let (mut cpu_user, mut cpu_system) = (None, None);
        if self.minor >= 37 {
            cpu_user = self.read_optional_micros(op).await?;
            cpu_system = self.read_optional_micros(op).await?;
        }
        let n = self.reader.count(op, limits::ITEMS).await?;
        let mut built_outputs = BTreeMap::new();
        for _ in 0..n {
            let id = self.reader.string(op, limits::SHORT).await?;
            let realisation = self.reader.string(op, limits::SHORT).await?;
            let (output, path) = parse_realisation(op, &id, &realisation)?;
            built_outputs.insert(output, path);
        }
        Ok(BuildResult {
            path,
            status,
            error,
            times_built,
            non_deterministic,
            start_time,
            stop_time,
            cpu_user,
            cpu_system,
            built_outputs,
        })
    }

    async fn read_optional_micros(&mut self, op: &'static str) -> Result<Option<i64>, DaemonError> {
        match self.reader.u64(op).await? {
            0 => Ok(None),
            1 => Ok(Some(self.reader.u64(op).await? as i64)),
            n => Err(DaemonError::Protocol {
                op,
                problem: format!("an optional duration tagged {n}"),
            }),
        }
    }

    /// QueryMissing: what realising `paths` would build, substitute, or cannot know.
    pub async fn query_missing(&mut self, paths: &[DerivedPath]) -> Result<Missing, DaemonError> {
        let op = "QueryMissing";
        self.guarded(op, async |c| {
            let mut r = Request::op(code::QUERY_MISSING);
            derived_paths(&mut r, paths);
            c.call(op, &r, true).await?;
            Ok(Missing {
                will_build: c.reader.paths(op).await?,
                will_substitute: c.reader.paths(op).await?,
                unknown: c.reader.paths(op).await?,
                download_size: c.reader.u64(op).await?,
                nar_size: c.reader.u64(op).await?,
            })
        })
        .await
    }

    /// EnsurePath: makes `path` valid, substituting it if needed.
    pub async fn ensure_path(&mut self, path: &StorePath) -> Result<(), DaemonError> {
        let op = "EnsurePath";
        self.guarded(op, async |c| {
            let mut r = Request::op(code::ENSURE_PATH);
            r.path(path);
            c.call(op, &r, true).await?;
            c.expect_one(op).await
        })
        .await
    }

    /// AddTempRoot: keeps `path` from garbage collection while this connection lives.
    pub async fn add_temp_root(&mut self, path: &StorePath) -> Result<(), DaemonError> {
        let op = "AddTempRoot";
        self.guarded(op, async |c| {
            let mut r = Request::op(code::ADD_TEMP_ROOT);
            r.path(path);
            c.call(op, &r, false).await?;
            c.expect_one(op).await
        })
        .await
    }
}

/// A builtOutputs entry: `sha256:<hex>!<output>` → Realisation JSON whose
/// `outPath` is a store path's base name.
fn parse_realisation(
    op: &'static str,
    id: &str,
    json: &str,
) -> Result<(String, StorePath), DaemonError> {
    let bad = |problem: String| DaemonError::Protocol { op, problem };
    let output = id
        .rsplit_once('!')
        .map(|(_, o)| o.to_owned())
        .ok_or_else(|| bad(format!("build output id {id:?} has no !output")))?;
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| bad(format!("build output {id:?}: {e}")))?;
    let out_path = value
        .get("outPath")
        .and_then(|v| v.as_str())
        .ok_or_else(|| bad(format!("build output {id:?} has no outPath")))?;
    let path = StorePath::from_base_name(out_path)
        .or_else(|_| StorePath::from_absolute_path(out_path))
        .map_err(|e| bad(format!("build output {id:?}: {e}")))?;
    Ok((output, path))
}
