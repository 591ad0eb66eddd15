//! The network router for real: `chock exec` runs inside a network
//! namespace this test made, joined by a veth pair to a second one where a
//! DNS server, an HTTP server, an HTTPS server with a test CA and a byte
//! source listen on a non-loopback address. Nothing here reaches any other
//! address. Needs root (to make the namespaces), iproute2, nftables,
//! python3, curl and openssl.

mod net_lab;
mod sandbox_fixture;

use std::time::{Duration, Instant};

use net_lab::Lab;
use sandbox_fixture::{Fixture, text};

const RULES: &str = r#".{ .action = "exec.*", .decision = .allow },
    .{ .action = "net.connect.test.allowed.*", .decision = .allow },
    .{ .action = "net.connect.test.six.*", .decision = .allow },
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
    assert_eq!(
        stdout.matches("hello through the router").count(),
        3,
        "{stdout}"
    );
    assert!(stdout.contains("(python)"), "{stdout}");
    let log = lab.log();
    assert_eq!(log.matches("8080 ").count(), 2, "{log}");
    // IPv6: an AAAA answer enters the allow set and the relay carries it.
    let out = lab.exec(&fixture, "curl -6 -sS -m 10 http://six.test:8080/");
    assert!(
        text(&out.stdout).contains("hello through the router"),
        "{}{}{}{:?}",
        text(&out.stdout),
        text(&out.stderr),
        lab.log(),
        fixture
            .log_lines()
            .iter()
            .filter(|l| l["action"].as_str().unwrap_or("").starts_with("net."))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        log.matches("8443 ").count(),
        1,
        "https with the test CA through the trust store: {log}"
    );
    assert!(
        fixture
            .log_lines()
            .iter()
            .any(|l| l["action"] == "net.connect.test.allowed.8080" && l["decision"] == "allow"),
        "the connection is decided and logged"
    );

    // A name every rule refuses is never looked up; a literal address and a
    // name nobody named are never reached; metadata addresses never.
    let began = Instant::now();
    let out = lab.exec(
        &fixture,
        &format!(
            // Literals first: an address a name was handed out for is
            // decided as that name, so these run before any lookup.
            "curl -sS -m 10 http://{server}:8080/ ; echo literal=$?; \
             python3 -c 'import socket; socket.create_connection((\"{server}\", 8080), timeout=10)' 2>/dev/null; echo python literal=$?; \
             curl -sS -m 10 http://169.254.169.254/ ; echo metadata=$?; \
             curl -sS -m 10 http://meta.test/ ; echo meta name=$?; \
             curl -sS -m 10 http://denied.test:8080/ ; echo denied=$?; \
             curl -sS -m 10 http://asked.test:8080/ ; echo asked=$?; \
             curl -sS -m 10 http://asked.test:8080/ ; echo asked again=$?"
        ),
    );
    let stdout = text(&out.stdout);
    assert!(
        began.elapsed() < Duration::from_secs(20),
        "refusals are at once, not timeouts"
    );
    // Refused in the kernel (7: connection refused at once), by the
    // resolver (6: no address), or by the relay after the decision (any
    // failure: the connection is reset).
    for refused in [
        "denied=6",
        "literal=7",
        "meta name=6",
        "metadata=7",
        "python literal=1",
    ] {
        assert!(
            stdout.contains(refused),
            "{refused} in {stdout}\n{}",
            text(&out.stderr)
        );
    }
    for reset in ["asked=", "asked again="] {
        assert!(
            stdout.contains(reset) && !stdout.contains(&format!("{reset}0")),
            "{reset} in {stdout}"
        );
    }
    let log = lab.log();
    assert!(
        !log.contains("dns denied.test"),
        "a refused name is never looked up: {log}"
    );
    assert_eq!(
        log.matches("8080 ").count(),
        3,
        "no new connection reached the server: {log}"
    );
    let asked: Vec<_> = fixture
        .log_lines()
        .into_iter()
        .filter(|l| l["action"] == "net.connect.test.asked.8080")
        .collect();
    assert_eq!(asked.len(), 1, "asked once: {asked:?}");
    assert_eq!(asked[0]["decision"], "ask");
    assert_eq!(asked[0]["answered_by"], "nobody");

    // A literal a rule allows outright is reachable, on that port only.
    let reversed: Vec<&str> = server.split('.').rev().collect();
    fixture.rules(&format!(
        r#"{RULES}, .{{ .action = "net.connect.{}.8080", .decision = .allow }}"#,
        reversed.join(".")
    ));
    let out = lab.exec(
        &fixture,
        &format!("curl -sS -m 10 http://{server}:8080/ && curl -sS -m 10 http://{server}:9000/; echo other port=$?"),
    );
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("hello through the router"),
        "{stdout}{}",
        text(&out.stderr)
    );
    assert!(
        stdout.contains("other port=") && !stdout.contains("other port=0"),
        "the relay refuses the port no rule allows: {stdout}"
    );
    assert_eq!(lab.log().matches("8080 ").count(), 4, "{}", lab.log());
    assert!(!lab.log().contains("9000 "), "{}", lab.log());
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
    assert!(
        out.contains("routed") && out.contains("trust") && out.contains("curl=0"),
        "{out}"
    );
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

