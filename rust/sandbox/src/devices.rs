//! The USB and serial devices a project names (`.devices` of `chock.zon`),
//! found by identity and bound into the sandbox's `/dev` one node each.
//!
//! Identity is read from sysfs: a USB device's `idVendor`, `idProduct` and
//! `serial` under `bus/usb/devices`, and a tty's from the USB device above
//! the interface its `device` link names. Each is matched to its node
//! under `/dev` by the `DEVNAME` of its `uevent`, and the node is opened
//! (no link followed) and kept only when the opened descriptor is a
//! character device whose number is the one sysfs gave: a node swapped
//! after the read is never bound. A device named and allowed is bound; one
//! named and refused is reported with the rule that would allow it; one
//! present and not named is never reachable.

use std::fs;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use chock_gate::{Outcome, Refusal, Route};
use chock_policy::{DeviceId, Key, NamedDevice, Policy, Reading, Verdict};
use nix::fcntl::{OFlag, open};
use nix::sys::stat::{Mode, SFlag, fstat, major, minor};

use crate::sys::FileId;

/// Where the kernel's sysfs and the device nodes are on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    pub sysfs: PathBuf,
    pub dev: PathBuf,
}

impl Default for Roots {
    fn default() -> Self {
        Roots {
            sysfs: PathBuf::from("/sys"),
            dev: PathBuf::from("/dev"),
        }
    }
}

/// A device sysfs shows, by identity, and its node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Present {
    pub id: DeviceId,
    /// The node on the host (`/dev/ttyUSB0`).
    pub node: PathBuf,
    /// Where it shows inside the sandbox.
    pub inside: PathBuf,
    /// The device number sysfs gives (`dev`: major, minor).
    pub number: (u64, u64),
}

/// A device's node, opened and checked, ready to bind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Granted {
    pub action: String,
    pub node: PathBuf,
    pub inside: PathBuf,
    pub(crate) id: FileId,
}

/// Why a present device's node is not bound.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("{node}: cannot be opened: {source}")]
    Open { node: PathBuf, source: nix::Error },
    #[error("{node}: is not the character device {major}:{minor} sysfs names")]
    NotTheDevice {
        node: PathBuf,
        major: u64,
        minor: u64,
    },
}

/// Every USB device and USB tty sysfs shows under `roots`. An entry whose
/// files cannot be read is left out: it names no device.
pub fn scan(roots: &Roots) -> Vec<Present> {
    let mut found = Vec::new();
    for entry in entries(&roots.sysfs.join("bus/usb/devices")) {
        if let Some((vendor, product, _)) = usb_identity(&entry) {
            found.extend(present(
                roots,
                &entry,
                DeviceId::Usb { vendor, product },
                None,
            ));
        }
    }
    for entry in entries(&roots.sysfs.join("class/tty")) {
        let Some(usb) = usb_above(&entry.join("device")) else {
            continue;
        };
        let Some((vendor, product, serial)) = usb_identity(&usb) else {
            continue;
        };
        let id = match serial {
            Some(serial) => DeviceId::TtySerial(serial),
            None => DeviceId::Tty { vendor, product },
        };
        let name = entry.file_name().map(PathBuf::from);
        found.extend(present(roots, &entry, id, name));
    }
    found
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = read.flatten().map(|e| e.path()).collect();
    paths.sort();
    paths
}

/// The USB device a tty's `device` link leads to: the nearest folder at or
/// above it (an interface, then its device) that has an `idVendor`.
fn usb_above(device: &Path) -> Option<PathBuf> {
    let resolved = fs::canonicalize(device).ok()?;
    resolved
        .ancestors()
        .take(3)
        .find(|dir| dir.join("idVendor").is_file())
        .map(Path::to_path_buf)
}

/// Vendor, product and (when it has one that can be a label) serial.
fn usb_identity(dir: &Path) -> Option<(u16, u16, Option<String>)> {
    let vendor = hex_file(&dir.join("idVendor"))?;
    let product = hex_file(&dir.join("idProduct"))?;
    let serial = read_trimmed(&dir.join("serial"))
        .filter(|s| chock_policy::names::label(s).is_ok() && !s.contains('/'));
    Some((vendor, product, serial))
}

