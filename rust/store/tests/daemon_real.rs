//! The client against the real Nix daemon on this machine (Nix 2.8).
//! These tests fail, saying what to run, when the daemon is not there.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use chock_store::daemon::{
    AddMethod, BuildMode, BuildStatus, ClientOptions, DaemonConnection, DaemonError, DerivedPath,
    PathInfo,
};
use chock_store::derivation::DrvHashes;
use chock_store::hash::{Hash, HashAlgo};
use chock_store::nar;
use chock_store::store_path::{self, StorePath};
use chock_store::{Derivation, DerivationOutput};

async fn daemon() -> DaemonConnection {
    match chock_store::daemon::connect().await {
        Ok(c) => c,
        Err(e) => panic!("these tests need the Nix daemon: run scripts/setup ({e})"),
    }
}

fn nix(args: &[&str]) -> String {
    let out = Command::new(args[0])
        .args(&args[1..])
        .env("NIX_REMOTE", "daemon")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}; run scripts/setup", args[0]));
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Something unique per test run, so each derivation is new to the store.
fn nonce(tag: &str) -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{tag}-{}-{t}", std::process::id())
}

/// A derivation the daemon can build here (no sandbox, /bin/sh on the host).
fn shell_drv(name: &str, script: &str, tag: &str) -> Derivation {
    let mut d = Derivation::new(name);
    d.platform = "x86_64-linux".into();
    d.builder = "/bin/sh".into();
    d.args = vec!["-c".into(), script.into()];
    for (k, v) in [
        ("builder", "/bin/sh"),
        ("name", name),
        ("system", "x86_64-linux"),
        ("nonce", tag),
    ] {
        d.env.insert(k.into(), v.into());
    }
    d.outputs.insert("out".into(), DerivationOutput::Deferred);
    let mut none = |p: &StorePath| {
        Err(chock_store::DerivationError::NotADerivation {
            path: p.to_string(),
        })
    };
    d.fill_in_output_paths(&mut DrvHashes::new(), &mut none)
        .unwrap();
    d
}

async fn add_drv(c: &mut DaemonConnection, d: &Derivation) -> StorePath {
    let text = d.to_aterm();
    let added = c
        .add_text_to_store(&format!("{}.drv", d.name), text.as_bytes(), &d.references())
        .await
        .unwrap();
    assert_eq!(
        added,
        d.drv_path().unwrap(),
        "the daemon put the .drv where we computed"
    );
    added
}

#[tokio::test]
async fn handshake_with_nix_2_8() {
    let c = daemon().await;
    assert_eq!(
        c.protocol_minor(),
        34,
        "Nix 2.8 speaks 1.34 and we use the lower version"
    );
    assert!(c.daemon_nix_version().unwrap().starts_with("2.8"));
}

#[tokio::test]
async fn add_text_then_build_by_drv_path() {
    let mut c = daemon().await;
    let tag = nonce("build");
    let d = shell_drv("chock-test-build", "echo $nonce > $out", &tag);
    let drv_path = add_drv(&mut c, &d).await;
    let out = d.output_path("out").unwrap().unwrap();
    c.add_temp_root(&drv_path).await.unwrap();

    let missing = c
        .query_missing(&[DerivedPath::all_outputs(drv_path.clone())])
        .await
        .unwrap();
    assert!(missing.will_build.contains(&drv_path), "{missing:?}");

    c.build_paths(
        &[DerivedPath::all_outputs(drv_path.clone())],
        BuildMode::Normal,
    )
    .await
    .unwrap();
    assert!(c.is_valid_path(&out).await.unwrap());
    assert_eq!(
        std::fs::read_to_string(out.to_string()).unwrap().trim(),
        tag
    );

    let results = c
        .build_paths_with_results(
            &[DerivedPath::all_outputs(drv_path.clone())],
            BuildMode::Normal,
        )
        .await
        .unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(
        results[0].path.as_deref(),
        Some(format!("{drv_path}!*").as_str())
    );
    assert_eq!(results[0].status, BuildStatus::AlreadyValid);

    // The .drv's recorded NAR hash is that of our ATerm as a one-file NAR.
    let info = c.query_path_info(&drv_path).await.unwrap().unwrap();
    let mut nar_bytes = Vec::new();
    nar::write_bytes(d.to_aterm().as_bytes(), false, &mut nar_bytes).unwrap();
    assert_eq!(info.nar_hash, Hash::sha256(&nar_bytes));
    assert_eq!(info.nar_size, nar_bytes.len() as u64);
    let out_info = c.query_path_info(&out).await.unwrap().unwrap();
    assert_eq!(out_info.deriver.as_ref(), Some(&drv_path));
    c.ensure_path(&out).await.unwrap();
}

