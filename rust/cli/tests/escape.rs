//! The escape suite: every attack made for real from inside the sandbox,
//! through `chock exec`, in a project whose toolchain is a dev shell closure.
//! Each must fail; the suite prints `N attempts, N blocked`.
//!
//! The attacks run as the static escape probe (rust/sandbox/testdata). A call
//! on the seccomp kill list must end the probe by SIGSYS, which `chock exec`
//! passes on as its own death by SIGSYS; every other attack must fail and
//! the probe says how. Tests run as root here and in CI, which is the
//! harder case: the caller's uid 0 is mapped to itself, so the root-only
//! attempts (a 0600 file of another uid, a 0000 file of root's, chown, a
//! setuid binary of another uid) prove the program holds no capability.

mod sandbox_fixture;

use std::net::TcpListener;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Output, Stdio};

use sandbox_fixture::{Fixture, describe, git, text};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Expect {
    /// The probe reports the attack failed (exit 0, "blocked: ...").
    Refused,
    /// The seccomp filter kills the probe.
    Killed,
}

struct Suite {
    attempts: usize,
    failures: Vec<String>,
}

impl Suite {
    fn judge(&mut self, name: &str, expect: Expect, out: &Output) {
        self.attempts += 1;
        let stdout = text(&out.stdout);
        let verdict = match (expect, out.status.signal(), out.status.code()) {
            (Expect::Killed, Some(libc::SIGSYS), _) => Ok("killed by seccomp (SIGSYS)".to_owned()),
            (Expect::Refused, None, Some(0)) if stdout.starts_with("blocked:") => {
                Ok(stdout.trim().to_owned())
            }
            _ => Err(describe(out)),
        };
        match verdict {
            Ok(how) => println!("  blocked  {name}: {how}"),
            Err(what) => {
                println!("  ESCAPED  {name}: {what}");
                self.failures.push(format!("{name}: {what}"));
            }
        }
    }

    fn attempt(&mut self, fx: &Fixture, name: &str, expect: Expect, args: &[&str]) {
        let mut program = vec!["./probe"];
        program.extend_from_slice(args);
        let out = fx.exec(&[], &program);
        self.judge(name, expect, &out);
    }

    /// An attack on git that only shows on the host: the probe plants
    /// something in the sandbox, then the person commits. Blocked when the
    /// plant failed inside, or when it was moved aside (and chock said so)
    /// and the commit ran nothing of it.
    fn plant_then_commit(&mut self, fx: &Fixture, name: &str, created: &Path, args: &[&str]) {
        self.attempts += 1;
        let marker = fx.project.join("hook-ran");
        let mut program = vec!["./probe"];
        program.extend_from_slice(args);
        program.push(marker.to_str().expect("utf-8"));
        let out = fx.exec(&[], &program);
        let stdout = text(&out.stdout);
        if out.status.success() && stdout.starts_with("blocked:") {
            println!("  blocked  {name}: {}", stdout.trim());
            return;
        }
        let committed = git(
            &fx.project,
            &["commit", "-q", "--allow-empty", "-m", "after"],
        );
        let moved = sibling_starting(created, ".from-sandbox-");
        let verdict = if !out.status.success() || !stdout.starts_with("planted:") {
            Err(format!("the probe failed: {}", describe(&out)))
        } else if marker.exists() {
            Err(format!("git ran the planted hook: {}", stdout.trim()))
        } else if created.exists() || moved.is_none() || !committed {
            Err(format!(
                "{} was not moved aside (commit ok: {committed}): {}",
                created.display(),
                describe(&out)
            ))
        } else if !text(&out.stderr).contains("which git would run or read outside the sandbox") {
            Err(format!("chock did not say so: {}", describe(&out)))
        } else {
            Ok(format!(
                "{}; moved to {}, and the next commit ran nothing of it",
                stdout.trim(),
                moved.map(|m| m.display().to_string()).unwrap_or_default()
            ))
        };
        match verdict {
            Ok(how) => println!("  blocked  {name}: {how}"),
            Err(what) => {
                println!("  ESCAPED  {name}: {what}");
                self.failures.push(format!("{name}: {what}"));
            }
        }
    }

