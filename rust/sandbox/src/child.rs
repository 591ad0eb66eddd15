//! What runs inside the new namespaces, between `clone` and `execve`.
//!
//! Two processes: *init* (PID 1 of the new PID namespace) builds the mount
//! tree, adds the Landlock rules for inodes it created, then starts the
//! *program* process (sharing init's memory until it executes, as
//! `posix_spawn` does) and stays behind to reap, forward signals and report
//! the program's wait status. When init ends, the kernel kills every process
//! left in the namespace, so nothing a command started outlives it.
//!
//! The program process sets `PR_SET_NO_NEW_PRIVS`, restricts itself with
//! Landlock, drops every capability, sets the rlimits, marks inherited
//! descriptors close-on-exec, installs the seccomp filter and executes.
//!
//! Chock's process may have had other threads when it cloned, so nothing
//! here allocates or takes a lock: every path and argument was turned into a
//! C string by the parent, and failures go back as fixed-size records on a
//! pipe (step, index, errno) that the parent turns into sentences.

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, RawFd};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill, sigprocmask};
use nix::sys::stat::Mode;
use nix::unistd::Pid;
use seccompiler::BpfProgram;

use crate::caps::{self, CapStep};
use crate::limits::RlimitResource;
use crate::mounts::Op;
use crate::sys;
pub(crate) use crate::sys::child::ExecArgs;

/// A record on the report pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) kind: Kind,
    pub(crate) index: u32,
    pub(crate) value: i64,
}

/// What a record says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Kind {
    /// Mount step `index` failed with errno `value`.
    Op = 1,
    /// Step `index` (a [`Step`]) failed with errno `value`.
    Step = 2,
    /// `execve` failed with errno `value`.
    Exec = 3,
    /// The program ended with wait status `value`.
    Status = 4,
    /// A probe returned `value`.
    Probe = 5,
    /// Free space on a watched file system fell below the floor: init
    /// killed every process of the sandbox.
    SpaceFloor = 6,
}

/// Steps other than mounts, for the parent's error message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Step {
    ParentGone = 1,
    Deathsig,
    Setsid,
    Stdio,
    Setgroups,
    UidMap,
    GidMap,
    Dumpable,
    LandlockRule,
    Fork,
    Sigmask,
    Setpgid,
    NoNewPrivs,
    LandlockRestrict,
    Securebits,
    Bounding,
    Ambient,
    Capset,
    Rlimit,
    Chdir,
    CloseRange,
    Seccomp,
    DirectPath,
    JoinCgroup,
}

impl Step {
    const ALL: [Step; 24] = [
        Step::ParentGone,
        Step::Deathsig,
        Step::Setsid,
        Step::Stdio,
        Step::Setgroups,
        Step::UidMap,
        Step::GidMap,
        Step::Dumpable,
        Step::LandlockRule,
        Step::Fork,
        Step::Sigmask,
        Step::Setpgid,
        Step::NoNewPrivs,
        Step::LandlockRestrict,
        Step::Securebits,
        Step::Bounding,
        Step::Ambient,
        Step::Capset,
        Step::Rlimit,
        Step::Chdir,
        Step::CloseRange,
        Step::Seccomp,
        Step::DirectPath,
        Step::JoinCgroup,
    ];

    pub(crate) fn from_code(code: u32) -> Option<Step> {
        Step::ALL.into_iter().find(|s| *s as u32 == code & 0xffff)
    }

