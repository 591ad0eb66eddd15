//! A container image as the toolchain, for real: an OCI layout made by
//! Debian's umoci from the host's own `/bin/sh` and `cat` with their
//! libraries, named in chock.zon, written into its tree and bound
//! read-only by `chock exec`; sessions that start together, a session that
//! holds the tree while the tag moves, and one killed while it holds it.
//! Needs user namespaces, Landlock, umoci and podman (`scripts/setup`).

mod sandbox_fixture;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use sandbox_fixture::{Fixture, describe, text};

const REFERENCE: &str = "example.org/toolchain:1";

fn umoci(args: &[&std::ffi::OsStr]) {
    let out = std::process::Command::new("umoci")
        .args(args)
        .output()
        .expect("umoci is installed (scripts/setup installs it)");
    assert!(
        out.status.success(),
        "umoci {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Copies `program` and every library `ldd` names for it into `rootfs`.
fn copy_with_libraries(program: &str, rootfs: &Path, as_name: &str) {
    let target = rootfs.join(as_name.trim_start_matches('/'));
    std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
    std::fs::copy(program, &target).expect("copy the program");
    let ldd = std::process::Command::new("ldd")
        .arg(program)
        .output()
        .expect("ldd");
    for word in text(&ldd.stdout).split_whitespace() {
        if word.starts_with('/') && word.contains(".so") {
            let inside = rootfs.join(word.trim_start_matches('/'));
            std::fs::create_dir_all(inside.parent().expect("parent")).expect("mkdir");
            std::fs::copy(word, &inside).expect("copy a library");
        }
    }
}

/// The layout `<root>/layout` tagged `1`: `/usr/bin/sh` (the host's
/// `/bin/sh`), `/usr/bin/cat`, `/bin` a link to `usr/bin`,
/// `/etc/version` holding `version`, a set-user-ID file and the image's
/// own PATH and one more variable.
fn make_image(fx: &Fixture, version: &str) {
    let layout = fx.root().join("layout");
    let image = format!("{}:1", layout.display());
    let bundle = fx.root().join(format!("bundle-{version}"));
    if !layout.exists() {
        umoci(&["init".as_ref(), "--layout".as_ref(), layout.as_os_str()]);
        umoci(&["new".as_ref(), "--image".as_ref(), image.as_ref()]);
    }
    umoci(&[
        "unpack".as_ref(),
        "--rootless".as_ref(),
        "--image".as_ref(),
        image.as_ref(),
        bundle.as_os_str(),
    ]);
    let rootfs = bundle.join("rootfs");
    if !rootfs.join("usr/bin/sh").exists() {
        copy_with_libraries("/bin/sh", &rootfs, "/usr/bin/sh");
        copy_with_libraries("/bin/cat", &rootfs, "/usr/bin/cat");
        std::os::unix::fs::symlink("usr/bin", rootfs.join("bin")).expect("bin");
        std::fs::write(rootfs.join("usr/bin/setuid-tool"), "#!/bin/sh\n").expect("setuid");
        std::fs::set_permissions(
            rootfs.join("usr/bin/setuid-tool"),
            std::fs::Permissions::from_mode(0o4755),
        )
        .expect("chmod");
    }
    std::fs::create_dir_all(rootfs.join("etc")).expect("etc");
    std::fs::write(rootfs.join("etc/version"), version).expect("version");
    umoci(&[
        "repack".as_ref(),
        "--image".as_ref(),
        image.as_ref(),
        bundle.as_os_str(),
    ]);
    umoci(&[
        "config".as_ref(),
        "--image".as_ref(),
        image.as_ref(),
        "--config.env".as_ref(),
        "PATH=/usr/bin:/bin".as_ref(),
        "--config.env".as_ref(),
        "FROM_IMAGE=yes".as_ref(),
    ]);
}

/// A project whose chock.zon names the image in `<root>/layout`.
fn project() -> Fixture {
    let fx = Fixture::host();
    make_image(&fx, "one");
    fx.zon(&format!(
        ".{{\n    .container = .{{ .image = \"{REFERENCE}\", .path = \"../layout\" }},\n}}\n"
    ));
    fx
}

/// chock.zon's bounds on the image's layers hold: an image whose files
/// pass `.max_bytes` is refused naming the layer, no tree is left, and the
/// same image within the bound runs.
#[test]
fn the_container_blocks_bounds_refuse_an_image_that_expands_past_them() {
    let fx = Fixture::host();
    make_image(&fx, "one");
    let zon = |bound: &str| {
        fx.zon(&format!(
            ".{{\n    .container = .{{ .image = \"{REFERENCE}\", .path = \"../layout\", .max_bytes = \"{bound}\" }},\n}}\n"
        ))
    };
    zon("4KiB");
    let out = fx.exec(&[], &["sh", "-c", "true"]);
    assert_ne!(out.status.code(), Some(0), "{}", describe(&out));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("layer 1 of 1 (blobs/sha256/") && stderr.contains("4096 bytes"),
        "the refusal names the layer: {}",
        describe(&out)
    );
    zon("1GiB");
    let out = fx.exec(&[], &["sh", "-c", "cat /etc/version"]);
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(text(&out.stdout), "one");
    fx.zon(&format!(
        ".{{ .container = .{{ .image = \"{REFERENCE}\", .max_entries = 0 }} }}\n"
    ));
    let out = fx
        .chock()
        .args(["policy", "check"])
        .output()
        .expect("check");
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("max_entries"),
        "{}",
        describe(&out)
    );
}

