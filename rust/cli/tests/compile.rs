//! `chock compile` through the binary: the control of each hook point
//! written to `.agents/policies/compiled.json` (what `chock sync` writes
//! too); a policy changed after it (a rule, or only its guard's bytes) is
//! drift that `compile --check`, `sync --check` and `chock check` fail on;
//! a policy that does not read writes nothing; a link planted at the file
//! is refused, never written through.

use std::path::PathBuf;
use std::process::Output;

use serde_json::Value;

fn chock_bin() -> &'static str {
    env!("CARGO_BIN_EXE_chock")
}

struct Project {
    _root: tempfile::TempDir,
    dir: PathBuf,
    home: PathBuf,
    state: PathBuf,
}

impl Project {
    fn new() -> Project {
        let root = tempfile::tempdir().unwrap();
        let (dir, home, state) = (
            root.path().join("p"),
            root.path().join("home"),
            root.path().join("state"),
        );
        for d in [&dir, &home, &state] {
            std::fs::create_dir_all(d).unwrap();
        }
        let project = Project {
            _root: root,
            dir,
            home,
            state,
        };
        assert!(project.run("git", &["init", "-q"]).status.success());
        project
    }

    fn run(&self, program: &str, args: &[&str]) -> Output {
        let path = chock_testkit::path_with_chock(chock_bin());
        chock_testkit::isolated_command(program, &self.dir, &path, &self.home, &self.state)
            .args(args)
            .output()
            .unwrap()
    }

    fn chock(&self, args: &[&str]) -> (bool, String) {
        let out = self.run(chock_bin(), args);
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }

    fn compiled_path(&self) -> PathBuf {
        self.dir.join(".agents/policies/compiled.json")
    }

    fn compiled(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.compiled_path()).unwrap()).unwrap()
    }

    /// Every stage that can say the compiled control is stale.
    fn drift_is_seen(&self, expect: bool) {
        for args in [
            &["compile", "--check"][..],
            &["sync", "--agents", "claude", "--check"],
            &["check", "--only", "index"],
        ] {
            let (passed, said) = self.chock(args);
            assert_eq!(!passed, expect, "{args:?}: {said}");
            if expect {
                assert!(said.contains("compiled.json"), "{args:?}: {said}");
            }
        }
    }
}

#[test]
fn compile_writes_each_hook_point_s_control_and_a_stale_one_fails_the_checks() {
    let project = Project::new();
    assert!(project.chock(&["new", "policy", "no-clean"]).0);
    let (ok, said) = project.chock(&["sync", "--agents", "claude"]);
    assert!(ok, "{said}");
    assert!(
        said.contains("created   .agents/policies/compiled.json"),
        "{said}"
    );
    let compiled = project.compiled();
    let tool = compiled["hooks"]["tool"].as_array().unwrap();
    assert_eq!(tool.len(), 1, "{compiled}");
    assert_eq!(tool[0]["policy"], "no-clean");
    assert_eq!(tool[0]["rollout"], "enforce");
    assert!(tool[0]["rules"][0].as_str().unwrap().contains("git.clean"));
    assert!(tool[0]["hash"].as_str().unwrap().starts_with("sha256:"));
    assert_eq!(compiled["hooks"]["pre-commit"], serde_json::json!([]));
    project.drift_is_seen(false);

    // A rule changed, and not compiled: every gate sees it.
    let manifest = project.dir.join(".agents/policies/no-clean/manifest.zon");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace(".decision = .ask", ".decision = .deny"),
    )
    .unwrap();
    project.drift_is_seen(true);
    let (ok, said) = project.chock(&["compile"]);
    assert!(ok, "{said}");
    assert!(
        said.contains("updated   .agents/policies/compiled.json"),
        "{said}"
    );
    assert!(
        project.compiled()["hooks"]["tool"][0]["rules"][0]
            .as_str()
            .unwrap()
            .contains(".deny")
    );
    project.drift_is_seen(false);

    // A file of the package's that is not its manifest changes its hash.
    let case = project
        .dir
        .join(".agents/policies/no-clean/evals/tests-run.json");
    let text = std::fs::read_to_string(&case).unwrap();
    std::fs::write(&case, text.replace("cargo test", "cargo test --all")).unwrap();
    project.drift_is_seen(true);
    assert!(project.chock(&["compile"]).0);

    // A manifest that does not read: an error naming its line, nothing written.
    let before = std::fs::read(project.compiled_path()).unwrap();
    std::fs::write(&manifest, ".{ .id = \"no-clean\",\n .hooks = 7 }\n").unwrap();
    let (ok, said) = project.chock(&["compile"]);
    assert!(!ok);
    assert!(said.contains("manifest.zon:"), "{said}");
    assert_eq!(std::fs::read(project.compiled_path()).unwrap(), before);
}

/// A link in `.agents/policies/` refuses the policy's load (as every hook
/// refuses then), so compile writes nothing, and nothing where it points.
#[test]
fn a_link_planted_at_the_compiled_file_is_refused_not_written_through() {
    let project = Project::new();
    assert!(project.chock(&["new", "policy", "no-clean"]).0);
    let outside = project.home.join("bashrc");
    std::fs::write(&outside, "mine\n").unwrap();
    std::os::unix::fs::symlink(&outside, project.compiled_path()).unwrap();
    let (ok, said) = project.chock(&["compile"]);
    assert!(!ok, "{said}");
    assert!(
        said.contains("compiled.json:1:1: is a symbolic link"),
        "{said}"
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "mine\n");
    assert!(project.compiled_path().is_symlink());
    assert!(!project.dir.join(".agents/policies/INDEX.md").exists());
}
