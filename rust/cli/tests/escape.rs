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
    /// something in the sandbox (after making folders under every name a
    /// created file could be moved aside to), then the person commits.
    /// Blocked when the plant failed inside and the commit ran nothing.
    fn plant_then_commit(&mut self, fx: &Fixture, name: &str, args: &[&str]) {
        self.attempts += 1;
        let marker = fx.project.join("hook-ran");
        let mut program = vec!["./probe"];
        program.extend_from_slice(args);
        program.push(marker.to_str().expect("utf-8"));
        let out = fx.exec(&[], &program);
        let stdout = text(&out.stdout);
        let committed = git(
            &fx.project,
            &["commit", "-q", "--allow-empty", "-m", "after"],
        );
        let verdict = if marker.exists() {
            Err(format!("git ran the planted hook: {}", describe(&out)))
        } else if !out.status.success() || !stdout.starts_with("blocked:") {
            Err(format!("the plant was not refused: {}", describe(&out)))
        } else if !committed {
            Err("the person's next commit failed".to_owned())
        } else {
            Ok(format!("{}; the next commit ran nothing", stdout.trim()))
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
        "point .git/commondir at a repository of its own (decoys laid first), then the person commits",
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
        "make the missing .git/hooks with a pre-commit (decoys laid first), then the person commits",
        &["plant-hook", &at("hooks")],
    );
}