/// `chock exec` of an allowed `git push` to an http remote: the real git
/// in the sandbox reaches the lab's git server (Basic auth in front of
/// `git http-backend`) through the router, and its credential comes over
/// the command's socket from the operator's git credential helper on the
/// host, else from the person at the terminal (the password typed with
/// echo off). Without a helper and with no terminal there is nobody to
/// ask: git gets nothing, the person is told why, and nothing moves.
#[test]
fn chock_exec_pushes_with_a_credential_from_the_terminal_or_the_operators_helper() {
    const PASSWORD: &str = "tok-exec-7c21-only-for-this-push";
    let lab = Lab::new();
    let server = lab.git_http("pusher", PASSWORD);
    let fixture = Fixture::host();
    fixture.rules(
        r#".{ .action = "exec.*", .decision = .allow },
        .{ .action = "net.connect.test.allowed.*", .decision = .allow },
        .{ .action = "git.push", .decision = .allow }"#,
    );
    let remote = format!("http://allowed.test:{}/remote.git", net_lab::GIT_HTTP_PORT);
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "chock.zon"],
        &["commit", "-q", "-m", "first"],
        &["remote", "add", "origin", &remote],
    ] {
        net_lab::git(&fixture.project, args);
    }
    let head = net_lab::git(&fixture.project, &["rev-parse", "HEAD"]);

    let out = lab.exec(&fixture, "git push origin main");
    assert!(!out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(&format!(
            "no credential for http://allowed.test:{}: nobody could be asked for it: there is no terminal",
            net_lab::GIT_HTTP_PORT
        )),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(server.main(), None);

    // At a terminal the person is asked, and the password is not shown.
    let (shown, pushed) = lab.exec_at_terminal(
        &fixture,
        "git push origin main",
        &[
            ("user name: ", "pusher"),
            ("password or token (not shown): ", PASSWORD),
        ],
    );
    assert!(pushed, "{shown}\n{}", server.log());
    assert!(
        shown.contains(&format!(
            "git push to http://allowed.test:{} needs a user name and password",
            net_lab::GIT_HTTP_PORT
        )),
        "{shown}"
    );
    assert!(
        !shown.contains(PASSWORD),
        "the password is not echoed: {shown}"
    );
    assert_eq!(server.main().as_deref(), Some(head.as_str()));
    net_lab::git(
        &fixture.project,
        &["commit", "-q", "--allow-empty", "-m", "second"],
    );
    let head = net_lab::git(&fixture.project, &["rev-parse", "HEAD"]);

    net_lab::operator_keeps_git_credential(
        &fixture.root().join("config/git"),
        &fixture.root().join("git-credentials"),
        PASSWORD,
    );
    let out = lab.exec(&fixture, "git push origin main");
    assert!(
        out.status.success(),
        "{}{}{}",
        text(&out.stdout),
        text(&out.stderr),
        server.log()
    );
    assert_eq!(server.main().as_deref(), Some(head.as_str()));
    let log = serde_json::to_string(&fixture.log_lines()).expect("json");
    assert!(log.contains("git.push") && !log.contains(PASSWORD));
}

/// What the program runs to attack the direct path: see the test below.
const DIRECT_ATTACK: &str = r#"
import ctypes, os, socket, sys, threading, time
server = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
libc.connect.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_uint]

def inet(ip, port, size=16):
    b = bytearray(size)
    b[0:2] = socket.AF_INET.to_bytes(2, sys.byteorder)
    b[2:4] = port.to_bytes(2, "big")
    b[4:8] = socket.inet_aton(ip)
    return bytes(b)

def raw_connect(fd, address):
    buf = ctypes.create_string_buffer(address, len(address))
    return 0 if libc.connect(fd, buf, len(address)) == 0 else ctypes.get_errno()

direct = socket.create_connection(("allowed.test", 8080), timeout=10)
print("direct", direct.getsockname()[0])
direct.sendall(b"GET / HTTP/1.0\r\n\r\n")
print("direct reply", b"hello" in direct.recv(200))
bound = socket.socket()
bound.bind(("0.0.0.0", 0))
bound.settimeout(10)
bound.connect(("allowed.test", 8080))
print("relayed", bound.getsockname()[0])
bound.sendall(b"GET / HTTP/1.0\r\n\r\n")
print("relayed reply", b"hello" in bound.recv(200))

