//! Images built here from real files (an OCI layout, a `docker save`
//! archive, one made by umoci), written into trees by the real code, on
//! the real file system, and attacked with entries that try to leave the
//! tree.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use chock_image::{ImageError, Images, Limits, Reference, Want};
use sha2::{Digest, Sha256};

/// One entry of a layer.
enum E<'a> {
    Dir(&'a str, u32),
    File(&'a str, u32, &'a [u8]),
    Link(&'a str, &'a str),
    Hard(&'a str, &'a str),
    Device(&'a str),
}

fn layer(entries: &[E<'_>]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for entry in entries {
        let mut header = tar::Header::new_gnu();
        header.set_mtime(1_700_000_000);
        let (path, data): (&str, &[u8]) = match entry {
            E::Dir(path, mode) => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(*mode);
                (path, &[])
            }
            E::File(path, mode, data) => {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(*mode);
                (path, data)
            }
            E::Link(path, target) => {
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_mode(0o777);
                header.set_link_name(target).expect("link name");
                (path, &[])
            }
            E::Hard(path, target) => {
                header.set_entry_type(tar::EntryType::Link);
                header.set_mode(0o644);
                header.set_link_name(target).expect("link name");
                (path, &[])
            }
            E::Device(path) => {
                header.set_entry_type(tar::EntryType::Char);
                header.set_mode(0o666);
                header.set_device_major(1).expect("major");
                header.set_device_minor(3).expect("minor");
                (path, &[])
            }
        };
        header.set_size(data.len() as u64);
        // Written raw, so names the tar crate's own checks would refuse
        // (`..`, absolute) reach the reader as an attacker would send them.
        let bytes = path.as_bytes();
        header.as_old_mut().name[..bytes.len()].copy_from_slice(bytes);
        header.set_cksum();
        builder.append(&header, data).expect("append");
    }
    builder.into_inner().expect("tar")
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).expect("gzip");
    encoder.finish().expect("gzip")
}

fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

fn config(diff_ids: &[String]) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "architecture": "amd64", "os": "linux",
        "config": {"Env": ["PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"]},
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    }))
    .expect("config")
}

/// Writes an OCI layout at `dir` holding one image tagged `tag` with
/// these layers (gzip-compressed).
fn oci_layout(dir: &Path, tag: &str, layers: &[Vec<u8>]) {
    oci_layout_with(dir, tag, layers, gzip);
}

/// The same, each layer stored as `compress` makes it.
fn oci_layout_with(dir: &Path, tag: &str, layers: &[Vec<u8>], compress: fn(&[u8]) -> Vec<u8>) {
    let blobs = dir.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).expect("blobs");
    let put = |bytes: &[u8]| {
        let d = digest(bytes);
        std::fs::write(blobs.join(d.trim_start_matches("sha256:")), bytes).expect("blob");
        d
    };
    let diff_ids: Vec<String> = layers.iter().map(|l| digest(l)).collect();
    let layer_descriptors: Vec<serde_json::Value> = layers
        .iter()
        .map(|l| {
            let stored = compress(l);
            serde_json::json!({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": put(&stored), "size": stored.len()})
        })
        .collect();
    let config = config(&diff_ids);
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": put(&config), "size": config.len()},
        "layers": layer_descriptors,
    }))
    .expect("manifest");
    let index = serde_json::json!({
        "schemaVersion": 2,
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": put(&manifest), "size": manifest.len(),
                       "annotations": {"org.opencontainers.image.ref.name": tag}}],
    });
    std::fs::write(
        dir.join("index.json"),
        serde_json::to_vec(&index).expect("index"),
    )
    .expect("index");
    std::fs::write(dir.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#)
        .expect("oci-layout");
}

fn want(reference: &str, path: &Path) -> Want {
    Want {
        reference: Reference::parse(reference).expect("reference"),
        path: Some(path.to_path_buf()),
    }
}

