//! What the build tests share: a project made from the fixture flake with
//! loopback servers, a context around the real daemon, and a made-up
//! evaluation (a registry built the way fix will fill one) for the cases a
//! real flake cannot produce.

#![allow(dead_code)]

pub mod files;
pub mod http;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use chock_log::{Entry, Log, Rotation};
use chock_nix::{
    BuildError, BuildRequest, Built, Context, EvalError, EvalRequest, Evaluation, Evaluator,
    FixEvaluator, Plan, Session, Who,
};
use chock_policy::{Asker, LoadOptions, Policy};
use chock_store::daemon::DaemonOptions;
use chock_store::registry::TextFile;
use chock_store::{
    Derivation, DerivationError, DerivationOutput, DrvHashes, FileIngestionMethod, FixedOutputHash,
    Hash, HashAlgo, Registry, StorePath,
};
use sha2::{Digest, Sha256};

/// The daemon must be there: these tests fail, saying what to run, when it is not.
pub fn require_daemon() {
    chock_testkit::require_nix_daemon(&chock_store::daemon::socket_path());
}

/// Something new on every run, so each test's files and derivations are new to the store.
pub fn nonce(tag: &str) -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_nanos();
    format!("{tag}-{}-{t}", std::process::id())
}

/// One file a server serves: its name, bytes and SHA-256.
#[derive(Debug, Clone)]
pub struct File {
    pub name: String,
    pub content: String,
    pub sha256: String,
}

impl File {
    pub fn new(tag: &str) -> File {
        let name = format!("{}.txt", nonce(tag));
        let content = format!("the file {name}\n");
        let sha256 = hex::encode(Sha256::digest(content.as_bytes()));
        File {
            name,
            content,
            sha256,
        }
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({ "name": self.name, "sha256": self.sha256, "content": self.content.trim_end() })
    }

    /// Served at `/<name>`.
    pub fn served(&self) -> (&str, &[u8]) {
        (self.name.as_str(), self.content.as_bytes())
    }
}

/// A project holding the fixture flake, its chock.zon, and a log of its own.
pub struct Project {
    pub root: tempfile::TempDir,
    pub state: tempfile::TempDir,
}

impl Project {
    /// The fixture flake with `rules` (actions and decisions) and the `nix` block.
    pub fn new(rules: &[(&str, &str)], nix: &str) -> Project {
        let root = tempfile::tempdir().expect("tempdir");
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fetch");
        files::copy_dir(&fixture, root.path());
        std::fs::write(root.path().join("sub/nonce"), nonce("sub")).expect("nonce");
        let project = Project {
            root,
            state: tempfile::tempdir().expect("tempdir"),
        };
        project.set_rules(rules, nix);
        project
    }

    pub fn dir(&self) -> &Path {
        self.root.path()
    }

    pub fn set_rules(&self, rules: &[(&str, &str)], nix: &str) {
        let rules: String = rules
            .iter()
            .map(|(a, d)| format!("            .{{ .action = \"{a}\", .decision = .{d} }},\n"))
            .collect();
        let text = format!(
            ".{{\n    .policy = .{{\n        .rules = .{{\n{rules}        }},\n    }},\n    .nix = .{{ {nix} }},\n}}\n"
        );
        std::fs::write(self.dir().join("chock.zon"), text).expect("chock.zon");
    }

    /// Writes `servers.json`, which the fixture flake reads.
    pub fn servers(&self, servers: serde_json::Value) {
        std::fs::write(
            self.dir().join("servers.json"),
            serde_json::to_string_pretty(&servers).expect("json"),
        )
        .expect("servers.json");
    }

    /// The project's policy, with no operator config and no org bundle.
    pub fn policy(&self) -> Policy {
        Policy::load(&LoadOptions {
            project_dir: self.dir().to_path_buf(),
            ..LoadOptions::default()
        })
        .expect("policy")
    }

    pub fn log(&self) -> Log {
        Log::at(self.state.path().join("log"), Rotation::default())
    }

    /// Every line the log holds.
    pub fn entries(&self) -> Vec<Entry> {
        let log = self.log();
        match log.records() {
            Ok(records) => records
                .filter_map(|line| line.ok()?.record.ok())
                .map(|r| r.entry)
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    pub fn request(&self, attribute: &[&str], flake: Option<&str>) -> BuildRequest {
        BuildRequest {
            project: self.dir().to_path_buf(),
            flake: flake.map(str::to_owned),
            attribute: attribute.iter().map(|s| s.to_string()).collect(),
            who: Who::default(),
        }
    }

    /// Builds `packages.x86_64-linux.<name>` of the fixture, evaluated by fix.
    pub fn build(&self, name: &str, asker: &dyn Asker) -> Result<Built, BuildError> {
        self.build_with(&self.package(name), &FixEvaluator::default(), asker)
    }

    pub fn plan(&self, name: &str) -> Result<Plan, BuildError> {
        let policy = self.policy();
        let log = self.log();
        let evaluator = FixEvaluator::default();
        let context = context(&policy, &evaluator, &chock_policy::Nobody, &log);
        chock_nix::plan(&self.package(name), &context)
    }

    pub fn package(&self, name: &str) -> BuildRequest {
        self.request(&["packages", "x86_64-linux", name], None)
    }

    pub fn build_with(
        &self,
        request: &BuildRequest,
        evaluator: &dyn Evaluator,
        asker: &dyn Asker,
    ) -> Result<Built, BuildError> {
        let policy = self.policy();
        let log = self.log();
        chock_nix::build(
            request,
            &context(&policy, evaluator, asker, &log),
            &mut Session::default(),
        )
    }
}

pub fn context<'a>(
    policy: &'a Policy,
    evaluator: &'a dyn Evaluator,
    asker: &'a dyn Asker,
    log: &'a Log,
) -> Context<'a> {
    Context {
        policy,
        evaluator,
        asker,
        log,
        route: chock_gate::Route::Build,
        daemon: DaemonOptions::default(),
    }
}

