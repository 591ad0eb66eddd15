//! The check the `manifest` fuzz target runs on each input, shared with the
//! crate's `no_panic` test: the bytes read as an index, a manifest, a
//! `docker save` manifest and a configuration never panic, an entry is
//! chosen only among those listed, and a digest or archive path that is
//! accepted can name no file outside the image.

use chock_image::Reference;
use chock_image::manifest::{self, Config, Index, Manifest, SavedImage};

/// Reads `bytes` as each document; panics only when a reader breaks a promise.
pub fn read_documents(bytes: &[u8]) {
    let reference = Reference::parse("example.org/tool:1").expect("a reference");
    if let Ok(index) = manifest::parse::<Index>("index", bytes) {
        for nested in [false, true] {
            if let Some(found) = manifest::select(&index, &reference, nested) {
                assert!(
                    index.manifests.contains(found),
                    "chose an entry the index does not list"
                );
            }
        }
        let _ = manifest::listed_names(&index);
    }
    if let Ok(manifest) = manifest::parse::<Manifest>("manifest", bytes)
        && manifest.check().is_ok()
    {
        for digest in std::iter::once(&manifest.config.digest)
            .chain(manifest.layers.iter().map(|l| &l.digest))
        {
            let hex = digest
                .strip_prefix("sha256:")
                .expect("a checked digest is sha256");
            assert!(
                hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
                "{digest}"
            );
        }
    }
    if let Ok(saved) = manifest::parse::<Vec<SavedImage>>("manifest.json", bytes) {
        for image in &saved {
            for path in std::iter::once(&image.config).chain(&image.layers) {
                if let Ok(inside) = manifest::archive_path("x", path) {
                    assert!(
                        !inside.starts_with('/')
                            && inside.split('/').all(|p| !p.is_empty() && p != ".."),
                        "{inside}"
                    );
                }
            }
        }
    }
    if let Ok(config) = manifest::parse::<Config>("config", bytes) {
        let _ = config.check(config.rootfs.diff_ids.len());
        assert!(config.env().keys().all(|k| !k.is_empty()));
    }
    if let Ok(text) = std::str::from_utf8(bytes)
        && let Ok(reference) = Reference::parse(text)
    {
        assert!(!reference.dir_name().contains('/'));
    }
}