fn base_layers() -> Vec<Vec<u8>> {
    vec![
        layer(&[
            E::Dir("usr", 0o755),
            E::Dir("usr/bin", 0o755),
            E::File("usr/bin/tool", 0o4755, b"#!/bin/sh\necho tool\n"),
            E::File("usr/bin/group-tool", 0o2755, b"x"),
            E::Hard("usr/bin/tool-again", "usr/bin/tool"),
            E::Link("bin", "usr/bin"),
            E::Dir("dev", 0o755),
            E::Device("dev/null"),
            E::Hard("dev/null-again", "dev/null"),
            E::Dir("opaque", 0o755),
            E::File("opaque/old", 0o644, b"old"),
            E::Dir("opaque/sub", 0o755),
            E::File("opaque/sub/deep", 0o644, b"deep"),
            E::File("gone.txt", 0o644, b"gone"),
            E::Dir("gone-dir", 0o755),
            E::File("gone-dir/inside", 0o644, b"x"),
            E::Dir("readonly", 0o555),
            E::File("readonly/f", 0o444, b"r"),
        ]),
        layer(&[
            E::File("opaque/new", 0o644, b"new"),
            E::File("opaque/.wh..wh..opq", 0o644, b""),
            E::File(".wh.gone.txt", 0o644, b""),
            E::File(".wh.gone-dir", 0o644, b""),
            E::File("usr/bin/later", 0o755, b"later"),
        ]),
    ]
}

#[test]
fn layers_apply_with_whiteouts_an_opaque_directory_and_no_device_or_set_id_bit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let layout = dir.path().join("layout");
    oci_layout(&layout, "1.0", &base_layers());
    let images = Images::at(dir.path().join("images"));
    let tree = images
        .prepare(&want("example/tool:1.0", &layout))
        .expect("prepare");
    assert!(tree.written);
    let root = &tree.rootfs;
    assert_eq!(
        root,
        &dir.path().join("images/docker.io+example+tool:1.0/rootfs")
    );
    let mode = |p: &str| {
        std::fs::symlink_metadata(root.join(p))
            .expect(p)
            .permissions()
            .mode()
            & 0o7777
    };
    assert_eq!(mode("usr/bin/tool"), 0o755, "set-user-ID dropped");
    assert_eq!(mode("usr/bin/group-tool"), 0o755, "set-group-ID dropped");
    assert_eq!(
        std::fs::read(root.join("usr/bin/tool-again")).expect("hard link"),
        b"#!/bin/sh\necho tool\n"
    );
    assert!(
        !root.join("dev/null").exists() && !root.join("dev/null-again").exists(),
        "no device node, nor a link to one"
    );
    assert_eq!(
        std::fs::read_link(root.join("bin")).expect("bin"),
        Path::new("usr/bin")
    );
    let mut opaque: Vec<String> = std::fs::read_dir(root.join("opaque"))
        .expect("opaque")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    opaque.sort();
    assert_eq!(
        opaque,
        ["new"],
        "the opaque marker hides the lower layer's entries and keeps its own"
    );
    assert!(
        !root.join("gone.txt").exists() && !root.join("gone-dir").exists(),
        "whiteouts applied"
    );
    assert!(!root.join(".wh.gone.txt").exists());
    assert!(root.join("usr/bin/later").is_file());
    assert_eq!(
        mode("readonly") & 0o777,
        0o755,
        "a directory stays open to its owner"
    );
    assert_eq!(tree.record.stats.devices_dropped, 1);
    assert_eq!(tree.record.stats.setid_dropped, 2);
    assert_eq!(
        tree.record.env.get("LANG").map(String::as_str),
        Some("C.UTF-8")
    );
    assert!(
        chock_image::executable(root, Path::new("/bin/tool")),
        "resolved through the image's own link"
    );
    assert!(
        !chock_image::executable(root, Path::new("/opaque/new")),
        "not executable"
    );

    // The second start reads the same tree and writes nothing.
    let again = images
        .prepare(&want("example/tool:1.0", &layout))
        .expect("again");
    assert!(!again.written);
    assert_eq!(again.rootfs, tree.rootfs);
    // And `chock cache` sees it, held by this process.
    let listed = images.list();
    assert_eq!(listed.len(), 1);
    assert!(listed[0].in_use);
    let removal = images.remove_unused().expect("remove");
    assert!(
        !removal[0].removed,
        "a tree a session holds is never removed"
    );
    assert!(tree.rootfs.is_dir());
}

