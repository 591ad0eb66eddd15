//! A container image's tree shown in a real sandbox: each entry is bound
//! by descriptor, checked to be the object the layout read, so a directory
//! swapped in the tree between reading the layout and starting the
//! sandbox is refused rather than shown.

use std::ffi::OsString;
use std::path::Path;

use chock_sandbox::{Command, Limits, Sandbox, Stdio, Toolchain, WriteExecute, resolve_layout};

/// A tree holding the host's `/bin/sh` and its libraries, as `/usr/bin/sh`.
fn tree(rootfs: &Path) {
    let copy = |from: &Path, to: &Path| {
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        std::fs::copy(from, to).expect("copy");
    };
    copy(Path::new("/bin/sh"), &rootfs.join("usr/bin/sh"));
    let ldd = std::process::Command::new("ldd")
        .arg("/bin/sh")
        .output()
        .expect("ldd");
    for word in String::from_utf8_lossy(&ldd.stdout).split_whitespace() {
        if word.starts_with('/') && word.contains(".so") {
            copy(Path::new(word), &rootfs.join(word.trim_start_matches('/')));
        }
    }
    std::fs::write(rootfs.join("usr/marker"), "the image's own").expect("marker");
}

fn run(sandbox: &Sandbox, cwd: &Path) -> Result<chock_sandbox::Finished, String> {
    let command = Command {
        program: "/usr/bin/sh".into(),
        args: ["sh", "-c", "read x < /usr/marker; echo \"$x\""]
            .iter()
            .map(OsString::from)
            .collect(),
        env: vec![("PATH".into(), "/usr/bin".into())],
        cwd: cwd.to_path_buf(),
        stdio: Stdio::Capture { limit: 1 << 20 },
    };
    sandbox
        .spawn(&command)
        .map_err(|e| e.to_string())?
        .wait()
        .map_err(|e| e.to_string())
}

#[test]
fn the_tree_is_shown_and_a_directory_swapped_after_the_layout_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ws, cache, rootfs) = (
        dir.path().join("ws"),
        dir.path().join("cache"),
        dir.path().join("rootfs"),
    );
    std::fs::create_dir(&ws).expect("ws");
    tree(&rootfs);
    let toolchain = Toolchain::Image {
        rootfs: rootfs.clone(),
    };

    let layout = resolve_layout(&ws, &cache, &toolchain, 64 << 20).expect("layout");
    let sandbox =
        Sandbox::new(layout, Limits::for_this_machine(), WriteExecute::Refused).expect("sandbox");
    let done = run(&sandbox, &ws).expect("runs");
    assert_eq!(
        String::from_utf8_lossy(&done.stdout).trim(),
        "the image's own"
    );

    // The layout is read, then `usr` is swapped for another directory.
    let layout = resolve_layout(&ws, &cache, &toolchain, 64 << 20).expect("layout");
    std::fs::rename(rootfs.join("usr"), dir.path().join("usr-aside")).expect("aside");
    // A complete decoy, so only the check can tell it from the original.
    tree(&rootfs);
    std::fs::write(rootfs.join("usr/marker"), "a decoy").expect("decoy marker");
    let outcome = Sandbox::new(layout, Limits::for_this_machine(), WriteExecute::Refused)
        .map_err(|e| e.to_string())
        .and_then(|sandbox| run(&sandbox, &ws));
    match outcome {
        Err(error) => assert!(
            error.contains("nothing ran")
                && error.contains("another file there than the one Chock checked"),
            "{error}"
        ),
        Ok(done) => panic!(
            "the swapped directory was shown: {:?} {}",
            done.exit,
            String::from_utf8_lossy(&done.stdout)
        ),
    }
}
