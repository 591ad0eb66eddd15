//! The sandbox's one syscall layer beside nix: every call nix does not wrap
//! the way we need it, each as one safe function, and the only place in the
//! crate with `unsafe`. Clone with a pidfd and no new stack (and `clone3`
//! into a cgroup) behind [`fork_running`] and [`fork_with_pidfd`], a process
//! started sharing memory until it executes, the Landlock calls on a
//! ruleset fd, `mount_setattr`, `close_range`, `pidfd_send_signal`,
//! capabilities, signal actions and the doctor's probes; in [`child`], those
//! only a sandbox's init and program processes make (signals, reaping,
//! `execve`); in [`notify`], those of the router's direct path (seccomp
//! notifications, `pidfd_getfd`, socket options).
//!
//! Where nix makes a call safely without allocating (a path given as a
//! `CStr`, a descriptor it is lent), nix's function is used, here and in the
//! callers. A call stays raw when nix lacks it, takes the descriptor only as
//! an owned or borrowed one where the caller holds a raw number, or would
//! allocate (nix builds `execve`'s arrays, and a `Path`'s C string, on the
//! heap).
//!
//! The calls made between `clone` and `execve` in a child of a process that
//! may have had other threads allocate nothing and take no lock: only the
//! system call and its errno. Syscall numbers from 424 on are the same on
//! every architecture Linux has, which is why they are spelled out here
//! instead of taken from libc (which lacks some of them on some targets).

use std::ffi::CStr;
use std::os::fd::RawFd;

use nix::errno::Errno;

pub(crate) mod child;
pub(crate) mod notify;

const SYS_PIDFD_SEND_SIGNAL: libc::c_long = 424;
const SYS_CLONE3: libc::c_long = 435;
const SYS_CLOSE_RANGE: libc::c_long = 436;
const SYS_OPEN_TREE: libc::c_long = 428;
const SYS_MOVE_MOUNT: libc::c_long = 429;
const SYS_FSOPEN: libc::c_long = 430;
const SYS_FSCONFIG: libc::c_long = 431;
const SYS_FSMOUNT: libc::c_long = 432;
const SYS_OPENAT2: libc::c_long = 437;
const SYS_MOUNT_SETATTR: libc::c_long = 442;
const SYS_LANDLOCK_CREATE_RULESET: libc::c_long = 444;
const SYS_LANDLOCK_ADD_RULE: libc::c_long = 445;
const SYS_LANDLOCK_RESTRICT_SELF: libc::c_long = 446;

/// `mount_setattr` attribute bits (linux/mount.h).
pub(crate) const MOUNT_ATTR_RDONLY: u64 = 0x1;
pub(crate) const MOUNT_ATTR_NOSUID: u64 = 0x2;
pub(crate) const MOUNT_ATTR_NODEV: u64 = 0x4;
pub(crate) const MOUNT_ATTR_NOEXEC: u64 = 0x8;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const AT_EMPTY_PATH: libc::c_uint = 0x1000;
const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;
const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
const RESOLVE_NO_SYMLINKS: u64 = 0x04;
const RESOLVE_BENEATH: u64 = 0x08;

const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;
const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;

fn result(ret: libc::c_long) -> Result<libc::c_long, Errno> {
    if ret < 0 { Err(Errno::last()) } else { Ok(ret) }
}

