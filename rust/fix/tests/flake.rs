//! Flakes (fix part 2): `getFlake` of a project, its inputs from
//! flake.lock (version 7, `follows`) and the store, `self` with `.git`
//! kept and git's revision, and an input absent from the store named with
//! its host. Every flake here is made in a temporary directory; nothing is
//! written to the store.

use chock_fix::{EvalOptions, FixError, Request, Source, evaluate, evaluate_flake_attribute};
use chock_store::StorePath;
use chock_store::store_path::make_source_path;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, text).expect("write");
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .expect("git runs (install git)");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn nar_hash(dir: &Path) -> String {
    chock_store::nar::hash_path(dir)
        .expect("hash")
        .nar_hash
        .to_sri()
}

fn source_path(sri: &str) -> StorePath {
    let hash = chock_store::Hash::parse(sri, None).expect("sri");
    make_source_path("source", &hash, &BTreeSet::new()).expect("path")
}

/// A git project whose flake has a `path:` input `dep` (a flake inside
/// the project) whose own `nixpkgs` follows the project's non-flake input
/// `lib`, and an unused GitHub input `far` that is not in the store.
struct Project {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    dep_hash: String,
    lib_hash: String,
}

const FLAKE: &str = r#"{
  inputs.dep.url = "path:./dep";
  inputs.lib = { url = "path:./lib"; flake = false; };
  inputs.far.url = "github:example/far";
  inputs.priv = { url = "git+ssh://git@example.com/priv.git"; flake = false; };
  outputs = { self, dep, lib, far, priv }: {
    info = {
      hasGit = builtins.pathExists "${self}/.git";
      inherit (self) outPath narHash lastModified lastModifiedDate;
      rev = self.rev or null;
      dirtyRev = self.dirtyRev or null;
      greeting = dep.greeting;
      followed = dep.inputs.nixpkgs.outPath == lib.outPath;
      libText = builtins.readFile "${lib}/value.txt";
    };
    usesFar = far.outPath;
    usesPriv = builtins.readFile "${priv}/secret.txt";
    packages.x86_64-linux.default = derivation {
      name = "hello";
      builder = "/bin/sh";
      system = "x86_64-linux";
      args = [ "-c" "cat ${self}/flake.nix > $out" ];
    };
  };
}
"#;

/// A hash no store path has, for the ssh input until a test puts one there.
const PRIV_HASH: &str = "sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

fn lock(dep_dir: &Path, dep_hash: &str, lib_dir: &Path, lib_hash: &str) -> String {
    format!(
        r#"{{
  "nodes": {{
    "dep": {{
      "inputs": {{ "nixpkgs": [ "lib" ] }},
      "locked": {{ "narHash": "{dep_hash}", "path": "{}", "type": "path" }},
      "original": {{ "path": "./dep", "type": "path" }}
    }},
    "far": {{
      "locked": {{
        "lastModified": 1700000000,
        "narHash": "sha256-7911PZM08m7ZxxYjg5SJhVCITSvLRPgEJbAESRJELbc=",
        "owner": "example", "repo": "far",
        "rev": "0123456789abcdef0123456789abcdef01234567",
        "type": "github"
      }},
      "original": {{ "owner": "example", "repo": "far", "type": "github" }}
    }},
    "lib": {{
      "flake": false,
      "locked": {{ "narHash": "{lib_hash}", "path": "{}", "type": "path" }},
      "original": {{ "path": "./lib", "type": "path" }}
    }},
    "priv": {{
      "flake": false,
      "locked": {{
        "narHash": "{PRIV_HASH}",
        "rev": "89abcdef0123456789abcdef0123456789abcdef",
        "type": "git", "url": "ssh://git@example.com/priv.git"
      }},
      "original": {{ "type": "git", "url": "ssh://git@example.com/priv.git" }}
    }},
    "root": {{ "inputs": {{ "dep": "dep", "far": "far", "lib": "lib", "priv": "priv" }} }}
  }},
  "root": "root",
  "version": 7
}}
"#,
        dep_dir.display(),
        lib_dir.display()
    )
}

impl Project {
    fn new() -> Project {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("proj");
        let dep = dir.join("dep");
        let lib = dir.join("lib");
        write(
            &dep.join("flake.nix"),
            "{ inputs.nixpkgs.url = \"path:../lib\"; outputs = { self, nixpkgs }: { greeting = \"hi from dep\"; }; }\n",
        );
        write(&lib.join("value.txt"), "forty-two");
        let dep_hash = nar_hash(&dep);
        let lib_hash = nar_hash(&lib);
        write(&dir.join("flake.nix"), FLAKE);
        write(
            &dir.join("flake.lock"),
            &lock(&dep, &dep_hash, &lib, &lib_hash),
        );
        git(&dir, &["init", "-q"]);
        git(&dir, &["add", "-A"]);
        git(&dir, &["commit", "-qm", "first"]);
        Project {
            _tmp: tmp,
            dir,
            dep_hash,
            lib_hash,
        }
    }