    pub(crate) fn describe(self) -> &'static str {
        match self {
            Step::ParentGone => "waiting for Chock (it ended first)",
            Step::Deathsig => "asking to end with Chock (PR_SET_PDEATHSIG)",
            Step::Setsid => "starting a new session",
            Step::Stdio => "connecting the program's standard streams",
            Step::Setgroups => "writing /proc/self/setgroups",
            Step::UidMap => "mapping the user id into the user namespace",
            Step::GidMap => "mapping the group id into the user namespace",
            Step::Dumpable => "making the sandbox's init undumpable",
            Step::LandlockRule => "adding a Landlock rule for a sandbox path",
            Step::Fork => "starting the program's process",
            Step::Sigmask => "resetting the signal mask",
            Step::Setpgid => "giving the program its own process group",
            Step::NoNewPrivs => "setting PR_SET_NO_NEW_PRIVS",
            Step::LandlockRestrict => "restricting the program with Landlock",
            Step::Securebits => CapStep::Securebits.describe(),
            Step::Bounding => CapStep::Bounding.describe(),
            Step::Ambient => CapStep::Ambient.describe(),
            Step::Capset => CapStep::Capset.describe(),
            Step::Rlimit => "setting a resource limit",
            Step::Chdir => "changing to the working directory",
            Step::CloseRange => "closing inherited descriptors on exec",
            Step::Seccomp => "installing the seccomp filter",
            Step::DirectPath => "handing the network's connect filter to Chock",
            Step::JoinCgroup => "joining the sandbox's cgroup",
        }
    }
}

const RECORD_LEN: usize = 16;

impl Record {
    fn encode(self) -> [u8; RECORD_LEN] {
        let mut bytes = [0u8; RECORD_LEN];
        bytes[..4].copy_from_slice(&(self.kind as u32).to_ne_bytes());
        bytes[4..8].copy_from_slice(&self.index.to_ne_bytes());
        bytes[8..].copy_from_slice(&self.value.to_ne_bytes());
        bytes
    }

    /// Reads the records out of what the pipe delivered; a torn tail is ignored.
    pub(crate) fn decode_all(bytes: &[u8]) -> Vec<Record> {
        bytes
            .chunks_exact(RECORD_LEN)
            .filter_map(|chunk| {
                let word = |range: std::ops::Range<usize>| {
                    chunk.get(range).and_then(|b| b.try_into().ok())
                };
                let kind = u32::from_ne_bytes(word(0..4)?);
                let index = u32::from_ne_bytes(word(4..8)?);
                let value = i64::from_ne_bytes(chunk.get(8..16)?.try_into().ok()?);
                let kind = [
                    Kind::Op,
                    Kind::Step,
                    Kind::Exec,
                    Kind::Status,
                    Kind::Probe,
                    Kind::SpaceFloor,
                ]
                .into_iter()
                .find(|k| *k as u32 == kind)?;
                Some(Record { kind, index, value })
            })
            .collect()
    }
}

/// What the program process finally does.
pub(crate) enum Payload {
    /// `execve` a program.
    Exec(ExecArgs),
    /// Run a probe function (for `chock doctor`); its return value is
    /// reported. It runs as the program process does, sharing init's
    /// memory: system calls only, no allocation, no writes but its stack.
    Probe(fn() -> i64),
}

/// Everything the child needs, prepared by the parent.
pub(crate) struct ChildPlan {
    pub(crate) ops: Vec<Op>,
    pub(crate) uid_map: Vec<u8>,
    pub(crate) gid_map: Vec<u8>,
    pub(crate) ruleset: RawFd,
    pub(crate) child_rules: Vec<(CString, u64)>,
    pub(crate) last_cap: u32,
    pub(crate) rlimits: Vec<(RlimitResource, libc::rlimit)>,
    pub(crate) seccomp: BpfProgram,
    pub(crate) cwd: CString,
    pub(crate) payload: Payload,
    /// Descriptors to put at 0, 1 and 2 (None: keep Chock's own).
    pub(crate) stdio: [Option<RawFd>; 3],
    /// The port dialer, forked before the program (see `publish`).
    pub(crate) dialer: Option<crate::publish::HelperPlan>,
    /// The router's direct path (see `net::direct`): the program installs
    /// its filter and hands the listener out before it executes.
    pub(crate) direct: Option<crate::net::DirectPlan>,
    /// The host file systems whose free space init watches while the
    /// program runs (the workspace's and the cache's, by descriptor).
    pub(crate) watched: [RawFd; 2],
    /// The `tasks` files of the v1 groups init joins itself (-1: none).
    pub(crate) cgroup_tasks: [RawFd; 2],
}

