//! The escape probe: one attack per invocation, made for real from inside
//! the sandbox. The escape suite compiles this file into a static binary
//! (std only, glibc statically linked) so it runs in any sandbox, including
//! one whose mount set is a dev shell closure with no libc in it.
//!
//! Exit 0 and "blocked: ..." when the attack failed, exit 1 and
//! "BREACH: ..." when it worked, exit 2 for a usage error. An attack the
//! seccomp filter answers by killing the process never prints: the suite
//! reads death by SIGSYS as blocked.

use std::ffi::CString;
use std::io::{Read, Write};
use std::os::raw::{c_char, c_int, c_long, c_void};
use std::process::exit;

unsafe extern "C" {
    fn syscall(number: c_long, ...) -> c_long;
    fn mmap(
        addr: *mut c_void,
        len: usize,
        prot: c_int,
        flags: c_int,
        fd: c_int,
        off: i64,
    ) -> *mut c_void;
    fn mprotect(addr: *mut c_void, len: usize, prot: c_int) -> c_int;
    fn fork() -> c_int;
    fn waitpid(pid: c_int, status: *mut c_int, options: c_int) -> c_int;
    fn kill(pid: c_int, sig: c_int) -> c_int;
    fn getuid() -> u32;
    fn geteuid() -> u32;
    fn chown(path: *const c_char, uid: u32, gid: u32) -> c_int;
    fn getrlimit(resource: c_int, rlim: *mut [u64; 2]) -> c_int;
    fn setrlimit(resource: c_int, rlim: *const [u64; 2]) -> c_int;
    fn execv(path: *const c_char, argv: *const *const c_char) -> c_int;
    fn fchmod(fd: c_int, mode: u32) -> c_int;
    fn mknod(path: *const c_char, mode: u32, dev: u64) -> c_int;
}

#[cfg(target_arch = "x86_64")]
mod nr {
    pub const MOUNT: i64 = 165;
    pub const UNSHARE: i64 = 272;
    pub const SETNS: i64 = 308;
    pub const PTRACE: i64 = 101;
    pub const KEYCTL: i64 = 250;
    pub const BPF: i64 = 321;
    pub const SOCKET: i64 = 41;
    pub const MEMFD_CREATE: i64 = 319;
    pub const EXECVEAT: i64 = 322;
    pub const IOCTL: i64 = 16;
    pub const RENAMEAT2: i64 = 316;
}
#[cfg(target_arch = "aarch64")]
mod nr {
    pub const MOUNT: i64 = 40;
    pub const UNSHARE: i64 = 97;
    pub const SETNS: i64 = 268;
    pub const PTRACE: i64 = 117;
    pub const KEYCTL: i64 = 219;
    pub const BPF: i64 = 280;
    pub const SOCKET: i64 = 198;
    pub const MEMFD_CREATE: i64 = 279;
    pub const EXECVEAT: i64 = 281;
    pub const IOCTL: i64 = 29;
    pub const RENAMEAT2: i64 = 276;
}
const IO_URING_SETUP: i64 = 425;

fn blocked(how: &str) -> ! {
    println!("blocked: {how}");
    exit(0)
}

fn breach(what: &str) -> ! {
    println!("BREACH: {what}");
    exit(1)
}

fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

fn c(s: &str) -> CString {
    CString::new(s).unwrap_or_default()
}

/// A result from a call the seccomp filter should kill: if it returns at all,
/// the filter is missing; success is a breach either way.
fn must_not_return(what: &str, ret: c_long) -> ! {
    if ret >= 0 {
        breach(&format!("{what} succeeded"));
    }
    breach(&format!(
        "{what} returned ({}) instead of being killed by seccomp",
        errno()
    ));
}

fn read_path(path: &str) -> ! {
    match std::fs::read(path) {
        Ok(bytes) => breach(&format!("read {} bytes of {path}", bytes.len())),
        Err(e) => blocked(&format!("reading {path}: {e}")),
    }
}

fn write_path(path: &str) -> ! {
    match std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        Ok(mut file) => match file.write_all(b"escaped\n") {
            Ok(()) => breach(&format!("wrote {path}")),
            Err(e) => blocked(&format!("writing {path}: {e}")),
        },
        Err(e) => blocked(&format!("opening {path} for writing: {e}")),
    }
}