#[test]
fn no_entry_leaves_the_tree_by_dot_dot_an_absolute_name_or_a_linked_parent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).expect("outside");
    // Links to the host's root, far up and to an absolute path, then
    // entries written through them.
    let layers = vec![
        layer(&[
            E::Dir("usr", 0o755),
            E::Link("root-link", "/"),
            E::Link("up", "../../../../../../../.."),
            E::Link("abs", "/usr"),
        ]),
        layer(&[
            E::File("root-link/planted", 0o644, b"x"),
            E::File("up/planted-up", 0o644, b"x"),
            E::File("abs/planted-abs", 0o644, b"x"),
            E::File("/absolute-name", 0o644, b"x"),
        ]),
    ];
    let layout = dir.path().join("layout");
    oci_layout(&layout, "1", &layers);
    let images = Images::at(dir.path().join("images"));
    let tree = images.prepare(&want("escape:1", &layout)).expect("prepare");
    let root = &tree.rootfs;
    // Each landed inside the tree, where the image itself would see it.
    assert!(root.join("planted").is_file());
    assert!(root.join("planted-up").is_file());
    assert!(root.join("usr/planted-abs").is_file());
    assert!(root.join("absolute-name").is_file());
    assert!(!Path::new("/planted").exists() && !Path::new("/absolute-name").exists());

    // A link to a directory of the host that the image does not have:
    // resolved inside the tree, where it is missing, so the image is refused.
    let layout = dir.path().join("host-link");
    oci_layout(
        &layout,
        "1",
        &[
            layer(&[E::Link("host", outside.to_str().expect("utf-8"))]),
            layer(&[E::File("host/planted", 0o644, b"x")]),
        ],
    );
    let error = images
        .prepare(&want("host-link:1", &layout))
        .expect_err("refused");
    assert!(error.to_string().contains("host-link:1"), "{error}");
    assert_eq!(
        std::fs::read_dir(&outside).expect("outside").count(),
        0,
        "nothing written outside"
    );

    // A name holding `..` is refused, and no tree is left to be used.
    let layout = dir.path().join("dotdot");
    oci_layout(
        &layout,
        "1",
        &[layer(&[E::File("a/../../../dotdot-escape", 0o644, b"x")])],
    );
    let error = images
        .prepare(&want("dotdot:1", &layout))
        .expect_err("refused");
    let text = error.to_string();
    assert!(
        text.contains("dotdot:1") && text.contains("outside the image's tree"),
        "{text}"
    );
    assert!(
        !dir.path()
            .join("images/docker.io+library+dotdot:1")
            .exists()
    );
    assert!(!dir.path().join("dotdot-escape").exists());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("images"))
        .expect("images")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".new-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_damaged_layer_fails_its_digest_and_no_tree_is_used() {
    let dir = tempfile::tempdir().expect("tempdir");
    let layout = dir.path().join("layout");
    oci_layout(&layout, "1", &[layer(&[E::File("a", 0o644, &[7u8; 4096])])]);
    // Flip one byte of the layer blob (the largest blob).
    let blobs = layout.join("blobs/sha256");
    let biggest = std::fs::read_dir(&blobs)
        .expect("blobs")
        .map(|e| e.expect("entry").path())
        .find(|p| std::fs::read(p).expect("blob").starts_with(&[0x1f, 0x8b]))
        .expect("a gzip blob");
    let mut bytes = std::fs::read(&biggest).expect("read");
    let last = bytes.len() - 9;
    bytes[last] ^= 0xff;
    std::fs::write(&biggest, bytes).expect("write");
    let images = Images::at(dir.path().join("images"));
    let error = images
        .prepare(&want("damaged:1", &layout))
        .expect_err("refused");
    let text = error.to_string();
    assert!(
        text.contains("damaged:1") && text.contains("layer 1 of 1"),
        "{text}"
    );
    assert!(
        !dir.path()
            .join("images/docker.io+library+damaged:1")
            .exists()
    );
}