    fn report(&self) {
        let blocked = self.attempts - self.failures.len();
        println!("{} attempts, {blocked} blocked", self.attempts);
        assert!(
            self.failures.is_empty(),
            "escapes:\n{}",
            self.failures.join("\n")
        );
    }
}

/// A file beside `path` whose name is `path`'s followed by `infix`.
fn sibling_starting(path: &Path, infix: &str) -> Option<std::path::PathBuf> {
    let name = path.file_name()?.to_str()?.to_owned() + infix;
    std::fs::read_dir(path.parent()?)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&name))
        })
}

/// What git runs outside the sandbox, attacked from inside it: the project's
/// `.git` folder (the fixture's project is a git repository).
fn git_attacks(fx: &Fixture, suite: &mut Suite) {
    use Expect::Refused;
    let dot_git = fx.project.join(".git");
    let at = |rel: &str| {
        let path = if rel.is_empty() {
            dot_git.clone()
        } else {
            dot_git.join(rel)
        };
        path.to_str().expect("utf-8").to_owned()
    };
    suite.attempt(
        fx,
        "plant a git hook (.git/hooks/pre-commit)",
        Refused,
        &["write", &at("hooks/pre-commit")],
    );
    suite.attempt(
        fx,
        "write .git/config (core.hooksPath, core.fsmonitor, a filter)",
        Refused,
        &["write-held", &at("config")],
    );
    suite.attempt(
        fx,
        "write .git/info/attributes (select a filter)",
        Refused,
        &["write", &at("info/attributes")],
    );
    for (name, path) in [
        ("rename .git/hooks aside to plant a fresh one", at("hooks")),
        ("rename .git aside to plant a repository of its own", at("")),
    ] {
        suite.attempt(fx, name, Refused, &["move-aside", &path]);
    }
    suite.plant_then_commit(
        fx,
        "point .git/commondir at a repository of its own, then the person commits",
        &dot_git.join("commondir"),
        &[
            "plant-commondir",
            &at(""),
            fx.project.join("own-repo").to_str().expect("utf-8"),
        ],
    );
    // A repository with no hooks folder: the program makes one.
    std::fs::remove_dir_all(dot_git.join("hooks")).expect("remove .git/hooks");
    suite.plant_then_commit(
        fx,
        "make the missing .git/hooks with a pre-commit, then the person commits",
        &dot_git.join("hooks"),
        &["plant-hook", &at("hooks")],
    );
}

fn is_root() -> bool {
    // SAFETY: no arguments.
    unsafe { libc::geteuid() == 0 }
}