/// Writes, renames and removes a file the sandbox holds read-only.
fn write_held(path: &str) -> ! {
    if std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .is_ok_and(|mut f| f.write_all(b".{}").is_ok())
    {
        breach(&format!("wrote {path}"));
    }
    let aside = format!("{path}.moved");
    if std::fs::rename(path, &aside).is_ok() {
        breach(&format!("renamed {path}"));
    }
    if std::fs::remove_file(path).is_ok() {
        breach(&format!("removed {path}"));
    }
    blocked(&format!("{path} could not be written, renamed or removed"))
}

/// Renames a file or folder aside, to put one of the program's own in its place.
fn move_aside(path: &str) -> ! {
    let aside = format!("{path}.moved");
    match std::fs::rename(path, &aside) {
        Ok(()) => breach(&format!("renamed {path} to {aside}")),
        Err(e) => blocked(&format!("renaming {path}: {e}")),
    }
}

/// An executable pre-commit hook in `hooks` that writes `marker` when git
/// runs it.
fn hook_script(hooks: &str, marker: &str) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(hooks)?;
    let hook = format!("{hooks}/pre-commit");
    std::fs::write(&hook, format!("#!/bin/sh\necho ran > {marker}\n"))?;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755))
}

/// Folders under every name Chock could move `path` aside to in the next
/// ten minutes (`NAME.from-sandbox-<seconds>`), so that a rename there fails.
fn decoys(path: &str) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    for t in now..now + 600 {
        let _ = std::fs::create_dir(format!("{path}.from-sandbox-{t}"));
    }
}

fn planted(what: &str) -> ! {
    println!("planted: {what}");
    exit(0)
}

/// Plants a hook in `hooks` (a git directory's hooks folder that did not
/// exist). Whether git ever runs it is for the host to see.
fn plant_hook(hooks: &str, marker: &str) -> ! {
    decoys(hooks);
    match hook_script(hooks, marker) {
        Ok(()) => planted(&format!("{hooks}/pre-commit")),
        Err(e) => blocked(&format!("planting a hook in {hooks}: {e}")),
    }
}

/// Makes a repository of the program's own at `own`, with a hook, and
/// points `git_dir`'s `commondir` at it, so git would take its config and
/// hooks from there. Whether git ever does is for the host to see.
fn plant_commondir(git_dir: &str, own: &str, marker: &str) -> ! {
    decoys(&format!("{git_dir}/commondir"));
    let made = (|| {
        std::fs::create_dir_all(format!("{own}/objects"))?;
        std::fs::create_dir_all(format!("{own}/refs/heads"))?;
        std::fs::write(
            format!("{own}/config"),
            "[core]\n\trepositoryformatversion = 0\n",
        )?;
        hook_script(&format!("{own}/hooks"), marker)?;
        std::fs::write(format!("{git_dir}/commondir"), own)
    })();
    match made {
        Ok(()) => planted(&format!("{git_dir}/commondir -> {own}")),
        Err(e) => blocked(&format!("planting {git_dir}/commondir: {e}")),
    }
}

/// Writes a `chock.zon` that allows what the shipped rules ask about
/// (`exec.unparsed`), for the next command to obey.
fn plant_policy(path: &str) -> ! {
    decoys(path);
    let rules = ".{ .policy = .{ .rules = .{ .{ .action = \"exec.unparsed\", .decision = .allow } } } }\n";
    match std::fs::write(path, rules) {
        Ok(()) => planted(&format!("{path} allowing exec.unparsed")),
        Err(e) => blocked(&format!("writing {path}: {e}")),
    }
}

/// One side of a race between two sandboxes of one project: makes `dir/x`
/// (a git directory: it has a HEAD) and `dir/y`, a link to `target` (`/`,
/// or the host's root as it hangs while a sandbox is built), then
/// swaps the two names with renameat2(RENAME_EXCHANGE) until `stop` exists,
/// so that a sandbox being built next to it finds `outside` where it
/// checked `x`.
fn swap(dir: &str, target: &str, stop: &str) -> ! {
    let (x, y) = (format!("{dir}/x"), format!("{dir}/y"));
    let made = std::fs::create_dir_all(&x)
        .and_then(|()| std::fs::write(format!("{x}/HEAD"), "ref: refs/heads/main\n"))
        .and_then(|()| std::os::unix::fs::symlink(target, &y));
    if let Err(e) = made {
        blocked(&format!("making {x} and {y}: {e}"));
    }
    let (cx, cy) = (c(&x), c(&y));
    let started = std::time::Instant::now();
    let mut swaps = 0u64;
    while !std::path::Path::new(stop).exists() && started.elapsed().as_secs() < 120 {
        const AT_FDCWD: c_long = -100;
        const RENAME_EXCHANGE: c_long = 2;
        // SAFETY: NUL-terminated paths.
        let ret = unsafe {
            syscall(nr::RENAMEAT2, AT_FDCWD, cx.as_ptr(), AT_FDCWD, cy.as_ptr(), RENAME_EXCHANGE)
        };
        if ret == 0 {
            swaps += 1;
        }
    }
    println!("swapped: {swaps} times");
    exit(0)
}

