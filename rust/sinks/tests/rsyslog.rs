//! Shipping to a real rsyslogd from Debian over UDP, TCP, TLS and a Unix
//! socket: every line arrives once, in order, and its fields read back.

mod support;

use std::net::{TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use chock_policy::Decision;
use chock_sinks::{Sink, Target, ship};

const RSYSLOGD: &str = "/usr/sbin/rsyslogd";

/// An rsyslogd running in the foreground on one input, writing what it
/// gets to `out` as `HOSTNAME APP-NAME MSGID STRUCTURED-DATA MSG`.
struct Rsyslog {
    child: Child,
    out: PathBuf,
}

impl Drop for Rsyslog {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Rsyslog {
    fn start(dir: &Path, setup: &str) -> Rsyslog {
        assert!(
            Path::new(RSYSLOGD).exists(),
            "{RSYSLOGD} is missing: run scripts/setup, which installs Debian's rsyslog and rsyslog-gnutls"
        );
        let work = dir.join("rsyslog");
        std::fs::create_dir_all(&work).unwrap();
        let out = dir.join("received.log");
        let conf = dir.join("rsyslog.conf");
        std::fs::write(
            &conf,
            format!(
                r#"global(workDirectory="{work}" maxMessageSize="64k")
{setup}
template(name="chock" type="string" string="%hostname% %app-name% %msgid% %structured-data% %msg%\n")
action(type="omfile" file="{out}" template="chock")
"#,
                work = work.display(),
                out = out.display(),
            ),
        )
        .unwrap();
        let child = Command::new(RSYSLOGD)
            .arg("-n")
            .arg("-f")
            .arg(&conf)
            .arg("-i")
            .arg(dir.join("rsyslogd.pid"))
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        Rsyslog { child, out }
    }

    fn received(&self) -> Vec<String> {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The lines received other than the readiness probes.
    fn shipped(&self) -> Vec<String> {
        self.received()
            .into_iter()
            .filter(|line| !line.contains("probe"))
            .collect()
    }

    /// Waits until `send` gets a probe through (a UDP or Unix input shows
    /// no other sign of being up).
    fn wait_for_probe(&self, mut send: impl FnMut(&[u8])) {
        let probe = b"<134>1 - probehost probe - probe - probe";
        let up = support::wait_for(Duration::from_secs(20), || {
            send(probe);
            std::thread::sleep(Duration::from_millis(50));
            !self.received().is_empty()
        });
        assert!(up, "rsyslogd did not start: see its output above");
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_for_listener(port: u16) {
    let up = support::wait_for(Duration::from_secs(20), || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(up, "rsyslogd did not listen on {port}");
}

/// Appends a few decisions (one refused by a policy package, one in a
/// project whose name needs escaping), ships them to `target`, and checks
/// what rsyslogd wrote: each once, in order, the fields as logged.
fn ships_each_line_once(rsyslog: &Rsyslog, dir: &Path, target: &str) {
    let log = support::log(&dir.join("log"), 8 << 20, 8);
    for entry in [
        support::entry("/src/a \"b\" [c] \\d", "first", Decision::Allow, None),
        support::entry("/src/demo", "second", Decision::Deny, Some("no-net")),
        support::entry("/src/demo", "third", Decision::Ask, None),
    ] {
        log.try_append(&entry).unwrap();
    }
    let sink = Sink::new("rsyslog", target.parse::<Target>().unwrap()).unwrap();
    let report = ship(&sink, &log, support::soon()).unwrap();
    assert_eq!((report.sent, report.left, &report.down), (3, 0, &None));
    assert_eq!(ship(&sink, &log, support::soon()).unwrap().sent, 0);

    let written = support::lines(&log);
    let arrived = support::wait_for(Duration::from_secs(10), || {
        rsyslog.shipped().len() >= written.len()
    });
    let received = rsyslog.shipped();
    assert!(arrived, "{received:#?}");
    std::thread::sleep(Duration::from_millis(300));
    let received = rsyslog.shipped();
    assert_eq!(received.len(), written.len(), "once each: {received:#?}");
    let host = nix::unistd::gethostname().unwrap().into_string().unwrap();
    for ((seq, text), line) in written.iter().zip(&received) {
        let mut words = line.splitn(4, ' ');
        let (hostname, app, msgid) = (words.next(), words.next(), words.next());
        assert_eq!((app, msgid), (Some("chock"), Some("mcp")), "{line}");
        assert_eq!(hostname, Some(host.as_str()), "{line}");
        let (id, params, message) = support::structured_data(words.next().unwrap()).unwrap();
        assert_eq!(id, chock_sinks::SD_ID);
        let record: chock_log::Record = serde_json::from_str(text).unwrap();
        assert_eq!(message.trim_start(), text, "the message is the line");
        assert_eq!(params["seq"], seq.to_string());
        assert_eq!(params["project"], record.entry.project);
        assert_eq!(params["action"], "call.write_file");
        assert_eq!(params["route"], "mcp");
        assert_eq!(params["decision"], record.entry.decision.to_string());
        assert_eq!(params["host"], host);
        assert!(!params["user"].is_empty());
        assert_eq!(
            params.get("policy"),
            record.entry.decided_by.policy.as_ref()
        );
    }
}

#[test]
fn udp() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let rsyslog = Rsyslog::start(
        dir.path(),
        &format!(
            r#"module(load="imudp")
input(type="imudp" address="127.0.0.1" port="{port}")"#
        ),
    );
    let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
    rsyslog.wait_for_probe(|bytes| {
        let _ = probe.send_to(bytes, ("127.0.0.1", port));
    });
    ships_each_line_once(
        &rsyslog,
        dir.path(),
        &format!("syslog+udp://127.0.0.1:{port}"),
    );
}

#[test]
fn tcp() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let rsyslog = Rsyslog::start(
        dir.path(),
        &format!(
            r#"module(load="imtcp")
input(type="imtcp" address="127.0.0.1" port="{port}")"#
        ),
    );
    wait_for_listener(port);
    ships_each_line_once(
        &rsyslog,
        dir.path(),
        &format!("syslog+tcp://127.0.0.1:{port}"),
    );
}

#[test]
fn unix_socket() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("log.socket");
    let rsyslog = Rsyslog::start(
        dir.path(),
        &format!(
            r#"module(load="imuxsock" SysSock.Use="off")
input(type="imuxsock" Socket="{}" UseSpecialParser="off" ParseHostname="on")"#,
            socket.display()
        ),
    );
    let probe = std::os::unix::net::UnixDatagram::unbound().unwrap();
    rsyslog.wait_for_probe(|bytes| {
        let _ = probe.send_to(bytes, &socket);
    });
    ships_each_line_once(
        &rsyslog,
        dir.path(),
        &format!("syslog+unix://{}", socket.display()),
    );
}

fn tls_rsyslog(dir: &Path, port: u16) -> (Rsyslog, PathBuf) {
    let (ca, cert, key) = support::certificates(dir);
    let rsyslog = Rsyslog::start(
        dir,
        &format!(
            r#"global(DefaultNetstreamDriver="gtls" DefaultNetstreamDriverCAFile="{}" DefaultNetstreamDriverCertFile="{}" DefaultNetstreamDriverKeyFile="{}")
module(load="imtcp" StreamDriver.Name="gtls" StreamDriver.Mode="1" StreamDriver.AuthMode="anon")
input(type="imtcp" address="127.0.0.1" port="{port}")"#,
            ca.display(),
            cert.display(),
            key.display()
        ),
    );
    wait_for_listener(port);
    (rsyslog, ca)
}

#[test]
fn tls() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let (rsyslog, ca) = tls_rsyslog(dir.path(), port);
    ships_each_line_once(
        &rsyslog,
        dir.path(),
        &format!("syslog+tls://127.0.0.1:{port}?ca={}", ca.display()),
    );
}

#[test]
fn tls_to_a_server_the_ca_did_not_sign_sends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let (rsyslog, _ca) = tls_rsyslog(dir.path(), port);
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let (other_ca, _, _) = support::certificates(&other);
    let log = support::log(&dir.path().join("log"), 8 << 20, 8);
    support::fill(&log, "line ", 2);
    let target = format!("syslog+tls://127.0.0.1:{port}?ca={}", other_ca.display());
    let sink = Sink::new("rsyslog", target.parse().unwrap()).unwrap();
    let report = ship(&sink, &log, support::soon()).unwrap();
    assert_eq!((report.sent, report.left, report.cursor), (0, 2, 0));
    let why = report.down.unwrap();
    assert!(why.contains("certificate"), "{why}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(rsyslog.shipped().is_empty());
}

#[test]
fn tcp_to_an_rsyslog_restarted_between_rounds_goes_on_where_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let setup = format!(
        r#"module(load="imtcp")
input(type="imtcp" address="127.0.0.1" port="{port}")"#
    );
    let log = support::log(&dir.path().join("log"), 8 << 20, 8);
    let target: Target = format!("syslog+tcp://127.0.0.1:{port}").parse().unwrap();
    let mut shipper =
        chock_sinks::Shipper::new(Sink::new("rsyslog", target).unwrap(), log.clone()).unwrap();
    let seqs = |rsyslog: &Rsyslog, count: usize| {
        support::wait_for(Duration::from_secs(10), || rsyslog.shipped().len() >= count);
        std::thread::sleep(Duration::from_millis(200));
        rsyslog
            .shipped()
            .iter()
            .map(|line| {
                let data = line.splitn(4, ' ').nth(3).unwrap();
                support::structured_data(data).unwrap().1["seq"].clone()
            })
            .collect::<Vec<_>>()
    };

    let first_dir = dir.path().join("first");
    std::fs::create_dir(&first_dir).unwrap();
    let first = Rsyslog::start(&first_dir, &setup);
    wait_for_listener(port);
    support::fill(&log, "before ", 3);
    assert_eq!(shipper.ship(support::soon()).unwrap().sent, 3);
    assert_eq!(seqs(&first, 3), ["1", "2", "3"]);
    drop(first);

    let second_dir = dir.path().join("second");
    std::fs::create_dir(&second_dir).unwrap();
    let second = Rsyslog::start(&second_dir, &setup);
    wait_for_listener(port);
    support::fill(&log, "after ", 3);
    let report = shipper.ship(support::soon()).unwrap();
    assert_eq!((report.sent, report.left, report.down), (3, 0, None));
    assert_eq!(seqs(&second, 3), ["4", "5", "6"]);
}
