//! Chock-store against Nix 2.8 on the derivations of `data/corpus.nix`
//! (over 200 of every shape): parsing then printing gives the file's
//! bytes, and the `.drv` path and every output path we compute are Nix's.

use std::path::Path;
use std::process::Command;

use chock_store::derivation::{DerivationKind, DrvHashes, read_derivation};
use chock_store::{Derivation, StorePath};

/// Instantiates the corpus through the daemon and returns the `.drv` paths.
pub fn instantiate(file: &Path) -> Vec<StorePath> {
    let out = Command::new("nix-instantiate")
        .arg(file)
        .env("NIX_REMOTE", "daemon")
        .output()
        .unwrap_or_else(|e| panic!("cannot run nix-instantiate ({e}): run scripts/setup"));
    assert!(
        out.status.success(),
        "nix-instantiate failed (is the daemon up? run scripts/setup): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        // A derivation whose first output is not `out` is printed as `drv!output`.
        .map(|l| StorePath::from_absolute_path(l.split('!').next().unwrap_or(l)).unwrap())
        .collect()
}

fn corpus() -> Vec<StorePath> {
    instantiate(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/corpus.nix"))
}

#[test]
fn every_corpus_derivation_round_trips_and_paths_match_nix() {
    let paths = corpus();
    assert!(
        paths.len() >= 200,
        "the corpus has {} derivations",
        paths.len()
    );
    let mut hashes = DrvHashes::new();
    let mut load = |p: &StorePath| read_derivation(p);
    let mut kinds = std::collections::BTreeMap::new();
    for path in &paths {
        let text = std::fs::read_to_string(path.to_string()).unwrap();
        let drv = read_derivation(path).unwrap();
        assert_eq!(
            drv.to_aterm(),
            text,
            "print(parse({path})) differs from the file"
        );
        assert_eq!(
            &drv.drv_path().unwrap(),
            path,
            "computed .drv path of {path}"
        );
        drv.check_output_paths(&mut hashes, &mut load)
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        let kind = drv.kind().unwrap();
        *kinds.entry(format!("{kind:?}")).or_insert(0) += 1;

        // Recompute the outputs from scratch, as the evaluator does.
        let mut fresh = drv.clone();
        if kind == DerivationKind::FixedOutput {
            let fixed = *drv.fixed_output().unwrap();
            fresh.set_fixed_output(fixed).unwrap();
        } else {
            fresh.fill_in_output_paths(&mut hashes, &mut load).unwrap();
        }
        assert_eq!(fresh, drv, "recomputed outputs of {path}");
    }
    assert!(
        kinds.get("FixedOutput").copied().unwrap_or(0) >= 30,
        "{kinds:?}"
    );
    assert!(
        kinds.get("InputAddressed").copied().unwrap_or(0) >= 150,
        "{kinds:?}"
    );
}

#[test]
fn structured_attrs_and_builtins_are_in_the_corpus() {
    let drvs: Vec<Derivation> = corpus()
        .iter()
        .map(|p| read_derivation(p).unwrap())
        .collect();
    assert!(
        drvs.iter()
            .any(|d| d.env.contains_key("__json") && d.outputs.len() == 2)
    );
    assert!(drvs.iter().any(|d| d.builder == "builtin:fetchurl"));
    assert!(
        drvs.iter()
            .any(|d| d.input_srcs.iter().any(StorePath::is_derivation))
    );
    assert!(
        drvs.iter()
            .any(|d| d.input_drvs.values().any(|o| o.contains("dev")))
    );
    assert!(
        drvs.iter()
            .any(|d| d.builder.contains('"') || d.args.iter().any(|a| a.contains('\n')))
    );
}
