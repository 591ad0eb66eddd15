//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod vectors;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The Zig binary the `ziglang` PyPI package ships. Tests that need the oracle
/// fail (never skip) when it is missing, and say how to install it.
pub fn zig() -> &'static Path {
    static ZIG: OnceLock<PathBuf> = OnceLock::new();
    ZIG.get_or_init(|| {
        let out = Command::new("python3")
            .args([
                "-c",
                "import ziglang, os; print(os.path.join(os.path.dirname(ziglang.__file__), 'zig'))",
            ])
            .output();
        match out {
            Ok(out) if out.status.success() => {
                PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string())
            }
            _ => panic!(
                "Zig, the oracle for ZON, is missing: run scripts/setup \
                 (or `python3 -m pip install ziglang`) so `python3 -m ziglang` works"
            ),
        }
    })
}

/// What `zig ast-check --zon` (and, when asked, `zig fmt --check --zon`) says of `text`.
pub fn zig_accepts(dir: &Path, name: &str, text: &[u8], fmt_too: bool) -> bool {
    let file = dir.join(format!("{name}.zon"));
    std::fs::write(&file, text).expect("write a probe file");
    let ok = |args: &[&str]| {
        Command::new(zig())
            .args(args)
            .arg(&file)
            .output()
            .expect("run zig")
            .status
            .success()
    };
    ok(&["ast-check", "--zon"]) && (!fmt_too || ok(&["fmt", "--check", "--zon"]))
}

/// A fresh directory under cargo's per-test temporary area.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a scratch directory");
    dir
}
