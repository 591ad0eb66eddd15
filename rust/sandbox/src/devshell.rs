//! The project's Nix dev shell as the sandbox's toolchain.
//!
//! A dev shell is built like any other attribute of the project's flake:
//! before anything of it is built, `devShells.<system>.<name>` goes through
//! chock-nix (see `docs/build.md`) — fix evaluates it in process,
//! `nix.build.devShells.<system>.<name>` is decided (and asked, when a
//! person is there), every host a fixed-output derivation of its closure
//! reaches is answered, the `.drv` files are written through the daemon
//! with their paths checked, and the shell's derivation is built by path.
//! Every answer is a line in the decision log under the caller's route.
//! Nix's own evaluator never reads the flake: a flake that evaluates to
//! something else under Nix than under fix cannot slip a different
//! derivation past the decision.
//!
//! Only then is the environment read, the way nix-direnv reads it, from
//! the derivation chock-nix built: `nix print-dev-env --json <drv>` adds
//! its small `-env` wrapper (the shell's own builder running Nix's
//! get-env.sh over inputs already built) and dumps its variables; what the
//! shell *adds* to a bare environment is kept (exported variables, less the
//! ones Nix's own rc file skips because they describe the build rather than
//! the shell), so the answer does not depend on the caller's environment
//! and a caller already inside direnv gets the same one.
//!
//! The mount set is the closure of the `-env` output, read from the daemon's
//! path infos (`nix-store --query --requisites`). A GC root (`--profile`)
//! keeps it alive, and the result is cached under a stamp of a format
//! version, the shell's name, the system and the bytes of `flake.nix` and
//! `flake.lock` (a missing lock counts as empty). A cached shell costs no
//! evaluation and no decision: it was decided when it was built. Files
//! `flake.nix` imports are not in the stamp: editing one without touching
//! `flake.nix` keeps the old shell until `chock cache clear` (a known
//! staleness, as in the reference). A cached shell is used only while every
//! store path of it still exists; a changed flake is never served the old
//! shell, whatever happens to the new one.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use chock_log::Log;
use chock_nix::{BuildRequest, Context, FixEvaluator, InputFetcher, Session, Who};
use chock_policy::{Asker, Policy};
use sha2::{Digest, Sha256};

/// The dev shell a project gets when it names none.
pub const DEFAULT_SHELL: &str = "default";

/// Bumped whenever what is cached changes meaning.
const FORMAT: &str = "chock-devshell-v2";

/// Variables `nix print-dev-env` dumps that describe the build of the shell,
/// not the shell: Nix's own rc output skips them, and so does Chock, less
/// `SSL_CERT_FILE`, which Nix skips so that a person's own survives in
/// `nix develop`. In the sandbox nothing of the person's environment does,
/// so a shell that names its own trust store keeps it (see [`NO_CERT_FILE`]).
pub const SKIPPED: [&str; 17] = [
    "BASHOPTS",
    "HOME",
    "NIX_BUILD_TOP",
    "NIX_ENFORCE_PURITY",
    "NIX_LOG_FD",
    "NIX_REMOTE",
    "PPID",
    "SHELLOPTS",
    "TEMP",
    "TEMPDIR",
    "TERM",
    "TMP",
    "TMPDIR",
    "TZ",
    "UID",
    "OLDPWD",
    "PWD",
];

/// What nixpkgs' stdenv sets `SSL_CERT_FILE` and `NIX_SSL_CERT_FILE` to
/// when a build names no trust store: a file that does not exist, so no
/// TLS client in a build trusts anything. It describes the build, not the
/// shell, and is left out; the sandbox then gives the host's bundle.
pub const NO_CERT_FILE: &str = "/no-cert-file.crt";

