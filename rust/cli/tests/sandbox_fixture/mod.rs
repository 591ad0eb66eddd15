//! A project for `chock exec` tests: its own HOME, XDG directories and
//! decision log, optionally a flake whose dev shell builds with no nixpkgs
//! (raw derivations with /bin/sh builders; the daemon's sandbox is off on
//! the machines Chock is tested on), and the escape probe compiled static.
//! Needs a kernel with user namespaces and Landlock and a Nix daemon; each
//! test fails saying so (run `scripts/setup`, see `chock doctor`).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The flake: a `default` dev shell whose PATH is a tool's bin, a `ci`
/// shell, and a package outside both closures. Each shell's builder writes
/// `$out`, as mkShell's does: chock-nix builds the shell before Nix reads
/// its environment.
fn flake_text(system: &str) -> String {
    format!(
        r#"{{
  outputs = {{ self }}: let
    system = "{system}";
    raw = name: script: derivation {{
      inherit name system;
      builder = "/bin/sh";
      args = [ "-c" script ];
      PATH = "/usr/bin:/bin";
    }};
    stdenv = raw "mini-stdenv" "mkdir $out; echo 'export PATH=$tool/bin' > $out/setup";
    tool = raw "tool" "mkdir -p $out/bin; echo hello > $out/bin/greeting";
  in {{
    devShells.${{system}} = {{
      default = derivation {{
        name = "shell"; inherit system stdenv tool; builder = "/bin/bash";
        outputs = [ "out" ]; args = [ "-c" "echo shell > $out" ];
        MYVAR = "from the dev shell";
      }};
      ci = derivation {{
        name = "ci-shell"; inherit system stdenv; builder = "/bin/bash";
        outputs = [ "out" ]; args = [ "-c" "echo shell > $out" ];
        CI_ONLY = "yes";
      }};
    }};
    packages.${{system}}.outside = raw "outside-the-closure" "echo secret > $out";
  }};
}}
"#
    )
}

/// The rule a project with a flake writes so its dev shells are built
/// without a question (`nix.build.*` ships as ask).
pub const DEV_SHELL_RULE: &str = r#".{ .action = "nix.build.devShells.*", .decision = .allow }"#;

pub struct Fixture {
    root: tempfile::TempDir,
    pub project: PathBuf,
    pub home: PathBuf,
    /// Rules every `rules` call writes first: the dev shell rule for a flake.
    base_rules: &'static str,
}