fn hex_file(path: &Path) -> Option<u16> {
    u16::from_str_radix(&read_trimmed(path)?, 16).ok()
}

fn read_trimmed(path: &Path) -> Option<String> {
    let text = fs::read_to_string(path).ok()?;
    Some(text.trim().to_owned()).filter(|t| !t.is_empty())
}

/// The node of the sysfs entry `entry`: its `dev` number and its
/// `uevent`'s `DEVNAME` under the dev root. Shown inside at `/dev/<name>`
/// when given, else at `/dev/<DEVNAME>`.
fn present(roots: &Roots, entry: &Path, id: DeviceId, name: Option<PathBuf>) -> Option<Present> {
    let number = read_trimmed(&entry.join("dev"))?;
    let (major, minor) = number.split_once(':')?;
    let number = (major.parse().ok()?, minor.parse().ok()?);
    let uevent = fs::read_to_string(entry.join("uevent")).ok()?;
    let devname = uevent.lines().find_map(|l| l.strip_prefix("DEVNAME="))?;
    let relative = Path::new(devname);
    if relative.is_absolute()
        || relative
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return None;
    }
    Some(Present {
        id,
        node: roots.dev.join(relative),
        inside: Path::new("/dev").join(name.as_deref().unwrap_or(relative)),
        number,
    })
}

/// Opens `present`'s node with no link followed and keeps it only when the
/// descriptor is the character device sysfs named.
pub fn open_checked(present: &Present) -> Result<Granted, NodeError> {
    let node = present.node.clone();
    let fd: OwnedFd = open(
        &node,
        OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|source| NodeError::Open {
        node: node.clone(),
        source,
    })?;
    let st = fstat(&fd).map_err(|source| NodeError::Open {
        node: node.clone(),
        source,
    })?;
    let kind = st.st_mode & SFlag::S_IFMT.bits();
    let (want_major, want_minor) = present.number;
    if kind != SFlag::S_IFCHR.bits()
        || major(st.st_rdev) != want_major
        || minor(st.st_rdev) != want_minor
    {
        return Err(NodeError::NotTheDevice {
            node,
            major: want_major,
            minor: want_minor,
        });
    }
    Ok(Granted {
        action: present.id.action(),
        node,
        inside: present.inside.clone(),
        id: FileId {
            dev: st.st_dev,
            ino: st.st_ino,
            kind,
        },
    })
}

/// What became of each device the project names, for one sandbox.
#[derive(Debug, Default)]
pub struct Reached {
    /// Named, allowed, present and checked: bound into `/dev`.
    pub granted: Vec<Granted>,
    /// One sentence for each named device not bound, and why.
    pub notes: Vec<String>,
    /// The decision-log line of each named device.
    pub entries: Vec<chock_log::Entry>,
}

/// Decides each device `policy` names at its action on `route` (through
/// the gate, nobody asked: an ask refuses, as nobody is at the keyboard
/// while a command runs), and binds those allowed that sysfs under
/// `roots` shows now.
pub fn reach(
    policy: &Policy,
    route: Route,
    project: &str,
    key: impl Fn(&str) -> Key,
    roots: &Roots,
) -> Reached {
    let mut reached = Reached::default();
    if policy.config().devices().is_empty() {
        return reached;
    }
    let present = scan(roots);
    for named in policy.config().devices() {
        let key = key(&named.action);
        let verdict = policy.decide(&key, Reading::Act);
        let settled = chock_gate::settle(route, &verdict, &chock_policy::Nobody, || {
            question(named, &verdict)
        });
        reached
            .entries
            .push(settled.entry(route, project, &key, &verdict, None));
        match settled.outcome {
            Outcome::Go => bind(named, &present, &mut reached),
            Outcome::Refused(why) => reached
                .notes
                .push(refused(named, &Refusal::new(why, &verdict))),
            _ => reached.notes.push(format!(
                "{}: not bound, as nothing allowed it",
                named.action
            )),
        }
    }
    reached
}

