//! A lab for the router tests: two network namespaces made by the test,
//! a veth pair between them, and on the far side (servers.py) a DNS
//! server, an HTTP server, an HTTPS server with a test CA and a byte
//! source on a non-loopback address. Nothing reaches any other address.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::sandbox_fixture::{Fixture, text};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// Two namespaces, a veth pair between them, and the servers on the far side.
pub struct Lab {
    server_ns: String,
    client_ns: String,
    /// The client namespace's address, where Chock's connections come from.
    pub client: String,
    /// The servers' address.
    pub server: String,
    /// The servers' IPv6 address.
    pub server6: String,
    /// A second address of the servers, which the lab's DNS server says
    /// the name spelled as [`Lab::server`] is: what a crafted answer for
    /// a literal points at.
    pub other: String,
    servers: Child,
    dir: tempfile::TempDir,
}

fn run(program: &str, args: &[&str]) {
    let status = Command::new(program)
        .args(args)
        .status()
        .unwrap_or_else(|e| panic!("{program} could not start: {e}"));
    assert!(status.success(), "{program} {args:?} failed");
}

impl Lab {
    pub fn new() -> Lab {
        assert!(
            nix_is_root(),
            "the router tests make network namespaces and need root"
        );
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let tag = format!("{}-{n}", std::process::id() % 100_000);
        let (server_ns, client_ns) = (format!("chock-s-{tag}"), format!("chock-c-{tag}"));
        let (veth_c, veth_s) = (format!("chkc{tag}"), format!("chks{tag}"));
        let subnet = 10 + (std::process::id() % 200) as u8 + n as u8;
        let (client, server) = (format!("10.231.{subnet}.1"), format!("10.231.{subnet}.2"));
        let other = format!("10.231.{subnet}.3");
        let (client6, server6) = (
            format!("fd00:231:{subnet}::1"),
            format!("fd00:231:{subnet}::2"),
        );
        run("ip", &["netns", "add", &server_ns]);
        run("ip", &["netns", "add", &client_ns]);
        run(
            "ip",
            &[
                "link", "add", &veth_c, "type", "veth", "peer", "name", &veth_s,
            ],
        );
        run("ip", &["link", "set", &veth_c, "netns", &client_ns]);
        run("ip", &["link", "set", &veth_s, "netns", &server_ns]);
        for (ns, dev, addr, addr6) in [
            (&client_ns, &veth_c, &client, &client6),
            (&server_ns, &veth_s, &server, &server6),
        ] {
            run(
                "ip",
                &["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev],
            );
            let addr6 = format!("{addr6}/64");
            run(
                "ip",
                &["-n", ns, "addr", "add", &addr6, "dev", dev, "nodad"],
            );
            run("ip", &["-n", ns, "link", "set", dev, "up"]);
            run("ip", &["-n", ns, "link", "set", "lo", "up"]);
        }
        let other_cidr = format!("{other}/24");
        run(
            "ip",
            &["-n", &server_ns, "addr", "add", &other_cidr, "dev", &veth_s],
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let ssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(d)
                .output()
                .expect("openssl");
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                text(&out.stderr)
            );
        };
        ssl(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-subj",
            "/CN=chock test CA",
            "-days",
            "1",
        ]);
        ssl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "srv.key",
            "-out",
            "srv.csr",
            "-subj",
            "/CN=allowed.test",
        ]);
        std::fs::write(d.join("ext"), "subjectAltName=DNS:allowed.test\n").expect("ext");
        ssl(&[
            "x509",
            "-req",
            "-in",
            "srv.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "srv.crt",
            "-days",
            "1",
            "-extfile",
            "ext",
        ]);
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/net_lab/servers.py");
        let mut servers = Command::new("ip")
            .args(["netns", "exec", &server_ns, "/usr/bin/python3"])
            .arg(&script)
            .args([
                format!("{server},{server6},{other}"),
                d.join("log").to_string_lossy().into_owned(),
                "srv.crt".to_owned(),
                "srv.key".to_owned(),
            ])
            .args([
                format!("allowed.test={server}"),
                format!("asked.test={server}"),
                format!("denied.test={server}"),
                format!("other.test={server}"),
                format!("six.test={server6}"),
                format!("unnamed.test={server}"),
                "meta.test=169.254.169.254".to_owned(),
                // Crafted: names that are numbers, answered with another address.
                format!("{server}={other}"),
                format!("{server6}={other}"),
                format!("167772161={other}"),
            ])
            .current_dir(d)
            .stdout(Stdio::piped())
            .spawn()
            .expect("servers");
        let mut ready = [0u8; 6];
        use std::io::Read;
        servers
            .stdout
            .as_mut()
            .expect("stdout")
            .read_exact(&mut ready)
            .expect("the servers start");
        Lab {
            server_ns,
            client_ns,
            client,
            server,
            server6,
            other,
            servers,
            dir,
        }
    }

    /// The servers' log: one line per DNS question (`dns NAME TYPE`) and
    /// per TCP connection (`PORT PEER LOCAL`, LOCAL the address it reached).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }

    pub fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.crt")
    }

    /// `chock exec -- sh -c SCRIPT` in the client namespace, resolving
    /// through the lab's DNS server.
    pub fn exec(&self, fixture: &Fixture, script: &str) -> Output {
        let chock = fixture.chock();
        let mut command = Command::new("nsenter");
        command
            .arg(format!("--net=/run/netns/{}", self.client_ns))
            .arg(chock.get_program())
            .args(["exec", "--", "/bin/sh", "-c", script])
            .current_dir(chock.get_current_dir().expect("dir"))
            .env("CHOCK_NET_RESOLVER", format!("{}:53", self.server))
            .env("SSL_CERT_FILE", self.ca())
            .stdin(Stdio::null());
        for (key, value) in chock.get_envs() {
            match value {
                Some(v) => command.env(key, v),
                None => command.env_remove(key),
            };
        }
        command.output().expect("chock exec")
    }
}

