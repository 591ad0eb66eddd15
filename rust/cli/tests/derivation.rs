//! `chock derivation show` against `nix show-derivation` (Nix 2.8) on the
//! store crate's corpus of over 200 derivations. Needs the Nix daemon
//! (`scripts/setup`); fails saying so when it is missing.

use std::path::Path;
use std::process::{Command, Output};

fn corpus_file() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../store/tests/data/corpus.nix")
}

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .env("NIX_REMOTE", "daemon")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program} ({e}): run scripts/setup"))
}

fn ok(program: &str, args: &[&str]) -> String {
    let out = run(program, args);
    assert!(
        out.status.success(),
        "{program} {args:?} failed (is the daemon up? run scripts/setup): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn chock() -> &'static str {
    env!("CARGO_BIN_EXE_chock")
}

fn corpus() -> Vec<String> {
    let listed = ok("nix-instantiate", &[corpus_file().to_str().unwrap()]);
    // A derivation whose first output is not `out` is printed as `drv!output`.
    listed
        .lines()
        .map(|l| l.split('!').next().unwrap_or(l).to_owned())
        .collect()
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text:.300}"))
}

#[test]
fn show_recursive_equals_nix_on_the_corpus() {
    let paths = corpus();
    assert!(paths.len() >= 200, "{} derivations", paths.len());
    let args: Vec<&str> = paths.iter().map(String::as_str).collect();
    let ours = json(&ok(
        chock(),
        &[&["derivation", "show", "-r"], args.as_slice()].concat(),
    ));
    let nix = json(&ok(
        "nix",
        &[&["show-derivation", "-r"], args.as_slice()].concat(),
    ));
    let (ours_map, nix_map) = (ours.as_object().unwrap(), nix.as_object().unwrap());
    assert_eq!(ours_map.len(), nix_map.len(), "number of derivations");
    for (path, expected) in nix_map {
        assert_eq!(ours_map.get(path), Some(expected), "{path}");
    }
}

#[test]
fn show_single_paths_equals_nix() {
    for path in corpus().iter().step_by(9) {
        let ours = json(&ok(chock(), &["derivation", "show", path]));
        let nix = json(&ok("nix", &["show-derivation", path]));
        assert_eq!(ours, nix, "{path}");
    }
}

#[test]
fn a_link_to_a_drv_is_followed() {
    let path = corpus().into_iter().next().unwrap();
    let dir = tempfile_dir();
    let link = dir.join("result.drv");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&path, &link).unwrap();
    let ours = json(&ok(
        chock(),
        &["derivation", "show", link.to_str().unwrap()],
    ));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(ours.get(&path).is_some(), "{ours}");
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("chock-derivation-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn refusals_say_what_to_give() {
    let not_store = run(chock(), &["derivation", "show", "/etc/hostname"]);
    assert_eq!(not_store.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&not_store.stderr).contains("is not a store path"));

    let output_path = ok("nix-store", &["--query", "--outputs", &corpus()[0]]);
    let output_path = output_path.lines().next().unwrap();
    let not_drv = run(chock(), &["derivation", "show", output_path]);
    assert_eq!(not_drv.status.code(), Some(1));
    let message = String::from_utf8_lossy(&not_drv.stderr);
    assert!(
        message.contains("is not a derivation") && message.contains("--deriver"),
        "{message}"
    );

    let missing = "/nix/store/00000000000000000000000000000000-missing.drv";
    let gone = run(chock(), &["derivation", "show", missing]);
    assert_eq!(gone.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&gone.stderr).contains(missing));
}

/// A `.drv` of 80 MiB (one long `env` value), as Nix writes one: read by
/// its size in the store, equal to what `nix show-derivation` prints.
#[test]
fn a_large_drv_is_read_by_its_own_size() {
    let dir = tempfile_dir();
    let file = dir.join("large.nix");
    std::fs::write(
        &file,
        r#"derivation {
  name = "large";
  builder = "/bin/sh";
  system = "x86_64-linux";
  long = builtins.concatStringsSep "" (builtins.genList (i: "0123456789abcdef") (5 * 1024 * 1024));
}"#,
    )
    .unwrap();
    let drv = ok("nix-instantiate", &[file.to_str().unwrap()]);
    let drv = drv.trim();
    let _ = std::fs::remove_dir_all(&dir);
    let size = std::fs::metadata(drv).unwrap().len();
    assert!(size > 80 << 20, "{drv} is {size} bytes");
    let ours = json(&ok(chock(), &["derivation", "show", drv]));
    let nix = json(&ok("nix", &["show-derivation", drv]));
    assert_eq!(ours, nix, "{drv}");
}