/// The kernel's Landlock ABI version, or the errno that says why there is none
/// (`ENOSYS`: not built in; `EOPNOTSUPP`: built in but disabled at boot).
pub fn landlock_abi() -> Result<i32, Errno> {
    // SAFETY: with a null attribute and size 0 this call only reports the version.
    let ret = unsafe {
        libc::syscall(
            SYS_LANDLOCK_CREATE_RULESET,
            std::ptr::null::<u8>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    result(ret).map(|v| i32::try_from(v).unwrap_or(i32::MAX))
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// Adds one path-beneath rule to a ruleset; `dir_fd` is an `O_PATH` descriptor.
pub(crate) fn landlock_add_path_rule(
    ruleset: RawFd,
    dir_fd: RawFd,
    access: u64,
) -> Result<(), Errno> {
    let attr = PathBeneathAttr {
        allowed_access: access,
        parent_fd: dir_fd,
    };
    // SAFETY: `attr` lives across the call and has the layout the kernel reads.
    let ret = unsafe {
        libc::syscall(
            SYS_LANDLOCK_ADD_RULE,
            ruleset,
            LANDLOCK_RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0u32,
        )
    };
    result(ret).map(drop)
}

pub(crate) fn landlock_restrict_self(ruleset: RawFd) -> Result<(), Errno> {
    // SAFETY: plain syscall on a descriptor we own.
    let ret = unsafe { libc::syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0u32) };
    result(ret).map(drop)
}

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Sets mount attributes on the mount at `path` (and every mount beneath it
/// when `recursive`). Unlike a `MS_REMOUNT`, this only adds the bits given, so
/// flags locked by a more privileged namespace never have to be repeated.
pub(crate) fn mount_setattr(path: &CStr, set: u64, recursive: bool) -> Result<(), Errno> {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    let flags = if recursive { AT_RECURSIVE } else { 0 };
    // SAFETY: `path` is NUL-terminated and `attr` has the kernel's layout.
    let ret = unsafe {
        libc::syscall(
            SYS_MOUNT_SETATTR,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    result(ret).map(drop)
}

#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// What a file is, as the kernel names it: the same pair means the same
/// object, whatever path led to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileId {
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    /// `S_IFMT` bits of the mode.
    pub(crate) kind: u32,
}

/// The identity of an open descriptor (`fstat`).
pub(crate) fn file_id(fd: RawFd) -> Result<FileId, Errno> {
    // SAFETY: stat is plain data; fstat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above, on a descriptor the caller owns.
    result(unsafe { libc::fstat(fd, &mut st) }.into())?;
    Ok(FileId {
        dev: st.st_dev,
        ino: st.st_ino,
        kind: st.st_mode & libc::S_IFMT,
    })
}

/// Whether the folder `path` (on the host, no link followed) is marked
/// opaque in an overlay's upper layer (`user.overlay.opaque` is `y`, as
/// overlayfs mounted with `userxattr` writes it): it hides the lower
/// layer's folder whole.
pub(crate) fn overlay_opaque(path: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    let mut value = [0u8; 2];
    // SAFETY: NUL-terminated path and name; the kernel writes at most
    // `value.len()` bytes into `value`.
    let len = unsafe {
        libc::lgetxattr(
            path.as_ptr(),
            c"user.overlay.opaque".as_ptr(),
            value.as_mut_ptr().cast(),
            value.len(),
        )
    };
    len == 1 && value[0] == b'y'
}

/// Opens `path` as an `O_PATH` descriptor with `openat2`, resolving no
/// symbolic link on the way (a last component that is one gives a
/// descriptor of the link itself, which the caller's identity check
/// refuses), and, with `beneath`, never leaving `dir`. Used for every path
/// a mount takes from the workspace: it is resolved once, here, and the
/// descriptor is what gets checked and bound.
pub(crate) fn open_path(dir: RawFd, path: &CStr, beneath: bool) -> Result<RawFd, Errno> {
    let how = OpenHow {
        flags: (libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: RESOLVE_NO_SYMLINKS
            | RESOLVE_NO_MAGICLINKS
            | if beneath { RESOLVE_BENEATH } else { 0 },
    };
    // SAFETY: `path` is NUL-terminated and `how` has the kernel's layout.
    let ret = unsafe {
        libc::syscall(
            SYS_OPENAT2,
            dir,
            path.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    result(ret).map(|fd| fd as RawFd)
}

/// Writes `contents` to the file `path` (a `/proc` file of this process:
/// its id maps, `setgroups`). Allocation-free.
pub(crate) fn write_proc_file(path: &CStr, contents: &[u8]) -> Result<(), Errno> {
    // nix takes a `CStr` as it is, with no copy.
    let file = nix::fcntl::open(
        path,
        nix::fcntl::OFlag::O_WRONLY | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )?;
    write_all(std::os::fd::AsRawFd::as_raw_fd(&file), contents)
}

const FSOPEN_CLOEXEC: libc::c_uint = 1;
const FSMOUNT_CLOEXEC: libc::c_uint = 1;
const FSCONFIG_SET_FLAG: libc::c_uint = 0;
const FSCONFIG_SET_STRING: libc::c_uint = 1;
const FSCONFIG_CMD_CREATE: libc::c_uint = 6;

/// Which step of [`detached_overlay`] failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OverlayStep {
    Open = 1,
    Option = 2,
    Create = 3,
    Mount = 4,
}

/// A detached overlayfs (`fsopen`, `fsconfig`, `fsmount`), attached to no
/// mount namespace: each `(key, value)` of `options` set as a string, each
/// of `flags` as a flag, the mount given `attrs`. Its descriptor is the
/// mount's root; the mount lives as long as a descriptor of it does.
/// Allocation-free, for a child of a threaded process.
pub(crate) fn detached_overlay(
    options: &[(&CStr, &CStr)],
    flags: &[&CStr],
    attrs: u64,
) -> Result<RawFd, (OverlayStep, Errno)> {
    // SAFETY: a NUL-terminated file system name and a flag.
    let fs = unsafe { libc::syscall(SYS_FSOPEN, c"overlay".as_ptr(), FSOPEN_CLOEXEC) };
    let fs = result(fs).map_err(|e| (OverlayStep::Open, e))? as RawFd;
    let configured = (|| {
        for (key, value) in options {
            // SAFETY: NUL-terminated key and value on the fs context `fs`.
            let ret = unsafe {
                libc::syscall(
                    SYS_FSCONFIG,
                    fs,
                    FSCONFIG_SET_STRING,
                    key.as_ptr(),
                    value.as_ptr(),
                    0,
                )
            };
            result(ret).map_err(|e| (OverlayStep::Option, e))?;
        }
        for flag in flags {
            // SAFETY: a NUL-terminated key with no value.
            let ret = unsafe {
                libc::syscall(
                    SYS_FSCONFIG,
                    fs,
                    FSCONFIG_SET_FLAG,
                    flag.as_ptr(),
                    std::ptr::null::<libc::c_char>(),
                    0,
                )
            };
            result(ret).map_err(|e| (OverlayStep::Option, e))?;
        }
        // SAFETY: no key or value: the context is made into a superblock.
        let ret = unsafe {
            libc::syscall(
                SYS_FSCONFIG,
                fs,
                FSCONFIG_CMD_CREATE,
                std::ptr::null::<libc::c_char>(),
                std::ptr::null::<libc::c_char>(),
                0,
            )
        };
        result(ret).map_err(|e| (OverlayStep::Create, e))?;
        // SAFETY: the fs context, flags and mount attributes.
        let ret = unsafe { libc::syscall(SYS_FSMOUNT, fs, FSMOUNT_CLOEXEC, attrs) };
        result(ret)
            .map(|fd| fd as RawFd)
            .map_err(|e| (OverlayStep::Mount, e))
    })();
    close(fs);
    configured
}

/// A detached copy of the mount tree at `fd` (`open_tree(OPEN_TREE_CLONE)`,
/// recursive), to be given attributes and attached with [`move_mount_fd`].
pub(crate) fn clone_tree(fd: RawFd) -> Result<RawFd, Errno> {
    // SAFETY: an empty NUL-terminated path with AT_EMPTY_PATH names `fd` itself.
    let ret = unsafe {
        libc::syscall(
            SYS_OPEN_TREE,
            fd,
            c"".as_ptr(),
            OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | AT_RECURSIVE | AT_EMPTY_PATH,
        )
    };
    result(ret).map(|fd| fd as RawFd)
}

/// Sets mount attributes on the detached tree `fd` and every mount in it.
pub(crate) fn mount_setattr_fd(fd: RawFd, set: u64) -> Result<(), Errno> {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: empty path with AT_EMPTY_PATH names `fd`; `attr` has the kernel's layout.
    let ret = unsafe {
        libc::syscall(
            SYS_MOUNT_SETATTR,
            fd,
            c"".as_ptr(),
            AT_EMPTY_PATH | AT_RECURSIVE,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    result(ret).map(drop)
}

/// Attaches the detached tree `tree` over the object `target` names: both
/// are descriptors, so no path is walked again.
pub(crate) fn move_mount_fd(tree: RawFd, target: RawFd) -> Result<(), Errno> {
    // SAFETY: empty paths with the EMPTY_PATH flags name the two descriptors.
    let ret = unsafe {
        libc::syscall(
            SYS_MOVE_MOUNT,
            tree,
            c"".as_ptr(),
            target,
            c"".as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
        )
    };
    result(ret).map(drop)
}

/// Bytes an unprivileged user may still write on the file system of `fd`
/// (what `statvfs` calls `f_bavail` blocks of `f_frsize` bytes), or `None`
/// when the kernel would not say. Allocation-free, for init's free-space
/// watch: `fstatfs` directly, because glibc's `fstatvfs` may read
/// `/proc/mounts`.
pub(crate) fn free_bytes(fd: RawFd) -> Option<u64> {
    // SAFETY: statfs is plain data that the kernel fills.
    let mut stat: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `stat` is a live local the call writes.
    if unsafe { libc::fstatfs(fd, &mut stat) } < 0 {
        return None;
    }
    let fragment = if stat.f_frsize > 0 {
        stat.f_frsize
    } else {
        stat.f_bsize
    };
    let fragment = u64::try_from(fragment).ok()?;
    Some(stat.f_bavail.saturating_mul(fragment))
}

/// The monotonic clock in milliseconds (allocation-free, for init).
pub(crate) fn monotonic_millis() -> i64 {
    // SAFETY: timespec is plain data that the kernel fills.
    let mut now: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: `now` is a live local the call writes; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec.saturating_mul(1000) + now.tv_nsec / 1_000_000
}

/// Whether `fd` becomes readable (a pidfd: its process ended) within `timeout`.
pub(crate) fn readable_within(fd: RawFd, timeout: std::time::Duration) -> bool {
    let mut pollfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let millis = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: one pollfd that lives across the call.
    let n = unsafe { libc::poll(&mut pollfd, 1, millis) };
    n > 0 && pollfd.revents != 0
}

/// Takes ownership of a descriptor the kernel just returned (from
/// [`open_path`]), so it is closed when dropped.
pub(crate) fn owned(fd: RawFd) -> std::os::fd::OwnedFd {
    use std::os::fd::FromRawFd;
    // SAFETY: `fd` was just returned by the kernel to this process and has no other owner.
    unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }
}

/// Closes a descriptor this process owns (allocation-free, for the child).
pub(crate) fn close(fd: RawFd) {
    let _ = nix::unistd::close(fd);
}

/// Marks every descriptor from `first` up close-on-exec, so nothing the
/// caller of Chock inherited reaches the sandboxed program.
pub(crate) fn close_range_cloexec(first: u32) -> Result<(), Errno> {
    // SAFETY: plain syscall.
    let ret = unsafe { libc::syscall(SYS_CLOSE_RANGE, first, u32::MAX, CLOSE_RANGE_CLOEXEC) };
    result(ret).map(drop)
}

/// Closes every descriptor from 3 up except those in `keep`: the sandbox's
/// first process keeps nothing Chock had open (another sandbox's pipes
/// among them, when a caller runs several at once), so a pipe's reader sees
/// its end when the program that writes it ends.
pub(crate) fn close_all_but(keep: &[RawFd]) -> Result<(), Errno> {
    let mut first: u32 = 3;
    let mut sorted = [RawFd::MAX; 8];
    for (slot, fd) in sorted.iter_mut().zip(keep) {
        *slot = *fd;
    }
    sorted.sort_unstable();
    for &fd in sorted.iter().filter(|fd| **fd >= 3 && **fd != RawFd::MAX) {
        let fd = fd as u32;
        if fd > first {
            // SAFETY: plain syscall over descriptors this process owns.
            result(unsafe { libc::syscall(SYS_CLOSE_RANGE, first, fd - 1, 0u32) })?;
        }
        first = first.max(fd + 1);
    }
    // SAFETY: as above.
    result(unsafe { libc::syscall(SYS_CLOSE_RANGE, first, u32::MAX, 0u32) }).map(drop)
}

/// Sends a signal through a pidfd, so a pid reused after the sandbox ended can
/// never receive it. Async-signal-safe.
pub(crate) fn pidfd_send_signal(pidfd: RawFd, signal: libc::c_int) -> Result<(), Errno> {
    // SAFETY: plain syscall; a null siginfo means "as kill(2) would".
    let ret = unsafe {
        libc::syscall(
            SYS_PIDFD_SEND_SIGNAL,
            pidfd,
            signal,
            std::ptr::null::<libc::siginfo_t>(),
            0u32,
        )
    };
    result(ret).map(drop)
}

/// `clone(2)` with fork semantics (no new stack): returns 0 in the child and
/// the child's pid in the parent. With `pidfd`, the kernel also hands the
/// parent a pidfd for the child (`CLONE_PIDFD`).
///
/// # Safety
/// The child shares nothing with the parent but a copy of its memory; if the
/// parent had other threads, the child must only make system calls (no
/// allocation, no locks) until it calls `execve` or `_exit`.
pub(crate) unsafe fn clone_process(
    flags: libc::c_int,
    pidfd: Option<&mut RawFd>,
) -> Result<libc::pid_t, Errno> {
    let mut flags = flags as libc::c_ulong | libc::SIGCHLD as libc::c_ulong;
    let pidfd_ptr = match pidfd {
        Some(fd) => {
            flags |= libc::CLONE_PIDFD as libc::c_ulong;
            fd as *mut RawFd
        }
        None => std::ptr::null_mut(),
    };
    // SAFETY: a null stack gives fork semantics; the argument order of
    // (flags, stack, parent_tid, ...) is the same on x86_64 and aarch64 for the
    // first three arguments, and CLONE_PIDFD writes through parent_tid.
    let ret = unsafe { libc::syscall(libc::SYS_clone, flags, 0usize, pidfd_ptr, 0usize, 0usize) };
    result(ret).map(|pid| pid as libc::pid_t)
}

/// The stack of a process started by [`spawn_sharing_memory`]: its first
/// function runs on it until `execve`, which needs little (a few frames
/// and system calls), and a guard page below it faults rather than let an
/// overflow write into other memory.
const SHARED_SPAWN_STACK: usize = 256 << 10;

/// Starts a process that shares this one's memory until it calls `execve`
/// or `_exit`, as `posix_spawn` does (`clone` with `CLONE_VM` and
/// `CLONE_VFORK`): no page of this process is copied or marked
/// copy-on-write for a process that replaces its memory at once. It runs
/// `entry(arg)` on a stack of its own; this call returns, with its pid,
/// once it has executed or exited, and until then this thread waits.
/// Descriptors, signal dispositions, credentials and limits are the new
/// process's own, as after `fork`.
///
/// # Safety
/// `entry` must never return; until it executes or exits it may only make
/// system calls, and may write no memory but its stack (and `errno`, which
/// the caller must not read after a successful spawn). `arg` must stay
/// valid until this returns.
pub(crate) unsafe fn spawn_sharing_memory(
    entry: extern "C" fn(*mut libc::c_void) -> libc::c_int,
    arg: *mut libc::c_void,
) -> Result<libc::pid_t, Errno> {
    // SAFETY: sysconf only reads a value the loader recorded.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    let size = SHARED_SPAWN_STACK + page;
    // SAFETY: a new anonymous private mapping at an address the kernel
    // picks overlaps no memory in use.
    let stack = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if stack == libc::MAP_FAILED {
        return Err(Errno::last());
    }
    // SAFETY: the guard is the mapping's lowest page, used by nothing yet;
    // the stack grows down from the mapping's end, which is inside it.
    // `entry` and `arg` are as the caller promised; with CLONE_VFORK this
    // thread resumes only once the new process no longer uses the stack,
    // so unmapping it afterwards is sound.
    unsafe {
        let pid = if libc::mprotect(stack, page, libc::PROT_NONE) == 0 {
            libc::clone(
                entry,
                stack.cast::<u8>().add(size).cast(),
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                arg,
            )
        } else {
            -1
        };
        let errno = Errno::last();
        libc::munmap(stack, size);
        if pid < 0 { Err(errno) } else { Ok(pid) }
    }
}

/// `CLONE_INTO_CGROUP` (linux/sched.h, Linux 5.7).
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// `struct clone_args` up to its `cgroup` field (`CLONE_ARGS_SIZE_VER2`).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// [`clone_process`] with a pidfd, the child started in the cgroup v2
/// group whose directory `cgroup` is open (`clone3` with
/// `CLONE_INTO_CGROUP`): it is in the group from its first instruction and
/// no process is moved, where a move (a write to `cgroup.procs`) waits for
/// an RCU grace period, milliseconds on an idle machine. A kernel older
/// than 5.7 answers `ENOSYS`, `E2BIG` or `EINVAL`.
///
/// # Safety
/// As for [`clone_process`].
pub(crate) unsafe fn clone_process_into(
    flags: libc::c_int,
    pidfd: &mut RawFd,
    cgroup: RawFd,
) -> Result<libc::pid_t, Errno> {
    let args = CloneArgs {
        flags: flags as u64 | libc::CLONE_PIDFD as u64 | CLONE_INTO_CGROUP,
        pidfd: pidfd as *mut RawFd as u64,
        exit_signal: libc::SIGCHLD as u64,
        cgroup: cgroup as u64,
        ..CloneArgs::default()
    };
    // SAFETY: `args` is a live clone_args of the size passed; a zero stack
    // gives fork semantics, and the kernel writes the pidfd through the
    // pointer to the caller's RawFd.
    let ret = unsafe {
        libc::syscall(
            SYS_CLONE3,
            &args as *const CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    result(ret).map(|pid| pid as libc::pid_t)
}

/// Runs `child` in a new process made by [`clone_process`] with `flags`
/// and leaves that process with the code `child` returns; returns the
/// child's pid here.
///
/// `child` runs in a copy of a process that may have had other threads, so
/// it must only make system calls on data made before this call (no
/// allocation, no locks). Every child body in this crate is a short function
/// written to that rule, which the crate's review keeps.
pub(crate) fn fork_running(
    flags: libc::c_int,
    child: impl FnOnce() -> i32,
) -> Result<libc::pid_t, Errno> {
    // SAFETY: the child runs `child` alone, which keeps the rule above, and
    // leaves with `exit_now`, never returning into the parent's code.
    let pid = unsafe { clone_process(flags, None) }?;
    if pid == 0 {
        exit_now(child());
    }
    Ok(pid)
}

/// [`fork_running`] that also returns a pidfd for the child; with `cgroup`
/// (an open cgroup v2 directory) the child starts in that group
/// ([`clone_process_into`], whose `ENOSYS`, `E2BIG` or `EINVAL` on an old
/// kernel is returned as is). `child` keeps [`fork_running`]'s rule.
pub(crate) fn fork_with_pidfd(
    flags: libc::c_int,
    cgroup: Option<RawFd>,
    child: &impl Fn() -> i32,
) -> Result<(libc::pid_t, std::os::fd::OwnedFd), Errno> {
    let mut pidfd: RawFd = -1;
    // SAFETY: as in `fork_running`: the child runs `child` alone and leaves
    // with `exit_now`.
    let pid = unsafe {
        match cgroup {
            Some(dir) => clone_process_into(flags, &mut pidfd, dir),
            None => clone_process(flags, Some(&mut pidfd)),
        }
    }?;
    if pid == 0 {
        exit_now(child());
    }
    Ok((pid, owned(pidfd)))
}

/// Leaves the process at once, without running Rust or libc exit handlers
/// (which a forked child of a threaded parent must never run).
pub(crate) fn exit_now(code: i32) -> ! {
    // SAFETY: _exit never returns and touches no user-space state.
    unsafe { libc::_exit(code) }
}

/// Writes all of `bytes` to `fd`, retrying on EINTR; used for the report pipe
/// and for files the child creates.
pub(crate) fn write_all(fd: RawFd, mut bytes: &[u8]) -> Result<(), Errno> {
    while !bytes.is_empty() {
        // SAFETY: the pointer and length describe a live slice.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n < 0 {
            let errno = Errno::last();
            if errno == Errno::EINTR {
                continue;
            }
            return Err(errno);
        }
        bytes = bytes.get(n as usize..).unwrap_or_default();
    }
    Ok(())
}

/// A connected pair of `SOCK_SEQPACKET` Unix sockets (close-on-exec), for
/// the port dialer: one message per request and per reply.
pub(crate) fn seqpacket_pair() -> Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd), Errno> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
    socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
}

/// Reads one port request (two bytes, native order); `None` when the other
/// end is gone. Allocation-free.
pub(crate) fn recv_port(sock: RawFd) -> Option<u16> {
    let mut port = [0u8; 2];
    loop {
        // SAFETY: receiving into a two-byte local buffer.
        let n = unsafe { libc::recv(sock, port.as_mut_ptr().cast(), port.len(), 0) };
        if n < 0 && Errno::last() == Errno::EINTR {
            continue;
        }
        return (n == 2).then(|| u16::from_ne_bytes(port));
    }
}

/// Connects a new TCP socket to 127.0.0.1:`port` in the caller's network
/// namespace, waiting at most `timeout_ms`; the socket is left non-blocking.
/// Allocation-free.
pub(crate) fn dial_loopback(port: u16, timeout_ms: libc::c_int) -> Result<RawFd, Errno> {
    // SAFETY: plain socket call.
    let fd = unsafe {
        libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
        )
    };
    let fd = result(libc::c_long::from(fd))? as RawFd;
    let address = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be(),
        },
        sin_zero: [0; 8],
    };
    let connected = (|| {
        // SAFETY: the address is a live sockaddr_in of the size given.
        let ret = unsafe {
            libc::connect(
                fd,
                std::ptr::from_ref(&address).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        if ret == 0 {
            return Ok(());
        }
        if Errno::last() != Errno::EINPROGRESS {
            return Err(Errno::last());
        }
        let mut pollfd = libc::pollfd {
            fd,
            events: libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: one pollfd that lives across the call.
        if unsafe { libc::poll(&mut pollfd, 1, timeout_ms) } <= 0 {
            return Err(Errno::ETIMEDOUT);
        }
        let mut error: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: SO_ERROR writes one int into the local.
        let ret = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_ERROR,
                std::ptr::from_mut(&mut error).cast(),
                &mut len,
            )
        };
        result(libc::c_long::from(ret))?;
        if error == 0 {
            Ok(())
        } else {
            Err(Errno::from_raw(error))
        }
    })();
    match connected {
        Ok(()) => Ok(fd),
        Err(errno) => {
            close(fd);
            Err(errno)
        }
    }
}

/// Space for one descriptor in a control message (`CMSG_SPACE(4)` on
/// every 64-bit target; 16 on 32-bit ones, which fits as well).
const ONE_FD_SPACE: usize = 24;

/// A message over `bytes` with room for one descriptor in `control`.
fn one_fd_message(iov: &mut libc::iovec, control: &mut [u64; ONE_FD_SPACE / 8]) -> libc::msghdr {
    // SAFETY: msghdr is plain data; zeroed is a valid value.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = iov;
    message.msg_iovlen = 1;
    message.msg_control = control.as_mut_ptr().cast();
    message.msg_controllen = std::mem::size_of_val(control) as _;
    message
}

fn iovec(bytes: &mut [u8]) -> libc::iovec {
    libc::iovec {
        iov_base: bytes.as_mut_ptr().cast(),
        iov_len: bytes.len(),
    }
}

/// Sends a reply: `status` (0, or the errno of a failed dial) and, with it,
/// the connected descriptor. Allocation-free.
pub(crate) fn send_reply(sock: RawFd, status: i32, fd: Option<RawFd>) -> Result<(), Errno> {
    let mut bytes = status.to_ne_bytes();
    let mut iov = iovec(&mut bytes);
    let mut control = [0u64; ONE_FD_SPACE / 8];
    let mut message = one_fd_message(&mut iov, &mut control);
    match fd {
        // SAFETY: the control buffer holds one descriptor's message and is
        // aligned for cmsghdr (u64 storage).
        Some(fd) => unsafe {
            message.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as _;
            let header = libc::CMSG_FIRSTHDR(&message);
            (*header).cmsg_level = libc::SOL_SOCKET;
            (*header).cmsg_type = libc::SCM_RIGHTS;
            (*header).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(header).cast::<RawFd>(), fd);
        },
        None => {
            message.msg_control = std::ptr::null_mut();
            message.msg_controllen = 0;
        }
    }
    loop {
        // SAFETY: the message points at live locals for the call's length.
        let n = unsafe { libc::sendmsg(sock, &message, libc::MSG_NOSIGNAL) };
        if n < 0 && Errno::last() == Errno::EINTR {
            continue;
        }
        return result(n as libc::c_long).map(drop);
    }
}

/// Sends a port request (the host's side).
pub(crate) fn send_port(sock: RawFd, port: u16) -> Result<(), Errno> {
    let bytes = port.to_ne_bytes();
    // SAFETY: sending a two-byte local buffer.
    let n = unsafe { libc::send(sock, bytes.as_ptr().cast(), bytes.len(), libc::MSG_NOSIGNAL) };
    result(n as libc::c_long).map(drop)
}

/// Receives a reply (the host's side): the status and, when it is 0, the
/// descriptor that came with it. `None` when the helper is gone.
pub(crate) fn recv_reply(
    sock: RawFd,
) -> Result<Option<(i32, Option<std::os::fd::OwnedFd>)>, Errno> {
    let mut bytes = [0u8; 4];
    let mut iov = iovec(&mut bytes);
    let mut control = [0u64; ONE_FD_SPACE / 8];
    let mut message = one_fd_message(&mut iov, &mut control);
    let n = loop {
        // SAFETY: the message points at live locals for the call's length.
        let n = unsafe { libc::recvmsg(sock, &mut message, libc::MSG_CMSG_CLOEXEC) };
        if n < 0 && Errno::last() == Errno::EINTR {
            continue;
        }
        break result(n as libc::c_long)?;
    };
    if n == 0 {
        return Ok(None);
    }
    let mut fd = None;
    // SAFETY: walking the control messages the kernel wrote into `control`.
    unsafe {
        let mut header = libc::CMSG_FIRSTHDR(&message);
        while !header.is_null() {
            if (*header).cmsg_level == libc::SOL_SOCKET && (*header).cmsg_type == libc::SCM_RIGHTS {
                let raw = std::ptr::read_unaligned(libc::CMSG_DATA(header).cast::<RawFd>());
                fd = Some(owned(raw));
            }
            header = libc::CMSG_NXTHDR(&message, header);
        }
    }
    Ok(Some((i32::from_ne_bytes(bytes), fd)))
}

/// Joins the namespace `fd` names (`nstype` is its `CLONE_NEW*` kind).
pub(crate) fn setns(fd: RawFd, nstype: libc::c_int) -> Result<(), Errno> {
    // SAFETY: setns takes a descriptor and a flag.
    result(unsafe { libc::setns(fd, nstype) } as libc::c_long).map(drop)
}

/// Makes `command` run in the user and network namespaces `user` and
/// `net` name (descriptors that stay open until it has started): joined in
/// the forked child before `execve`, so the program acts on the sandbox's
/// network with the capabilities its owner has there.
pub(crate) fn run_in_namespaces(command: &mut std::process::Command, user: RawFd, net: RawFd) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child and only makes two
    // system calls (no allocation, no lock).
    unsafe {
        command.pre_exec(move || {
            setns(user, libc::CLONE_NEWUSER)
                .and_then(|()| setns(net, libc::CLONE_NEWNET))
                .and_then(|()| crate::caps::keep_net_admin_across_exec())
                .map_err(|e| std::io::Error::from_raw_os_error(e as i32))
        });
    }
}

/// One socket to make inside a network namespace: bound (and, for a
/// stream, listening) at `addr`, or left unbound when its address is
/// unspecified.
#[derive(Clone, Copy)]
pub(crate) struct SocketSpec {
    /// `SOCK_STREAM` (listening) or `SOCK_DGRAM`.
    pub(crate) kind: libc::c_int,
    /// Where it is bound.
    pub(crate) addr: std::net::SocketAddr,
}

/// A socket address as the kernel takes it.
enum RawAddr {
    V4(libc::sockaddr_in),
    V6(libc::sockaddr_in6),
}

impl RawAddr {
    fn of(addr: std::net::SocketAddr) -> RawAddr {
        match addr {
            std::net::SocketAddr::V4(a) => RawAddr::V4(libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            }),
            std::net::SocketAddr::V6(a) => RawAddr::V6(libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: 0,
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: 0,
            }),
        }
    }

    fn is_unspecified(&self) -> bool {
        match self {
            RawAddr::V4(a) => a.sin_addr.s_addr == 0,
            RawAddr::V6(a) => a.sin6_addr.s6_addr == [0; 16],
        }
    }

    fn family(&self) -> libc::c_int {
        match self {
            RawAddr::V4(_) => libc::AF_INET,
            RawAddr::V6(_) => libc::AF_INET6,
        }
    }

    /// The address as the kernel calls take it: a pointer and a length.
    fn raw(&self) -> (*const libc::sockaddr, libc::socklen_t) {
        match self {
            RawAddr::V4(a) => (
                (a as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            ),
            RawAddr::V6(a) => (
                (a as *const libc::sockaddr_in6).cast(),
                std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
            ),
        }
    }

    fn bind(&self, fd: RawFd) -> libc::c_int {
        let (ptr, len) = self.raw();
        // SAFETY: the pointer and length describe the live struct.
        unsafe { libc::bind(fd, ptr, len) }
    }
}

/// The most sockets [`sockets_in`] makes at once.
pub(crate) const MAX_SOCKETS: usize = 4;

/// Makes `specs` (at most [`MAX_SOCKETS`]) inside the namespaces `user` and
/// `net` name, from a forked child that joins them, and hands them back
/// over a socket pair: a socket belongs to the network namespace it was
/// made in for its whole life, wherever its descriptor goes.
pub(crate) fn sockets_in(
    user: RawFd,
    net: RawFd,
    specs: &[SocketSpec],
) -> Result<Vec<std::os::fd::OwnedFd>, Errno> {
    if specs.len() > MAX_SOCKETS {
        return Err(Errno::E2BIG);
    }
    let addrs: Vec<(libc::c_int, RawAddr)> = specs
        .iter()
        .map(|s| (s.kind, RawAddr::of(s.addr)))
        .collect();
    let (ours, theirs) = seqpacket_pair()?;
    // SAFETY: the child only makes system calls and leaves with _exit.
    let pid = unsafe { clone_process(0, None) }?;
    if pid == 0 {
        let code = match make_and_send(user, net, &addrs, std::os::fd::AsRawFd::as_raw_fd(&theirs))
        {
            Ok(()) => 0,
            Err(errno) => errno as i32,
        };
        exit_now(code.clamp(0, 255));
    }
    drop(theirs);
    let received = receive_fds(std::os::fd::AsRawFd::as_raw_fd(&ours), specs.len());
    let ended = loop {
        match nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None) {
            Err(Errno::EINTR) => continue,
            other => break other,
        }
    };
    match received {
        Ok(fds) if fds.len() == specs.len() => Ok(fds),
        Ok(_) => Err(Errno::EPROTO),
        Err(errno) => match ended {
            Ok(nix::sys::wait::WaitStatus::Exited(_, code)) if code != 0 => {
                Err(Errno::from_raw(code))
            }
            _ => Err(errno),
        },
    }
}