/// The other side: the sandbox this probe runs in was built while `x` and
/// `y` were being swapped; whatever is at either name now, it must not
/// show the host's `outside` folder (which holds `secret`), either through
/// a root or through the host's root as it hangs while a sandbox is built.
fn race_check(dir: &str, outside: &str) -> ! {
    for name in ["x", "y"] {
        for through in ["", "/.chock-host-root"] {
            let there = format!("{dir}/{name}{through}{outside}");
            if let Ok(bytes) = std::fs::read(format!("{there}/secret")) {
                let wrote = std::fs::write(format!("{there}/planted"), b"x").is_ok();
                breach(&format!(
                    "read {} bytes of {there}/secret (and wrote there: {wrote}): the host's root is mounted in the workspace",
                    bytes.len()
                ));
            }
        }
    }
    blocked("neither name shows the host's root")
}

/// Gives a program the set-user-ID and set-group-ID bits, every way a
/// program can: chmod, fchmod, creating with those bits, mknod.
fn setuid_bits(dir: &str) -> ! {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let image = std::fs::read("/proc/self/exe").unwrap_or_default();
    let copy = format!("{dir}/suid");
    if let Err(e) = std::fs::write(&copy, &image) {
        blocked(&format!("copying the probe: {e}"));
    }
    let bits = |path: &str| {
        std::fs::metadata(path).map_or(0, |m| m.permissions().mode() & 0o6000)
    };
    let mut refused = Vec::new();
    match std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o6755)) {
        Ok(()) if bits(&copy) != 0 => breach(&format!("chmod 6755 {copy}")),
        Ok(()) => refused.push("chmod: no bit".to_owned()),
        Err(e) => refused.push(format!("chmod: {e}")),
    }
    if let Ok(file) = std::fs::File::open(&copy) {
        use std::os::fd::AsRawFd;
        // SAFETY: a descriptor we own.
        if unsafe { fchmod(file.as_raw_fd(), 0o4755) } == 0 && bits(&copy) != 0 {
            breach(&format!("fchmod 4755 {copy}"));
        }
        refused.push(format!("fchmod: {}", errno()));
    }
    let created = format!("{dir}/suid-created");
    match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o6755).open(&created) {
        Ok(_) if bits(&created) != 0 => breach(&format!("created {created} with mode 6755")),
        Ok(_) => refused.push("open(O_CREAT, 06755): no bit".to_owned()),
        Err(e) => refused.push(format!("open(O_CREAT, 06755): {e}")),
    }
    let node = format!("{dir}/suid-node");
    let cnode = c(&node);
    // SAFETY: NUL-terminated path; a regular file node.
    if unsafe { mknod(cnode.as_ptr(), 0o100000 | 0o4755, 0) } == 0 && bits(&node) != 0 {
        breach(&format!("mknod {node} with mode 4755"));
    }
    refused.push(format!("mknod: {}", errno()));
    blocked(&refused.join("; "))
}