/// Descriptors the child uses to talk to the parent.
#[derive(Clone, Copy)]
pub(crate) struct Channel {
    /// Read end: a first byte from the parent means build the sandbox, a
    /// second that init is in its cgroup (cloned into it, joined by itself
    /// or moved by the parent) and the program may start; a hang-up means
    /// the parent died or failed.
    pub(crate) go: RawFd,
    /// The parent's write end of `go`, closed at once in the child.
    pub(crate) go_parent: RawFd,
    /// Write end of the report pipe.
    pub(crate) report: RawFd,
    /// The parent's read end of the report pipe, closed at once in the child.
    pub(crate) report_parent: RawFd,
}

fn report(channel: Channel, kind: Kind, index: u32, value: i64) {
    let _ = sys::write_all(channel.report, &Record { kind, index, value }.encode());
}

fn fail(channel: Channel, step: Step, index: u32, errno: Errno) -> ! {
    report(
        channel,
        Kind::Step,
        (index << 16) | step as u32,
        errno as i64,
    );
    sys::exit_now(126)
}

fn check<T>(channel: Channel, step: Step, index: u32, result: Result<T, Errno>) -> T {
    match result {
        Ok(value) => value,
        Err(errno) => fail(channel, step, index, errno),
    }
}

fn close(fd: RawFd) {
    sys::close(fd);
}

/// The first process inside: never returns.
pub(crate) fn run_init(plan: &ChildPlan, channel: Channel) -> ! {
    close(channel.go_parent);
    close(channel.report_parent);
    wait_for_go(channel);
    join_cgroups(plan, channel);
    check(
        channel,
        Step::Deathsig,
        0,
        nix::sys::prctl::set_pdeathsig(Signal::SIGKILL),
    );
    parent_still_there(channel);
    // A session of its own: nothing inside has Chock's terminal as its
    // controlling terminal, so TIOCSTI and job-control signals cannot reach
    // the person's shell (bubblewrap's --new-session, for CVE-2017-5226).
    check(channel, Step::Setsid, 0, nix::unistd::setsid());
    connect_stdio(plan, channel);
    check(
        channel,
        Step::Stdio,
        0,
        sys::close_all_but(&[
            channel.go,
            channel.report,
            plan.ruleset,
            plan.dialer.as_ref().map_or(-1, |d| d.fd),
            plan.direct.as_ref().map_or(-1, |d| d.sock),
            plan.watched[0],
            plan.watched[1],
        ]),
    );
    write_id_maps(plan, channel);
    // memfds made in this PID namespace are not executable (vm.memfd_noexec
    // 2: MFD_EXEC refused, every memfd sealed against exec), so a program
    // cannot write code into one and execve it through /proc/self/fd. The
    // kernel lets only a caller that is root on the host write this file;
    // for any other, the host's own setting (inherited) stands, and
    // docs/sandbox.md says what that leaves open.
    let _ = sys::write_proc_file(c"/proc/sys/vm/memfd_noexec", b"2");
    // Not dumpable: the program (uid-equal but without capabilities) cannot
    // open /proc/1/fd, /proc/1/environ or ptrace init.
    check(
        channel,
        Step::Dumpable,
        0,
        nix::sys::prctl::set_dumpable(false),
    );
    let mut opened = Opened { workspace: -1 };
    for (index, op) in plan.ops.iter().enumerate() {
        if let Err(errno) = run_op(op, &mut opened) {
            report(channel, Kind::Op, index as u32, errno as i64);
            sys::exit_now(126);
        }
    }
    if opened.workspace >= 0 {
        close(opened.workspace);
    }
    add_child_rules(plan, channel);
    supervise(plan, channel)
}

fn wait_for_go(channel: Channel) {
    if sys::read_byte(channel.go) != Ok(true) {
        fail(channel, Step::ParentGone, 0, Errno::ESRCH);
    }
}

/// Joins the sandbox's v1 groups: init writes `0`, itself, into each
/// group's `tasks` file, opened by Chock (the kernel checks the opener's
/// credentials). Moving the calling thread is the one move the kernel makes
/// without its global threadgroup lock, whose writer waits for an RCU grace
/// period; init has one thread, so that thread is the process, and the
/// program, forked later, starts in the groups.
fn join_cgroups(plan: &ChildPlan, channel: Channel) {
    for (index, &fd) in plan.cgroup_tasks.iter().enumerate() {
        if fd >= 0 {
            check(
                channel,
                Step::JoinCgroup,
                index as u32,
                sys::write_all(fd, b"0"),
            );
            close(fd);
        }
    }
}