    fn options(&self) -> EvalOptions {
        EvalOptions {
            roots: vec![self.dir.clone()],
            ..EvalOptions::default()
        }
    }

    fn eval(&self, attribute: &[&str]) -> Result<String, FixError> {
        let mut request = Request::new(Source::Flake {
            flake: self.dir.clone(),
            attribute: attribute.iter().map(|a| a.to_string()).collect(),
        });
        request.strict = true;
        request.summarize_derivation = true;
        evaluate(&self.options(), &request).map(|o| String::from_utf8_lossy(&o.text).into_owned())
    }
}

#[test]
fn self_keeps_git_and_names_the_commit_and_inputs_follow_the_lock() {
    let project = Project::new();
    let rev = git(&project.dir, &["rev-parse", "HEAD"]);
    let time = git(&project.dir, &["log", "-1", "--format=%ct"]);
    let info = project.eval(&["info"]).expect("info evaluates");
    let self_hash = nar_hash(&project.dir);
    let self_path = source_path(&self_hash).to_absolute();
    for want in [
        "hasGit = true;".to_string(),
        format!("rev = \"{rev}\";"),
        "dirtyRev = null;".to_string(),
        format!("outPath = \"{self_path}\";"),
        format!("narHash = \"{self_hash}\";"),
        format!("lastModified = {time};"),
        "greeting = \"hi from dep\";".to_string(),
        "followed = true;".to_string(),
        "libText = \"forty-two\";".to_string(),
    ] {
        assert!(info.contains(&want), "{want} not in {info}");
    }
    assert!(
        !Path::new(&source_path(&project.dep_hash).to_absolute()).exists()
            && !Path::new(&source_path(&project.lib_hash).to_absolute()).exists(),
        "the path inputs were written to the store"
    );
}

#[test]
fn a_dirty_tree_has_a_dirty_rev_and_no_rev() {
    let project = Project::new();
    let rev = git(&project.dir, &["rev-parse", "HEAD"]);
    write(&project.dir.join("flake.nix"), &format!("{FLAKE}\n"));
    let info = project.eval(&["info"]).expect("info evaluates");
    assert!(info.contains("rev = null;"), "{info}");
    assert!(
        info.contains(&format!("dirtyRev = \"{rev}-dirty\";")),
        "{info}"
    );
}

#[test]
fn an_input_absent_from_the_store_is_named_with_its_host_when_used() {
    let project = Project::new();
    let attribute = vec!["usesFar".to_string()];
    let Err(FixError::MissingInputs { inputs }) =
        evaluate_flake_attribute(&project.options(), &project.dir, &attribute)
    else {
        panic!("a missing input is its own error")
    };
    assert_eq!(inputs.len(), 1, "{inputs:?}");
    assert_eq!(inputs[0].name, "far");
    assert_eq!(inputs[0].host.as_deref(), Some("api.github.com"));
    assert_eq!(
        inputs[0].path,
        source_path("sha256-7911PZM08m7ZxxYjg5SJhVCITSvLRPgEJbAESRJELbc=")
    );
    let text = FixError::MissingInputs { inputs }.to_string();
    assert!(
        text.contains("`far`") && text.contains("chock inputs --fetch"),
        "{text}"
    );
}

#[test]
fn a_derivation_answers_its_drv_and_the_registry_holds_what_it_needs() {
    let project = Project::new();
    let attribute: Vec<String> = ["packages", "x86_64-linux", "default"]
        .map(String::from)
        .to_vec();
    let out = evaluate_flake_attribute(&project.options(), &project.dir, &attribute)
        .expect("the derivation evaluates although `far` is absent");
    let drv = out.drv_path.expect("a derivation");
    assert!(drv.to_absolute().ends_with("-hello.drv"), "{drv}");
    let derivation = &out.registry.derivations[&drv];
    let self_path = source_path(&nar_hash(&project.dir));
    assert!(derivation.input_srcs.contains(&self_path), "{derivation:?}");
    assert!(out.registry.sources.contains_key(&self_path));
    let summary = project
        .eval(&["packages", "x86_64-linux", "default"])
        .expect("summary");
    assert!(
        summary.starts_with(&format!("{{ drvPath = \"{drv}\"; outPath = ")),
        "{summary}"
    );

    let info =
        evaluate_flake_attribute(&project.options(), &project.dir, &["info".into()]).expect("info");
    assert_eq!((info.drv_path, info.type_name.as_str()), (None, "set"));
}