#[test]
fn chock_exec_runs_a_program_from_the_image_and_nothing_of_the_host_toolchain() {
    let fx = project();
    let out = fx.exec(
        &[],
        &[
            "sh",
            "-c",
            "cat /etc/version; echo \" $FROM_IMAGE $PATH\"; [ -e /usr/bin/ls ] || echo no-host-ls; \
             echo x > /usr/bin/planted || echo read-only; [ -u /usr/bin/setuid-tool ] || echo no-setuid",
        ],
    );
    assert!(out.status.success(), "{}", describe(&out));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("one yes /usr/bin:/bin\n"), "{stdout}");
    for line in ["no-host-ls", "read-only", "no-setuid"] {
        assert!(stdout.contains(line), "{line}: {}", describe(&out));
    }
    assert!(
        text(&out.stderr).contains("wrote the image example.org/toolchain:1"),
        "the first start says it wrote the tree: {}",
        describe(&out)
    );
    // A program named by its path in the image is exec.image.*, shipped allow.
    let out = fx.exec(&["--json"], &["/usr/bin/cat", "/etc/version"]);
    assert!(out.status.success(), "{}", describe(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["action"], "exec.image.usr.bin.cat");
    assert_eq!(report["stdout"], "one");
    assert_eq!(
        report["notices"].as_array().map(Vec::len),
        Some(0),
        "the second start writes nothing"
    );
    assert_eq!(
        fx.last_logged("exec.image.usr.bin.cat")["decision"],
        "allow"
    );
}