#[test]
fn a_docker_save_archive_is_read_by_its_tag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let layers = base_layers();
    let diff_ids: Vec<String> = layers.iter().map(|l| digest(l)).collect();
    let config = config(&diff_ids);
    let config_name = format!("{}.json", digest(&config).trim_start_matches("sha256:"));
    let mut archive = tar::Builder::new(Vec::new());
    let mut add = |name: &str, bytes: &[u8]| {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        archive
            .append_data(&mut header, name, bytes)
            .expect("member");
    };
    let mut layer_paths = Vec::new();
    for (i, l) in layers.iter().enumerate() {
        let path = format!("{i}abc/layer.tar");
        add(&path, l);
        layer_paths.push(path);
    }
    add(&config_name, &config);
    let manifest = serde_json::json!([{"Config": config_name, "RepoTags": ["saved/app:2"], "Layers": layer_paths}]);
    add(
        "manifest.json",
        &serde_json::to_vec(&manifest).expect("manifest"),
    );
    let file = dir.path().join("app.tar");
    std::fs::write(&file, archive.into_inner().expect("archive")).expect("write");

    let images = Images::at(dir.path().join("images"));
    let tree = images
        .prepare(&want("docker.io/saved/app:2", &file))
        .expect("prepare");
    assert!(tree.rootfs.join("usr/bin/later").is_file());
    assert!(!tree.rootfs.join("gone.txt").exists());
    assert_eq!(tree.record.config_digest, digest(&config));

    let missing = images
        .prepare(&want("saved/app:3", &file))
        .expect_err("no such tag");
    let text = missing.to_string();
    assert!(matches!(missing, ImageError::NotOnMachine { .. }), "{text}");
    assert!(
        text.contains("saved/app:2") && text.contains("podman save"),
        "{text}"
    );
}

#[test]
fn an_image_that_is_not_on_the_machine_is_refused_with_the_pull_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let images = Images::at(dir.path().join("images"));
    let error = images
        .prepare(&want(
            "ghcr.io/org/tool:1",
            &dir.path().join("no-such-layout"),
        ))
        .expect_err("missing");
    let text = error.to_string();
    assert!(
        text.contains("not on this machine")
            && text.contains("skopeo copy docker://ghcr.io/org/tool:1 oci:"),
        "{text}"
    );
    // With no path, podman and docker are asked; neither has it here.
    let none = Want {
        reference: Reference::parse("ghcr.io/org/absent-tool:1").expect("ref"),
        path: None,
    };
    let text = images.prepare(&none).expect_err("missing").to_string();
    assert!(
        text.contains("`podman pull ghcr.io/org/absent-tool:1`"),
        "{text}"
    );
}

#[test]
fn two_cold_starts_at_once_write_the_tree_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let layout = dir.path().join("layout");
    let big: Vec<u8> = (0..4 << 20).map(|i| (i % 251) as u8).collect();
    oci_layout(
        &layout,
        "1",
        &[
            layer(&[E::File("big", 0o644, &big)]),
            layer(&[E::File("small", 0o644, b"s")]),
        ],
    );
    let images = Images::at(dir.path().join("images"));
    let barrier = std::sync::Barrier::new(2);
    let trees: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    images.prepare(&want("cold:1", &layout)).expect("prepare")
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    assert_eq!(
        trees.iter().filter(|t| t.written).count(),
        1,
        "exactly one writer"
    );
    assert_eq!(trees[0].rootfs, trees[1].rootfs);
    assert_eq!(
        std::fs::read(trees[0].rootfs.join("big")).expect("big"),
        big
    );
}

#[test]
fn a_moved_tag_waits_for_the_session_on_the_old_tree() {
    let dir = tempfile::tempdir().expect("tempdir");
    let layout = dir.path().join("layout");
    oci_layout(&layout, "1", &[layer(&[E::File("version", 0o644, b"one")])]);
    let images = Images::at(dir.path().join("images"));
    let first = images.prepare(&want("moving:1", &layout)).expect("first");
    // The tag moves: the same reference, other files.
    std::fs::remove_dir_all(&layout).expect("rm");
    oci_layout(&layout, "1", &[layer(&[E::File("version", 0o644, b"two")])]);
    // This process holds the old tree, as a running session does, and
    // keeps it to its end: its next call is served the tree it started with.
    let again = images
        .prepare(&want("moving:1", &layout))
        .expect("the session's own tree");
    assert!(!again.written);
    assert_eq!(
        std::fs::read(again.rootfs.join("version")).expect("old"),
        b"one"
    );
    // Another session (the same trees reached by another path, so this
    // process opens the locks anew, as another process would) is refused
    // at once, naming the image, and the old tree is intact.
    std::os::unix::fs::symlink(dir.path().join("images"), dir.path().join("same-images"))
        .expect("link");
    let other = Images::at(dir.path().join("same-images"));
    let error = other
        .prepare(&want("moving:1", &layout))
        .expect_err("in use");
    let text = error.to_string();
    assert!(matches!(error, ImageError::InUse { .. }), "{text}");
    assert!(
        text.contains("moving:1") && text.contains("run again later"),
        "{text}"
    );
    assert_eq!(
        std::fs::read(first.rootfs.join("version")).expect("old"),
        b"one"
    );
}