#[tokio::test]
async fn build_paths_with_results_and_build_derivation() {
    let mut c = daemon().await;
    let good = shell_drv("chock-test-bpwr", "echo ok > $out", &nonce("bpwr"));
    let bad = shell_drv(
        "chock-test-fails",
        "echo failing on purpose >&2; exit 3",
        &nonce("fail"),
    );
    let good_path = add_drv(&mut c, &good).await;
    let bad_path = add_drv(&mut c, &bad).await;
    let options = ClientOptions {
        keep_going: true,
        ..ClientOptions::default()
    };
    c.set_options(&options).await.unwrap();
    let results = c
        .build_paths_with_results(
            &[
                DerivedPath::all_outputs(good_path.clone()),
                DerivedPath::all_outputs(bad_path.clone()),
            ],
            BuildMode::Normal,
        )
        .await
        .unwrap();
    assert_eq!(results[0].status, BuildStatus::Built, "{results:?}");
    assert_eq!(
        results[0].built_outputs.get("out"),
        good.output_path("out").unwrap().as_ref()
    );
    assert_eq!(
        results[1].status,
        BuildStatus::PermanentFailure,
        "{results:?}"
    );
    assert!(
        results[1].error.contains("failed with exit code 3"),
        "{}",
        results[1].error
    );

    let direct = shell_drv(
        "chock-test-builddrv",
        "echo direct > $out",
        &nonce("direct"),
    );
    let direct_path = direct.drv_path().unwrap();
    let result = c
        .build_derivation(&direct_path, &direct, BuildMode::Normal)
        .await
        .unwrap();
    assert_eq!(result.status, BuildStatus::Built, "{result:?}");
    assert!(
        c.is_valid_path(&direct.output_path("out").unwrap().unwrap())
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn errors_name_the_operation_and_carry_the_daemons_message() {
    let mut c = daemon().await;
    let missing = store_path::text_path("chock-never-added", nonce("x"), &BTreeSet::new()).unwrap();
    assert_eq!(c.query_path_info(&missing).await.unwrap(), None);
    let drv = add_drv(
        &mut c,
        &shell_drv("chock-test-valid", "exit 0", &nonce("valid")),
    )
    .await;
    let valid = c
        .query_valid_paths(&[missing.clone(), drv.clone()].into(), false)
        .await
        .unwrap();
    assert_eq!(valid, [drv].into());
    assert!(!c.is_valid_path(&missing).await.unwrap());
    let err = c
        .add_text_to_store("refers-to-nothing", b"x", &[missing.clone()].into())
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, DaemonError::Daemon { .. }), "{err:?}");
    assert!(text.starts_with("AddTextToStore: "), "{text}");
    assert!(
        text.contains(&format!("path '{missing}' is not valid")),
        "{text}"
    );
    let fail = shell_drv("chock-test-err", "exit 1", &nonce("err"));
    let fail_path = add_drv(&mut c, &fail).await;
    let err = c
        .build_paths(&[DerivedPath::all_outputs(fail_path)], BuildMode::Normal)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("BuildPaths: the Nix daemon answered: "),
        "{err}"
    );
    assert!(err.to_string().contains("chock-test-err"), "{err}");
    // The connection stays usable after the daemon's error.
    assert!(!c.is_valid_path(&missing).await.unwrap());
}