#[test]
fn two_sessions_starting_cold_at_once_write_the_tree_once() {
    let fx = project();
    let spawn = || {
        fx.chock()
            .args(["exec", "--", "cat", "/etc/version"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn")
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (
        a.wait_with_output().expect("a"),
        b.wait_with_output().expect("b"),
    );
    for out in [&a, &b] {
        assert!(out.status.success(), "{}", describe(out));
        assert_eq!(text(&out.stdout), "one");
    }
    let writers = [&a, &b]
        .iter()
        .filter(|o| text(&o.stderr).contains("wrote the image"))
        .count();
    assert_eq!(writers, 1, "{}\n{}", describe(&a), describe(&b));
}

#[test]
fn a_session_on_the_tree_holds_off_a_moved_tag_until_it_ends_even_killed() {
    let fx = project();
    // Session A starts and stays, as an agent's session does.
    let mut a = fx
        .chock()
        .args(["exec", "--", "sh", "-c", "cat /etc/version; echo; read x"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut lines = BufReader::new(a.stdout.take().expect("stdout"));
    let mut first = String::new();
    lines.read_line(&mut first).expect("a started");
    assert_eq!(first, "one\n");

    // The tag moves: the same reference now names other files.
    make_image(&fx, "two");
    let started = Instant::now();
    let b = fx.exec(&[], &["cat", "/etc/version"]);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "refused at once, not left waiting"
    );
    assert_eq!(b.status.code(), Some(124), "{}", describe(&b));
    let said = text(&b.stderr);
    assert!(
        said.contains(REFERENCE)
            && said.contains("another session is using that tree")
            && said.contains("run again later"),
        "{said}"
    );
    assert!(said.contains("chock.zon:2:"), "names the block: {said}");

    // chock doctor and chock cache see the tree held; removing unused
    // trees keeps it.
    let doctor = fx
        .chock()
        .args(["doctor", "--json"])
        .output()
        .expect("doctor");
    let report: serde_json::Value = serde_json::from_slice(&doctor.stdout).expect("json");
    let row = report["rows"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["name"] == "image trees"))
        .expect("an image trees row");
    let detail = row["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains(REFERENCE) && detail.contains("(in use)"),
        "{detail}"
    );
    let clear = fx
        .chock()
        .args(["cache", "clear-images"])
        .output()
        .expect("clear");
    assert!(clear.status.success(), "{}", describe(&clear));
    assert!(
        text(&clear.stdout).starts_with("kept "),
        "{}",
        describe(&clear)
    );

    // A is killed, and the kernel lets go of its lock.
    a.kill().expect("kill");
    a.wait().expect("wait");
    let b = fx.exec(&[], &["cat", "/etc/version"]);
    assert!(b.status.success(), "{}", describe(&b));
    assert_eq!(text(&b.stdout), "two");
    assert!(
        text(&b.stderr).contains("wrote the image"),
        "{}",
        describe(&b)
    );

    // With no session on it, the tree is listed and then removed.
    let cache = fx.chock().arg("cache").output().expect("cache");
    let listed = text(&cache.stdout);
    assert!(
        listed.contains(REFERENCE) && !listed.contains("(in use)"),
        "{listed}"
    );
    let clear = fx
        .chock()
        .args(["cache", "clear-images"])
        .output()
        .expect("clear");
    assert!(
        text(&clear.stdout).starts_with("removed "),
        "{}",
        describe(&clear)
    );
    assert!(
        !fx.root()
            .join("state/chock/images/example.org+toolchain:1")
            .exists()
    );
}

#[test]
fn an_image_not_on_the_machine_is_refused_with_the_command_that_puts_it_there() {
    let fx = Fixture::host();
    fx.zon(".{\n    .container = .{ .image = \"ghcr.io/org/absent:3\", .path = \"../no-layout\" },\n}\n");
    let out = fx.exec(&[], &["sh", "-c", "true"]);
    assert_eq!(out.status.code(), Some(124), "{}", describe(&out));
    let said = text(&out.stderr);
    assert!(
        said.contains("chock.zon:2:") && said.contains("not on this machine"),
        "{said}"
    );
    assert!(
        said.contains("skopeo copy docker://ghcr.io/org/absent:3 oci:"),
        "{said}"
    );

    fx.zon(".{\n    .nix = .{ .dev_shell = \"ci\" },\n    .container = .{ .image = \"debian:12\" },\n}\n");
    let out = fx.exec(&[], &["sh", "-c", "true"]);
    assert_ne!(out.status.code(), Some(0));
    let said = text(&out.stderr);
    assert!(
        said.contains("chock.zon:3:") && said.contains("both a dev shell"),
        "{said}"
    );
}

/// `podman` with its store in `<root>/podman` (vfs, so no overlay mount is
/// needed), never the machine's own; what it printed.
fn podman(fx: &Fixture, args: &[&str]) -> String {
    let out = std::process::Command::new("podman")
        .env("CONTAINERS_STORAGE_CONF", podman_storage(fx))
        .args(args)
        .output()
        .expect("podman is installed (scripts/setup installs it)");
    assert!(out.status.success(), "podman {args:?}: {}", describe(&out));
    text(&out.stdout).trim().to_owned()
}

/// A storage.conf that keeps podman's images under the fixture.
fn podman_storage(fx: &Fixture) -> std::path::PathBuf {
    let conf = fx.root().join("storage.conf");
    if !conf.exists() {
        let at = |name: &str| fx.root().join(name).display().to_string();
        std::fs::write(
            &conf,
            format!(
                "[storage]\ndriver = \"vfs\"\ngraphroot = \"{}\"\nrunroot = \"{}\"\n",
                at("podman/root"),
                at("podman/run")
            ),
        )
        .expect("storage.conf");
    }
    conf
}

#[test]
fn an_image_in_podmans_store_is_read_through_podman_save_and_nothing_is_pulled() {
    let fx = Fixture::host();
    make_image(&fx, "from-podman");
    // Into podman's store from the layout as an OCI archive (`podman load`
    // reads a file; nothing is fetched), then tagged as chock.zon names it.
    let layout = fx.root().join("layout");
    let archive = fx.root().join("layout.tar");
    let tar = std::process::Command::new("tar")
        .arg("-C")
        .arg(&layout)
        .arg("-cf")
        .arg(&archive)
        .arg(".")
        .output()
        .expect("tar");
    assert!(tar.status.success(), "{}", describe(&tar));
    let loaded = podman(&fx, &["load", "-q", "-i", &archive.display().to_string()]);
    let name = loaded
        .strip_prefix("Loaded image: ")
        .unwrap_or_else(|| panic!("podman load said: {loaded}"));
    podman(&fx, &["tag", name, REFERENCE]);
    let id = podman(&fx, &["image", "inspect", "--format", "{{.Id}}", REFERENCE]);
    std::fs::remove_dir_all(&layout).expect("the layout goes: only podman has the image");
    fx.zon(&format!(
        ".{{\n    .container = .{{ .image = \"{REFERENCE}\" }},\n}}\n"
    ));
    let out = fx
        .chock()
        .env("CONTAINERS_STORAGE_CONF", podman_storage(&fx))
        .args(["exec", "--", "cat", "/etc/version"])
        .output()
        .expect("run chock");
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(text(&out.stdout), "from-podman");
    assert!(
        text(&out.stderr).contains("wrote the image example.org/toolchain:1"),
        "{}",
        describe(&out)
    );
    let record = fx
        .root()
        .join("state/chock/images/example.org+toolchain:1/image.json");
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&record).expect("the tree's record")).expect("json");
    assert_eq!(record["source"], "podman's local store", "{record}");
    assert_eq!(record["source_id"], format!("sha256:{id}"), "{record}");

    // Gone from podman's store too: refused with the command that puts it back.
    podman(&fx, &["rmi", REFERENCE]);
    fx.zon(".{\n    .container = .{ .image = \"example.org/toolchain:2\" },\n}\n");
    let out = fx
        .chock()
        .env("CONTAINERS_STORAGE_CONF", podman_storage(&fx))
        .args(["exec", "--", "cat", "/etc/version"])
        .output()
        .expect("run chock");
    assert_eq!(out.status.code(), Some(124), "{}", describe(&out));
    let said = text(&out.stderr);
    assert!(
        said.contains("not on this machine")
            && said.contains("podman pull example.org/toolchain:2"),
        "{said}"
    );
}

/// One JSON-RPC exchange with `chock mcp` over its stdio: sends `request`
/// and reads lines until the answer with the same id.
fn rpc(
    stdin: &mut std::process::ChildStdin,
    lines: &mut std::io::Lines<BufReader<std::process::ChildStdout>>,
    request: serde_json::Value,
) -> serde_json::Value {
    use std::io::Write;
    writeln!(stdin, "{request}").expect("write");
    loop {
        let line = lines.next().expect("the server answers").expect("a line");
        let message: serde_json::Value = serde_json::from_str(&line).expect("json");
        if message.get("id") == request.get("id") {
            return message;
        }
    }
}

/// The tool server holds the tree from its start to its end: its
/// `run_command` runs in the image, and while it is up a moved tag is
/// refused to another session; once it ends, the tag is picked up.
#[test]
fn the_tool_server_runs_commands_in_the_image_and_holds_it_for_its_session() {
    use std::io::Write;
    let fx = project();
    let mut server = fx
        .chock()
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn chock mcp");
    let mut stdin = server.stdin.take().expect("stdin");
    let mut lines = BufReader::new(server.stdout.take().expect("stdout")).lines();
    let init = rpc(
        &mut stdin,
        &mut lines,
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "chock", "{init}");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .expect("write");
    let called = rpc(
        &mut stdin,
        &mut lines,
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "run_command", "arguments": {"argv": ["cat", "/etc/version"]}}}),
    );
    let answer = called["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        answer.contains("exit status 0") && answer.contains("one"),
        "{called}"
    );

    make_image(&fx, "two");
    let other = fx.exec(&[], &["cat", "/etc/version"]);
    assert_eq!(other.status.code(), Some(124), "{}", describe(&other));
    assert!(
        text(&other.stderr).contains("run again later"),
        "{}",
        describe(&other)
    );
    // The server's own next call still has the tree it started with.
    let again = rpc(
        &mut stdin,
        &mut lines,
        serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "run_command", "arguments": {"argv": ["cat", "/etc/version"]}}}),
    );
    assert!(
        again["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("one"),
        "{again}"
    );

    drop(stdin);
    server
        .wait()
        .expect("the server ends when its client closes stdin");
    let after = fx.exec(&[], &["cat", "/etc/version"]);
    assert!(after.status.success(), "{}", describe(&after));
    assert_eq!(text(&after.stdout), "two");
}