held = socket.create_connection(("allowed.test", 8080), timeout=10)
print("again", raw_connect(held.fileno(), inet(server, 9000)))
print("unspec", raw_connect(held.fileno(), bytes(16)))
for name, s in (("fresh", socket.socket()), ("held", held)):
    try:
        s.sendto(b"x", socket.MSG_FASTOPEN, (server, 9000))
        print("fastopen", name, 0)
    except OSError as e:
        print("fastopen", name, e.errno)

# The race: a Unix connect, which the kernel carries out as the program
# made it, while other threads swap the descriptor for the held host socket
# and the address for a disconnect or the server's undecided port.
path = "/tmp/race.sock"
unix_server = socket.socket(socket.AF_UNIX)
unix_server.bind(path)
unix_server.listen(1000)
slot = os.dup(held.fileno())
unix = bytearray(110)
unix[0:2] = socket.AF_UNIX.to_bytes(2, sys.byteorder)
unix[2:2 + len(path)] = path.encode()
shapes = [bytes(unix), bytes(110), inet(server, 9000, 110)]
buf = ctypes.create_string_buffer(shapes[0], 110)
end = time.time() + float(sys.argv[2])
seen = {}
def caller():
    while time.time() < end:
        r = libc.connect(slot, buf, 110)
        e = 0 if r == 0 else ctypes.get_errno()
        seen[e] = seen.get(e, 0) + 1
def swapper():
    while time.time() < end:
        # Non-blocking, so a connect never waits on the listener's full queue.
        u = socket.socket(socket.AF_UNIX)
        u.setblocking(False)
        os.dup2(u.fileno(), slot)
        u.close()
        os.dup2(held.fileno(), slot)
def flipper():
    while time.time() < end:
        for shape in shapes:
            ctypes.memmove(buf, shape, 110)
threads = [threading.Thread(target=f) for f in (caller, caller, swapper, flipper)]
for t in threads: t.start()
for t in threads: t.join()
print("race", sorted(seen.items()))
try:
    held.listen(5)
    port = held.getsockname()[1]
    print("listening", port)
    open("listening", "w").write(str(port))
    time.sleep(4)
except OSError as e:
    print("listen", e.errno)
"#;

/// The direct path, attacked: an allowed connection is the host's own
/// socket in the program's hands (its local address is the client's, not
/// the sandbox's), a socket bound first keeps the relay, and the host socket
/// reaches its decided peer only: reconnecting it, disconnecting it, TCP
/// Fast Open, and a race that swaps the descriptor and the address of a
/// Unix connect the kernel carries out never reach the server's undecided
/// port, and a host socket made to listen hears nobody.
#[test]
fn the_direct_path_hands_over_the_decided_connection_and_nothing_more() {
    let lab = Lab::new();
    let fixture = Fixture::host();
    fixture.rules(
        r#".{ .action = "exec.*", .decision = .allow },
        .{ .action = "net.connect.test.allowed.8080", .decision = .allow }"#,
    );
    std::fs::write(fixture.project.join("attack.py"), DIRECT_ATTACK).expect("script");
    let listening = fixture.project.join("listening");
    let done = std::sync::atomic::AtomicBool::new(false);
    let stranger = std::thread::scope(|scope| {
        let knock = scope.spawn(|| {
            lab.enter();
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                if let Some(port) = std::fs::read_to_string(&listening)
                    .ok()
                    .and_then(|p| p.trim().parse::<u16>().ok())
                {
                    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
                    return Some(
                        std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok(),
                    );
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            None
        });
        let out = lab.exec(
            &fixture,
            &format!("timeout 60 python3 -u attack.py {} 3", lab.server),
        );
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
        let client = lab
            .server
            .strip_suffix(".2")
            .expect("the lab's server is .2");
        let client = format!("{client}.1");
        for line in [
            format!("direct {client}"),
            "direct reply True".into(),
            "relayed 169.254.0.1".into(),
            "relayed reply True".into(),
            format!("again {}", libc::EISCONN),
            format!("unspec {}", libc::EISCONN),
            format!("fastopen fresh {}", libc::EPERM),
            format!("fastopen held {}", libc::EPERM),
        ] {
            assert!(stdout.contains(&line), "{line} in {stdout}");
        }
        assert!(stdout.contains("race ["), "{stdout}");
        eprintln!("{stdout}");
        knock.join().expect("knock")
    });
    assert_ne!(
        stranger,
        Some(true),
        "a host socket made to listen heard a stranger"
    );
    let log = lab.log();
    assert!(
        !log.contains("9000 "),
        "the undecided port was reached: {log}"
    );
    assert_eq!(log.matches("8080 ").count(), 3, "{log}");
}