/// Whether a store path exists.
pub fn in_store(path: &str) -> bool {
    Path::new(path).exists()
}

/// A panicking asker: the test says nobody must be asked.
pub fn no_one(question: &chock_policy::Question) -> chock_policy::Answer {
    panic!("nobody should have been asked, but was asked {question:?}")
}

/// An evaluation made in Rust with chock-store, the way fix will register
/// what it produced, for cases a real flake cannot give (a wrong path, a
/// derivation nobody evaluated).
#[derive(Default)]
pub struct Made {
    pub registry: Registry,
    hashes: DrvHashes,
    pub top: Option<StorePath>,
}

impl Made {
    /// A `/bin/sh -c script` derivation with `inputs` (their `out`) and `sources`.
    pub fn shell(
        &mut self,
        name: &str,
        script: &str,
        inputs: &[&StorePath],
        sources: &[&StorePath],
        env: &[(&str, &str)],
    ) -> StorePath {
        let mut d = Derivation::new(name);
        d.platform = "x86_64-linux".into();
        d.builder = "/bin/sh".into();
        d.args = vec!["-c".into(), script.into()];
        for (k, v) in [
            ("builder", "/bin/sh"),
            ("name", name),
            ("system", "x86_64-linux"),
        ]
        .iter()
        .chain(env)
        {
            d.env.insert((*k).into(), (*v).into());
        }
        for input in inputs {
            d.input_drvs
                .insert((*input).clone(), BTreeSet::from(["out".to_owned()]));
        }
        d.input_srcs = sources.iter().map(|s| (*s).clone()).collect();
        d.outputs.insert("out".into(), DerivationOutput::Deferred);
        d.fill_in_output_paths(&mut self.hashes, &mut loader(&self.registry))
            .expect("output paths");
        self.add(d)
    }

    /// A `builtin:fetchurl` derivation for `url`, as `<nix/fetchurl.nix>` writes it.
    pub fn fetch(&mut self, file: &File, url: &str) -> StorePath {
        let mut d = Derivation::new(file.name.clone());
        d.platform = "builtin".into();
        d.builder = "builtin:fetchurl".into();
        for (k, v) in [
            ("builder", "builtin:fetchurl"),
            ("name", file.name.as_str()),
            ("system", "builtin"),
            ("url", url),
            ("urls", url),
            ("executable", ""),
            ("unpack", ""),
            ("outputHash", file.sha256.as_str()),
            ("outputHashAlgo", "sha256"),
            ("outputHashMode", "flat"),
            ("preferLocalBuild", "1"),
            (
                "impureEnvVars",
                "http_proxy https_proxy ftp_proxy all_proxy no_proxy",
            ),
        ] {
            d.env.insert(k.into(), v.into());
        }
        d.set_fixed_output(FixedOutputHash {
            method: FileIngestionMethod::Flat,
            hash: Hash::parse(&file.sha256, Some(HashAlgo::Sha256)).expect("hash"),
        })
        .expect("fixed output");
        self.add(d)
    }

    /// A text object (`builtins.toFile`).
    pub fn text(&mut self, name: &str, contents: &str) -> StorePath {
        let path = chock_store::store_path::text_path(name, contents, &BTreeSet::new())
            .expect("text path");
        self.registry.texts.insert(
            path.clone(),
            TextFile {
                name: name.into(),
                contents: contents.as_bytes().to_vec(),
                references: BTreeSet::new(),
            },
        );
        path
    }

    fn add(&mut self, drv: Derivation) -> StorePath {
        let path = drv.drv_path().expect("drv path");
        let hash = self
            .hashes
            .hash_modulo(&drv, false, &mut loader(&self.registry))
            .expect("hash modulo");
        self.hashes.insert(path.clone(), hash);
        self.registry.derivations.insert(path.clone(), drv);
        self.top = Some(path.clone());
        path
    }

    /// The output path of a derivation made here.
    pub fn out(&self, drv: &StorePath) -> String {
        self.registry.derivations[drv]
            .output_path("out")
            .expect("output")
            .expect("known")
            .to_string()
    }
}

/// Reads input derivations from what was made so far, and nothing else.
fn loader(registry: &Registry) -> impl FnMut(&StorePath) -> Result<Derivation, DerivationError> {
    |p: &StorePath| {
        registry
            .derivations
            .get(p)
            .cloned()
            .ok_or_else(|| DerivationError::NotADerivation {
                path: p.to_string(),
            })
    }
}

impl Evaluator for Made {
    fn evaluate(&self, _request: &EvalRequest<'_>) -> Result<Evaluation, EvalError> {
        Ok(Evaluation {
            drv_path: self.top.clone().expect("a derivation was made"),
            registry: self.registry.clone(),
        })
    }
}

/// An evaluator that must not be reached.
pub struct Unreached;

impl Evaluator for Unreached {
    fn evaluate(&self, request: &EvalRequest<'_>) -> Result<Evaluation, EvalError> {
        panic!(
            "nothing should have been evaluated, but {} was",
            request.installable
        )
    }
}

/// The rules every fixture build needs to get started.
pub const BUILD_PACKAGES: (&str, &str) = ("nix.build.packages.*", "allow");

/// `nix.net.build.1.0.0.127.<port>`.
pub fn loopback(port: u16) -> String {
    format!("nix.net.build.1.0.0.127.{port}")
}

/// A path under the fixture copy.
pub fn under(project: &Project, rel: &str) -> PathBuf {
    project.dir().join(rel)
}