fn chown(path: &Path, uid: u32) {
    std::os::unix::fs::chown(path, Some(uid), Some(uid)).expect("chown (the suite runs as root)");
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// Runs the TIOCSTI attack with a pseudo-terminal as chock's controlling
/// terminal, and checks that nothing reached the terminal's input.
fn tiocsti(fx: &Fixture, suite: &mut Suite) {
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty fills two descriptors.
    let ok = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(ok, 0, "openpty failed");
    // SAFETY: descriptors just made and owned here.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let slave_fd = slave.as_raw_fd();
    let mut command = fx.chock();
    command
        .args(["exec", "--", "./probe", "tiocsti"])
        .stdin(Stdio::from(slave.try_clone().expect("dup")));
    // SAFETY: setsid and TIOCSCTTY between fork and exec make the pty
    // chock's controlling terminal, as a person's shell would.
    unsafe {
        command.pre_exec(move || {
            libc::setsid();
            libc::ioctl(0, libc::TIOCSCTTY, 0);
            Ok(())
        });
    }
    let out = command.output().expect("run chock on a pty");
    let mut pending: libc::c_int = 0;
    // SAFETY: FIONREAD writes an int.
    unsafe { libc::ioctl(slave_fd, libc::FIONREAD, &mut pending) };
    drop(master);
    if pending > 0 {
        suite.attempts += 1;
        suite.failures.push(format!(
            "TIOCSTI: {pending} bytes were pushed into the terminal"
        ));
        println!(
            "  ESCAPED  TIOCSTI into the caller's terminal: {pending} bytes reached its input"
        );
        return;
    }
    suite.judge("TIOCSTI into the caller's terminal", Expect::Refused, &out);
}

#[test]
fn every_escape_attempt_is_blocked() {
    let fx = Fixture::flake();
    fx.rules(r#".{ .action = "exec.workspace.*", .decision = .allow }"#);
    let probe = fx.probe();
    let outside = fx.outside_store_path();
    std::fs::write(fx.home.join("secret"), "the caller's key").expect("secret");
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback listener on the host");
    listener.set_nonblocking(true).expect("nonblocking");
    let host_port = listener.local_addr().expect("addr").port();
    let home = fx.home.to_str().expect("utf-8").to_owned();
    let project = fx.project.to_str().expect("utf-8").to_owned();

    let mut suite = Suite {
        attempts: 0,
        failures: Vec::new(),
    };
    println!("escape attempts from inside the sandbox:");
    use Expect::{Killed, Refused};
    for target in [
        "/etc/passwd",
        "/etc/chock-planted",
        "/nix/store/chock-planted",
        "/chock-planted",
        "/run/chock/planted",
    ] {
        suite.attempt(
            &fx,
            &format!("write outside the workspace ({target})"),
            Refused,
            &["write", target],
        );
    }
    suite.attempt(
        &fx,
        "read the host's HOME",
        Refused,
        &["read", &format!("{home}/secret")],
    );
    suite.attempt(
        &fx,
        "read a store path outside the closure",
        Refused,
        &["read", outside.to_str().expect("utf-8")],
    );
    suite.attempt(
        &fx,
        "write chock.zon",
        Refused,
        &["write-held", &format!("{project}/chock.zon")],
    );
    for (name, attack) in [
        ("mount", "mount"),
        ("unshare", "unshare"),
        ("setns", "setns"),
        ("ptrace another process", "ptrace"),
        ("keyctl", "keyctl"),
        ("bpf", "bpf"),
        ("memfd plus execveat", "memfd-exec"),
        ("an AF_VSOCK socket", "vsock"),
    ] {
        suite.attempt(&fx, name, Killed, &[attack]);
    }
    if cfg!(target_arch = "x86_64") {
        suite.attempt(&fx, "a call through the x32 ABI", Killed, &["x32"]);
        suite.attempt(
            &fx,
            "a call through the i386 gate (int 0x80)",
            Killed,
            &["i386"],
        );
    }
    suite.attempt(&fx, "io_uring", Refused, &["io_uring"]);
    suite.attempt(
        &fx,
        "a write-and-execute mapping",
        Refused,
        &["write-execute"],
    );
    suite.attempt(
        &fx,
        "a TCP connection to the host's loopback",
        Refused,
        &["tcp", &format!("127.0.0.1:{host_port}")],
    );
    suite.attempt(
        &fx,
        "a TCP connection out",
        Refused,
        &["tcp", "1.1.1.1:443"],
    );
    suite.attempt(
        &fx,
        "the host's nix-daemon socket",
        Refused,
        &["unix", "/nix/var/nix/daemon-socket/socket"],
    );
    suite.attempt(
        &fx,
        "a symlink planted to leave the workspace",
        Refused,
        &["symlink", &home, &format!("{project}/escape-link")],
    );
    tiocsti(&fx, &mut suite);
    suite.attempt(
        &fx,
        "read the sandbox init's environment (/proc/1/environ)",
        Refused,
        &["read", "/proc/1/environ"],
    );
    suite.attempt(
        &fx,
        "reach the host's root through init (/proc/1/root)",
        Refused,
        &["read", "/proc/1/root/etc/hostname"],
    );
    suite.attempt(
        &fx,
        "write a kernel setting (/proc/sys/kernel/hostname)",
        Refused,
        &["write", "/proc/sys/kernel/hostname"],
    );
    git_attacks(&fx, &mut suite);
    suite.attempt(&fx, "raising an rlimit", Refused, &["rlimit"]);
    suite.attempt(&fx, "capabilities left to the program", Refused, &["caps"]);

    if is_root() {
        let other = fx.project.join("other-users-file");
        std::fs::write(&other, "not yours").expect("file");
        chown(&other, 1234);
        chmod(&other, 0o600);
        suite.attempt(
            &fx,
            "read a 0600 file of another uid (caller is root)",
            Refused,
            &["read", other.to_str().expect("utf-8")],
        );
        let sealed = fx.project.join("sealed");
        std::fs::write(&sealed, "root's own, mode 0000").expect("file");
        chmod(&sealed, 0o000);
        suite.attempt(
            &fx,
            "read a 0000 file of root's (needs CAP_DAC_OVERRIDE)",
            Refused,
            &["read", sealed.to_str().expect("utf-8")],
        );
        let mine = fx.project.join("mine");
        std::fs::write(&mine, "x").expect("file");
        suite.attempt(
            &fx,
            "chown a file to another uid",
            Refused,
            &["chown", mine.to_str().expect("utf-8")],
        );
        let setuid = fx.project.join("setuid-probe");
        std::fs::copy(&probe, &setuid).expect("copy");
        chown(&setuid, 1234);
        chmod(&setuid, 0o4755);
        suite.attempt(
            &fx,
            "a setuid bit that takes effect",
            Refused,
            &["setuid", setuid.to_str().expect("utf-8")],
        );
    } else {
        println!("  (the four root-caller attempts are skipped: the suite is not running as root)");
    }

    // The host side: a link planted in the cache must not turn `chock cache
    // clear` into a delete outside it.
    let keep = fx.root().join("keep");
    std::fs::create_dir_all(&keep).expect("keep");
    std::fs::write(keep.join("precious"), "keep me").expect("precious");
    let plant = fx.exec(
        &[],
        &[
            "./probe",
            "symlink",
            keep.to_str().expect("utf-8"),
            "/run/chock/cache/escape",
        ],
    );
    assert!(plant.status.success(), "{}", describe(&plant));
    let cleared = fx.chock().args(["cache", "clear"]).output().expect("clear");
    suite.attempts += 1;
    if cleared.status.success() && keep.join("precious").exists() {
        println!(
            "  blocked  a link planted in the cache, then `chock cache clear`: the link went, its target stayed"
        );
    } else {
        suite.failures.push(format!(
            "cache clear followed a planted link: {}",
            describe(&cleared)
        ));
    }

    let accepted = listener.accept().is_ok();
    suite.attempts += 1;
    if accepted {
        suite
            .failures
            .push("the host's loopback listener accepted a connection from the sandbox".into());
    } else {
        println!("  blocked  the host's listener on 127.0.0.1:{host_port} saw no connection");
    }

    suite.report();
}

/// A `.git` file (a linked worktree, `--separate-git-dir`) cannot be
/// pointed elsewhere, a git directory outside the workspace is not there at
/// all, and one inside is held like `.git`.
#[test]
fn a_git_file_and_the_git_directory_it_names_are_held() {
    use Expect::Refused;
    let mut suite = Suite {
        attempts: 0,
        failures: Vec::new(),
    };
    println!("git worktree attempts from inside the sandbox:");
    let allow = r#".{ .action = "exec.workspace.*", .decision = .allow }"#;

    let worktree = Fixture::host();
    let main = worktree.root().join("main");
    std::fs::create_dir(&main).expect("mkdir");
    assert!(
        git(&main, &["init", "-q"]) && git(&main, &["commit", "-q", "--allow-empty", "-m", "x"])
    );
    std::fs::remove_dir(&worktree.project).expect("rmdir");
    let project = worktree.project.to_str().expect("utf-8");
    assert!(
        git(&main, &["worktree", "add", "-q", project]),
        "git worktree add"
    );
    worktree.rules(allow);
    worktree.probe();
    let main_git = main.join(".git");
    let in_main = |rel: &str| main_git.join(rel).to_str().expect("utf-8").to_owned();
    suite.attempt(
        &worktree,
        "point a linked worktree's .git file elsewhere",
        Refused,
        &["write-held", &format!("{project}/.git")],
    );
    suite.attempt(
        &worktree,
        "plant a hook in the main repository's .git/hooks",
        Refused,
        &["write", &in_main("hooks/pre-commit")],
    );
    suite.attempt(
        &worktree,
        "write the worktree's own git directory (outside the workspace)",
        Refused,
        &["write", &in_main("worktrees/project/commondir")],
    );

    let separate = Fixture::host();
    std::fs::create_dir(separate.project.join("meta")).expect("mkdir");
    assert!(git(
        &separate.project,
        &["init", "-q", "--separate-git-dir", "meta/repo"]
    ));
    separate.rules(allow);
    separate.probe();
    let meta = separate.project.join("meta");
    let in_meta = |rel: &str| meta.join(rel).to_str().expect("utf-8").to_owned();
    suite.attempt(
        &separate,
        "plant a hook in a separate git directory inside the workspace",
        Refused,
        &["write", &in_meta("repo/hooks/pre-commit")],
    );
    suite.attempt(
        &separate,
        "write a separate git directory's config",
        Refused,
        &["write-held", &in_meta("repo/config")],
    );
    suite.attempt(
        &separate,
        "point the .git file at a repository of its own",
        Refused,
        &[
            "write-held",
            separate.project.join(".git").to_str().expect("utf-8"),
        ],
    );
    for path in [in_meta("repo"), in_meta("")] {
        suite.attempt(
            &separate,
            "rename the separate git directory (or its folder) aside",
            Refused,
            &["move-aside", path.trim_end_matches('/')],
        );
    }
    suite.report();
}

#[test]
fn write_and_execute_works_when_sandbox_jit_is_allowed() {
    let fx = Fixture::flake();
    fx.probe();
    fx.rules(r#".{ .action = "sandbox.jit", .decision = .allow }"#);
    let out = fx.exec(&[], &["./probe", "jit"]);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        text(&out.stdout).contains("jit works"),
        "{}",
        describe(&out)
    );
    assert!(
        text(&out.stderr).contains("write-and-execute rule is OFF"),
        "the command says so: {}",
        describe(&out)
    );
    let jit = fx
        .log_lines()
        .into_iter()
        .find(|l| l["action"] == "sandbox.jit")
        .expect("sandbox.jit is logged");
    assert_eq!(jit["decision"], "allow");

    // Without the rule, the same code cannot get its page.
    fx.rules(r#".{ .action = "call.read_file", .decision = .allow }"#);
    let out = fx.exec(&[], &["./probe", "jit"]);
    assert!(
        !out.status.success() && text(&out.stdout).contains("FAILED"),
        "{}",
        describe(&out)
    );
}

#[test]
fn an_organisation_bundle_keeps_write_and_execute_on() {
    let fx = Fixture::flake();
    fx.probe();
    fx.rules(r#".{ .action = "sandbox.jit", .decision = .allow }"#);
    let bundle = fx.root().join("org-policy.zon");
    std::fs::write(
        &bundle,
        ".{ .rules = .{ .{ .action = \"sandbox.jit\", .decision = .deny } } }\n",
    )
    .expect("bundle");
    let out = fx.exec(
        &["--org-bundle", bundle.to_str().expect("utf-8")],
        &["./probe", "write-execute"],
    );
    assert!(
        out.status.success() && text(&out.stdout).starts_with("blocked:"),
        "{}",
        describe(&out)
    );
}
