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
        "asked=6",
        "asked again=6",
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
    // A name no rule names is not looked up either: with no terminal
    // nobody could be asked about its connection. Its refusal is logged once.
    assert!(!log.contains("dns asked.test"), "{log}");
    let asked: Vec<_> = fixture
        .log_lines()
        .into_iter()
        .filter(|l| l["subject"] == "asked.test")
        .collect();
    assert_eq!(asked.len(), 1, "logged once: {asked:?}");
    assert_eq!(asked[0]["action"], "net.connect.test.asked.*");
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

/// What the program runs to ask the sandbox's resolver itself: each
/// argument `NAME,TYPE,TIMES` is one question (TYPE 1 for A, 28 for AAAA)
/// sent TIMES times, each answer printed as `NAME TYPE RCODE ADDRESS...`;
/// then `connect HOST` arguments, each a TCP connection to port 8080
/// printed as `connect HOST ERRNO` (0 when it connected).
const DNS_PROBE: &str = r#"
import errno, socket, struct, sys

def ask(name, qtype):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(10)
    q = struct.pack("!HHHHHH", 0x4242, 0x0100, 1, 0, 0, 0)
    for label in name.split(".") if ":" not in name else [name]:
        q += bytes([len(label)]) + label.encode()
    q += b"\0" + struct.pack("!HH", qtype, 1)
    s.sendto(q, ("127.0.0.1", 53))
    data = s.recv(1500)
    rcode, count = data[3] & 15, struct.unpack("!H", data[6:8])[0]
    pos, found = len(q), []
    for _ in range(count):
        if data[pos] & 0xC0 == 0xC0:
            pos += 2
        else:
            while data[pos]:
                pos += 1 + data[pos]
            pos += 1
        kind, _, _, size = struct.unpack("!HHIH", data[pos : pos + 10])
        pos += 10
        family = {1: socket.AF_INET, 28: socket.AF_INET6}.get(kind)
        if family:
            found.append(socket.inet_ntop(family, data[pos : pos + size]))
        pos += size
    return rcode, found

for arg in sys.argv[1:]:
    if arg.startswith("connect "):
        host = arg.split()[1]
        try:
            socket.create_connection((host, 8080), timeout=10).close()
            print("connect", host, 0)
        except OSError as e:
            print("connect", host, e.errno)
        continue
    name, qtype, times = arg.split(",")
    for _ in range(int(times)):
        rcode, found = ask(name, int(qtype))
    print(name, qtype, rcode, *found)
"#;

/// The resolver forwards a name only where a rule could let this route
/// connect to it, and answers a numeric name as itself. The lab's DNS
/// server counts the questions it receives: with no terminal (nobody to
/// ask), a name no rule names and a name only an `ask` rule names reach
/// it 0 times in 40, an allowed one reaches it; at a terminal the `ask`
/// one reaches it and the unnamed one still never does. A dotted quad the
/// rules allow, for which the lab's server crafts an answer pointing at
/// its other address, is never forwarded: it is answered as itself, the
/// other address stays unreachable, and the literal is still reached and
/// decided as itself.
#[test]
fn dns_leaves_the_sandbox_only_decided_and_a_literal_is_its_own_answer() {
    let lab = Lab::new();
    let fixture = Fixture::host();
    let (server, other) = (&lab.server, &lab.other);
    let reversed: Vec<&str> = server.split('.').rev().collect();
    fixture.rules(&format!(
        r#".{{ .action = "exec.*", .decision = .allow }},
        .{{ .action = "net.connect.test.allowed.*", .decision = .allow }},
        .{{ .action = "net.connect.test.asked.*", .decision = .ask }},
        .{{ .action = "net.connect.{}.8080", .decision = .allow }}"#,
        reversed.join(".")
    ));
    std::fs::write(fixture.project.join("probe.py"), DNS_PROBE).expect("probe");
    let six = lab.server6.clone();
    let out = lab.exec(
        &fixture,
        &format!(
            // The literal first: an address a looked-up name also holds is
            // decided as that name (allowed.test is the same server).
            "python3 probe.py {server},1,40 {server},28,1 {six},28,1 {six},1,1 167772161,1,1 \
             'connect {other}' 'connect {server}' \
             unnamed.test,1,40 unnamed.test,28,40 asked.test,1,40 allowed.test,1,1"
        ),
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    let refused = 5;
    for line in [
        format!("unnamed.test 1 {refused}"),
        format!("unnamed.test 28 {refused}"),
        format!("asked.test 1 {refused}"),
        format!("allowed.test 1 0 {server}"),
        format!("{server} 1 0 {server}"),
        format!("{server} 28 0"),
        format!("{six} 28 0 {six}"),
        format!("{six} 1 0"),
        format!("167772161 1 {refused}"),
        format!("connect {other} {}", libc::ECONNREFUSED),
        format!("connect {server} 0"),
    ] {
        assert!(
            stdout.lines().any(|l| l.trim_end() == line),
            "{line:?} in {stdout}"
        );
    }
    let log = lab.log();
    let asked_upstream = |name: &str| {
        log.lines()
            .filter(|l| l.starts_with(&format!("dns {name} ")))
            .count()
    };
    for never in [
        "unnamed.test",
        "asked.test",
        server.as_str(),
        six.as_str(),
        "167772161",
    ] {
        assert_eq!(asked_upstream(never), 0, "{never} was forwarded: {log}");
    }
    assert!(asked_upstream("allowed.test") >= 1, "{log}");
    assert!(
        !log.contains(&format!(" {other}\n")),
        "the crafted answer's address was reached: {log}"
    );
    assert_eq!(
        log.matches(&format!("8080 {} {server}\n", lab.client))
            .count(),
        1,
        "{log}"
    );
    let lines = fixture.log_lines();
    let about = |subject: &str| -> Vec<&serde_json::Value> {
        lines.iter().filter(|l| l["subject"] == subject).collect()
    };
    for (name, decision) in [
        ("unnamed.test", "ask"),
        ("asked.test", "ask"),
        ("167772161", "deny"),
    ] {
        let found = about(name);
        assert_eq!(found.len(), 1, "{name} logged once: {lines:?}");
        assert_eq!(found[0]["decision"], decision, "{name}: {:?}", found[0]);
        assert_eq!(found[0]["answered_by"], "nobody", "{name}: {:?}", found[0]);
        let reversed: Vec<&str> = name.split('.').rev().collect();
        assert_eq!(
            found[0]["action"],
            format!("net.connect.{}.*", reversed.join(".")),
            "{:?}",
            found[0]
        );
    }
    let literal = about(&format!("{server}:8080"));
    assert_eq!(literal.len(), 1, "{lines:?}");
    assert_eq!(literal[0]["decision"], "allow", "{:?}", literal[0]);

    // At a terminal someone can be asked: the name an `ask` rule names is
    // looked up; the one no rule names still never is.
    let (shown, ran) = lab.exec_at_terminal(
        &fixture,
        "python3 probe.py asked.test,1,3 unnamed.test,1,40",
        &[],
    );
    assert!(ran, "{shown}");
    assert!(
        shown.contains(&format!("asked.test 1 0 {server}")),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("unnamed.test 1 {refused}")),
        "{shown}"
    );
    let log = lab.log();
    assert!(log.contains("dns asked.test 1"), "{log}");
    assert!(!log.contains("dns unnamed.test"), "{log}");
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