/// The parent keeps its end of `go` open while it lives; a hang-up now means
/// it died before PR_SET_PDEATHSIG was in place.
fn parent_still_there(channel: Channel) {
    if sys::hung_up(channel.go) {
        fail(channel, Step::ParentGone, 0, Errno::ESRCH);
    }
}

fn connect_stdio(plan: &ChildPlan, channel: Channel) {
    for (target, source) in plan.stdio.iter().enumerate() {
        if let Some(fd) = *source {
            check(
                channel,
                Step::Stdio,
                target as u32,
                sys::dup_onto(fd, target as RawFd),
            );
        }
    }
}

fn write_id_maps(plan: &ChildPlan, channel: Channel) {
    check(
        channel,
        Step::Setgroups,
        0,
        sys::write_proc_file(c"/proc/self/setgroups", b"deny"),
    );
    check(
        channel,
        Step::UidMap,
        0,
        sys::write_proc_file(c"/proc/self/uid_map", &plan.uid_map),
    );
    check(
        channel,
        Step::GidMap,
        0,
        sys::write_proc_file(c"/proc/self/gid_map", &plan.gid_map),
    );
}

fn mount(
    source: Option<&CStr>,
    target: &CStr,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
    data: Option<&CStr>,
) -> Result<(), Errno> {
    nix::mount::mount(
        source,
        target,
        fstype,
        nix::mount::MsFlags::from_bits_retain(flags),
        data,
    )
}

fn ignore_exists(result: Result<(), Errno>) -> Result<(), Errno> {
    match result {
        Err(Errno::EEXIST) => Ok(()),
        other => other,
    }
}

/// Descriptors the mount steps keep between them.
struct Opened {
    /// The workspace as mounted inside ([`Op::OpenWorkspace`]).
    workspace: RawFd,
}

/// A held path that can no longer be opened the way Chock opened it (gone,
/// or a link now on its way) is another object than the one checked.
fn as_changed(errno: Errno) -> Errno {
    match errno {
        Errno::ENOENT | Errno::ENOTDIR | Errno::ELOOP | Errno::EXDEV => Errno::ESTALE,
        other => other,
    }
}

/// The options of an overlay mount, written without allocating: each layer
/// named as `/proc/self/fd/N` of a descriptor already checked.
pub(crate) struct OverlayData {
    bytes: [u8; 160],
    len: usize,
}

impl OverlayData {
    pub(crate) fn new() -> OverlayData {
        OverlayData {
            bytes: [0; 160],
            len: 0,
        }
    }

    pub(crate) fn push(&mut self, text: &[u8]) {
        for byte in text {
            if let Some(slot) = self.bytes.get_mut(self.len) {
                *slot = *byte;
            }
            self.len += 1;
        }
    }

    pub(crate) fn fd(&mut self, fd: RawFd) {
        self.push(b"/proc/self/fd/");
        let mut digits = [0u8; 10];
        let (mut n, mut at) = (fd.unsigned_abs(), digits.len());
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 || at == 0 {
                break;
            }
        }
        self.push(&digits[at..]);
    }

    /// The options as a C string; `ENAMETOOLONG` if they did not fit.
    pub(crate) fn finish(&mut self) -> Result<&CStr, Errno> {
        if self.len >= self.bytes.len() {
            return Err(Errno::ENAMETOOLONG);
        }
        self.bytes[self.len] = 0;
        CStr::from_bytes_with_nul(&self.bytes[..=self.len]).map_err(|_| Errno::EINVAL)
    }
}

/// Refuses an object that is not the one Chock checked (`ESTALE`).
fn same_object(fd: RawFd, id: sys::FileId) -> Result<(), Errno> {
    if sys::file_id(fd)? == id {
        Ok(())
    } else {
        Err(Errno::ESTALE)
    }
}