/// umoci, Debian's tool, makes the layout and its layers from a real
/// directory: a file removed between two layers becomes its whiteout.
#[test]
fn a_layout_made_by_umoci_is_read_with_its_whiteouts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let layout = dir.path().join("layout");
    let bundle = dir.path().join("bundle");
    let umoci = |args: &[&std::ffi::OsStr]| {
        let out = std::process::Command::new("umoci")
            .args(args)
            .output()
            .expect("umoci is installed (scripts/setup)");
        assert!(
            out.status.success(),
            "umoci {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let l = layout.as_os_str();
    let image = format!("{}:v1", layout.display());
    umoci(&["init".as_ref(), "--layout".as_ref(), l]);
    umoci(&["new".as_ref(), "--image".as_ref(), image.as_ref()]);
    umoci(&[
        "unpack".as_ref(),
        "--rootless".as_ref(),
        "--image".as_ref(),
        image.as_ref(),
        bundle.as_os_str(),
    ]);
    let rootfs = bundle.join("rootfs");
    std::fs::create_dir_all(rootfs.join("usr/bin")).expect("dirs");
    std::fs::write(rootfs.join("usr/bin/kept"), "kept").expect("kept");
    std::fs::write(rootfs.join("removed"), "removed").expect("removed");
    std::fs::write(rootfs.join("setuid"), "s").expect("setuid");
    std::fs::set_permissions(
        rootfs.join("setuid"),
        std::fs::Permissions::from_mode(0o4755),
    )
    .expect("chmod");
    umoci(&[
        "repack".as_ref(),
        "--image".as_ref(),
        image.as_ref(),
        bundle.as_os_str(),
    ]);
    // A second layer over the first: unpacked afresh, one file removed.
    let second = dir.path().join("second");
    umoci(&[
        "unpack".as_ref(),
        "--rootless".as_ref(),
        "--image".as_ref(),
        image.as_ref(),
        second.as_os_str(),
    ]);
    std::fs::remove_file(second.join("rootfs/removed")).expect("rm");
    umoci(&[
        "repack".as_ref(),
        "--image".as_ref(),
        image.as_ref(),
        second.as_os_str(),
    ]);

    let images = Images::at(dir.path().join("images"));
    let tree = images
        .prepare(&want("umoci-made:v1", &layout))
        .expect("prepare");
    assert_eq!(
        std::fs::read(tree.rootfs.join("usr/bin/kept")).expect("kept"),
        b"kept"
    );
    assert!(
        !tree.rootfs.join("removed").exists(),
        "umoci's whiteout applied"
    );
    assert_eq!(
        std::fs::metadata(tree.rootfs.join("setuid"))
            .expect("setuid")
            .permissions()
            .mode()
            & 0o7777,
        0o755
    );
    assert!(tree.record.stats.whiteouts >= 1);
}

/// A real race: while layers write three thousand files into `d/`, another
/// thread swaps `d` with a link to a directory outside the tree
/// (`renameat2(RENAME_EXCHANGE)`, back and forth, as fast as it can).
/// Every file lands in the tree or fails; none lands outside.
#[test]
fn swapping_a_directory_for_a_link_outside_while_writing_never_leaves_the_tree() {
    use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    let dir = tempfile::tempdir().expect("tempdir");
    let tree = dir.path().join("tree");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(tree.join("d")).expect("d");
    std::fs::create_dir(&outside).expect("outside");
    std::os::unix::fs::symlink(&outside, tree.join("evil")).expect("evil");
    // One layer per file, so a failed write does not end the run.
    let layers: Vec<Vec<u8>> = (0..3000)
        .map(|i| layer(&[E::File(&format!("d/f{i}"), 0o644, b"x")]))
        .collect();
    let written = AtomicU64::new(0);

    let done = AtomicBool::new(false);
    let swaps = AtomicU64::new(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                if renameat2(
                    AT_FDCWD,
                    &tree.join("d"),
                    AT_FDCWD,
                    &tree.join("evil"),
                    RenameFlags::RENAME_EXCHANGE,
                )
                .is_ok()
                {
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        let mut writer = chock_image::extract::Writer::new(&tree).expect("writer");
        for stream in &layers {
            if writer.apply(&mut stream.as_slice()).is_ok() {
                written.fetch_add(1, Ordering::Relaxed);
            }
        }
        done.store(true, Ordering::Relaxed);
    });
    let (swaps, written) = (
        swaps.load(Ordering::Relaxed),
        written.load(Ordering::Relaxed),
    );
    assert!(
        swaps > 100 && written > 100,
        "the race ran: {swaps} swaps, {written} files written"
    );
    assert_eq!(
        std::fs::read_dir(&outside).expect("outside").count(),
        0,
        "a file was written through the swapped link"
    );
}

/// A layer stored as two zstd frames, one after the other, as the `zstd`
/// tool writes them when appending.
fn zstd_two_frames(bytes: &[u8]) -> Vec<u8> {
    let half = bytes.len() / 2;
    let mut out = Vec::new();
    for part in [&bytes[..half], &bytes[half..]] {
        let mut child = std::process::Command::new("zstd")
            .args(["-q", "-c"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("zstd is installed (scripts/setup)");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(part)
            .expect("write");
        let done = child.wait_with_output().expect("zstd");
        assert!(done.status.success());
        out.extend(done.stdout);
    }
    out
}

#[test]
fn a_zstd_layer_of_several_frames_is_read_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let layout = dir.path().join("layout");
    let big: Vec<u8> = (0..300_000).map(|i| (i % 241) as u8).collect();
    oci_layout_with(
        &layout,
        "1",
        &[layer(&[
            E::File("first", 0o644, &big),
            E::File("second", 0o644, b"two"),
        ])],
        zstd_two_frames,
    );
    let images = Images::at(dir.path().join("images"));
    let tree = images.prepare(&want("zstd:1", &layout)).expect("prepare");
    assert_eq!(
        std::fs::read(tree.rootfs.join("first")).expect("first"),
        big
    );
    assert_eq!(
        std::fs::read(tree.rootfs.join("second")).expect("second"),
        b"two"
    );
}

/// A layer of one GNU sparse entry: `stored` bytes of data at the end of a
/// file of `size` bytes, the rest a hole the tar does not store.
fn sparse_layer(name: &str, size: u64, stored: u64) -> Vec<u8> {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::GNUSparse);
    header.set_path(name).expect("name");
    header.set_mode(0o644);
    header.set_mtime(1_700_000_000);
    header.set_size(stored);
    let gnu = header.as_gnu_mut().expect("a GNU header");
    gnu.set_real_size(size);
    gnu.sparse[0].set_offset(size - stored);
    gnu.sparse[0].set_length(stored);
    header.set_cksum();
    let mut builder = tar::Builder::new(Vec::new());
    builder
        .append(
            &header,
            vec![7u8; usize::try_from(stored).expect("small")].as_slice(),
        )
        .expect("append");
    builder.into_inner().expect("tar")
}

/// Bytes under `dir`, as the disk holds them.
fn disk_bytes(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let meta = entry.metadata().expect("metadata");
        total += meta.blocks() * 512;
        if meta.is_dir() {
            total += disk_bytes(&entry.path());
        }
    }
    total
}