#[test]
fn a_path_input_changed_since_the_lock_asks_for_a_new_lock() {
    let project = Project::new();
    write(&project.dir.join("lib/value.txt"), "changed");
    let err = project.eval(&["info"]).expect_err("the lock is stale");
    let text = err.to_string();
    assert!(
        text.contains("`lib`") && text.contains("nix flake lock"),
        "{text}"
    );
}

#[test]
fn flakes_outside_the_roots_and_other_references_are_refused() {
    let project = Project::new();
    let outside = EvalOptions {
        roots: vec![project.dir.join("dep")],
        ..EvalOptions::default()
    };
    let err = evaluate_flake_attribute(&outside, &project.dir, &["info".into()])
        .expect_err("outside the roots");
    assert!(err.to_string().contains("proj"), "{err}");
    let mut request = Request::new(Source::expr(
        r#"builtins.getFlake "github:NixOS/nixpkgs""#,
        project.dir.clone(),
    ));
    request.strict = false;
    let err = evaluate(&project.options(), &request).expect_err("not a directory");
    assert!(err.to_string().contains("path: flakes inside it"), "{err}");
    let err = project.eval(&["nope"]).expect_err("no such output");
    assert!(err.to_string().contains("has no attribute 'nope'"), "{err}");
}

#[test]
fn get_flake_of_a_path_inside_the_project_and_an_unlocked_input() {
    let project = Project::new();
    write(
        &project.dir.join("other/flake.nix"),
        "{ outputs = { self }: { answer = 42; }; }",
    );
    let eval = |expr: &str| {
        let mut request = Request::new(Source::expr(expr, project.dir.clone()));
        request.strict = true;
        evaluate(&project.options(), &request)
            .map(|o| String::from_utf8_lossy(&o.text).into_owned())
    };
    assert_eq!(
        eval(r#"(builtins.getFlake "path:./other").answer"#).expect("evaluates"),
        "42"
    );
    let err = eval(r#"(builtins.getFlake "path:./dep").greeting"#)
        .expect_err("dep has no lock of its own");
    let text = err.to_string();
    assert!(
        text.contains("'nixpkgs'") && text.contains("nix flake lock"),
        "{text}"
    );
}

/// A `path:` flake with a flake input whose own input follows a non-flake
/// input of the root: every path, hash and derivation as Nix 2.8's
/// `getFlake` gives them. Left out: `_type` (Nix 2.8 has none) and a path
/// input's `lastModified`, which Nix 2.8 gives only when it copies the
/// input, not when the store already holds it (fix gives what the lock
/// says).
#[test]
fn a_path_flake_with_inputs_and_follows_matches_nix_2_8() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("proj");
    let (dep, lib) = (dir.join("dep"), dir.join("lib"));
    write(
        &dep.join("flake.nix"),
        r#"{ inputs.nixpkgs.url = "github:NixOS/nixpkgs"; outputs = { self, nixpkgs }: { greeting = "hi"; np = nixpkgs.outPath; }; }"#,
    );
    write(&lib.join("value.txt"), "forty-two\n");
    write(
        &dir.join("flake.nix"),
        r#"{
  inputs.dep.url = "path:./dep";
  inputs.dep.inputs.nixpkgs.follows = "lib";
  inputs.lib = { url = "path:./lib"; flake = false; };
  outputs = { self, dep, lib }: {
    info = {
      inherit (self) outPath narHash;
      depOut = dep.outPath; depNp = dep.np; libOut = lib.outPath; libNar = lib.narHash;
      followed = dep.inputs.nixpkgs.outPath == lib.outPath;
      names = builtins.attrNames (builtins.removeAttrs dep [ "_type" "lastModified" "lastModifiedDate" ]);
      text = builtins.readFile "${lib}/value.txt";
      drv = (derivation { name = "x"; builder = "/bin/sh"; system = "x86_64-linux"; s = self; d = dep; l = lib; }).drvPath;
    };
  };
}
"#,
    );
    let node = |path: &Path| {
        format!(
            r#"{{ "narHash": "{}", "path": "{}", "type": "path" }}"#,
            nar_hash(path),
            path.display()
        )
    };
    write(
        &dir.join("flake.lock"),
        &format!(
            r#"{{ "nodes": {{
    "dep": {{ "inputs": {{ "nixpkgs": [ "lib" ] }}, "locked": {}, "original": {{ "path": "./dep", "type": "path" }} }},
    "lib": {{ "flake": false, "locked": {}, "original": {{ "path": "./lib", "type": "path" }} }},
    "root": {{ "inputs": {{ "dep": "dep", "lib": "lib" }} }} }},
  "root": "root", "version": 7 }}"#,
            node(&dep),
            node(&lib)
        ),
    );
    let mut request = Request::new(Source::Flake {
        flake: dir.clone(),
        attribute: vec!["info".into()],
    });
    request.strict = true;
    let options = EvalOptions {
        roots: vec![dir.clone()],
        ..EvalOptions::default()
    };
    let ours = evaluate(&options, &request).expect("fix evaluates the flake");
    let nix = Command::new("nix")
        .args([
            "--extra-experimental-features",
            "nix-command flakes",
            "eval",
            "--offline",
            "--impure",
            "--expr",
        ])
        .arg(format!(
            r#"(builtins.getFlake "path:{}").info"#,
            dir.display()
        ))
        .env("NIX_REMOTE", "daemon")
        .output()
        .unwrap_or_else(|e| panic!("cannot run nix ({e}); run scripts/setup"));
    assert!(
        nix.status.success(),
        "nix eval failed (is the daemon up? run scripts/setup): {}",
        String::from_utf8_lossy(&nix.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&ours.text),
        String::from_utf8_lossy(&nix.stdout).trim_end()
    );
}