/// memfd_create, the probe's own image written into it, and execve through
/// /proc/self/fd: a program no mount ever showed.
fn memfd_execve() -> ! {
    use std::os::fd::FromRawFd;
    const MFD_EXEC: c_long = 0x10;
    let image = std::fs::read("/proc/self/exe").unwrap_or_default();
    let mut refused = Vec::new();
    for flags in [0, MFD_EXEC] {
        let name = c("probe");
        // SAFETY: a NUL-terminated name.
        let fd = unsafe { syscall(nr::MEMFD_CREATE, name.as_ptr(), flags) };
        if fd < 0 {
            refused.push(format!("memfd_create({flags:#x}): {}", errno()));
            continue;
        }
        let fd = fd as c_int;
        // SAFETY: the kernel gave us this descriptor.
        let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
        let _ = file.write_all(&image);
        // SAFETY: our descriptor; a sealed memfd refuses the exec bits.
        unsafe { fchmod(fd, 0o755) };
        let path = c(&format!("/proc/self/fd/{fd}"));
        let (arg0, arg1) = (c("probe"), c("memfd-ran"));
        let argv = [arg0.as_ptr(), arg1.as_ptr(), std::ptr::null()];
        // SAFETY: NUL-terminated strings and a null-terminated array.
        unsafe { execv(path.as_ptr(), argv.as_ptr()) };
        refused.push(format!("execve of memfd({flags:#x}): {}", errno()));
    }
    blocked(&refused.join("; "))
}

/// Writes 16 MiB files into `dir` until a write fails.
fn fill(dir: &str) -> ! {
    let chunk = vec![7u8; 1 << 20];
    let mut written = 0u64;
    for n in 0.. {
        let Ok(mut file) = std::fs::File::create(format!("{dir}/fill-{n}")) else {
            break;
        };
        for _ in 0..16 {
            if file.write_all(&chunk).is_err() {
                println!("stopped: a write failed after {written} MiB ({})", errno());
                exit(0)
            }
            written += 1;
        }
    }
    println!("stopped after {written} MiB");
    exit(0)
}

/// Forks up to `n` processes that wait; says how many it got.
fn fork_bomb(n: u64) -> ! {
    let mut children = Vec::new();
    for _ in 0..n {
        // SAFETY: the child only sleeps.
        let child = unsafe { fork() };
        if child == 0 {
            std::thread::sleep(std::time::Duration::from_secs(60));
            exit(0);
        }
        if child < 0 {
            break;
        }
        children.push(child);
    }
    println!("forked: {}", children.len());
    for child in children {
        // SAFETY: ending our own children.
        unsafe { kill(child, 9) };
    }
    exit(0)
}

/// Touches `mib` MiB of memory, one MiB at a time.
fn memory_hog(mib: usize) -> ! {
    let mut held: Vec<Vec<u8>> = Vec::new();
    for n in 0..mib {
        held.push(vec![(n % 251) as u8 + 1; 1 << 20]);
    }
    println!("held: {mib} MiB");
    exit(0)
}

fn ptrace_other() -> ! {
    // SAFETY: the child only sleeps.
    let child = unsafe { fork() };
    if child == 0 {
        std::thread::sleep(std::time::Duration::from_secs(30));
        exit(0);
    }
    const PTRACE_ATTACH: c_long = 16;
    // SAFETY: integer arguments.
    let ret = unsafe {
        syscall(
            nr::PTRACE,
            PTRACE_ATTACH,
            c_long::from(child),
            0 as c_long,
            0 as c_long,
        )
    };
    // SAFETY: ending the child.
    unsafe { kill(child, 9) };
    must_not_return("ptrace(PTRACE_ATTACH) of another process", ret)
}

fn setns() -> ! {
    let Ok(file) = std::fs::File::open("/proc/self/ns/net") else {
        blocked("no namespace file to join")
    };
    use std::os::fd::AsRawFd;
    // SAFETY: integer arguments.
    let ret = unsafe { syscall(nr::SETNS, c_long::from(file.as_raw_fd()), 0 as c_long) };
    must_not_return("setns", ret)
}

fn io_uring() -> ! {
    let mut params = [0u8; 120];
    // SAFETY: params is large enough for struct io_uring_params.
    let ret = unsafe { syscall(IO_URING_SETUP, 4 as c_long, params.as_mut_ptr()) };
    if ret >= 0 {
        breach("io_uring_setup made a ring");
    }
    let e = errno();
    if e.raw_os_error() == Some(1) {
        blocked("io_uring_setup: EPERM")
    } else {
        breach(&format!(
            "io_uring_setup failed with {e}, not EPERM from the filter"
        ))
    }
}

const PROT_READ: c_int = 1;
const PROT_WRITE: c_int = 2;
const PROT_EXEC: c_int = 4;
const MAP_PRIVATE: c_int = 2;
const MAP_ANONYMOUS: c_int = 0x20;