#[test]
fn a_small_layer_of_one_sparse_entry_of_10_gib_is_refused_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let layout = dir.path().join("layout");
    let layer = sparse_layer("big", 10 << 30, 4096);
    oci_layout(&layout, "1", std::slice::from_ref(&layer));
    let stored: u64 = std::fs::read_dir(layout.join("blobs/sha256"))
        .expect("blobs")
        .map(|e| e.expect("entry").metadata().expect("meta").len())
        .sum();
    assert!(stored < 10 << 10, "the layout is {stored} bytes");
    let bound = 64 << 20;
    let images = Images::at(dir.path().join("images")).with_limits(Limits {
        bytes: bound,
        entries: 1000,
        ..Limits::default()
    });
    let started = std::time::Instant::now();
    let error = images
        .prepare(&want("sparse:1", &layout))
        .expect_err("refused");
    let took = started.elapsed();
    let text = error.to_string();
    assert!(
        text.contains("sparse:1")
            && text.contains("layer 1 of 1")
            && text.contains("`big` expands to 10737418240 bytes")
            && text.contains(&format!("past the {bound} bytes")),
        "{text}"
    );
    assert!(took < std::time::Duration::from_secs(5), "took {took:?}");
    assert!(disk_bytes(&dir.path().join("images")) <= bound);
    assert!(
        !dir.path()
            .join("images/docker.io+library+sparse:1")
            .exists()
    );

    // With the default limits the layer is refused by what it expands by:
    // at most 2048 bytes written per byte stored, beyond the first GiB.
    let images = Images::at(dir.path().join("images"));
    let started = std::time::Instant::now();
    let error = images
        .prepare(&want("sparse:1", &layout))
        .expect_err("refused");
    let took = started.elapsed();
    let text = error.to_string();
    assert!(
        text.contains("layer 1 of 1")
            && text.contains("`big` expands to 10737418240 bytes")
            && text.contains("past the 1073741824 bytes of files Chock writes for")
            && text.contains("2048 to 1"),
        "{text}"
    );
    assert!(took < std::time::Duration::from_secs(5), "took {took:?}");
    assert!(disk_bytes(&dir.path().join("images")) <= 1 << 30);

    // Under a bound it fits, the same layer is written whole, holes as zeros.
    let fits = sparse_layer("fits", 1 << 20, 4096);
    oci_layout(&layout, "2", &[fits]);
    let images = Images::at(dir.path().join("images")).with_limits(Limits {
        bytes: 1 << 20,
        entries: 1000,
        ..Limits::default()
    });
    let tree = images.prepare(&want("sparse:2", &layout)).expect("written");
    let written = std::fs::read(tree.rootfs.join("fits")).expect("the file");
    assert_eq!(written.len(), 1 << 20);
    assert!(written[..(1 << 20) - 4096].iter().all(|&b| b == 0));
    assert!(written[(1 << 20) - 4096..].iter().all(|&b| b == 7));
}