/// Turns a boolean socket option on.
fn set_flag(fd: RawFd, level: libc::c_int, option: libc::c_int) {
    let one: libc::c_int = 1;
    // SAFETY: the option value is a live c_int.
    unsafe {
        libc::setsockopt(
            fd,
            level,
            option,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
}

/// In the forked child: join, make, send. No allocation.
fn make_and_send(
    user: RawFd,
    net: RawFd,
    addrs: &[(libc::c_int, RawAddr)],
    to: RawFd,
) -> Result<(), Errno> {
    setns(user, libc::CLONE_NEWUSER)?;
    setns(net, libc::CLONE_NEWNET)?;
    let mut made = [-1 as RawFd; MAX_SOCKETS];
    for (slot, (kind, addr)) in made.iter_mut().zip(addrs) {
        // SAFETY: plain socket creation.
        let fd = result(
            unsafe { libc::socket(addr.family(), *kind | libc::SOCK_CLOEXEC, 0) } as libc::c_long,
        )? as RawFd;
        *slot = fd;
        set_flag(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR);
        if addr.family() == libc::AF_INET6 {
            set_flag(fd, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY);
        }
        if addr.is_unspecified() {
            // A socket to dial or send from, left unbound.
            continue;
        }
        result(addr.bind(fd) as libc::c_long)?;
        if *kind == libc::SOCK_STREAM {
            // SAFETY: listening on our own socket.
            result(unsafe { libc::listen(fd, 128) } as libc::c_long)?;
        }
    }
    send_fds(to, made.get(..addrs.len()).unwrap_or_default())
}

/// The one byte a descriptor-passing message carries.
fn one_byte(byte: &mut [u8; 1]) -> libc::iovec {
    libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    }
}

/// A message of `iov` with the first `space` bytes of `control` (u64s, so
/// the control headers inside are aligned) for its control messages.
fn message(iov: &mut libc::iovec, control: &mut [u64; 8], space: usize) -> libc::msghdr {
    // SAFETY: msghdr is plain data; every pointer set below is live while
    // the caller holds `iov` and `control`.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space.min(std::mem::size_of_val(control)) as _;
    msg
}

/// Sends one descriptor over the Unix socket `to`. Allocation-free.
pub(crate) fn send_fd(to: RawFd, fd: RawFd) -> Result<(), Errno> {
    send_fds(to, &[fd])
}

/// Receives the one descriptor [`send_fd`] sent (`EPIPE`: the sender ended
/// without sending).
pub(crate) fn receive_fd(from: RawFd) -> Result<std::os::fd::OwnedFd, Errno> {
    receive_fds(from, 1)?.pop().ok_or(Errno::EPROTO)
}

fn send_fds(to: RawFd, fds: &[RawFd]) -> Result<(), Errno> {
    const SPACE: usize = 64;
    let mut control = [0u64; SPACE / 8];
    let bytes = std::mem::size_of_val(fds);
    // SAFETY: CMSG_SPACE is a pure computation.
    let space = unsafe { libc::CMSG_SPACE(bytes as u32) } as usize;
    if space > SPACE {
        return Err(Errno::E2BIG);
    }
    let mut byte = [0u8; 1];
    let mut iov = one_byte(&mut byte);
    let msg = message(&mut iov, &mut control, space);
    // SAFETY: the control buffer holds one header of `space` bytes.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(bytes as u32) as _;
        std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(cmsg).cast(), fds.len());
    }
    // SAFETY: msg is fully initialised.
    result(unsafe { libc::sendmsg(to, &msg, 0) } as libc::c_long).map(drop)
}