impl Fixture {
    /// A project with no flake.nix.
    pub fn host() -> Fixture {
        let root = tempfile::Builder::new()
            .prefix("chock-exec-")
            .tempdir()
            .expect("tempdir");
        let project = root.path().join("project");
        let home = root.path().join("home");
        for dir in [&project, &home] {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        Fixture {
            root,
            project,
            home,
            base_rules: "",
        }
    }

    /// A project with the test flake, tracked in git so Nix copies only flake.nix.
    /// (Nix 2.8's get-env.sh writes the shell's environment to each name in
    /// `outputs`, so a raw dev shell derivation must name its outputs.)
    /// chock.zon allows its dev shells to be built ([`DEV_SHELL_RULE`]).
    pub fn flake() -> Fixture {
        let mut fixture = Fixture::host();
        fixture.base_rules = DEV_SHELL_RULE;
        fixture.rules("");
        let system = chock_sandbox::devshell::system();
        std::fs::write(fixture.project.join("flake.nix"), flake_text(&system)).expect("flake.nix");
        for args in [&["init", "-q"][..], &["add", "flake.nix"]] {
            assert!(git(&fixture.project, args), "git {args:?} failed");
        }
        fixture
    }

    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// Writes chock.zon with these rules (ZON rule structs, comma-separated),
    /// after the fixture's own (the dev shell rule for a flake).
    pub fn rules(&self, rules: &str) {
        let base = self.base_rules;
        let rules = if base.is_empty() || rules.is_empty() {
            format!("{base}{rules}")
        } else {
            format!("{base}, {rules}")
        };
        self.zon(&format!(
            ".{{ .policy = .{{ .rules = .{{ {rules} }} }} }}\n"
        ));
    }

    pub fn zon(&self, text: &str) {
        std::fs::write(self.project.join("chock.zon"), text).expect("chock.zon");
    }

    /// `chock` with this fixture's HOME and XDG directories, run in the project.
    /// This fixture's `chock` with `args`, run on a pseudo-terminal by
    /// util-linux's `script` (same environment and folder): stdin and
    /// stderr are a terminal, and a ^C typed there is the terminal's
    /// SIGINT to the foreground process group, as a person's is. Its
    /// stdin, stdout and stderr are pipes for the test.
    pub fn chock_on_a_terminal(&self, args: &[&str]) -> Command {
        let inner = self.chock();
        let line = std::iter::once(inner.get_program())
            .chain(inner.get_args())
            .map(|a| a.to_string_lossy().into_owned())
            .chain(args.iter().map(|a| (*a).to_owned()))
            .map(|a| format!("'{a}'"))
            .collect::<Vec<_>>()
            .join(" ");
        let mut script = Command::new("script");
        script
            .args(["--quiet", "--return", "--command", &line, "/dev/null"])
            .env("TERM", "dumb")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        for (name, value) in inner.get_envs() {
            match value {
                Some(value) => script.env(name, value),
                None => script.env_remove(name),
            };
        }
        if let Some(dir) = inner.get_current_dir() {
            script.current_dir(dir);
        }
        script
    }

    pub fn chock(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_chock"));
        let at = |name: &str| self.root.path().join(name);
        command
            .current_dir(&self.project)
            .env("HOME", &self.home)
            .env("XDG_DATA_HOME", at("data"))
            .env("XDG_CACHE_HOME", at("cache"))
            .env("XDG_CONFIG_HOME", at("config"))
            .env("XDG_STATE_HOME", at("state"))
            .env_remove("CHOCK_STATE_DIR")
            .env("NIX_REMOTE", "daemon");
        command
    }

    /// `chock exec [flags] -- program args...`
    pub fn exec(&self, flags: &[&str], program: &[&str]) -> Output {
        self.exec_command(flags, program)
            .output()
            .expect("run chock")
    }

    /// The command [`Fixture::exec`] runs, to start without waiting.
    pub fn exec_command(&self, flags: &[&str], program: &[&str]) -> Command {
        let mut command = self.chock();
        command.arg("exec").args(flags).arg("--").args(program);
        command
    }

    /// The decision log's lines.
    pub fn log_lines(&self) -> Vec<serde_json::Value> {
        let path = self.root.path().join("state/chock/log/decisions.jsonl");
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("log line is JSON"))
            .collect()
    }

    /// The last decision-log line for `action`, whatever its route.
    pub fn last_logged(&self, action: &str) -> serde_json::Value {
        self.log_lines()
            .into_iter()
            .rfind(|l| l["action"] == action)
            .unwrap_or_else(|| panic!("no log line for {action}: {:#?}", self.log_lines()))
    }

    /// The escape probe, copied into the project (it is static, so it runs
    /// in any sandbox).
    pub fn probe(&self) -> PathBuf {
        let target = self.project.join("probe");
        std::fs::copy(probe_binary(), &target).expect("copy probe");
        target
    }

    /// Builds the flake's `outside` package and returns its store path.
    pub fn outside_store_path(&self) -> PathBuf {
        let system = chock_sandbox::devshell::system();
        let installable = format!("{}#packages.{system}.outside", self.project.display());
        let out = Command::new("nix")
            .args([
                "--extra-experimental-features",
                "nix-command flakes",
                "build",
                "--no-link",
                "--json",
                &installable,
            ])
            .env("NIX_REMOTE", "daemon")
            .output()
            .expect("nix build: run scripts/setup");
        assert!(
            out.status.success(),
            "nix build failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("nix build --json");
        PathBuf::from(json[0]["outputs"]["out"].as_str().expect("an out path"))
    }
}

/// Makes `project`'s flake one whose dev shell needs the locked tarball
/// input `pkg` at `url` (NAR hash `nar_hash`), both files added to git: the
/// shell's builder reads the input's `hello`, and `PKG` names the input
/// inside the shell.
pub fn shell_with_tarball_input(project: &Path, url: &str, nar_hash: &str) {
    let system = chock_sandbox::devshell::system();
    let flake = format!(
        r#"{{
  inputs.pkg = {{ url = "{url}"; flake = false; }};
  outputs = {{ self, pkg }}: let system = "{system}"; in {{
    devShells.${{system}}.default = derivation {{
      name = "shell"; inherit system; builder = "/bin/bash";
      outputs = [ "out" ]; args = [ "-c" "read x < ${{pkg}}/hello; echo $x > $out" ];
      PKG = "${{pkg}}";
    }};
  }};
}}
"#
    );
    std::fs::write(project.join("flake.nix"), flake).expect("flake.nix");
    let locked = serde_json::json!({ "type": "tarball", "url": url, "narHash": nar_hash });
    let mut lock: serde_json::Value =
        serde_json::from_str(&chock_inputs::testing::flake_lock(&[("pkg", locked)]))
            .expect("a lock");
    lock["nodes"]["pkg"]["flake"] = serde_json::json!(false);
    std::fs::write(project.join("flake.lock"), lock.to_string()).expect("flake.lock");
    assert!(git(project, &["add", "flake.nix", "flake.lock"]));
}