#[test]
fn bytes_and_entries_count_over_all_layers_and_the_refusal_names_the_layer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let layout = dir.path().join("layout");
    let data = vec![1u8; 600 << 10];
    oci_layout(
        &layout,
        "1",
        &[
            layer(&[E::File("a", 0o644, &data)]),
            layer(&[E::File("b", 0o644, &data)]),
        ],
    );
    let images = Images::at(dir.path().join("images")).with_limits(Limits {
        bytes: 1 << 20,
        entries: 1000,
        ..Limits::default()
    });
    let text = images
        .prepare(&want("two:1", &layout))
        .expect_err("refused")
        .to_string();
    assert!(
        text.contains("layer 2 of 2")
            && text.contains("`b` expands to 614400 bytes")
            && text.contains("(614400 written before it)"),
        "{text}"
    );

    let many: Vec<E<'_>> = (0..40).map(|_| E::Dir("d", 0o755)).collect();
    oci_layout(&layout, "2", &[layer(&many[..20]), layer(&many[20..])]);
    let images = Images::at(dir.path().join("images")).with_limits(Limits {
        bytes: 1 << 20,
        entries: 30,
        ..Limits::default()
    });
    let text = images
        .prepare(&want("two:2", &layout))
        .expect_err("refused")
        .to_string();
    assert!(
        text.contains("layer 2 of 2") && text.contains("more than 30 entries"),
        "{text}"
    );
    // The defaults hold an ordinary image.
    let images = Images::at(dir.path().join("images"));
    images.prepare(&want("two:2", &layout)).expect("written");
}
