//! The checks the `manifest`, `eval_case` and `lock` fuzz targets run on
//! each input, shared with the crate's `no_panic` test, which feeds them
//! the corpus kept in the repository: a policy package's `manifest.zon`,
//! one of its eval cases and `chock.lock`, of any bytes, are read without a
//! panic and within the time bound (`chock_testkit::FUZZ_BOUND`), and what
//! one accepts holds what its reader promises.

use std::path::Path;

use chock_testkit::assert_within_bound;

/// Reads `bytes` as the manifest of the package `no-force`.
pub fn read_manifest(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let dir = Path::new("/work/project/.agents/policies/no-force");
    let manifest = dir.join("manifest.zon");
    let mut read = None;
    assert_within_bound(&|| format!("a manifest of {} bytes", text.len()), || {
        read = Some(chock_policy::package::read_manifest(dir, &manifest, text))
    });
    match read {
        Some(Ok(package)) => {
            assert_eq!(package.id, "no-force", "the id is the folder's: {text:?}");
            assert!(!package.version.is_empty() && !package.summary.trim().is_empty());
            assert!(
                !package.hooks.is_empty(),
                "a package applies somewhere: {text:?}"
            );
            if let Some(guard) = &package.guard {
                assert!(
                    guard.program.starts_with(dir) && guard.program != dir,
                    "a guard is a program inside the package's folder: {text:?}"
                );
                assert!(guard.timeout_ms > 0 && guard.memory_bytes >= 1 << 20);
            }
        }
        Some(Err(error)) => {
            assert!(
                error.to_string().contains("manifest.zon"),
                "an error names the file: {error}"
            );
        }
        None => unreachable!("the reading ran"),
    }
}

/// Reads `bytes` as an eval case.
pub fn read_eval_case(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let path = Path::new("/work/project/.agents/policies/no-force/evals/case.json");
    let mut read = None;
    assert_within_bound(&|| format!("an eval case of {} bytes", text.len()), || {
        read = Some(chock_packages::evals::parse_case(path, text))
    });
    if let Some(Err(error)) = read {
        assert!(
            error.to_string().contains("case.json"),
            "an error names the file: {error}"
        );
    }
}

/// Reads `bytes` as `chock.lock`; what reads is written back to the same.
pub fn read_lock(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let path = Path::new("/work/project/chock.lock");
    let mut read = None;
    assert_within_bound(&|| format!("a lockfile of {} bytes", text.len()), || {
        read = Some(chock_packages::lock::Lock::parse(path, text))
    });
    if let Some(Ok(lock)) = read {
        assert_eq!(lock.version, chock_packages::lock::LOCK_VERSION);
        let written = chock_packages::lock::Lock::to_text(&lock).expect("a lock read is written");
        let again =
            chock_packages::lock::Lock::parse(path, &written).expect("what is written reads");
        assert_eq!(again, lock, "the lock round-trips: {text:?}");
    }
}