fn map(prot: c_int) -> Option<*mut c_void> {
    // SAFETY: an anonymous private mapping.
    let page = unsafe {
        mmap(
            std::ptr::null_mut(),
            4096,
            prot,
            MAP_PRIVATE | MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    (page as isize != -1).then_some(page)
}

fn write_execute() -> ! {
    if map(PROT_READ | PROT_WRITE | PROT_EXEC).is_some() {
        breach("mapped a page writable and executable");
    }
    let Some(page) = map(PROT_READ | PROT_WRITE) else {
        breach("could not map even a writable page")
    };
    // SAFETY: the page just mapped.
    if unsafe { mprotect(page, 4096, PROT_READ | PROT_WRITE | PROT_EXEC) } == 0 {
        breach("made a writable page executable too");
    }
    blocked("mmap and mprotect with write and execute: EPERM")
}

/// With `sandbox.jit` allowed: a writable and executable page is mapped,
/// an instruction written into it and run.
fn jit() -> ! {
    let Some(page) = map(PROT_READ | PROT_WRITE | PROT_EXEC) else {
        println!("FAILED: no writable and executable page ({})", errno());
        exit(1)
    };
    #[cfg(target_arch = "x86_64")]
    let code: &[u8] = &[0xb8, 42, 0, 0, 0, 0xc3]; // mov eax, 42; ret
    #[cfg(target_arch = "aarch64")]
    let code: &[u8] = &[0x40, 0x05, 0x80, 0x52, 0xc0, 0x03, 0x5f, 0xd6]; // mov w0, #42; ret
    // SAFETY: the page is writable and large enough; it holds a complete function.
    let value = unsafe {
        std::ptr::copy_nonoverlapping(code.as_ptr(), page.cast::<u8>(), code.len());
        #[cfg(target_arch = "aarch64")]
        std::arch::asm!("dc cvau, {0}", "dsb ish", "ic ivau, {0}", "dsb ish", "isb", in(reg) page);
        let function: extern "C" fn() -> c_int = std::mem::transmute(page);
        function()
    };
    if value == 42 {
        println!("jit works: wrote and ran code in a writable and executable page");
        exit(0)
    }
    println!("FAILED: the code returned {value}");
    exit(1)
}

fn memfd_exec() -> ! {
    let name = c("probe");
    // SAFETY: a NUL-terminated name.
    let fd = unsafe { syscall(nr::MEMFD_CREATE, name.as_ptr(), 0 as c_long) };
    if fd < 0 {
        blocked(&format!("memfd_create: {}", errno()));
    }
    let image = std::fs::read("/proc/self/exe").unwrap_or_default();
    use std::os::fd::FromRawFd;
    // SAFETY: the kernel gave us this descriptor.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd as c_int) };
    let _ = file.write_all(&image);
    let empty = c("");
    let arg0 = c("probe");
    let arg1 = c("memfd-ran");
    let argv = [arg0.as_ptr(), arg1.as_ptr(), std::ptr::null()];
    let envp = [std::ptr::null::<c_char>()];
    const AT_EMPTY_PATH: c_long = 0x1000;
    // SAFETY: NUL-terminated strings and null-terminated arrays.
    let ret = unsafe {
        syscall(
            nr::EXECVEAT,
            fd,
            empty.as_ptr(),
            argv.as_ptr(),
            envp.as_ptr(),
            AT_EMPTY_PATH,
        )
    };
    must_not_return("execveat(memfd, AT_EMPTY_PATH)", ret)
}

fn tcp(target: &str) -> ! {
    let Ok(address) = target.parse::<std::net::SocketAddr>() else {
        usage()
    };
    match std::net::TcpStream::connect_timeout(&address, std::time::Duration::from_secs(3)) {
        Ok(_) => breach(&format!("connected to {target}")),
        Err(e) => blocked(&format!("connecting to {target}: {e}")),
    }
}

fn unix_socket(path: &str) -> ! {
    match std::os::unix::net::UnixStream::connect(path) {
        Ok(mut stream) => {
            // The Nix daemon answers its magic number; anything at all is a breach.
            let _ = stream.write_all(&0x6e697863u64.to_le_bytes());
            let mut reply = [0u8; 8];
            let _ = stream.read(&mut reply);
            breach(&format!("connected to {path}"))
        }
        Err(e) => blocked(&format!("connecting to {path}: {e}")),
    }
}

fn symlink_out(target_dir: &str, link: &str) -> ! {
    let _ = std::fs::remove_file(link);
    if let Err(e) = std::os::unix::fs::symlink(target_dir, link) {
        blocked(&format!("planting the link: {e}"));
    }
    let through = |name: &str| format!("{link}/{name}");
    if let Ok(bytes) = std::fs::read(through("secret")) {
        breach(&format!(
            "read {} bytes through {link} -> {target_dir}",
            bytes.len()
        ));
    }
    if std::fs::write(through("planted"), b"x").is_ok() {
        breach(&format!("wrote through {link} -> {target_dir}"));
    }
    let etc = format!("{link}-etc");
    let _ = std::os::unix::fs::symlink("/etc", &etc);
    if std::fs::write(format!("{etc}/planted"), b"x").is_ok() {
        breach(&format!("wrote through {etc} -> /etc"));
    }
    blocked(&format!(
        "the link {link} -> {target_dir} leads nowhere the host keeps"
    ))
}

fn tiocsti() -> ! {
    const TIOCSTI: c_long = 0x5412;
    let byte = b'#';
    for request in [TIOCSTI, TIOCSTI | (1 << 32)] {
        // SAFETY: TIOCSTI reads one byte from the pointer.
        let ret = unsafe { syscall(nr::IOCTL, 0 as c_long, request, &byte as *const u8) };
        if ret == 0 {
            breach(&format!(
                "TIOCSTI (request {request:#x}) pushed a byte into the terminal"
            ));
        }
    }
    blocked(&format!("TIOCSTI: {}", errno()))
}

fn raise_rlimit() -> ! {
    const RLIMIT_NOFILE: c_int = 7;
    const RLIMIT_NPROC: c_int = 6;
    for resource in [RLIMIT_NOFILE, RLIMIT_NPROC] {
        let mut limit = [0u64; 2];
        // SAFETY: the array has the layout of struct rlimit.
        unsafe { getrlimit(resource, &mut limit) };
        let raised = [limit[1].saturating_add(1), limit[1].saturating_add(1)];
        // SAFETY: as above.
        if unsafe { setrlimit(resource, &raised) } == 0 {
            breach(&format!(
                "raised rlimit {resource} above its hard limit {}",
                limit[1]
            ));
        }
    }
    blocked(&format!("setrlimit above the hard limit: {}", errno()))
}

fn setuid(path: &str) -> ! {
    let program = c(path);
    let arg1 = c("euid");
    let argv = [program.as_ptr(), arg1.as_ptr(), std::ptr::null()];
    // SAFETY: the child executes at once.
    let child = unsafe { fork() };
    if child == 0 {
        // SAFETY: NUL-terminated strings.
        unsafe { execv(program.as_ptr(), argv.as_ptr()) };
        println!("blocked: could not execute {path}: {}", errno());
        exit(0);
    }
    let mut status = 0;
    // SAFETY: waiting for our child.
    unsafe { waitpid(child, &mut status, 0) };
    let code = (status >> 8) & 0xff;
    if status & 0x7f == 0 && code == 0 {
        blocked(&format!("the setuid bit of {path} took no effect"));
    }
    breach(&format!(
        "{path} ran with another effective uid (status {status})"
    ))
}

fn euid() -> ! {
    // SAFETY: no arguments.
    let (real, effective) = unsafe { (getuid(), geteuid()) };
    if real == effective {
        println!("blocked: euid {effective} = uid {real}");
        exit(0)
    }
    println!("BREACH: euid {effective} differs from uid {real}");
    exit(1)
}

fn caps() -> ! {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_owned())
            .unwrap_or_default()
    };
    for set in ["CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"] {
        let value = field(set);
        if u64::from_str_radix(&value, 16).map_or(true, |v| v != 0) {
            breach(&format!("{set} {value}"));
        }
    }
    if field("NoNewPrivs:") != "1" {
        breach("NoNewPrivs is not 1");
    }
    blocked("no capability in any set, NoNewPrivs 1")
}