/// `self` is hashed whatever its size; the cap applies to what would be
/// written, so `lib.cleanSource self` (here its core, `builtins.path` with a
/// filter dropping `.git`) works under a cap the whole tree exceeds.
#[test]
fn a_filtered_self_works_under_a_cap_the_whole_tree_exceeds() {
    let project = Project::new();
    let whole = chock_store::nar::hash_path(&project.dir)
        .expect("hash")
        .nar_size;
    let options = EvalOptions {
        max_object_bytes: whole / 2,
        ..project.options()
    };
    let mut request = Request::new(Source::expr(
        r#"let self = builtins.getFlake "path:."; in builtins.path { path = self; name = "source"; filter = p: t: baseNameOf p != ".git"; }"#,
        project.dir.clone(),
    ));
    request.strict = true;
    let out = evaluate(&options, &request).expect("the filtered copy is under the cap");
    assert!(
        String::from_utf8_lossy(&out.text).ends_with("-source\""),
        "{}",
        String::from_utf8_lossy(&out.text)
    );
    let err = evaluate(
        &options,
        &Request::new(Source::expr(
            r#"builtins.path { path = ./.; name = "whole"; }"#,
            project.dir.as_path(),
        )),
    )
    .expect_err("the whole tree copied is over the cap");
    assert!(err.to_string().contains("max_object_bytes"), "{err}");
}

/// An input Chock would not fetch (an ssh URL) is refused when used and not
/// in the store, saying why; when the store holds it, it is used.
#[test]
fn an_input_chock_would_not_fetch_is_used_from_the_store_or_refused_when_used() {
    let project = Project::new();
    let err = project.eval(&["usesPriv"]).expect_err("not in the store");
    assert_eq!(err.kind(), Some(chock_fix::ErrorKind::Refused), "{err}");
    assert!(err.to_string().contains("ssh"), "{err}");
    assert!(
        project.eval(&["info"]).is_ok(),
        "other outputs still evaluate"
    );

    let tmp = tempfile::tempdir().expect("tempdir");
    let tree = tmp.path().join("source");
    write(&tree.join("secret.txt"), &format!("kept {:?}", tmp.path()));
    let added = Command::new("nix-store")
        .arg("--add")
        .arg(&tree)
        .env("NIX_REMOTE", "daemon")
        .output()
        .unwrap_or_else(|e| panic!("cannot run nix-store ({e}); run scripts/setup"));
    assert!(
        added.status.success(),
        "nix-store --add failed (is the daemon up? run scripts/setup): {}",
        String::from_utf8_lossy(&added.stderr)
    );
    let lock_file = project.dir.join("flake.lock");
    let text = std::fs::read_to_string(&lock_file).expect("lock");
    std::fs::write(&lock_file, text.replace(PRIV_HASH, &nar_hash(&tree))).expect("lock");
    let read = project.eval(&["usesPriv"]).expect("read from the store");
    assert!(read.contains("kept"), "{read}");
}

/// A socket in the tree (git's fsmonitor keeps one in `.git`) has no NAR
/// form: the copy of `self` holds everything else.
#[test]
fn a_socket_in_the_tree_is_left_out_of_self() {
    let project = Project::new();
    let before = nar_hash(&project.dir);
    let _socket = std::os::unix::net::UnixListener::bind(project.dir.join(".git/daemon.ipc"))
        .expect("a socket");
    let out = evaluate_flake_attribute(&project.options(), &project.dir, &["info".into()])
        .expect("self is hashed without the socket");
    let path = source_path(&before);
    match &out.registry.sources[&path].contents {
        chock_store::registry::SourceContents::Tree {
            kept: Some(kept), ..
        } => {
            assert!(kept.iter().all(|p| !p.ends_with("daemon.ipc")), "{kept:?}");
            assert!(kept.iter().any(|p| p.ends_with("flake.nix")), "{kept:?}");
        }
        other => panic!("the copy must list what it keeps: {other:?}"),
    }
}