fn bind(named: &NamedDevice, present: &[Present], reached: &mut Reached) {
    let Some(device) = present.iter().find(|p| p.id == named.id) else {
        reached.notes.push(format!(
            "{}: not present (named at {}); it is bound at the first command after it is plugged in",
            named.action,
            named.place()
        ));
        return;
    };
    match open_checked(device) {
        Ok(granted) => reached.granted.push(granted),
        Err(e) => reached
            .notes
            .push(format!("{}: not bound: {e}", named.action)),
    }
}

fn refused(named: &NamedDevice, refusal: &Refusal) -> String {
    let why = match refusal.why_words() {
        "" => String::new(),
        words => format!(" ({words})"),
    };
    format!(
        "{}: refused{why}, so it is not in the sandbox's /dev.{}",
        named.action,
        refusal.advice(chock_gate::Layout::Line)
    )
}

fn question(named: &NamedDevice, verdict: &Verdict) -> chock_policy::Question {
    chock_policy::Question {
        action: named.action.clone(),
        decision: verdict.decision,
        summary: format!("a command wants the device {}", named.action),
        detail: vec![format!("named at {}", named.place())],
        rules: verdict.suggestion.iter().cloned().collect(),
    }
}

/// Each device `named` and whether sysfs under `roots` shows it: its node
/// on the host when present, else `None`.
pub fn presence(named: &[NamedDevice], roots: &Roots) -> Vec<(String, Option<PathBuf>)> {
    let present = scan(roots);
    named
        .iter()
        .map(|device| {
            let node = present
                .iter()
                .find(|p| p.id == device.id)
                .map(|p| p.node.clone());
            (device.action.clone(), node)
        })
        .collect()
}

/// A kernel uevent: a device added, removed or changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uevent {
    /// `add`, `remove`, `change`, `bind`...
    pub action: String,
    /// Under `/sys` (`/devices/pci0000:00/.../1-1`).
    pub devpath: String,
    pub subsystem: String,
}

impl Uevent {
    /// Reads one kernel message (`add@/devices/...` then `KEY=value`
    /// fields, each ending in NUL); `None` when it is not one.
    pub fn parse(message: &[u8]) -> Option<Uevent> {
        let mut fields = message.split(|b| *b == 0).map(String::from_utf8_lossy);
        let header = fields.next()?;
        header.split_once('@')?;
        let (mut action, mut devpath, mut subsystem) = (None, None, None);
        for field in fields {
            match field.split_once('=') {
                Some(("ACTION", v)) => action = Some(v.to_owned()),
                Some(("DEVPATH", v)) => devpath = Some(v.to_owned()),
                Some(("SUBSYSTEM", v)) => subsystem = Some(v.to_owned()),
                _ => {}
            }
        }
        Some(Uevent {
            action: action?,
            devpath: devpath?,
            subsystem: subsystem?,
        })
    }

    /// Whether it is about a USB device or a tty: one a `.devices` block
    /// can name.
    pub fn about_a_device(&self) -> bool {
        matches!(self.subsystem.as_str(), "usb" | "tty" | "usb-serial")
    }
}

/// The kernel's uevents as they are broadcast (`NETLINK_KOBJECT_UEVENT`),
/// for a long session to notice a named device arrive or leave.
pub struct Hotplug {
    socket: OwnedFd,
}

impl Hotplug {
    /// Joins the kernel's uevent broadcast.
    pub fn listen() -> Result<Hotplug, nix::Error> {
        use nix::sys::socket::{
            AddressFamily, NetlinkAddr, SockFlag, SockProtocol, SockType, bind, socket,
        };
        let socket = socket(
            AddressFamily::Netlink,
            SockType::Datagram,
            SockFlag::SOCK_CLOEXEC,
            SockProtocol::NetlinkKObjectUEvent,
        )?;
        bind(
            std::os::fd::AsRawFd::as_raw_fd(&socket),
            &NetlinkAddr::new(0, 1),
        )?;
        Ok(Hotplug { socket })
    }

