//! The port dialer for real: a server on the sandbox's own loopback reached
//! from the host through the dialer, and the dialer's confinement read from
//! the kernel.

use std::ffi::OsString;
use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

use chock_sandbox::{Command, Limits, Sandbox, Stdio, Toolchain, WriteExecute, resolve_layout};

fn sandbox(workspace: &Path, cache: &Path) -> Sandbox {
    let layout = resolve_layout(workspace, cache, &Toolchain::Host, 256 << 20).expect("layout");
    let mut sandbox =
        Sandbox::new(layout, Limits::for_this_machine(), WriteExecute::Refused).expect("sandbox");
    sandbox.with_dialer();
    sandbox
}

/// A server inside that answers each connection with `hello from inside`
/// (python3, from the host's toolchain).
const SERVER: &str = r"
import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', 4711))
s.listen()
print('listening', flush=True)
while True:
    c, _ = s.accept()
    c.sendall(b'hello from inside')
    c.close()
";

fn start_server(sb: &Sandbox, ws: &Path) -> chock_sandbox::Running {
    let command = Command {
        program: "/usr/bin/python3".into(),
        args: ["python3", "-c", SERVER]
            .iter()
            .map(OsString::from)
            .collect(),
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        cwd: ws.to_path_buf(),
        stdio: Stdio::Stream,
    };
    sb.spawn(&command).expect("spawn")
}

#[test]
fn the_dialer_reaches_a_server_on_the_sandboxs_loopback_and_nothing_else_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("ws");
    let sb = sandbox(&ws, &dir.path().join("cache"));
    let mut running = start_server(&sb, &ws);
    let mut output = std::fs::File::from(running.take_stream().expect("stream"));
    let mut line = [0u8; 10];
    output.read_exact(&mut line).expect("the server started");
    assert_eq!(&line, b"listening\n");
    let dialer = running.take_dialer().expect("dialer");
    let mut stream = dialer.dial(4711).expect("dialled");
    stream.set_nonblocking(false).expect("blocking");
    let mut got = String::new();
    stream.read_to_string(&mut got).expect("read");
    assert_eq!(got, "hello from inside");
    // The host's own loopback is another namespace: nothing listens there.
    assert!(std::net::TcpStream::connect(("127.0.0.1", 4711)).is_err());
    // A port nobody listens on inside is refused, quickly, by errno.
    let began = Instant::now();
    let refused = dialer.dial(4712).expect_err("nothing on 4712");
    assert!(
        refused
            .to_string()
            .contains("nothing answered on 127.0.0.1:4712"),
        "{refused}"
    );
    assert!(began.elapsed() < Duration::from_secs(3));

    // The dialer is init's other child: no capabilities, no_new_privs, a
    // seccomp filter.
    let init = running.pid();
    let children =
        std::fs::read_to_string(format!("/proc/{init}/task/{init}/children")).expect("children");
    let statuses: Vec<String> = children
        .split_whitespace()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
        .collect();
    assert_eq!(statuses.len(), 2, "the program and the dialer: {children}");
    let dialer_status = statuses
        .iter()
        .find(|s| !s.contains("python3"))
        .expect("the dialer");
    for (field, value) in [
        ("CapEff:", "0000000000000000"),
        ("CapPrm:", "0000000000000000"),
        ("CapBnd:", "0000000000000000"),
        ("NoNewPrivs:", "1"),
        ("Seccomp:", "2"),
    ] {
        let line = dialer_status
            .lines()
            .find(|l| l.starts_with(field))
            .unwrap_or_else(|| panic!("no {field}: {dialer_status}"));
        assert!(line.ends_with(value), "{line}");
    }
    // The dialer still answers after those reads, then ends with the
    // sandbox: a dial after that says the helper is gone.
    assert!(dialer.dial(4711).is_ok());
    running.signal(libc::SIGKILL).expect("killed");
    let _ = running.wait();
    let gone = dialer.dial(4711).expect_err("the sandbox has ended");
    assert!(gone.to_string().contains("has ended"), "{gone}");
}

#[test]
fn a_sandbox_without_a_dialer_has_none() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("ws");
    let layout = resolve_layout(&ws, &dir.path().join("cache"), &Toolchain::Host, 256 << 20)
        .expect("layout");
    let sb =
        Sandbox::new(layout, Limits::for_this_machine(), WriteExecute::Refused).expect("sandbox");
    let mut running = start_server(&sb, &ws);
    assert!(running.take_dialer().is_none());
    running.signal(libc::SIGKILL).expect("killed");
    let _ = running.wait();
}