/// Compiles `rust/sandbox/testdata/escape_probe.rs`, statically linked,
/// once per version of the source (named by its hash, so test binaries
/// running side by side share it and old ones are not rebuilt).
pub fn probe_binary() -> &'static Path {
    static PROBE: OnceLock<PathBuf> = OnceLock::new();
    PROBE.get_or_init(|| {
        let source =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../sandbox/testdata/escape_probe.rs");
        let text = std::fs::read(&source).expect("the probe's source");
        let digest = text.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
        });
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let output = dir.join(format!("escape_probe-{digest:016x}"));
        if output.exists() {
            return output;
        }
        let building = dir.join(format!("escape_probe-{digest:016x}.{}", std::process::id()));
        let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
        let built = Command::new(rustc)
            .args([
                "--edition",
                "2024",
                "-O",
                "-C",
                "target-feature=+crt-static",
                "-o",
            ])
            .arg(&building)
            .arg(&source)
            .output()
            .expect("rustc is needed to build the escape probe");
        assert!(
            built.status.success(),
            "building the probe failed: {}",
            String::from_utf8_lossy(&built.stderr)
        );
        std::fs::rename(&building, &output).expect("the probe is put in place");
        output
    })
}

/// Runs git in `dir` on the host, as the person would; whether it succeeded.
pub fn git(dir: &Path, args: &[&str]) -> bool {
    git_output(dir, args).status.success()
}

/// git in `dir` as the fixture's person; its stdout, trimmed, asserting it succeeded.
#[allow(dead_code)]
pub fn git_stdout(dir: &Path, args: &[&str]) -> String {
    let out = git_output(dir, args);
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim_end().to_owned()
}

fn git_output(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .args([
            "-c",
            "user.name=person",
            "-c",
            "user.email=person@example.org",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git is installed (scripts/setup)")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub fn describe(output: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        output.status,
        text(&output.stdout),
        text(&output.stderr)
    )
}

/// Swaps each pair of names with `renameat2(RENAME_EXCHANGE)`, pair after
/// pair, as fast as it can until `stop` is set: an agent racing a check
/// against a use. Answers how many swaps were made.
pub fn exchanging(
    pairs: Vec<(PathBuf, PathBuf)>,
    stop: &std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    let stop = stop.clone();
    std::thread::spawn(move || {
        let mut swaps = 0u64;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            for (a, b) in &pairs {
                let flags = rustix::fs::RenameFlags::EXCHANGE;
                if rustix::fs::renameat_with(rustix::fs::CWD, a, rustix::fs::CWD, b, flags).is_ok()
                {
                    swaps += 1;
                }
            }
        }
        swaps
    })
}

/// A link race in `project`: `x` is a link to `inside.txt` (holding
/// `inside-text`) and `y` one to a file outside holding `outside-secret`;
/// the two names are exchanged in a loop while `read` reads `./x` again
/// and again for `seconds`. `read` answers whether it succeeded and all it
/// showed. Fails when a read showed the file outside; asserts that the
/// race ran and that some reads landed inside.
pub fn race_a_link_out(project: &Path, seconds: u64, mut read: impl FnMut() -> (bool, String)) {
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(outside.path().join("secret"), "outside-secret").expect("secret");
    std::fs::write(project.join("inside.txt"), "inside-text").expect("inside");
    std::os::unix::fs::symlink("inside.txt", project.join("x")).expect("link");
    std::os::unix::fs::symlink(outside.path().join("secret"), project.join("y")).expect("link");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = exchanging(vec![(project.join("x"), project.join("y"))], &stop);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    let (mut reads, mut inside) = (0, 0);
    while std::time::Instant::now() < until {
        let (succeeded, shown) = read();
        assert!(
            !shown.contains("outside-secret"),
            "read {reads} showed the file outside: {shown}"
        );
        if succeeded && shown.contains("inside-text") {
            inside += 1;
        }
        reads += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swapper.join().expect("swapper");
    assert!(swaps > 1000, "the race ran ({swaps} exchanges)");
    assert!(inside > 0, "some of the {reads} reads landed inside");
}