impl Lab {
    /// `chock exec -- sh -c SCRIPT` as [`Lab::exec`], with a terminal: run
    /// under util-linux's `script`, whose pseudo-terminal is the command's
    /// stdin, stdout and stderr. Each `(prompt, line)` waits until the
    /// terminal shows `prompt`, then types `line`. Everything the terminal
    /// showed, and whether the command succeeded.
    pub fn exec_at_terminal(
        &self,
        fixture: &Fixture,
        script: &str,
        typed: &[(&str, &str)],
    ) -> (String, bool) {
        use std::io::{Read, Write};
        let chock = fixture.chock();
        let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
        let line = format!(
            "nsenter --net=/run/netns/{} {} exec -- /bin/sh -c {}",
            self.client_ns,
            quote(&chock.get_program().to_string_lossy()),
            quote(script)
        );
        let mut command = Command::new("script");
        command
            .args(["-q", "-e", "-c", &line, "/dev/null"])
            .current_dir(chock.get_current_dir().expect("dir"))
            .env("CHOCK_NET_RESOLVER", format!("{}:53", self.server))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (key, value) in chock.get_envs() {
            match value {
                Some(v) => command.env(key, v),
                None => command.env_remove(key),
            };
        }
        let mut child = command.spawn().expect("script");
        let mut stdin = child.stdin.take().expect("stdin");
        let mut stdout = child.stdout.take().expect("stdout");
        let (tell, shown) = std::sync::mpsc::channel::<String>();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buffer) {
                if n == 0 || tell.send(text(&buffer[..n])).is_err() {
                    break;
                }
            }
        });
        let mut seen = String::new();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        for (prompt, answer) in typed {
            while !seen.contains(prompt) {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                match shown.recv_timeout(left) {
                    Ok(more) => seen.push_str(&more),
                    Err(_) => panic!("the terminal never showed {prompt:?}; it showed {seen:?}"),
                }
            }
            writeln!(stdin, "{answer}").expect("type");
            stdin.flush().expect("flush");
        }
        let status = child.wait().expect("script");
        seen.extend(shown.try_iter());
        drop(stdin);
        (seen, status.success())
    }
}

impl Lab {
    /// Moves the calling thread (and what it starts) into the client
    /// namespace, where Chock runs.
    pub fn enter(&self) {
        let ns = std::fs::File::open(format!("/run/netns/{}", self.client_ns)).expect("netns");
        // SAFETY: setns on this thread with a descriptor we own.
        let r = unsafe { libc::setns(std::os::fd::AsRawFd::as_raw_fd(&ns), libc::CLONE_NEWNET) };
        assert_eq!(r, 0, "setns into the client namespace");
    }

    /// The environment that points Chock's resolver and trust store at the lab.
    pub fn resolver(&self) -> String {
        format!("{}:53", self.server)
    }
}

/// `git ARGS` on the host in `dir`, with no configuration but a name to
/// commit as; its output.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.test"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
    text(&out.stdout).trim().to_owned()
}

/// A git server over HTTP with Basic auth on the lab's far side
/// (`git_http.py`: `git http-backend` behind it), serving one bare
/// repository, `remote.git`.
pub struct GitHttp {
    server: Child,
    dir: tempfile::TempDir,
}

/// The port [`GitHttp`] listens on.
pub const GIT_HTTP_PORT: u16 = 8081;

