//! Devices named in chock.zon, found in a test sysfs root and bound into a
//! real sandbox: a pseudo-terminal stands in for a USB serial adapter.

use std::ffi::OsString;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use chock_gate::Route;
use chock_policy::{Key, LoadOptions, Policy};
use chock_sandbox::devices::{Reached, Roots, reach};
use chock_sandbox::{Command, Limits, Sandbox, Stdio, Toolchain, WriteExecute, resolve_layout};

const CHOCK_ZON: &str = r#".{
    .devices = .{
        .{ .action = "device.tty.serial.A10K" },
        .{ .action = "device.usb.1d50.6018" },
    },
    .policy = .{ .rules = .{ .{ .action = "device.tty.serial.A10K", .decision = .allow } } },
}
"#;

/// A pseudo-terminal: the master the test reads, the slave a sandboxed
/// command is given as the device's node.
struct Pty {
    master: OwnedFd,
    _slave: OwnedFd,
    /// `pts/N`, its name under /dev.
    devname: String,
    number: (u64, u64),
}

fn pty() -> Pty {
    let pair = nix::pty::openpty(None, None).expect("openpty");
    let path = std::fs::read_link(format!(
        "/proc/self/fd/{}",
        std::os::fd::AsRawFd::as_raw_fd(&pair.slave)
    ))
    .expect("slave path");
    let st = nix::sys::stat::fstat(&pair.slave).expect("fstat slave");
    let devname = path
        .strip_prefix("/dev")
        .expect("under /dev")
        .to_string_lossy()
        .into_owned();
    Pty {
        master: pair.master,
        _slave: pair.slave,
        devname,
        number: (
            nix::sys::stat::major(st.st_rdev),
            nix::sys::stat::minor(st.st_rdev),
        ),
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// A USB device `usb` (vendor, product, serial) with one interface, and the
/// tty `tty` on it whose node is `pty`.
fn plug_tty(sysfs: &Path, usb: &str, ids: (&str, &str, Option<&str>), tty: &str, pty: &Pty) {
    let device = sysfs.join("bus/usb/devices").join(usb);
    write(&device.join("idVendor"), &format!("{}\n", ids.0));
    write(&device.join("idProduct"), &format!("{}\n", ids.1));
    if let Some(serial) = ids.2 {
        write(&device.join("serial"), &format!("{serial}\n"));
    }
    let interface = device.join(format!("{usb}:1.0"));
    std::fs::create_dir_all(&interface).expect("interface");
    let class = sysfs.join("class/tty").join(tty);
    write(
        &class.join("dev"),
        &format!("{}:{}\n", pty.number.0, pty.number.1),
    );
    write(
        &class.join("uevent"),
        &format!("MAJOR={}\nDEVNAME={}\n", pty.number.0, pty.devname),
    );
    std::os::unix::fs::symlink(&interface, class.join("device")).expect("device link");
}

/// A bare USB device (no tty) whose node is `pty`.
fn plug_usb(sysfs: &Path, usb: &str, ids: (&str, &str), pty: &Pty) {
    let device = sysfs.join("bus/usb/devices").join(usb);
    write(&device.join("idVendor"), &format!("{}\n", ids.0));
    write(&device.join("idProduct"), &format!("{}\n", ids.1));
    write(
        &device.join("dev"),
        &format!("{}:{}\n", pty.number.0, pty.number.1),
    );
    write(
        &device.join("uevent"),
        &format!("DEVTYPE=usb_device\nDEVNAME={}\n", pty.devname),
    );
}

fn reached(policy: &Policy, project: &Path, roots: &Roots) -> Reached {
    reach(
        policy,
        Route::Exec,
        &project.to_string_lossy(),
        |action| Key::new(action).with_tool("run_command"),
        roots,
    )
}

fn run_with(project: &Path, devices: Reached, script: &str) -> chock_sandbox::Finished {
    let layout = resolve_layout(
        project,
        &project.with_file_name("cache"),
        &Toolchain::Host,
        16 << 20,
    )
    .expect("layout");
    let mut sandbox =
        Sandbox::new(layout, Limits::for_this_machine(), WriteExecute::Refused).expect("sandbox");
    sandbox.give_devices(devices.granted);
    let command = Command {
        program: "/bin/sh".into(),
        args: ["/bin/sh", "-c", script]
            .iter()
            .map(OsString::from)
            .collect(),
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        cwd: project.to_path_buf(),
        stdio: Stdio::Capture { limit: 1 << 16 },
    };
    sandbox
        .spawn(&command)
        .expect("spawn")
        .wait()
        .expect("wait")
}

fn read_master(pty: &Pty) -> String {
    let mut master = std::fs::File::from(pty.master.try_clone().expect("dup"));
    let mut buf = [0u8; 256];
    let n = master.read(&mut buf).expect("read master");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[test]
fn a_named_and_allowed_device_alone_is_bound_and_unplugged_it_is_gone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let project: PathBuf = dir.path().join("project");
    write(&project.join("chock.zon"), CHOCK_ZON);
    let sysfs = dir.path().join("sys");
    let (allowed, refused, unnamed) = (pty(), pty(), pty());
    plug_tty(
        &sysfs,
        "1-1",
        ("0403", "6001", Some("A10K")),
        "ttyUSB0",
        &allowed,
    );
    plug_usb(&sysfs, "1-2", ("1d50", "6018"), &refused);
    plug_tty(&sysfs, "1-3", ("1a86", "7523", None), "ttyUSB1", &unnamed);
    let roots = Roots {
        sysfs: sysfs.clone(),
        dev: PathBuf::from("/dev"),
    };
    let policy = Policy::load(&LoadOptions {
        project_dir: project.clone(),
        ..LoadOptions::default()
    })
    .expect("policy");

    let first = reached(&policy, &project, &roots);
    assert_eq!(first.entries.len(), 2, "one log line per named device");
    let bound: Vec<&str> = first.granted.iter().map(|g| g.action.as_str()).collect();
    assert_eq!(bound, ["device.tty.serial.A10K"]);
    let [note] = first.notes.as_slice() else {
        panic!("one note: {:?}", first.notes);
    };
    assert!(
        note.starts_with("device.usb.1d50.6018: refused")
            && note.contains(r#".{ .action = "device.usb.1d50.6018", .decision = .allow }"#),
        "{note}"
    );
    let refused_inside = format!("/dev/{}", refused.devname);
    let done = run_with(
        &project,
        first,
        &format!(
            "printf hello > /dev/ttyUSB0 && ls /dev; test -e /dev/ttyUSB1 && echo UNNAMED; test -e {refused_inside} && echo REFUSED; true"
        ),
    );
    let shown = String::from_utf8_lossy(&done.stdout);
    assert_eq!(
        done.exit,
        chock_sandbox::Exit::Code(0),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert!(shown.contains("ttyUSB0"), "{shown}");
    assert!(
        !shown.contains("UNNAMED") && !shown.contains("REFUSED"),
        "{shown}"
    );
    assert_eq!(read_master(&allowed), "hello");

    std::fs::remove_dir_all(sysfs.join("class/tty/ttyUSB0")).expect("unplug");
    let second = reached(&policy, &project, &roots);
    assert!(second.granted.is_empty());
    assert!(
        second
            .notes
            .iter()
            .any(|n| n.starts_with("device.tty.serial.A10K: not present")),
        "{:?}",
        second.notes
    );
    let done = run_with(
        &project,
        second,
        "test -e /dev/ttyUSB0 && echo PRESENT; true",
    );
    assert!(!String::from_utf8_lossy(&done.stdout).contains("PRESENT"));
}

/// A long session's watch: a named device plugged in while it runs is
/// noticed when the kernel broadcasts a uevent about a tty (a real one:
/// writing `change` to a tty's `uevent` file, as root, makes the kernel
/// send it), and unplugged it is noticed again.
#[test]
fn a_watching_session_notices_a_named_device_arrive_and_leave() {
    let dir = tempfile::tempdir().expect("tempdir");
    let project: PathBuf = dir.path().join("project");
    write(&project.join("chock.zon"), CHOCK_ZON);
    let sysfs = dir.path().join("sys");
    std::fs::create_dir_all(&sysfs).expect("sysfs");
    let roots = Roots {
        sysfs: sysfs.clone(),
        dev: PathBuf::from("/dev"),
    };
    let policy = Policy::load(&LoadOptions {
        project_dir: project,
        ..LoadOptions::default()
    })
    .expect("policy");
    let (tx, rx) = std::sync::mpsc::channel();
    chock_sandbox::devices::watch(policy.config().devices().to_vec(), roots, move |line| {
        let _ = tx.send(line);
    });
    let kernel_says_a_tty_changed = || {
        std::fs::write("/sys/class/tty/tty/uevent", "change").expect("trigger a uevent");
    };
    let heard = |want: &str| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            kernel_says_a_tty_changed();
            match rx.recv_timeout(std::time::Duration::from_millis(500)) {
                Ok(line) if line.contains(want) => return line,
                Ok(_) | Err(_) if std::time::Instant::now() < deadline => continue,
                other => panic!("no notice saying {want:?}: {other:?}"),
            }
        }
    };
    let adapter = pty();
    plug_tty(
        &sysfs,
        "1-1",
        ("0403", "6001", Some("A10K")),
        "ttyUSB0",
        &adapter,
    );
    let arrived = heard("arrived");
    assert!(
        arrived.starts_with("device.tty.serial.A10K arrived at "),
        "{arrived}"
    );
    std::fs::remove_dir_all(sysfs.join("bus")).expect("unplug");
    std::fs::remove_dir_all(sysfs.join("class")).expect("unplug");
    let left = heard("unplugged");
    assert!(
        left.starts_with("device.tty.serial.A10K was unplugged"),
        "{left}"
    );
}
