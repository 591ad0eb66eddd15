//! The network router for real: `chock exec` runs inside a network
//! namespace this test made, joined by a veth pair to a second one where a
//! DNS server, an HTTP server, an HTTPS server with a test CA and a byte
//! source listen on a non-loopback address. Nothing here reaches any other
//! address. Needs root (to make the namespaces), iproute2, nftables,
//! python3, curl and openssl.

mod sandbox_fixture;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use sandbox_fixture::{Fixture, text};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// Two namespaces, a veth pair between them, and the servers on the far side.
struct Lab {
    server_ns: String,
    client_ns: String,
    /// The servers' address.
    server: String,
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
    fn new() -> Lab {
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
        run("ip", &["netns", "add", &server_ns]);
        run("ip", &["netns", "add", &client_ns]);
        run("ip", &["link", "add", &veth_c, "type", "veth", "peer", "name", &veth_s]);
        run("ip", &["link", "set", &veth_c, "netns", &client_ns]);
        run("ip", &["link", "set", &veth_s, "netns", &server_ns]);
        for (ns, dev, addr) in [(&client_ns, &veth_c, &client), (&server_ns, &veth_s, &server)] {
            run("ip", &["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev]);
            run("ip", &["-n", ns, "link", "set", dev, "up"]);
            run("ip", &["-n", ns, "link", "set", "lo", "up"]);
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let ssl = |args: &[&str]| {
            let out = Command::new("openssl").args(args).current_dir(d).output().expect("openssl");
            assert!(out.status.success(), "openssl {args:?}: {}", text(&out.stderr));
        };
        ssl(&["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-subj", "/CN=chock test CA", "-days", "1"]);
        ssl(&["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=allowed.test"]);
        std::fs::write(d.join("ext"), "subjectAltName=DNS:allowed.test\n").expect("ext");
        ssl(&["x509", "-req", "-in", "srv.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", "srv.crt", "-days", "1", "-extfile", "ext"]);
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/net_lab/servers.py");
        let mut servers = Command::new("ip")
            .args(["netns", "exec", &server_ns, "/usr/bin/python3"])
            .arg(&script)
            .args([server.as_str(), &d.join("log").to_string_lossy(), "srv.crt", "srv.key"])
            .args([
                format!("allowed.test={server}"),
                format!("asked.test={server}"),
                format!("denied.test={server}"),
                format!("other.test={server}"),
                "meta.test=169.254.169.254".to_owned(),
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
            server,
            servers,
            dir,
        }
    }

    /// The servers' log: one line per DNS question and per TCP connection.
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }

    fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.crt")
    }

    /// `chock exec -- sh -c SCRIPT` in the client namespace, resolving
    /// through the lab's DNS server.
    fn exec(&self, fixture: &Fixture, script: &str) -> Output {
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

const RULES: &str = r#".{ .action = "exec.*", .decision = .allow },
    .{ .action = "net.connect.test.allowed.*", .decision = .allow },
    .{ .action = "net.connect.test.denied.*", .decision = .deny }"#;

#[test]
fn allowed_hosts_are_reached_and_every_other_is_refused_before_it_is_reached() {
    let lab = Lab::new();
    let fixture = Fixture::host();
    fixture.rules(RULES);
    let server = &lab.server;
    let out = lab.exec(
        &fixture,
        "curl -sS -m 10 http://allowed.test:8080/ && \
         curl -sS -m 10 https://allowed.test:8443/ && \
         python3 -c 'import socket; s = socket.create_connection((\"allowed.test\", 8080), timeout=10); s.sendall(b\"GET / HTTP/1.0\\r\\n\\r\\n\"); print(s.recv(200).decode().splitlines()[-1], \"(python)\")'",
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert_eq!(stdout.matches("hello through the router").count(), 3, "{stdout}");
    assert!(stdout.contains("(python)"), "{stdout}");
    let log = lab.log();
    assert_eq!(log.matches(&format!("8080 ")).count(), 2, "{log}");
    assert_eq!(log.matches("8443 ").count(), 1, "https with the test CA through the trust store: {log}");
    assert!(
        fixture.log_lines().iter().any(|l| l["action"] == "net.connect.test.allowed.8080"
            && l["decision"] == "allow"),
        "the connection is decided and logged"
    );

    // A name every rule refuses is never looked up; a literal address and a
    // name nobody named are never reached; metadata addresses never.
    let began = Instant::now();
    let out = lab.exec(
        &fixture,
        &format!(
            "curl -sS -m 10 http://denied.test:8080/ ; echo denied=$?; \
             curl -sS -m 10 http://asked.test:8080/ ; echo asked=$?; \
             curl -sS -m 10 http://asked.test:8080/ ; echo asked again=$?; \
             curl -sS -m 10 http://{server}:8080/ ; echo literal=$?; \
             curl -sS -m 10 http://meta.test/ ; echo meta name=$?; \
             curl -sS -m 10 http://169.254.169.254/ ; echo metadata=$?; \
             python3 -c 'import socket; socket.create_connection((\"{server}\", 8080), timeout=10)' 2>/dev/null; echo python literal=$?"
        ),
    );
    let stdout = text(&out.stdout);
    assert!(began.elapsed() < Duration::from_secs(20), "refusals are at once, not timeouts");
    for refused in ["denied=6", "asked=52", "asked again=52", "literal=7", "meta name=6", "metadata=7", "python literal=1"] {
        assert!(stdout.contains(refused), "{refused} in {stdout}\n{}", text(&out.stderr));
    }
    let log = lab.log();
    assert!(!log.contains("dns denied.test"), "a refused name is never looked up: {log}");
    assert_eq!(log.matches("8080 ").count(), 2, "no new connection reached the server: {log}");
    let asked: Vec<_> = fixture
        .log_lines()
        .into_iter()
        .filter(|l| l["action"] == "net.connect.test.asked.8080")
        .collect();
    assert_eq!(asked.len(), 1, "asked once: {asked:?}");
    assert_eq!(asked[0]["decision"], "ask");
    assert_eq!(asked[0]["answered_by"], "nobody");
}

#[test]
fn router_modes_decide_whether_there_is_a_network_at_all() {
    let lab = Lab::new();
    let fixture = Fixture::host();
    let zon = |router: &str, rules: &str| {
        fixture.zon(&format!(
            ".{{ .policy = .{{ .net = .{{ .router = .{router} }}, .rules = .{{ {rules} }} }} }}\n"
        ));
    };
    let probe = "test -e /etc/resolv.conf && echo routed; test -n \"$SSL_CERT_FILE\" && echo trust; curl -sS -m 5 http://allowed.test:8080/ >/dev/null 2>&1; echo curl=$?";
    let exec_only = r#".{ .action = "exec.*", .decision = .allow }"#;
    // .auto with nothing permitted under net: no router.
    zon("auto", exec_only);
    let out = text(&lab.exec(&fixture, probe).stdout);
    assert!(!out.contains("routed") && !out.contains("trust"), "{out}");
    // .auto with a permit: a router.
    zon("auto", RULES);
    let out = text(&lab.exec(&fixture, probe).stdout);
    assert!(out.contains("routed") && out.contains("trust") && out.contains("curl=0"), "{out}");
    // .none: never, whatever the rules.
    zon("none", RULES);
    let out = text(&lab.exec(&fixture, probe).stdout);
    assert!(!out.contains("routed") && out.contains("curl=6"), "{out}");
    // .filtered: always, and it grants nothing by itself.
    zon("filtered", exec_only);
    let out = text(&lab.exec(&fixture, probe).stdout);
    assert!(out.contains("routed") && !out.contains("curl=0"), "{out}");
    assert_eq!(lab.log().matches("8080 ").count(), 1, "{}", lab.log());
}