/// Copies the mount tree at `source` (a descriptor, checked to be `id`),
/// gives the copy `set`, and attaches it over `target` (a descriptor).
fn bind_fd(source: RawFd, id: sys::FileId, target: RawFd, set: u64) -> Result<(), Errno> {
    same_object(source, id)?;
    let tree = sys::clone_tree(source)?;
    let attached = sys::mount_setattr_fd(tree, set).and_then(|()| sys::move_mount_fd(tree, target));
    close(tree);
    attached
}

fn run_op(op: &Op, opened: &mut Opened) -> Result<(), Errno> {
    match op {
        Op::BindChecked {
            source,
            id,
            target,
            set,
        } => {
            let source = sys::open_path(libc::AT_FDCWD, source, false).map_err(as_changed)?;
            let bound = sys::open_path(libc::AT_FDCWD, target, false).and_then(|target| {
                let bound = bind_fd(source, *id, target, *set);
                close(target);
                bound
            });
            close(source);
            bound
        }
        Op::BindInto {
            source,
            id,
            rel,
            set,
            ..
        } => {
            let source = sys::open_path(libc::AT_FDCWD, source, false).map_err(as_changed)?;
            let bound = sys::open_path(opened.workspace, rel, true)
                .map_err(as_changed)
                .and_then(|target| {
                    let bound = bind_fd(source, *id, target, *set);
                    close(target);
                    bound
                });
            close(source);
            bound
        }
        Op::Cover {
            rel, id, notice, ..
        } => {
            let target = sys::open_path(opened.workspace, rel, true).map_err(as_changed)?;
            let covered = same_object(target, *id).and_then(|()| {
                let notice = sys::open_path(libc::AT_FDCWD, notice, false)?;
                let bound = sys::file_id(notice)
                    .and_then(|own| bind_fd(notice, own, target, crate::mounts::READ_ONLY));
                close(notice);
                bound
            });
            close(target);
            covered
        }
        Op::Overlay {
            lower,
            lower_id,
            upper,
            upper_id,
            work,
            work_id,
            target,
        } => {
            let mut layers = [-1; 3];
            let opened = [(lower, lower_id), (upper, upper_id), (work, work_id)]
                .iter()
                .zip(layers.iter_mut())
                .try_for_each(|((path, id), fd)| {
                    *fd = sys::open_path(libc::AT_FDCWD, path, false).map_err(as_changed)?;
                    same_object(*fd, **id)
                });
            let mut data = OverlayData::new();
            let mounted = opened.and_then(|()| {
                data.push(b"lowerdir=");
                data.fd(layers[0]);
                data.push(b",upperdir=");
                data.fd(layers[1]);
                data.push(b",workdir=");
                data.fd(layers[2]);
                data.push(b",userxattr");
                mount(
                    Some(c"overlay"),
                    target,
                    Some(c"overlay"),
                    libc::MS_NOSUID | libc::MS_NODEV,
                    Some(data.finish()?),
                )
            });
            for fd in layers.into_iter().filter(|fd| *fd >= 0) {
                close(fd);
            }
            mounted
        }
        Op::OpenWorkspace { path } => {
            opened.workspace = sys::open_path(libc::AT_FDCWD, path, false)?;
            Ok(())
        }
        Op::Hold { rel, id, set, .. } => {
            let held = sys::open_path(opened.workspace, rel, true).map_err(as_changed)?;
            let bound = bind_fd(held, *id, held, *set);
            close(held);
            bound
        }
        Op::MakePrivate => mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE, None),
        Op::Tmpfs {
            target,
            data,
            flags,
        } => mount(Some(c"tmpfs"), target, Some(c"tmpfs"), *flags, Some(data)),
        Op::MkDir { path } => ignore_exists(nix::unistd::mkdir(
            path.as_c_str(),
            Mode::from_bits_truncate(0o755),
        )),
        Op::MkFile { path } => nix::fcntl::open(
            path.as_c_str(),
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW,
            Mode::from_bits_truncate(0o444),
        )
        .map(drop),
        Op::Bind {
            source,
            target,
            optional,
        } => {
            match mount(
                Some(source),
                target,
                None,
                libc::MS_BIND | libc::MS_REC,
                None,
            ) {
                Err(Errno::ENOENT) if *optional => Ok(()),
                other => other,
            }
        }
        Op::SetAttr {
            path,
            set,
            recursive,
        } => sys::mount_setattr(path, *set, *recursive),
        Op::Symlink { target, link } => ignore_exists(nix::unistd::symlinkat(
            target.as_c_str(),
            nix::fcntl::AT_FDCWD,
            link.as_c_str(),
        )),
        Op::WriteFile {
            path,
            contents,
            mode,
        } => {
            let file = nix::fcntl::open(
                path.as_c_str(),
                OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC | OFlag::O_CLOEXEC,
                Mode::from_bits_truncate(*mode),
            )?;
            sys::write_all(file.as_raw_fd(), contents)
        }
        Op::Proc { target } => mount(
            Some(c"proc"),
            target,
            Some(c"proc"),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC | libc::MS_RDONLY,
            None,
        ),
        Op::Devpts { target } => mount(
            Some(c"devpts"),
            target,
            Some(c"devpts"),
            libc::MS_NOSUID | libc::MS_NOEXEC,
            Some(c"newinstance,ptmxmode=0666,mode=620"),
        ),
        Op::MaskDirs { targets } => {
            // The first directory that exists gets the tmpfs; a bind
            // copies its read-only, nosuid, nodev and noexec flags.
            let mut empty: Option<&CStr> = None;
            for target in targets {
                let masked = match empty {
                    None => mount(
                        Some(c"tmpfs"),
                        target,
                        Some(c"tmpfs"),
                        libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                        Some(c"size=0,mode=0555"),
                    ),
                    Some(first) => mount(Some(first), target, None, libc::MS_BIND, None),
                };
                match masked {
                    Ok(()) => {
                        empty.get_or_insert(target);
                    }
                    Err(Errno::ENOENT) => {}
                    Err(errno) => return Err(errno),
                }
            }
            Ok(())
        }
        Op::PivotRoot { new_root, put_old } => {
            nix::unistd::pivot_root(new_root.as_c_str(), put_old.as_c_str())
        }
        Op::Chdir { path } => nix::unistd::chdir(path.as_c_str()),
        Op::Detach { path } => {
            nix::mount::umount2(path.as_c_str(), nix::mount::MntFlags::MNT_DETACH)
        }
        Op::RmDir { path } => nix::unistd::unlinkat(
            nix::fcntl::AT_FDCWD,
            path.as_c_str(),
            nix::unistd::UnlinkatFlags::RemoveDir,
        ),
        Op::LoopbackUp => sys::loopback_up(),
    }
}