impl Lab {
    /// Starts [`GitHttp`], accepting only `user` with `password`.
    pub fn git_http(&self, user: &str, password: &str) -> GitHttp {
        let dir = tempfile::tempdir().expect("tempdir");
        let bare = dir.path().join("remote.git");
        let made = Command::new("git")
            .args(["init", "-q", "--bare", "-b", "main"])
            .arg(&bare)
            .status()
            .expect("git init");
        assert!(made.success());
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/net_lab/git_http.py");
        let mut server = Command::new("ip")
            .args(["netns", "exec", &self.server_ns, "/usr/bin/python3"])
            .arg(&script)
            .arg(&self.server)
            .arg(GIT_HTTP_PORT.to_string())
            .arg(dir.path())
            .args([user, password])
            .arg(dir.path().join("log"))
            .stdout(Stdio::piped())
            .spawn()
            .expect("git_http.py");
        let mut ready = [0u8; 6];
        use std::io::Read;
        server
            .stdout
            .as_mut()
            .expect("stdout")
            .read_exact(&mut ready)
            .expect("the git server starts");
        GitHttp { server, dir }
    }
}

impl GitHttp {
    /// The commit `main` names in the served repository, if any.
    pub fn main(&self) -> Option<String> {
        main_of(&self.dir.path().join("remote.git"))
    }

    /// One line per request: method, path, and `authorised`, `wrong` or
    /// `anonymous`.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }
}

/// The operator's global git configuration in `git_config_dir`
/// (`$XDG_CONFIG_HOME/git`), with git's own store helper keeping, in
/// `store`, `password` for user `pusher` at the lab's git server.
pub fn operator_keeps_git_credential(git_config_dir: &Path, store: &Path, password: &str) {
    std::fs::write(
        store,
        format!("http://pusher:{password}@allowed.test%3a{GIT_HTTP_PORT}\n"),
    )
    .expect("store");
    std::fs::create_dir_all(git_config_dir).expect("mkdir");
    std::fs::write(
        git_config_dir.join("config"),
        format!(
            "[credential]\n\thelper = store --file {}\n",
            store.display()
        ),
    )
    .expect("git config");
}

/// The commit `main` names in the bare repository `git_dir`, if any.
fn main_of(git_dir: &std::path::Path) -> Option<String> {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(["rev-parse", "--verify", "-q", "refs/heads/main"])
        .output()
        .expect("git rev-parse");
    out.status
        .success()
        .then(|| text(&out.stdout).trim().to_owned())
}

impl Drop for GitHttp {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// OpenSSH's server on the lab's far side, letting in root with one
/// public key only (no password), serving git over ssh.
pub struct Sshd {
    server: Child,
    dir: tempfile::TempDir,
}

/// The port [`Sshd`] listens on.
pub const SSHD_PORT: u16 = 2222;

impl Lab {
    /// Starts [`Sshd`] with `public_key` the one key it takes, and a bare
    /// repository `remote.git` in its folder ([`Sshd::repository`]).
    pub fn sshd(&self, public_key: &Path) -> Sshd {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let made = Command::new("git")
            .args(["init", "-q", "--bare", "-b", "main"])
            .arg(d.join("remote.git"))
            .status()
            .expect("git init");
        assert!(made.success());
        let keygen = Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-f"])
            .arg(d.join("host_key"))
            .status()
            .expect("ssh-keygen");
        assert!(keygen.success());
        std::fs::copy(public_key, d.join("authorized_keys")).expect("authorized_keys");
        std::fs::write(
            d.join("sshd_config"),
            format!(
                "Port {SSHD_PORT}\nListenAddress {}\nHostKey {}\nAuthorizedKeysFile {}\nPermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPidFile none\nLogLevel VERBOSE\n",
                self.server,
                d.join("host_key").display(),
                d.join("authorized_keys").display()
            ),
        )
        .expect("sshd_config");
        // sshd's privilege separation folder.
        std::fs::create_dir_all("/run/sshd").expect("/run/sshd");
        let mut server = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.server_ns,
                "/usr/sbin/sshd",
                "-D",
                "-e",
                "-f",
            ])
            .arg(d.join("sshd_config"))
            .stderr(Stdio::piped())
            .spawn()
            .expect("sshd");
        let stderr = server.stderr.take().expect("stderr");
        let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stderr));
        let mut seen = String::new();
        loop {
            let line = lines
                .next()
                .and_then(Result::ok)
                .unwrap_or_else(|| panic!("sshd did not start: {seen}"));
            seen.push_str(&line);
            seen.push('\n');
            if line.contains("Server listening") {
                break;
            }
        }
        let log = d.join("log");
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                use std::io::Write;
                if let Ok(mut file) = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&log)
                {
                    let _ = writeln!(file, "{line}");
                }
            }
        });
        Sshd { server, dir }
    }
}

impl Sshd {
    /// The served repository's path on the server.
    pub fn repository(&self) -> PathBuf {
        self.dir.path().join("remote.git")
    }

    /// The commit `main` names in the served repository, if any.
    pub fn main(&self) -> Option<String> {
        main_of(&self.repository())
    }

    /// What sshd said after it started.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = self.servers.kill();
        let _ = self.servers.wait();
        for ns in [&self.client_ns, &self.server_ns] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

fn nix_is_root() -> bool {
    // SAFETY: geteuid has no arguments and cannot fail.
    unsafe { libc::geteuid() == 0 }
}