/// Reading the dev shell failed.
#[derive(Debug, thiserror::Error)]
pub enum DevShellError {
    /// `nix` could not be started.
    #[error(
        "could not run `nix` ({source}); install Nix (scripts/setup does) or remove flake.nix to run on the host's toolchain"
    )]
    NoNix {
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// chock-nix did not build the dev shell: a rule or a person refused,
    /// fix could not evaluate it, or the build failed. Nothing of the old
    /// shell is used instead.
    #[error("the dev shell devShells.{system}.{name} was not built: {source}")]
    Build {
        /// The system.
        system: String,
        /// The shell.
        name: String,
        /// Why, in chock build's words.
        #[source]
        source: chock_nix::BuildError,
    },
    /// A dev shell other than [`DEFAULT_SHELL`] was named, in a flake that
    /// declares no `devShells`: nothing runs rather than another toolchain.
    #[error(
        "the dev shell `{name}` was named (--dev-shell or chock.zon's .nix.dev_shell), but {flake} declares no devShells: add devShells.{system}.{name} there, or name none to run on the host's toolchain"
    )]
    NotDeclared {
        /// The flake.
        flake: PathBuf,
        /// The system.
        system: String,
        /// The shell named.
        name: String,
    },
    /// `nix print-dev-env` failed (its message was printed above).
    #[error(
        "`nix print-dev-env` failed for devShells.{system}.{name} (exit {code}); its message is above"
    )]
    Nix {
        /// The system.
        system: String,
        /// The shell.
        name: String,
        /// Nix's exit code.
        code: i32,
    },
    /// Nix printed something that is not the JSON it documents.
    #[error(
        "`nix print-dev-env --json` printed something Chock cannot read ({0}); run it by hand to see"
    )]
    BadJson(String),
    /// Querying the closure failed.
    #[error("could not read the closure of {path} from the Nix daemon: {message}")]
    Closure {
        /// The `-env` output.
        path: PathBuf,
        /// What nix-store said.
        message: String,
    },
    /// Reading or writing the cache failed.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// Where.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> DevShellError + 'a {
    move |source| DevShellError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// A dev shell ready to be a sandbox's toolchain.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DevShell {
    /// The shell's name (`default`, `ci`, ...).
    pub name: String,
    /// `devShells.<system>.<name>`.
    pub attribute: String,
    /// The variables the shell adds, sorted by name.
    pub env: BTreeMap<String, String>,
    /// The `-env` output the closure hangs from.
    pub env_path: PathBuf,
    /// Every store path of the closure.
    pub store_paths: Vec<PathBuf>,
    /// Links to make inside (target, link): `/bin/sh` and `/usr/bin/env`.
    pub links: Vec<(PathBuf, PathBuf)>,
    /// Whether this came from the cache (not stored).
    #[serde(skip)]
    pub cached: bool,
}

/// What building a dev shell through chock-nix needs from the caller: the
/// rules, the log, who answers what the rules leave open, the route the log
/// lines carry (`exec`, `mcp`), who is asking, and who fetches the flake
/// inputs the evaluation finds missing.
pub struct Builder<'a> {
    /// The project's policy.
    pub policy: &'a Policy,
    /// Where every answer is logged.
    pub log: &'a Log,
    /// Who answers a question no rule answers (a terminal, the MCP client,
    /// or [`chock_policy::Nobody`], which makes every question a refusal).
    pub asker: &'a dyn Asker,
    /// The route written on every log line.
    pub route: chock_gate::Route,
    /// The agent and tool asking.
    pub who: Who,
    /// Fetches the locked flake inputs missing from the store, as `chock
    /// build` does (the rules, then one question through `asker` for the
    /// hosts they leave open), before the shell is evaluated once more.
    /// `None` stops at a missing input, naming `chock inputs --fetch`.
    pub inputs: Option<&'a dyn InputFetcher>,
}