fn add_child_rules(plan: &ChildPlan, channel: Channel) {
    for (index, (path, access)) in plan.child_rules.iter().enumerate() {
        let file = check(
            channel,
            Step::LandlockRule,
            index as u32,
            nix::fcntl::open(
                path.as_c_str(),
                OFlag::O_PATH | OFlag::O_CLOEXEC,
                Mode::empty(),
            ),
        );
        check(
            channel,
            Step::LandlockRule,
            index as u32,
            sys::landlock_add_path_rule(plan.ruleset, file.as_raw_fd(), *access),
        );
    }
}

/// Signals init passes on to the program's process group.
const FORWARDED: [Signal; 7] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGWINCH,
];

/// The signals init handles: those it forwards, and its children's ends.
fn handled_signals() -> SigSet {
    let mut set = SigSet::empty();
    for signal in FORWARDED.iter().chain(&[Signal::SIGCHLD]) {
        set.add(*signal);
    }
    set
}

fn supervise(plan: &ChildPlan, channel: Channel) -> ! {
    let set = handled_signals();
    // Blocked, so that they wait for init's sigtimedwait.
    check(
        channel,
        Step::Sigmask,
        0,
        sigprocmask(SigmaskHow::SIG_BLOCK, Some(&set), None),
    );
    // The parent has moved init into the sandbox's cgroup (if any) before
    // this second byte, so the program is born inside it.
    wait_for_go(channel);
    if let Some(dialer) = &plan.dialer {
        check(
            channel,
            Step::Fork,
            1,
            crate::publish::start(dialer, plan.last_cap),
        );
    }
    // The program process shares init's memory until it executes, as
    // `posix_spawn`'s does: init's pages are neither copied nor marked
    // copy-on-write for a process that replaces them at once.
    // `run_program` makes only system calls and writes nothing but its own
    // stack and errno, which init does not read after a successful spawn.
    let start = ProgramStart { plan, channel };
    let program = check(
        channel,
        Step::Fork,
        0,
        sys::child::spawn_sharing(&start, program_entry),
    );
    close(plan.ruleset);
    if let Some(direct) = &plan.direct {
        close(direct.sock);
    }
    let mut floor = FloorWatch::new(plan.watched);
    loop {
        floor.check(channel);
        let Some(signal) = sys::child::wait_signal(&set, &floor.timeout()) else {
            continue;
        };
        if signal != Signal::SIGCHLD {
            forward(program, signal);
            continue;
        }
        while let Some((pid, status)) = sys::child::reap_any() {
            if pid == program {
                report(channel, Kind::Status, 0, i64::from(status));
                sys::exit_now(0);
            }
        }
    }
}