    /// The next uevent, waiting at most `timeout`; `None` when none came.
    pub fn next(&self, timeout: std::time::Duration) -> Result<Option<Uevent>, nix::Error> {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let wait = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
            let mut fds = [PollFd::new(
                std::os::fd::AsFd::as_fd(&self.socket),
                PollFlags::POLLIN,
            )];
            if poll(&mut fds, wait)? == 0 {
                return Ok(None);
            }
            let mut buf = vec![0u8; 8192];
            let n = nix::sys::socket::recv(
                std::os::fd::AsRawFd::as_raw_fd(&self.socket),
                &mut buf,
                nix::sys::socket::MsgFlags::empty(),
            )?;
            if let Some(event) = buf.get(..n).and_then(Uevent::parse) {
                return Ok(Some(event));
            }
        }
    }
}

/// Tells `say` of each named device that arrives or leaves while the
/// process runs, on a thread of its own that ends with the process; a
/// session starts it once, and each command's sandbox then binds what
/// sysfs shows at its start. When the kernel's uevents cannot be read (at
/// the start or later), `say` is told that arrivals go unnoticed.
pub fn watch(named: Vec<NamedDevice>, roots: Roots, say: impl Fn(String) + Send + 'static) {
    let unwatched = |e: &dyn std::fmt::Display| {
        format!(
            "devices: the kernel's uevents cannot be read ({e}); a device that arrives is reached from the next command on, without a notice"
        )
    };
    let hotplug = match Hotplug::listen() {
        Ok(hotplug) => hotplug,
        Err(e) => return say(unwatched(&e)),
    };
    let mut before = presence(&named, &roots);
    let spawned = std::thread::Builder::new()
        .name("chock-hotplug".into())
        .spawn(move || {
            loop {
                match hotplug.next(std::time::Duration::from_secs(3600)) {
                    Ok(Some(event)) => {
                        noticed(&event, &named, &roots, &mut before)
                            .into_iter()
                            .for_each(&say);
                    }
                    Ok(None) => {}
                    Err(e) => return say(unwatched(&e)),
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("{}", unwatched(&e));
    }
}

/// What a session says when `event` changes which named devices are
/// present: each named device that arrived or left, against `before`.
pub fn noticed(
    event: &Uevent,
    named: &[NamedDevice],
    roots: &Roots,
    before: &mut Vec<(String, Option<PathBuf>)>,
) -> Vec<String> {
    if !event.about_a_device() {
        return Vec::new();
    }
    let now = presence(named, roots);
    let said = now
        .iter()
        .zip(before.iter())
        .filter(|(now, was)| now.1.is_some() != was.1.is_some())
        .map(|((action, node), _)| match node {
            Some(node) => format!(
                "{action} arrived at {}: the next command reaches it, if a rule allows it",
                node.display()
            ),
            None => format!("{action} was unplugged: the next command does not have it"),
        })
        .collect();
    *before = now;
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real kernel uevent: writing `add` to a device's `uevent` file
    /// makes the kernel broadcast one (as root).
    #[test]
    fn a_kernel_uevent_is_heard() {
        let hotplug = Hotplug::listen().expect("listen");
        std::fs::write("/sys/class/mem/null/uevent", "add").expect("trigger");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut heard = None;
        while heard.is_none() && std::time::Instant::now() < deadline {
            heard = hotplug
                .next(std::time::Duration::from_secs(1))
                .expect("next")
                .filter(|e| e.devpath.ends_with("/mem/null"));
        }
        let event = heard.expect("the kernel's uevent");
        assert_eq!(
            (event.action.as_str(), event.subsystem.as_str()),
            ("add", "mem")
        );
        assert!(!event.about_a_device());
    }

    #[test]
    fn a_message_that_is_no_uevent_is_none() {
        assert_eq!(Uevent::parse(b"libudev\0\xfe\xed"), None);
        assert_eq!(Uevent::parse(b"add@/x\0ACTION=add\0"), None);
    }
}