fn sample_tree(root: &Path, tag: &str) {
    std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
    std::fs::write(root.join("README"), format!("hello {tag}\n")).unwrap();
    std::fs::write(root.join("sub/run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(
        root.join("sub/run.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    std::os::unix::fs::symlink("../README", root.join("sub/link")).unwrap();
    std::fs::write(root.join("sub/deeper/empty"), "").unwrap();
}

#[tokio::test]
async fn add_to_store_nar_matches_nix_store_add() {
    let mut c = daemon().await;
    let scratch = tempfile::tempdir().unwrap();
    let tree = scratch.path().join("chock-tree");
    sample_tree(&tree, &nonce("nar"));

    let mut packed = Vec::new();
    nar::write_path(&tree, &mut packed).unwrap();
    let nar_hash = Hash::sha256(&packed);
    let path = store_path::make_source_path("chock-tree", &nar_hash, &BTreeSet::new()).unwrap();
    let ca = chock_store::ContentAddress::Fixed(chock_store::FixedOutputHash {
        method: chock_store::FileIngestionMethod::Recursive,
        hash: nar_hash,
    });
    let info = PathInfo::for_upload(
        path.clone(),
        nar_hash,
        packed.len() as u64,
        BTreeSet::new(),
        Some(ca),
    );
    c.add_to_store_nar(&info, false, false, &mut packed.as_slice())
        .await
        .unwrap();
    let stored = c
        .query_path_info(&path)
        .await
        .unwrap()
        .expect("the path is valid after AddToStoreNar");
    assert_eq!(stored.nar_hash, nar_hash);
    assert_eq!(stored.nar_size, packed.len() as u64);
    assert_eq!(stored.content_address(), Some(ca));

    // A NAR whose hash is not the one announced is refused with the daemon's message.
    let mut other = Vec::new();
    nar::write_bytes(nonce("wrong").as_bytes(), false, &mut other).unwrap();
    let wrong_path =
        store_path::make_source_path("chock-wrong", &Hash::sha256(&other), &BTreeSet::new())
            .unwrap();
    let lie = PathInfo::for_upload(
        wrong_path.clone(),
        nar_hash,
        other.len() as u64,
        BTreeSet::new(),
        None,
    );
    let err = c
        .add_to_store_nar(&lie, false, true, &mut other.as_slice())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            DaemonError::Daemon {
                op: "AddToStoreNar",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("hash mismatch"), "{err}");
    assert!(
        !c.is_valid_path(&wrong_path).await.unwrap(),
        "the connection is still usable"
    );

    // Nix's own tools agree on the path and the hash.
    let tree_arg = tree.to_str().unwrap();
    assert_eq!(nix(&["nix-store", "--add", tree_arg]), path.to_string());
    assert_eq!(nix(&["nix", "hash", "path", tree_arg]), nar_hash.to_sri());
    assert_eq!(
        nix(&["nix", "hash", "path", "--base32", path.to_string().as_str()]),
        nar_hash.to_nix32()
    );
}

#[tokio::test]
async fn add_to_store_in_every_method() {
    let mut c = daemon().await;
    let tag = nonce("cas");
    let text = format!("some text {tag}\n");
    let info = c
        .add_to_store(
            "chock-text",
            AddMethod::Text,
            &BTreeSet::new(),
            false,
            &mut text.as_bytes(),
        )
        .await
        .unwrap();
    assert_eq!(
        info.path,
        store_path::text_path("chock-text", &text, &BTreeSet::new()).unwrap()
    );

    for algo in HashAlgo::ALL {
        let flat = c
            .add_to_store(
                "chock-flat",
                AddMethod::Flat(algo),
                &BTreeSet::new(),
                false,
                &mut text.as_bytes(),
            )
            .await
            .unwrap();
        let expected = store_path::make_fixed_output_path(
            chock_store::FileIngestionMethod::Flat,
            &Hash::digest(algo, &text),
            "chock-flat",
            &BTreeSet::new(),
            false,
        )
        .unwrap();
        assert_eq!(flat.path, expected, "flat {algo}");

        let scratch = tempfile::tempdir().unwrap();
        let tree = scratch.path().join("t");
        sample_tree(&tree, &tag);
        let mut packed = Vec::new();
        nar::write_path(&tree, &mut packed).unwrap();
        let rec = c
            .add_to_store(
                "chock-rec",
                AddMethod::Recursive(algo),
                &BTreeSet::new(),
                false,
                &mut packed.as_slice(),
            )
            .await
            .unwrap();
        let expected = store_path::make_fixed_output_path(
            chock_store::FileIngestionMethod::Recursive,
            &Hash::digest(algo, &packed),
            "chock-rec",
            &BTreeSet::new(),
            false,
        )
        .unwrap();
        assert_eq!(rec.path, expected, "recursive {algo}");
        assert_eq!(rec.nar_hash, Hash::sha256(&packed));
    }
}

/// Substitution only: a path a `file://` cache holds is substituted; one it
/// lacks fails with Nix's own message. The settings are sent with
/// SetOptions and last for this connection only.
#[tokio::test]
async fn substitution_only_from_a_file_cache() {
    let scratch = tempfile::tempdir().unwrap();
    let cache = format!("file://{}", scratch.path().join("cache").display());

    // Build on a connection of its own: its temp roots go when it closes,
    // so the output can then be deleted.
    let cached = shell_drv("chock-test-cached", "echo cached > $out", &nonce("cached"));
    let out = cached.output_path("out").unwrap().unwrap();
    {
        let mut builder = daemon().await;
        let drv = add_drv(&mut builder, &cached).await;
        builder
            .build_paths(&[DerivedPath::all_outputs(drv)], BuildMode::Normal)
            .await
            .unwrap();
    }
    nix(&["nix", "copy", "--to", &cache, &out.to_string()]);
    nix(&["nix-store", "--delete", &out.to_string()]);

    let mut c = daemon().await;
    assert!(
        !c.is_valid_path(&out).await.unwrap(),
        "the output was deleted"
    );
    let cached_path = add_drv(&mut c, &cached).await;

    // `nix copy` left the cache unsigned; `trusted=true` tells the daemon to
    // accept its paths anyway (the store's require-sigs cannot be overridden
    // per connection).
    let substituter = format!("{cache}?trusted=true");
    c.set_options(&ClientOptions::substitute_only().with_substituters(&[&substituter]))
        .await
        .unwrap();

    let results = c
        .build_paths_with_results(
            &[DerivedPath::all_outputs(cached_path.clone())],
            BuildMode::Normal,
        )
        .await
        .unwrap();
    assert_eq!(results[0].status, BuildStatus::Substituted, "{results:?}");
    assert!(c.is_valid_path(&out).await.unwrap());
    assert_eq!(
        std::fs::read_to_string(out.to_string()).unwrap(),
        "cached\n"
    );

    let uncached = shell_drv(
        "chock-test-uncached",
        "echo never > $out",
        &nonce("uncached"),
    );
    let uncached_path = add_drv(&mut c, &uncached).await;
    let err = c
        .build_paths(
            &[DerivedPath::all_outputs(uncached_path)],
            BuildMode::Normal,
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains(
            "unable to start any build; either increase '--max-jobs' or enable remote builds"
        ),
        "{err}"
    );
    assert!(
        !c.is_valid_path(&uncached.output_path("out").unwrap().unwrap())
            .await
            .unwrap()
    );
}