/// Signals the program's process group, or the program alone if it left
/// its group.
fn forward(program: libc::pid_t, signal: Signal) {
    if kill(Pid::from_raw(-program), signal).is_err() {
        let _ = kill(Pid::from_raw(program), signal);
    }
}

/// How often init looks at the free space while the program runs.
const FLOOR_POLL_MS: i64 = 5;

/// Init's watch on the free space of the host file systems the sandbox
/// writes: below [`crate::spawn::FREE_SPACE_FLOOR`] it says so on the
/// report pipe and kills every other process of the sandbox (init alone
/// cannot be killed from inside); the program's death by SIGKILL is then
/// reported as any other end.
struct FloorWatch {
    watched: [RawFd; 2],
    /// When to look next (monotonic milliseconds); `None` once tripped.
    next: Option<i64>,
}

impl FloorWatch {
    fn new(watched: [RawFd; 2]) -> FloorWatch {
        FloorWatch {
            watched,
            next: Some(sys::monotonic_millis() + FLOOR_POLL_MS),
        }
    }

    /// Looks when it is time: however many signals wake init, the free
    /// space is looked at every [`FLOOR_POLL_MS`].
    fn check(&mut self, channel: Channel) {
        let Some(next) = self.next else { return };
        let now = sys::monotonic_millis();
        if now < next {
            return;
        }
        let below = self.watched.iter().any(|fd| {
            sys::free_bytes(*fd).is_some_and(|free| free < crate::spawn::FREE_SPACE_FLOOR)
        });
        if !below {
            self.next = Some(now + FLOOR_POLL_MS);
            return;
        }
        self.next = None;
        report(channel, Kind::SpaceFloor, 0, 0);
        // From init, -1 is every other process of its PID namespace.
        let _ = kill(Pid::from_raw(-1), Signal::SIGKILL);
    }

    /// How long init may wait for a signal before it must look again
    /// (once tripped, a second: only the program's end is awaited).
    fn timeout(&self) -> libc::timespec {
        match self.next {
            Some(next) => libc::timespec {
                tv_sec: 0,
                tv_nsec: (next - sys::monotonic_millis()).clamp(0, FLOOR_POLL_MS) * 1_000_000,
            },
            None => libc::timespec {
                tv_sec: 1,
                tv_nsec: 0,
            },
        }
    }
}

/// What the program process starts from.
struct ProgramStart<'p> {
    plan: &'p ChildPlan,
    channel: Channel,
}

/// The program process's first function, on a stack of its own.
fn program_entry(start: &ProgramStart<'_>) -> ! {
    run_program(start.plan, start.channel)
}