impl<'a> Builder<'a> {
    /// This builder, with missing flake inputs fetched by `inputs`.
    pub fn fetching_inputs(self, inputs: &'a dyn InputFetcher) -> Builder<'a> {
        Builder {
            inputs: Some(inputs),
            ..self
        }
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct CacheEntry {
    format: String,
    stamp: String,
    shell: DevShell,
}

/// The Nix system name of this machine (`x86_64-linux`, ...).
pub fn system() -> String {
    let arch = match std::env::consts::ARCH {
        "x86" => "i686",
        other => other,
    };
    format!("{arch}-linux")
}

/// The stamp a cached shell is keyed by.
pub fn stamp(project: &Path, name: &str, system: &str) -> Result<String, DevShellError> {
    let read = |file: &str| -> Result<Vec<u8>, DevShellError> {
        let path = project.join(file);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(io("reading", &path)(e)),
        }
    };
    let mut hasher = Sha256::new();
    for part in [
        FORMAT.as_bytes(),
        name.as_bytes(),
        system.as_bytes(),
        &read("flake.nix")?,
        &read("flake.lock")?,
    ] {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// The dev shell `name` of the flake in `project`, from the cache when its
/// stamp matches and every store path still exists (nothing evaluated or
/// decided), else built through chock-nix by `builder`'s rules and person
/// and then read through `nix print-dev-env`. `None` when the flake
/// declares no `devShells` at all: the project then runs on the host's
/// toolchain, as a project without a flake does.
pub fn load(
    project: &Path,
    name: &str,
    cache_dir: &Path,
    builder: &Builder<'_>,
) -> Result<Option<DevShell>, DevShellError> {
    let system = system();
    let entry_path = cache_dir.join(format!("{}.json", file_safe(name)));
    let before = stamp(project, name, &system)?;
    if let Some(shell) = read_cached(&entry_path, &before) {
        return Ok(Some(shell));
    }
    if declares_dev_shells(project, builder.policy) == Some(false) {
        if name != DEFAULT_SHELL {
            return Err(DevShellError::NotDeclared {
                flake: project.join("flake.nix"),
                system,
                name: name.to_owned(),
            });
        }
        return Ok(None);
    }
    std::fs::create_dir_all(cache_dir).map_err(io("creating", cache_dir))?;
    let gc_root = cache_dir.join(format!("{}.gcroot", file_safe(name)));
    let drv = build(project, name, &system, builder)?;
    let shell = from_nix(&drv, name, &system, &gc_root)?;
    // A fetched input may have written flake.lock; the stamp is taken
    // after, so the next run finds this entry.
    let after = stamp(project, name, &system)?;
    write_cached(
        &entry_path,
        &CacheEntry {
            format: FORMAT.into(),
            stamp: after,
            shell: shell.clone(),
        },
    )?;
    Ok(Some(shell))
}

/// Whether the flake in `project` has a `devShells` output, as fix reads
/// it (pure, in process, nothing fetched or written): `flake.nix`'s
/// `outputs` called with `self` and every input it names standing for a
/// value that stops the evaluation when read (`abort`, which
/// `builtins.tryEval` does not catch, so a flake cannot read one and go on
/// with other names). A flake whose output names
/// do not depend on its inputs (most: `outputs = { self, nixpkgs }: {
/// packages = ...; }`) answers at once, without the tree being copied or
/// hashed as a build's `getFlake` does; one whose names do (a helper such
/// as flake-utils building them), or that fix cannot read, answers `None`,
/// and the build runs and says why in its own words. A flake written to
/// answer "none" here and have shells under Nix wins nothing its author
/// could not have by removing them: the host's toolchain is what a project
/// without a flake gets.
fn declares_dev_shells(project: &Path, policy: &Policy) -> Option<bool> {
    const EXPR: &str = r#"let
  flake = import ./flake.nix;
  unread = name: abort "the input ${name} is not read to find the flake's devShells";
  names = [ "self" ]
    ++ builtins.attrNames (builtins.functionArgs flake.outputs)
    ++ builtins.attrNames (flake.inputs or { });
  inputs = builtins.listToAttrs (map (name: { inherit name; value = unread name; }) names);
in builtins.hasAttr "devShells" (flake.outputs inputs)"#;
    let mut options = FixEvaluator::for_policy(policy).options;
    options.roots = vec![project.to_path_buf()];
    let request = chock_fix::Request::new(chock_fix::Source::expr(EXPR, project));
    let output = chock_fix::evaluate(&options, &request).ok()?;
    match output.text.as_slice() {
        b"true" => Some(true),
        b"false" => Some(false),
        _ => None,
    }
}

/// Every dev shell cached for a project (whatever its stamp).
pub fn cached(cache_dir: &Path) -> Vec<DevShell> {
    let Ok(entries) = std::fs::read_dir(cache_dir) else {
        return Vec::new();
    };
    let mut shells: Vec<DevShell> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| serde_json::from_slice::<CacheEntry>(&std::fs::read(e.path()).ok()?).ok())
        .map(|entry| DevShell {
            cached: true,
            ..entry.shell
        })
        .collect();
    shells.sort_by(|a, b| a.name.cmp(&b.name));
    shells
}

/// Forgets every cached dev shell of a project and drops its GC roots, so
/// the next command reads the shell again and Nix may collect the old one.
pub fn forget(cache_dir: &Path) -> std::io::Result<usize> {
    match std::fs::remove_dir_all(cache_dir) {
        Ok(()) => Ok(1),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(e),
    }
}

fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn read_cached(path: &Path, stamp: &str) -> Option<DevShell> {
    let bytes = std::fs::read(path).ok()?;
    let entry: CacheEntry = serde_json::from_slice(&bytes).ok()?;
    let fresh = entry.format == FORMAT
        && entry.stamp == stamp
        && entry
            .shell
            .store_paths
            .iter()
            .all(|p| p.symlink_metadata().is_ok());
    // Only store paths are ever mounted from here: an entry naming anything
    // else (a damaged or edited file) is read again from Nix instead.
    let store = crate::layout::store_dir();
    let only_store = entry
        .shell
        .store_paths
        .iter()
        .all(|p| p.parent() == Some(store.as_path()))
        && entry
            .shell
            .links
            .iter()
            .all(|(target, _)| target.starts_with(&store));
    (fresh && only_store).then_some(DevShell {
        cached: true,
        ..entry.shell
    })
}

fn write_cached(path: &Path, entry: &CacheEntry) -> Result<(), DevShellError> {
    let bytes = serde_json::to_vec(entry).map_err(|e| DevShellError::BadJson(e.to_string()))?;
    let temp = path.with_extension(format!("json.{}", std::process::id()));
    let mut file = std::fs::File::create(&temp).map_err(io("writing", &temp))?;
    file.write_all(&bytes).map_err(io("writing", &temp))?;
    file.sync_all().map_err(io("writing", &temp))?;
    std::fs::rename(&temp, path).map_err(io("writing", path))
}

fn nix(args: &[&std::ffi::OsStr]) -> std::process::Command {
    let mut command = std::process::Command::new("nix");
    command
        .args(["--extra-experimental-features", "nix-command flakes"])
        .args(args);
    command
}

/// `devShells.<system>.<name>` through chock-nix, exactly as `chock build
/// devShells <system> <name>` builds it; the derivation's path.
fn build(
    project: &Path,
    name: &str,
    system: &str,
    builder: &Builder<'_>,
) -> Result<PathBuf, DevShellError> {
    let failed = |source| DevShellError::Build {
        system: system.into(),
        name: name.into(),
        source,
    };
    let request = BuildRequest {
        project: project.to_path_buf(),
        flake: None,
        attribute: vec!["devShells".into(), system.into(), name.into()],
        who: builder.who.clone(),
    };
    let context = Context {
        policy: builder.policy,
        evaluator: &FixEvaluator::for_policy(builder.policy),
        asker: builder.asker,
        log: builder.log,
        route: builder.route,
        daemon: Default::default(),
    };
    tracing::info!(target: "chock_progress", "building devShells.{system}.{name} through chock-nix before reading it");
    let mut session = Session::default();
    let built = match builder.inputs {
        Some(inputs) => chock_nix::build_fetching_inputs(&request, &context, &mut session, inputs),
        None => chock_nix::build(&request, &context, &mut session),
    }
    .map_err(failed)?;
    Ok(PathBuf::from(built.plan.derivation))
}

/// Reads the environment of the dev shell whose derivation chock-nix built:
/// Nix is handed the `.drv` path, never the flake, so it evaluates nothing
/// and builds only the `-env` wrapper over what is already built.
fn from_nix(
    drv: &Path,
    name: &str,
    system: &str,
    gc_root: &Path,
) -> Result<DevShell, DevShellError> {
    let attribute = format!("devShells.{system}.{name}");
    tracing::info!(target: "chock_progress", drv = %drv.display(), "reading the dev shell through nix print-dev-env");
    let output = nix(&[
        "print-dev-env".as_ref(),
        "--json".as_ref(),
        "--profile".as_ref(),
        gc_root.as_os_str(),
        drv.as_os_str(),
    ])
    .stdin(Stdio::null())
    .stderr(Stdio::inherit())
    .output()
    .map_err(|source| DevShellError::NoNix { source })?;
    if !output.status.success() {
        return Err(DevShellError::Nix {
            system: system.into(),
            name: name.into(),
            code: output.status.code().unwrap_or(1),
        });
    }
    let env = shell_env(&output.stdout)?;
    let env_path = gc_root
        .canonicalize()
        .map_err(io("reading the GC root", gc_root))?;
    drop_old_generations(gc_root);
    let store_paths = closure(&env_path)?;
    let links = links(&store_paths);
    Ok(DevShell {
        name: name.into(),
        attribute,
        env,
        env_path,
        store_paths,
        links,
        cached: false,
    })
}

/// `--profile` adds a generation (`<root>-N-link`) each time the shell is
/// read again, and each would keep its old closure from Nix's garbage
/// collector for ever; only the one the profile points at is kept.
fn drop_old_generations(gc_root: &Path) {
    let (Some(dir), Some(name)) = (gc_root.parent(), gc_root.file_name()) else {
        return;
    };
    let current = std::fs::read_link(gc_root).ok();
    let prefix = format!("{}-", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let file = entry.file_name();
        let file = file.to_string_lossy();
        let is_generation = file
            .strip_prefix(&prefix)
            .is_some_and(|rest| rest.ends_with("-link"));
        if is_generation && current.as_deref() != Some(Path::new(&*file)) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[derive(serde::Deserialize)]
struct PrintDevEnv {
    variables: BTreeMap<String, Variable>,
}

#[derive(serde::Deserialize)]
struct Variable {
    #[serde(rename = "type")]
    kind: String,
    value: serde_json::Value,
}

/// What the shell adds to a bare environment: its exported variables, less
/// those that describe the build (and stdenv's [`NO_CERT_FILE`]).
pub fn shell_env(json: &[u8]) -> Result<BTreeMap<String, String>, DevShellError> {
    let dump: PrintDevEnv =
        serde_json::from_slice(json).map_err(|e| DevShellError::BadJson(e.to_string()))?;
    Ok(dump
        .variables
        .into_iter()
        .filter(|(name, var)| var.kind == "exported" && !SKIPPED.contains(&name.as_str()))
        .filter_map(|(name, var)| match var.value {
            serde_json::Value::String(value) if value != NO_CERT_FILE => Some((name, value)),
            _ => None,
        })
        .collect())
}

fn closure(env_path: &Path) -> Result<Vec<PathBuf>, DevShellError> {
    let output = std::process::Command::new("nix-store")
        .args(["--query", "--requisites"])
        .arg(env_path)
        .stdin(Stdio::null())
        .output()
        .map_err(|source| DevShellError::NoNix { source })?;
    if !output.status.success() {
        return Err(DevShellError::Closure {
            path: env_path.to_path_buf(),
            message: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    let store = crate::layout::store_dir();
    let paths: Vec<PathBuf> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(PathBuf::from)
        .collect();
    if let Some(odd) = paths.iter().find(|p| p.parent() != Some(store.as_path())) {
        return Err(DevShellError::Closure {
            path: env_path.to_path_buf(),
            message: format!(
                "{} is not a path directly in {}",
                odd.display(),
                store.display()
            ),
        });
    }
    Ok(paths)
}

/// `/bin/sh` to the closure's shell and `/usr/bin/env` to its env, where
/// the closure has them: scripts with `#!/bin/sh` or `#!/usr/bin/env` lines
/// then run, as they do on NixOS.
fn links(store_paths: &[PathBuf]) -> Vec<(PathBuf, PathBuf)> {
    let find = |names: &[&str]| {
        names.iter().find_map(|name| {
            store_paths
                .iter()
                .map(|p| p.join(name))
                .find(|p| p.is_file())
        })
    };
    let mut links = Vec::new();
    if let Some(sh) = find(&["bin/sh", "bin/bash"]) {
        links.push((sh, PathBuf::from("/bin/sh")));
    }
    if let Some(env) = find(&["bin/env"]) {
        links.push((env, PathBuf::from("/usr/bin/env")));
    }
    links
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_exported_variables_that_describe_the_shell_are_kept() {
        let json = br#"{"bashFunctions":{"f":"echo"},"variables":{
            "PATH":{"type":"exported","value":"/nix/store/aaa-tool/bin"},
            "HOME":{"type":"exported","value":"/homeless-shelter"},
            "TMPDIR":{"type":"exported","value":"/tmp/nix-build"},
            "BASH":{"type":"var","value":"/bin/bash"},
            "arr":{"type":"array","value":["a"]},
            "MYVAR":{"type":"exported","value":"x"},
            "SSL_CERT_FILE":{"type":"exported","value":"/nix/store/bbb-certs/ca.pem"},
            "NIX_SSL_CERT_FILE":{"type":"exported","value":"/no-cert-file.crt"}}}"#;
        let env = shell_env(json).expect("env");
        assert_eq!(
            env.keys().collect::<Vec<_>>(),
            ["MYVAR", "PATH", "SSL_CERT_FILE"]
        );
    }

    #[test]
    fn only_a_flake_read_to_have_no_dev_shells_is_said_to_have_none() {
        let policy = Policy::from_rules(Vec::new(), Vec::new());
        let answer = |flake: &str| {
            let dir = tempfile::tempdir().expect("tempdir");
            std::fs::write(dir.path().join("flake.nix"), flake).expect("flake.nix");
            declares_dev_shells(dir.path(), &policy)
        };
        assert_eq!(
            answer(
                "{ inputs.nixpkgs.url = \"x\"; outputs = { self, nixpkgs }: { packages = { }; }; }"
            ),
            Some(false)
        );
        assert_eq!(
            answer("{ outputs = { self, ... }: { devShells = { }; }; }"),
            Some(true)
        );
        // Names built from an input, or a flake fix cannot read: not known.
        assert_eq!(
            answer("{ inputs.utils.url = \"x\"; outputs = { self, utils }: utils.lib.each { }; }"),
            None
        );
        assert_eq!(answer("{ outputs = { self }: self.packages; }"), None);
        // A flake that would notice its input unread and hide its shells.
        assert_eq!(
            answer(
                "{ outputs = { self, nixpkgs }: if (builtins.tryEval nixpkgs).success then { devShells = { }; } else { }; }"
            ),
            None
        );
        assert_eq!(answer("{ outputs = throw \"broken\"; }"), None);
        assert_eq!(answer("not nix at all {"), None);
    }

    #[test]
    fn junk_from_nix_is_an_error_not_a_panic() {
        assert!(matches!(
            shell_env(b"not json"),
            Err(DevShellError::BadJson(_))
        ));
        assert!(matches!(
            shell_env(br#"{"variables":{"A":{"type":"exported"}}}"#),
            Err(DevShellError::BadJson(_))
        ));
    }

    #[test]
    fn the_stamp_follows_the_name_the_flake_and_the_lock() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("flake.nix"), "{ }").expect("flake");
        let a = stamp(dir.path(), "default", "x86_64-linux").expect("stamp");
        assert_ne!(a, stamp(dir.path(), "ci", "x86_64-linux").expect("stamp"));
        std::fs::write(dir.path().join("flake.lock"), "{}").expect("lock");
        let b = stamp(dir.path(), "default", "x86_64-linux").expect("stamp");
        assert_ne!(a, b);
        assert_eq!(
            b,
            stamp(dir.path(), "default", "x86_64-linux").expect("stamp")
        );
    }

    #[test]
    fn only_the_current_generation_stays_rooted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("default.gcroot");
        for n in 1..=3 {
            std::os::unix::fs::symlink(
                "/nix/store/x",
                dir.path().join(format!("default.gcroot-{n}-link")),
            )
            .expect("link");
        }
        std::os::unix::fs::symlink("default.gcroot-3-link", &root).expect("profile");
        std::os::unix::fs::symlink("/nix/store/y", dir.path().join("ci.gcroot-1-link"))
            .expect("other shell");
        drop_old_generations(&root);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "ci.gcroot-1-link",
                "default.gcroot",
                "default.gcroot-3-link"
            ]
        );
    }

    #[test]
    fn a_cached_entry_naming_anything_but_store_paths_is_not_used() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("default.json");
        let shell = |paths: Vec<PathBuf>| CacheEntry {
            format: FORMAT.into(),
            stamp: "s".into(),
            shell: DevShell {
                name: "default".into(),
                attribute: "devShells.x.default".into(),
                env: BTreeMap::new(),
                env_path: PathBuf::from("/nix/store/x-env"),
                store_paths: paths,
                links: Vec::new(),
                cached: false,
            },
        };
        write_cached(&path, &shell(vec![dir.path().to_path_buf()])).expect("write");
        assert!(
            read_cached(&path, "s").is_none(),
            "a host directory is never mounted from the cache"
        );
        write_cached(&path, &shell(Vec::new())).expect("write");
        assert!(read_cached(&path, "s").is_some());
        assert!(
            read_cached(&path, "other").is_none(),
            "a stale stamp is a miss"
        );
    }
}