fn chown_path(path: &str) -> ! {
    let p = c(path);
    for (uid, gid) in [(1234u32, 1234u32), (65534, 65534)] {
        // SAFETY: NUL-terminated path.
        if unsafe { chown(p.as_ptr(), uid, gid) } == 0 {
            breach(&format!("chowned {path} to {uid}:{gid}"));
        }
    }
    blocked(&format!("chown {path}: {}", errno()))
}

/// getpid through the x32 ABI (bit 30 of the call number), which would
/// otherwise slip past every number a filter lists.
fn x32() -> ! {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: getpid takes no arguments.
        let ret = unsafe { syscall(0x4000_0000 | 39) };
        must_not_return("getpid through the x32 ABI", ret)
    }
    #[cfg(not(target_arch = "x86_64"))]
    blocked("no x32 ABI on this architecture")
}

/// getpid through the 32-bit `int 0x80` gate: another audit architecture.
fn i386() -> ! {
    #[cfg(target_arch = "x86_64")]
    {
        let ret: i64;
        // SAFETY: i386 getpid (20) takes no arguments and clobbers nothing else.
        unsafe { std::arch::asm!("int 0x80", inlateout("rax") 20i64 => ret, options(nostack)) };
        must_not_return("getpid through int 0x80", ret)
    }
    #[cfg(not(target_arch = "x86_64"))]
    blocked("no i386 gate on this architecture")
}