fn run_program(plan: &ChildPlan, channel: Channel) -> ! {
    // The host file systems' descriptors are init's alone: not even a
    // probe run in place of a program holds them.
    for fd in plan.watched {
        close(fd);
    }
    check(
        channel,
        Step::Sigmask,
        0,
        sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None),
    );
    for signal in FORWARDED.iter().chain(&[Signal::SIGPIPE]) {
        sys::child::default_action(*signal);
    }
    // Its own process group, so init can signal the whole job.
    let this = Pid::from_raw(0);
    check(channel, Step::Setpgid, 0, nix::unistd::setpgid(this, this));
    check(
        channel,
        Step::NoNewPrivs,
        0,
        nix::sys::prctl::set_no_new_privs(),
    );
    check(
        channel,
        Step::LandlockRestrict,
        0,
        sys::landlock_restrict_self(plan.ruleset),
    );
    close(plan.ruleset);
    if let Err((step, errno)) = caps::drop_all(plan.last_cap) {
        let step = match step {
            CapStep::Securebits => Step::Securebits,
            CapStep::Bounding => Step::Bounding,
            CapStep::Ambient => Step::Ambient,
            CapStep::Capset => Step::Capset,
        };
        fail(channel, step, 0, errno);
    }
    for (index, (resource, limit)) in plan.rlimits.iter().enumerate() {
        check(
            channel,
            Step::Rlimit,
            index as u32,
            nix::sys::resource::setrlimit(*resource, limit.rlim_cur, limit.rlim_max),
        );
    }
    check(
        channel,
        Step::Chdir,
        0,
        nix::unistd::chdir(plan.cwd.as_c_str()),
    );
    check(channel, Step::CloseRange, 0, sys::close_range_cloexec(3));
    if let Some(direct) = &plan.direct {
        let listener = check(
            channel,
            Step::DirectPath,
            0,
            sys::notify::install_listener(&direct.filter),
        );
        check(
            channel,
            Step::DirectPath,
            1,
            sys::send_fd(direct.sock, listener),
        );
        close(listener);
        close(direct.sock);
    }
    if seccompiler::apply_filter(&plan.seccomp).is_err() {
        fail(channel, Step::Seccomp, 0, Errno::last());
    }
    match &plan.payload {
        Payload::Exec(args) => exec(args, channel),
        Payload::Probe(probe) => {
            let value = probe();
            report(channel, Kind::Probe, 0, value);
            sys::exit_now(0)
        }
    }
}

fn exec(args: &ExecArgs, channel: Channel) -> ! {
    let errno = sys::child::execve(args);
    report(channel, Kind::Exec, 0, errno as i64);
    sys::exit_now(127)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlay_options_name_each_layer_by_descriptor_and_never_overflow() {
        let mut data = OverlayData::new();
        data.push(b"lowerdir=");
        data.fd(0);
        data.push(b",upperdir=");
        data.fd(7);
        data.push(b",workdir=");
        data.fd(1234567);
        assert_eq!(
            data.finish().map(CStr::to_bytes),
            Ok(
                &b"lowerdir=/proc/self/fd/0,upperdir=/proc/self/fd/7,workdir=/proc/self/fd/1234567"
                    [..]
            )
        );
        let mut long = OverlayData::new();
        for _ in 0..20 {
            long.fd(i32::MAX);
        }
        assert_eq!(long.finish().map(drop), Err(Errno::ENAMETOOLONG));
    }

    #[test]
    fn records_round_trip_and_a_torn_tail_is_dropped() {
        let records = [
            Record {
                kind: Kind::Op,
                index: 7,
                value: libc::EPERM as i64,
            },
            Record {
                kind: Kind::Status,
                index: 0,
                value: 256,
            },
        ];
        let mut bytes: Vec<u8> = records.iter().flat_map(|r| r.encode()).collect();
        bytes.extend_from_slice(&[1, 2, 3]);
        assert_eq!(Record::decode_all(&bytes), records);
    }

    #[test]
    fn every_step_code_decodes_to_itself() {
        for step in Step::ALL {
            assert_eq!(Step::from_code(step as u32 | (5 << 16)), Some(step));
        }
        assert_eq!(Step::from_code(999), None);
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_on_the_report_pipe_decode_without_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let records = Record::decode_all(&bytes);
            proptest::prop_assert!(records.len() <= bytes.len() / RECORD_LEN);
        }
    }
}