fn receive_fds(from: RawFd, count: usize) -> Result<Vec<std::os::fd::OwnedFd>, Errno> {
    let mut control = [0u64; 8];
    let mut byte = [0u8; 1];
    let mut iov = one_byte(&mut byte);
    let space = std::mem::size_of_val(&control);
    let mut msg = message(&mut iov, &mut control, space);
    loop {
        // SAFETY: msg describes live buffers.
        let n = unsafe { libc::recvmsg(from, &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n == 0 {
            // The helper ended without sending.
            return Err(Errno::EPIPE);
        }
        if n > 0 {
            break;
        }
        if Errno::last() != Errno::EINTR {
            return Err(Errno::last());
        }
    }
    let mut fds = Vec::new();
    // SAFETY: walking the control messages the kernel wrote.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                let len = ((*cmsg).cmsg_len as usize).saturating_sub(libc::CMSG_LEN(0) as usize)
                    / std::mem::size_of::<RawFd>();
                for i in 0..len {
                    fds.push(owned(std::ptr::read_unaligned(data.add(i))));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    if fds.len() != count {
        return Err(Errno::EPROTO);
    }
    Ok(fds)
}

/// Where a connection redirected by the namespace's ruleset was going
/// (`SO_ORIGINAL_DST`, from the connection tracking of its namespace).
pub(crate) fn original_destination(fd: RawFd, v6: bool) -> Result<std::net::SocketAddr, Errno> {
    const SO_ORIGINAL_DST: libc::c_int = 80;
    // SAFETY: sockaddr_storage is plain data; the kernel fills at most `len` bytes.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    let level = if v6 { libc::SOL_IPV6 } else { libc::SOL_IP };
    // SAFETY: as above.
    result(unsafe {
        libc::getsockopt(
            fd,
            level,
            SO_ORIGINAL_DST,
            (&mut storage as *mut libc::sockaddr_storage).cast(),
            &mut len,
        )
    } as libc::c_long)?;
    match libc::c_int::from(storage.ss_family) {
        libc::AF_INET => {
            // SAFETY: the kernel wrote a sockaddr_in, which the storage holds.
            let addr =
                unsafe { *(&storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            Ok(std::net::SocketAddr::new(
                std::net::Ipv4Addr::from(addr.sin_addr.s_addr.to_ne_bytes()).into(),
                u16::from_be(addr.sin_port),
            ))
        }
        libc::AF_INET6 => {
            // SAFETY: the kernel wrote a sockaddr_in6, which the storage holds.
            let addr = unsafe {
                *(&storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>()
            };
            Ok(std::net::SocketAddr::new(
                std::net::Ipv6Addr::from(addr.sin6_addr.s6_addr).into(),
                u16::from_be(addr.sin6_port),
            ))
        }
        _ => Err(Errno::EAFNOSUPPORT),
    }
}

/// Makes closing the TCP socket `socket` send a reset (`SO_LINGER` of zero).
pub(crate) fn reset_on_close(socket: &impl std::os::fd::AsFd) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    let _ = nix::sys::socket::setsockopt(socket, nix::sys::socket::sockopt::Linger, &linger);
}

/// Connects the unbound TCP socket `fd` to `addr`, waiting at most `timeout`.
pub(crate) fn connect_timeout(
    fd: &std::os::fd::OwnedFd,
    addr: std::net::SocketAddr,
    timeout: std::time::Duration,
) -> Result<(), Errno> {
    use nix::sys::socket::{setsockopt, sockopt};
    // A blocking connect gives up after the send timeout.
    let limit = nix::sys::time::TimeVal::new(
        timeout.as_secs() as libc::time_t,
        libc::suseconds_t::from(timeout.subsec_micros() as i32),
    );
    let _ = setsockopt(fd, sockopt::SendTimeout, &limit);
    let (ptr, len) = RawAddr::of(addr).raw();
    // SAFETY: the pointer and length describe the live struct. Raw: nix
    // turns a `SocketAddr` into its address type only with its `net`
    // feature, which this crate does not build.
    let ret = unsafe { libc::connect(std::os::fd::AsRawFd::as_raw_fd(fd), ptr, len) };
    if ret == 0 { Ok(()) } else { Err(Errno::last()) }
}

/// One `splice` of at most `len` bytes from `from` to `to` (one is a pipe),
/// retried on EINTR.
fn splice_some(from: RawFd, to: RawFd, len: usize) -> Result<usize, Errno> {
    loop {
        // SAFETY: splice between descriptors the caller holds, no offsets.
        let n = unsafe {
            libc::splice(
                from,
                std::ptr::null_mut(),
                to,
                std::ptr::null_mut(),
                len,
                libc::SPLICE_F_MOVE,
            )
        };
        if n >= 0 {
            return Ok(n as usize);
        }
        if Errno::last() != Errno::EINTR {
            return Err(Errno::last());
        }
    }
}

/// Moves bytes from the socket `from` to the socket `to` through a pipe
/// with `splice(2)`, in the kernel, until `from` ends: the relay's copy.
/// Returns how it ended: `Ok` at the end of `from`, an error when either
/// side failed (`EINVAL` when the kernel cannot splice these descriptors).
pub(crate) fn splice_all(from: RawFd, to: RawFd) -> Result<(), Errno> {
    const CHUNK: usize = 1 << 20;
    let (pipe_read, pipe_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    let (pr, pw) = (
        std::os::fd::AsRawFd::as_raw_fd(&pipe_read),
        std::os::fd::AsRawFd::as_raw_fd(&pipe_write),
    );
    // A larger pipe moves more per call; the default is kept if refused.
    let _ = nix::fcntl::fcntl(
        &pipe_write,
        nix::fcntl::FcntlArg::F_SETPIPE_SZ(CHUNK as libc::c_int),
    );
    loop {
        let n = splice_some(from, pw, CHUNK)?;
        if n == 0 {
            return Ok(());
        }
        let mut left = n;
        while left > 0 {
            match splice_some(pr, to, left)? {
                0 => return Err(Errno::EPIPE),
                m => left -= m,
            }
        }
    }
}

/// `prctl(option, arg2, arg3, 0, 0)` for the options that take integers
/// only. Allocation-free.
pub(crate) fn prctl(
    option: libc::c_int,
    arg2: libc::c_ulong,
    arg3: libc::c_ulong,
) -> Result<(), Errno> {
    // SAFETY: prctl with integer arguments only.
    let ret = unsafe { libc::prctl(option, arg2, arg3, 0 as libc::c_ulong, 0 as libc::c_ulong) };
    result(libc::c_long::from(ret)).map(drop)
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

/// One half (32 capabilities) of a process's sets, as `capget` and
/// `capset` version 3 take two of them.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct CapData {
    pub(crate) effective: u32,
    pub(crate) permitted: u32,
    pub(crate) inheritable: u32,
}

const THIS_PROCESS: CapHeader = CapHeader {
    version: LINUX_CAPABILITY_VERSION_3,
    pid: 0,
};

/// The calling process's capability sets (`capget`, version 3).
pub(crate) fn capget() -> Result<[CapData; 2], Errno> {
    let mut header = THIS_PROCESS;
    let mut data = [CapData::default(); 2];
    // SAFETY: version 3 fills two data structs, both live across the call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_capget,
            &mut header as *mut CapHeader,
            data.as_mut_ptr(),
        )
    };
    result(ret).map(|_| data)
}

/// Sets the calling process's capability sets (`capset`, version 3).
/// Allocation-free: runs between `clone` and `execve`.
pub(crate) fn capset(data: &[CapData; 2]) -> Result<(), Errno> {
    let header = THIS_PROCESS;
    // SAFETY: version 3 reads two data structs, both live across the call.
    let ret =
        unsafe { libc::syscall(libc::SYS_capset, &header as *const CapHeader, data.as_ptr()) };
    result(ret).map(drop)
}

/// Reads one byte from `fd`, retrying on EINTR; `Ok(false)` at end of
/// file. Allocation-free.
pub(crate) fn read_byte(fd: RawFd) -> Result<bool, Errno> {
    let mut byte = [0u8; 1];
    loop {
        // SAFETY: reading at most one byte into a local buffer.
        let n = unsafe { libc::read(fd, byte.as_mut_ptr().cast(), 1) };
        match result(n as libc::c_long) {
            Ok(read) => return Ok(read == 1),
            Err(Errno::EINTR) => continue,
            Err(errno) => return Err(errno),
        }
    }
}

/// Whether the other end of the pipe `fd` has hung up, looked at without
/// waiting. Allocation-free.
pub(crate) fn hung_up(fd: RawFd) -> bool {
    let mut pollfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one live pollfd, zero timeout.
    let n = unsafe { libc::poll(&mut pollfd, 1, 0) };
    n > 0 && pollfd.revents & libc::POLLHUP != 0
}

/// `dup2(from, onto)`: `onto` (a standard descriptor) becomes a copy of
/// `from`. Allocation-free.
pub(crate) fn dup_onto(from: RawFd, onto: RawFd) -> Result<(), Errno> {
    // SAFETY: dup2 takes two integers; `onto` is the caller's to replace.
    let ret = unsafe { libc::dup2(from, onto) };
    result(libc::c_long::from(ret)).map(drop)
}

/// Brings the loopback interface up (`SIOCSIFFLAGS` on `lo`).
/// Allocation-free: runs between `clone` and `execve`.
pub(crate) fn loopback_up() -> Result<(), Errno> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, socket};
    // A datagram socket only to issue the interface ioctl.
    let socket = socket(
        AddressFamily::Inet,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    // SAFETY: ifreq is plain data; zeroed is a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
        *slot = *byte as libc::c_char;
    }
    request.ifr_ifru.ifru_flags =
        (libc::IFF_UP | libc::IFF_LOOPBACK | libc::IFF_RUNNING) as libc::c_short;
    // SAFETY: SIOCSIFFLAGS reads the ifreq we pass. Raw: nix has no
    // wrapper for the interface ioctls.
    let ret = unsafe {
        libc::ioctl(
            std::os::fd::AsRawFd::as_raw_fd(&socket),
            libc::SIOCSIFFLAGS as _,
            &request,
        )
    };
    result(libc::c_long::from(ret)).map(drop)
}

/// Whether `io_uring_setup` is refused with `EPERM` (as the sandbox's
/// seccomp filter answers); a null params pointer makes any other kernel
/// fail it with another errno, so no ring is ever made.
pub(crate) fn io_uring_refused() -> bool {
    // SAFETY: io_uring_setup with a null params pointer reads and writes no
    // memory; only the errno matters.
    let ring = unsafe { libc::syscall(libc::SYS_io_uring_setup, 1u32, std::ptr::null_mut::<u8>()) };
    ring < 0 && Errno::last() == Errno::EPERM
}

/// Whether a page both writable and executable can be mapped; the page is
/// unmapped again at once.
pub(crate) fn can_map_write_execute() -> bool {
    const PAGE: usize = 4096;
    // SAFETY: a new anonymous mapping at an address the kernel picks
    // overlaps no memory in use.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            PAGE,
            libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if page == libc::MAP_FAILED {
        return false;
    }
    // SAFETY: unmapping the mapping just made, which nothing else uses.
    unsafe { libc::munmap(page, PAGE) };
    true
}

/// `keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING)`, a call the
/// sandbox's seccomp filter kills the process for.
pub(crate) fn keyctl_session_keyring() {
    // SAFETY: keyctl with integer arguments only.
    unsafe { libc::syscall(libc::SYS_keyctl, 0, -3i64, 0) };
}

/// Installs `handler` for `signal` (restarting interrupted calls) and
/// returns the action it replaced, `None` when the kernel refused. The
/// handlers this crate installs only make async-signal-safe system calls.
pub(crate) fn install_handler(
    signal: libc::c_int,
    handler: extern "C" fn(libc::c_int),
) -> Option<libc::sigaction> {
    // SAFETY: sigaction is plain data; all-zero is a valid value.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = handler as *const () as usize;
    action.sa_flags = libc::SA_RESTART;
    // SAFETY: `action` and `old` are live structs for the calls; `handler`
    // is a plain function that lives for the whole process.
    unsafe {
        libc::sigemptyset(&mut action.sa_mask);
        let mut old: libc::sigaction = std::mem::zeroed();
        (libc::sigaction(signal, &action, &mut old) == 0).then_some(old)
    }
}

/// Puts back an action [`install_handler`] returned.
pub(crate) fn restore_action(signal: libc::c_int, old: &libc::sigaction) {
    // SAFETY: `old` is an action the kernel handed back for this signal.
    unsafe { libc::sigaction(signal, old, std::ptr::null_mut()) };
}

/// Dies of `signal` as the sandboxed program did, with core dumps off so
/// no core of Chock's own is left; returns only if the signal did not end
/// the process.
pub(crate) fn die_of_signal(signal: libc::c_int) {
    let _ = nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_CORE, 0, 0);
    // SAFETY: SIG_DFL takes no pointer; raise only sends a signal to this
    // process.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    const MARK: u64 = 0xC10C;

    /// Writes `MARK` where the parent reads, then exits with 7.
    extern "C" fn mark_and_exit(seen: *mut libc::c_void) -> libc::c_int {
        // SAFETY: the test passes a live AtomicU64 and waits until this
        // process exits.
        let seen = unsafe { &*(seen as *const AtomicU64) };
        seen.store(MARK, Ordering::SeqCst);
        exit_now(7)
    }

    #[test]
    fn a_process_started_sharing_memory_has_run_and_written_into_ours_when_the_call_returns() {
        let seen = AtomicU64::new(0);
        // SAFETY: `mark_and_exit` never returns and writes only `seen`,
        // which lives until the call returns.
        let pid = unsafe {
            spawn_sharing_memory(
                mark_and_exit,
                &seen as *const AtomicU64 as *mut libc::c_void,
            )
        }
        .expect("spawn");
        // Shared memory: a copy's write would not be seen here. Returned
        // only once the process exited: its write is already there.
        assert_eq!(seen.load(Ordering::SeqCst), MARK);
        let mut status = 0;
        // SAFETY: waiting for our own child; the status is a local.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 7,
            "status {status:#x}"
        );
    }
}