fn usage() -> ! {
    eprintln!("usage: escape_probe ATTACK [ARG...]");
    exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or_else(|| usage());
    // SAFETY (every arm): integer arguments or NUL-terminated strings.
    match arg(1) {
        "read" => read_path(arg(2)),
        "write" => write_path(arg(2)),
        "write-held" => write_held(arg(2)),
        "move-aside" => move_aside(arg(2)),
        "plant-hook" => plant_hook(arg(2), arg(3)),
        "plant-commondir" => plant_commondir(arg(2), arg(3), arg(4)),
        "plant-policy" => plant_policy(arg(2)),
        "swap" => swap(arg(2), arg(3), arg(4)),
        "race-check" => race_check(arg(2), arg(3)),
        "setuid-bits" => setuid_bits(arg(2)),
        "memfd-execve" => memfd_execve(),
        "fill" => fill(arg(2)),
        "fork-bomb" => fork_bomb(arg(2).parse().unwrap_or_else(|_| usage())),
        "memory-hog" => memory_hog(arg(2).parse().unwrap_or_else(|_| usage())),
        "mount" => {
            let (src, dst, fs) = (c("tmpfs"), c("/tmp"), c("tmpfs"));
            must_not_return("mount", unsafe {
                syscall(
                    nr::MOUNT,
                    src.as_ptr(),
                    dst.as_ptr(),
                    fs.as_ptr(),
                    0 as c_long,
                    0 as c_long,
                )
            })
        }
        "unshare" => must_not_return("unshare", unsafe {
            syscall(nr::UNSHARE, 0x1000_0000 as c_long | 0x20000)
        }),
        "setns" => setns(),
        "ptrace" => ptrace_other(),
        "keyctl" => must_not_return("keyctl", unsafe {
            syscall(nr::KEYCTL, 1 as c_long, 0 as c_long)
        }),
        "bpf" => {
            let mut attr = [0u8; 128];
            attr[0] = 2; // BPF_MAP_TYPE_ARRAY
            attr[4] = 4;
            attr[8] = 4;
            attr[12] = 1;
            must_not_return("bpf(BPF_MAP_CREATE)", unsafe {
                syscall(nr::BPF, 0 as c_long, attr.as_mut_ptr(), 128 as c_long)
            })
        }
        "io_uring" => io_uring(),
        "write-execute" => write_execute(),
        "jit" => jit(),
        "memfd-exec" => memfd_exec(),
        "vsock" => must_not_return("socket(AF_VSOCK)", unsafe {
            syscall(nr::SOCKET, 40 as c_long, 1 as c_long, 0 as c_long)
        }),
        "tcp" => tcp(arg(2)),
        "unix" => unix_socket(arg(2)),
        "symlink" => symlink_out(arg(2), arg(3)),
        "tiocsti" => tiocsti(),
        "rlimit" => raise_rlimit(),
        "setuid" => setuid(arg(2)),
        "euid" => euid(),
        "caps" => caps(),
        "chown" => chown_path(arg(2)),
        "memfd-ran" => breach("a program ran from a memfd"),
        "x32" => x32(),
        "i386" => i386(),
        // Not an attack: what the program was given, for the tests of the environment.
        "env" => {
            for (name, value) in std::env::vars_os() {
                println!("{}={}", name.to_string_lossy(), value.to_string_lossy());
            }
            exit(0)
        }
        _ => usage(),
    }
}