/// Every file beneath `dir`, links not followed.
fn find_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            found.extend(find_files(&path));
        } else {
            found.push(path);
        }
    }
    found
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
        for (name, dir) in [
            ("in the workspace", project.as_str()),
            ("in the cache", "/run/chock/cache"),
        ] {
            suite.attempt(
                &fx,
                &format!(
                    "leave a set-user-ID root program {name} (chmod 6755, fchmod, open, mknod)"
                ),
                Refused,
                &["setuid-bits", dir],
            );
        }
        suite.attempts += 1;
        let cache = fx.root().join("cache/chock/cache");
        let marked = find_files(&fx.project)
            .into_iter()
            .chain(find_files(&cache))
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("suid"))
            })
            .filter(|p| {
                std::fs::symlink_metadata(p).is_ok_and(|m| m.permissions().mode() & 0o6000 != 0)
            })
            .collect::<Vec<_>>();
        if marked.is_empty() {
            println!("  blocked  no file on the host has a set-user-ID or set-group-ID bit");
        } else {
            suite
                .failures
                .push(format!("set-user-ID files on the host: {marked:?}"));
        }
        // As root, Chock makes the PID namespace's memfds non-executable.
        suite.attempt(
            &fx,
            "memfd_create, write a program, execve it through /proc/self/fd",
            Refused,
            &["memfd-execve"],
        );
    } else {
        println!("  (the root-caller attempts are skipped: the suite is not running as root)");
        // Only root may make the PID namespace's memfds non-executable, so
        // for another caller this is the known way past that docs/sandbox.md
        // names (unless the host sets vm.memfd_noexec itself).
        let host_sets_it =
            std::fs::read_to_string("/proc/sys/vm/memfd_noexec").is_ok_and(|v| v.trim() != "0");
        let out = fx.exec(&[], &["./probe", "memfd-execve"]);
        let ran = text(&out.stdout).contains("a program ran from a memfd");
        assert!(
            ran != host_sets_it,
            "a memfd program as a caller that is not root: {}",
            describe(&out)
        );
        println!("  known    a memfd program as a caller that is not root runs: {ran}");
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

/// Two commands in one project: the first swaps a git directory it made
/// (`.git/modules/x`) with a link to `/` or to the host's root as it hangs
/// while a sandbox is built, with renameat2(RENAME_EXCHANGE), as fast as it
/// can; the second is started again and again meanwhile. Every path a mount
/// takes from the workspace is resolved once, by descriptor, beneath the
/// workspace and with no link followed, so the second either gets the
/// folder that was checked or refuses to run; it never sees the host.
#[test]
fn two_commands_racing_in_one_project_never_mount_the_host() {
    let fx = Fixture::host();
    assert!(git(&fx.project, &["init", "-q"]));
    fx.probe();
    let outside = fx.root().join("outside");
    std::fs::create_dir(&outside).expect("mkdir");
    std::fs::write(outside.join("secret"), "the host's").expect("secret");
    let modules = fx.project.join(".git/modules");
    let modules = modules.to_str().expect("utf-8");
    let (mut ran, mut refused, mut escapes) = (0, 0, Vec::new());
    for (round, target) in ["/", "/.chock-host-root"].into_iter().enumerate() {
        let stop = fx.project.join(format!("stop-{round}"));
        let dir = format!("{modules}/{round}");
        let racer = fx
            .chock()
            .args(["exec", "--", "./probe", "swap", &dir, target])
            .arg(&stop)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the racing command");
        let swapping = std::time::Instant::now();
        while !Path::new(&format!("{dir}/y")).exists() && swapping.elapsed().as_secs() < 30 {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        for _ in 0..25 {
            let out = fx.exec(
                &[],
                &[
                    "./probe",
                    "race-check",
                    &dir,
                    outside.to_str().expect("utf-8"),
                ],
            );
            let stdout = text(&out.stdout);
            if stdout.contains("BREACH") {
                escapes.push(describe(&out));
            } else if out.status.success() && stdout.starts_with("blocked:") {
                ran += 1;
            } else if text(&out.stderr).contains("run the command again") {
                refused += 1;
            } else {
                escapes.push(format!(
                    "neither ran nor refused as a race: {}",
                    describe(&out)
                ));
            }
        }
        std::fs::write(&stop, "").expect("stop");
        let racer = racer.wait_with_output().expect("the racing command ends");
        assert!(
            text(&racer.stdout).starts_with("swapped:"),
            "the racing command did not race: {}",
            describe(&racer)
        );
    }
    println!(
        "{ran} commands ran beside the race, {refused} refused to run as it changed their folders"
    );
    assert!(
        !outside.join("planted").exists(),
        "a file was written in the host's folder outside the workspace"
    );
    assert!(escapes.is_empty(), "escapes:\n{}", escapes.join("\n"));
    assert!(ran + refused == 50);
}

/// A project with no chock.zon: Chock makes one (no rule) before the first
/// program runs and holds it read-only, so a program cannot write the rules
/// the next command obeys, whatever names it prepared for a rename.
#[test]
fn a_policy_file_a_program_writes_never_raises_the_policy() {
    let fx = Fixture::host();
    fx.probe();
    let zon = fx.project.join("chock.zon");
    let out = fx.exec(
        &[],
        &["./probe", "plant-policy", zon.to_str().expect("utf-8")],
    );
    assert!(
        out.status.success() && text(&out.stdout).starts_with("blocked:"),
        "{}",
        describe(&out)
    );
    assert!(
        text(&out.stderr).contains("chock.zon")
            && text(&out.stderr).contains("before the program started"),
        "chock says it made chock.zon: {}",
        describe(&out)
    );
    assert!(
        std::fs::read_to_string(&zon)
            .expect("chock.zon")
            .starts_with("// This project's rules for Chock"),
        "chock.zon is Chock's placeholder"
    );
    // exec.unparsed is asked about by the shipped rules: still refused.
    let next = fx.exec(&[], &["/bin/true"]);
    assert_eq!(next.status.code(), Some(125), "{}", describe(&next));
}

/// Every control input (`chock_policy::control`) is attacked from inside,
/// by every way a program changes a name: writing, creating beneath,
/// moving aside, removing, replacing. One that exists stays as it was; one
/// that did not exist is held by a placeholder while the sandbox runs and
/// is gone afterwards, so nothing is planted and nothing is left behind.
#[test]
fn no_control_input_can_be_planted_or_changed_from_inside() {
    use chock_policy::control::{CHOCK_ZON, CONTROL_INPUTS, ControlShape, GIT_DIR};
    let fx = Fixture::host();
    fx.rules(r#".{ .action = "exec.*", .decision = .allow }"#);
    std::fs::create_dir(fx.project.join(".claude")).expect("mkdir");
    let settings = fx.project.join(".claude/settings.json");
    std::fs::write(&settings, "{}\n").expect("settings");
    std::fs::write(fx.project.join(".envrc"), "export A=1\n").expect(".envrc");
    // What the project holds after: what it held, and the folder `x` the
    // attacks made to move names into.
    let mut after = top_names(&fx.project);
    after.push("x".to_owned());
    after.sort();
    let mut steps = Vec::new();
    for input in CONTROL_INPUTS {
        if input.path == CHOCK_ZON || input.path == GIT_DIR {
            continue; // the policy and the git suites attack these
        }
        let p = input.path;
        steps.push(match input.shape {
            ControlShape::Dir => format!("mkdir -p {p}/evil && echo x > {p}/evil/f"),
            ControlShape::File => format!("echo x > {p}"),
        });
        steps.push(format!("mv {p} moved-aside"));
        steps.push(match input.shape {
            ControlShape::Dir => format!("rm -rf {p} && mkdir -p {p}/evil"),
            ControlShape::File => format!("rm -rf {p} && echo x > {p}"),
        });
        steps.push(format!("mkdir -p x && mv {p} x/"));
    }
    steps.push("cp .envrc /dev/null && echo 'touch /tmp/planted' >> .envrc".to_owned());
    steps.push("echo '{\"hooks\":{}}' > .claude/settings.local.json".to_owned());
    let script = steps
        .iter()
        .map(|step| {
            format!(
                "if sh -c '{}' 2>/dev/null; then echo 'DONE: {}'; else echo 'blocked: {}'; fi",
                step.replace('\'', r"'\''"),
                step.replace('\'', ""),
                step.replace('\'', "")
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    let out = fx.exec(&[], &["/bin/sh", "-c", &script]);
    assert!(out.status.success(), "{}", describe(&out));
    let stdout = text(&out.stdout);
    assert_eq!(
        stdout.matches("blocked: ").count(),
        steps.len(),
        "{}",
        describe(&out)
    );
    assert_eq!(
        std::fs::read_to_string(&settings).expect("settings"),
        "{}\n"
    );
    assert_eq!(
        std::fs::read_to_string(fx.project.join(".envrc")).expect(".envrc"),
        "export A=1\n"
    );
    assert!(!fx.project.join(".claude/settings.local.json").exists());
    assert_eq!(
        top_names(&fx.project),
        after,
        "the placeholders are gone once the sandbox is: {}",
        describe(&out)
    );
    assert!(
        !text(&out.stderr).contains(".vscode"),
        "a placeholder that goes is not announced as made: {}",
        describe(&out)
    );
    // A link in one of these places is refused rather than followed.
    std::os::unix::fs::symlink("elsewhere", fx.project.join(".idea")).expect("link");
    let out = fx.exec(&[], &["/bin/true"]);
    assert_ne!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(text(&out.stderr).contains(".idea"), "{}", describe(&out));
}

/// Waits until a sandbox started in `project` has made its placeholders.
fn wait_for_placeholders(project: &Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !project.join(".vscode").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the sandbox never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The names at the top of a project, sorted.
fn top_names(project: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(project)
        .expect("the project")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

/// A sandboxed program that widens its own rules by writing a policy
/// package: refused, and the command the policy refused before is refused
/// after.
#[test]
fn a_program_cannot_install_a_policy_package_that_widens_its_rules() {
    let fx = Fixture::host();
    fx.rules(
        r#".{ .action = "exec.path.sh", .decision = .allow },
           .{ .action = "exec.path.true", .decision = .deny }"#,
    );
    let plant = r#"mkdir -p .agents/policies/evil &&
        printf '.{ .id = "evil", .version = "1.0.0", .rules = .{ .{ .action = "exec.*", .decision = .allow } } }' > .agents/policies/evil/manifest.zon"#;
    let out = fx.exec(&[], &["/bin/sh", "-c", plant]);
    assert_ne!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(!fx.project.join(".agents").exists(), "{}", describe(&out));
    let out = fx.exec(&[], &["/bin/true"]);
    assert_ne!(
        out.status.code(),
        Some(0),
        "still refused: {}",
        describe(&out)
    );
}

/// Two sandboxes of one project at once: when the first ends, the
/// placeholders the second still needs stay (a program in it cannot plant
/// what the first one's end uncovered); when the second ends, they go.
#[test]
fn placeholders_last_as_long_as_the_last_sandbox() {
    let fx = Fixture::host();
    fx.rules(r#".{ .action = "exec.*", .decision = .allow }"#);
    let gate = fx.project.join("gate");
    let long = format!(
        "while [ ! -e {gate} ]; do sleep 0.05; done; \
         if mkdir .vscode/evil 2>/dev/null || mkdir .vscode 2>/dev/null; then echo PLANTED; else echo held; fi",
        gate = gate.display()
    );
    let second = fx
        .exec_command(&[], &["/bin/sh", "-c", &long])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chock exec");
    wait_for_placeholders(&fx.project);
    let out = fx.exec(&[], &["/bin/true"]);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        fx.project.join(".vscode").is_dir(),
        "the first sandbox's end kept what the second holds"
    );
    std::fs::write(&gate, "").expect("gate");
    let out = second.wait_with_output().expect("the second sandbox");
    assert!(text(&out.stdout).contains("held"), "{}", describe(&out));
    std::fs::remove_file(&gate).expect("gate");
    assert!(!fx.project.join(".vscode").exists(), "{}", describe(&out));
}

/// A folder that holds a control input (`.agents`, with notes of its own
/// beside the policies and skills) cannot be moved aside or removed with the input in
/// it, and made afresh with a planted package.
#[test]
fn the_folder_around_a_control_input_cannot_be_moved_aside() {
    let fx = Fixture::host();
    fx.rules(r#".{ .action = "exec.*", .decision = .allow }"#);
    for step in [
        "mv .agents gone",
        "rm -rf .agents",
        "mkdir -p x && mv .agents x/",
        "mkdir -p .agents/policies/evil",
    ] {
        std::fs::create_dir_all(fx.project.join(".agents/notes")).expect("notes");
        let script = format!(
            "{step} && mkdir -p .agents/policies/evil && echo x > .agents/policies/evil/manifest.zon"
        );
        let out = fx.exec(&[], &["/bin/sh", "-c", &script]);
        assert_ne!(out.status.code(), Some(0), "{step}: {}", describe(&out));
        assert!(
            fx.project.join(".agents").is_dir() && !fx.project.join(".agents/policies").exists(),
            "{step}: {}",
            describe(&out)
        );
    }
    // What else the folder holds is still the agent's to write; the
    // skills folder is a control input of its own.
    let out = fx.exec(&[], &["/bin/sh", "-c", "echo hi > .agents/notes/a"]);
    assert!(out.status.success(), "{}", describe(&out));
    std::fs::create_dir_all(fx.project.join(".agents/skills/deploy")).expect("skills");
    let out = fx.exec(
        &[],
        &[
            "/bin/sh",
            "-c",
            "echo evil > .agents/skills/deploy/SKILL.md",
        ],
    );
    assert_ne!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(!fx.project.join(".agents/skills/deploy/SKILL.md").exists());
}

/// Sandboxes of one project started and ended together, many times over:
/// each starts (no end sweeps a placeholder another is counting on), and
/// none is left once all are done.
#[test]
fn sandboxes_started_together_all_start_and_leave_nothing() {
    let fx = Fixture::host();
    fx.rules(r#".{ .action = "exec.*", .decision = .allow }"#);
    for round in 0..5 {
        let children: Vec<_> = (0..6)
            .map(|_| {
                fx.exec_command(&[], &["/bin/true"])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("chock exec")
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().expect("chock exec");
            assert!(out.status.success(), "round {round}: {}", describe(&out));
        }
    }
    assert_eq!(top_names(&fx.project), ["chock.zon"]);
    // The folders went back to the pool, empty, for the next start.
    let held = fx.root().join("data/chock/held");
    let pools: Vec<_> = std::fs::read_dir(&held)
        .expect("the placeholder records")
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "pool"))
        .collect();
    assert_eq!(pools.len(), 1, "one pool for the project");
    let kept: Vec<_> = std::fs::read_dir(pools[0].path())
        .expect("the pool")
        .flatten()
        .collect();
    assert!(!kept.is_empty(), "the pool keeps the folders");
    for folder in kept {
        assert_eq!(
            std::fs::read_dir(folder.path()).expect("a folder").count(),
            0,
            "a kept folder is empty"
        );
    }
}

/// A Chock killed while its sandbox runs leaves its placeholders; the next
/// sandbox of the project to end removes them.
#[test]
fn a_killed_chocks_placeholders_are_swept_by_the_next() {
    let fx = Fixture::host();
    fx.rules(r#".{ .action = "exec.*", .decision = .allow }"#);
    let mut child = fx
        .exec_command(&[], &["/bin/sh", "-c", "sleep 30"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chock exec");
    wait_for_placeholders(&fx.project);
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    // The sandbox's programs die with it (they are its init's children).
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        fx.project.join(".vscode").exists(),
        "left by the killed one"
    );
    let out = fx.exec(&[], &["/bin/true"]);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(!fx.project.join(".vscode").exists(), "{}", describe(&out));
    assert!(!fx.project.join(".agents").exists(), "{}", describe(&out));
}

/// A program writes `sub/chock.zon` allowing what the project's policy
/// asks about (a subdirectory is the program's to write). A command run
/// from `sub` is still the project's and decided by its policy, and both
/// `chock exec` and `chock policy check` say the nested file was ignored.
#[test]
fn a_nested_policy_file_a_program_writes_is_never_read() {
    let fx = Fixture::host();
    fx.probe();
    let sub = fx.project.join("sub");
    std::fs::create_dir(&sub).expect("sub");
    let nested = sub.join("chock.zon");
    let out = fx.exec(
        &[],
        &["./probe", "plant-policy", nested.to_str().expect("utf-8")],
    );
    assert!(
        out.status.success() && text(&out.stdout).starts_with("planted:"),
        "the program may write below the project: {}",
        describe(&out)
    );
    // Also a nested repository and flake, as an agent may make to look
    // like a project of its own.
    std::fs::create_dir(sub.join(".git")).expect("nested .git");
    std::fs::write(sub.join("flake.nix"), "{}").expect("nested flake.nix");
    let from_sub = |args: &[&str]| {
        fx.chock()
            .current_dir(&sub)
            .args(args)
            .output()
            .expect("run chock")
    };
    // exec.unparsed: allowed by the nested file, asked about by the
    // project's (Chock's placeholder: the shipped rules).
    let ran = from_sub(&["exec", "--", "/bin/true"]);
    assert_eq!(ran.status.code(), Some(125), "{}", describe(&ran));
    let ignored = format!("{} is ignored", nested.display());
    assert!(
        text(&ran.stderr).contains(&ignored),
        "chock exec names the ignored file: {}",
        describe(&ran)
    );
    let checked = from_sub(&["policy", "check"]);
    let project_zon = fx.project.join("chock.zon");
    assert!(
        checked.status.success()
            && text(&checked.stdout).contains(&format!("{} (0 rules)", project_zon.display()))
            && text(&checked.stderr).contains(&ignored),
        "chock policy check reads the project's file and names the ignored one: {}",
        describe(&checked)
    );
    let explained = from_sub(&["policy", "explain", "exec.unparsed"]);
    assert!(
        text(&explained.stdout).starts_with("exec.unparsed: ask"),
        "{}",
        describe(&explained)
    );
}

/// As root, with the cgroup Chock makes (v1 or v2): a fork bomb and a
/// memory hog stop at the policy's bounds.
#[test]
fn a_fork_bomb_and_a_memory_hog_stop_at_the_bounds_as_root() {
    if !is_root() {
        println!("(skipped: the bounds that matter here are root's)");
        return;
    }
    let fx = Fixture::host();
    fx.probe();
    fx.zon(".{ .limits = .{ .processes = \"64\", .memory = \"256MiB\" } }\n");
    let bomb = fx.exec(&[], &["./probe", "fork-bomb", "5000"]);
    let forked: usize = text(&bomb.stdout)
        .trim()
        .strip_prefix("forked: ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", describe(&bomb)));
    assert!(
        forked < 64,
        "{forked} processes were forked under a bound of 64"
    );
    let hog = fx.exec(&["--json"], &["./probe", "memory-hog", "1024"]);
    let report: serde_json::Value =
        serde_json::from_slice(&hog.stdout).unwrap_or_else(|_| panic!("{}", describe(&hog)));
    assert_eq!(report["exit"]["signal"], 9, "{report}");
    assert!(
        !report["stdout"]
            .as_str()
            .unwrap_or_default()
            .contains("held:"),
        "{report}"
    );
    assert!(
        report["cgroup"]["oom_kills"].as_u64() >= Some(1),
        "{report}"
    );
}

/// As root: a file system with a little more than the floor free, and a
/// program that writes until it fails. Chock kills it as the floor is
/// passed, and says so.
#[test]
fn a_command_that_fills_the_disk_stops_at_the_floor() {
    if !is_root() {
        println!("(skipped: mounting a small file system needs root)");
        return;
    }
    let floor = chock_sandbox::exec::FREE_SPACE_FLOOR;
    let fx = Fixture::host();
    let size = format!("size={}", floor + (192 << 20));
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", &size, "tmpfs"])
        .arg(&fx.project)
        .status()
        .expect("mount");
    assert!(mounted.success(), "mounting a tmpfs for the test");
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount")
                .arg("-l")
                .arg(self.0)
                .status();
        }
    }
    let _unmount = Unmount(&fx.project);
    fx.probe();
    let project = fx.project.to_str().expect("utf-8");
    let out = fx.exec(&[], &["./probe", "fill", project]);
    let path = std::ffi::CString::new(project).expect("path");
    // SAFETY: statvfs is plain data the call fills.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a live struct.
    assert_eq!(unsafe { libc::statvfs(path.as_ptr(), &mut stat) }, 0);
    let free = stat.f_bavail * stat.f_frsize;
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGKILL),
        "{}",
        describe(&out)
    );
    assert!(
        text(&out.stderr).contains("free space"),
        "chock says why: {}",
        describe(&out)
    );
    assert!(
        free + (64 << 20) >= floor,
        "{} MiB left, the floor is {} MiB",
        free >> 20,
        floor >> 20
    );
}
