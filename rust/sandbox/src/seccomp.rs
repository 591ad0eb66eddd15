//! The seccomp filters the sandboxed program runs under.
//!
//! A denylist, as the reference describes: the calls that change what the
//! sandbox is made of (namespaces, mounts, the root), that reach the kernel
//! or other processes (modules, kexec, keyrings, ptrace, bpf, userfaultfd,
//! reboot, syslog) or that undo a wall (`open_by_handle_at` walks around the
//! mount tree) kill the process. Killing rather than failing is deliberate:
//! a program that tries them is not one whose next step we want to see.
//! io_uring fails with `EPERM` instead, because libuv probes it at Node's
//! start and must be able to fall back. The write-and-execute rules fail with
//! `EPERM` too, and `sandbox.jit` = allow removes exactly those three.
//!
//! seccompiler gives one match action per filter, so each list is compiled
//! as a filter of its own (simple to read and test), and the filters are
//! then chained into **one** program, installed with one `seccomp(2)` call:
//! each filter's "allow" becomes a jump to the next filter's first
//! instruction, so a call is allowed only when every filter allows it, and
//! the first filter that does not answers. The filters are chained strictest
//! first (kill, then errno) and no call is in two lists, so the answer is
//! the one the kernel would give running them as separate filters (the
//! strictest wins), at the cost of one filter's setup rather than four.
//! Every seccompiler filter starts by killing a foreign architecture; on
//! x86_64 one more hand-written filter kills the x32 ABI, whose calls carry
//! the same audit architecture with bit 30 set and would otherwise slip past
//! every number in the list.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::error::SandboxError;

/// `open_tree_attr` (Linux 6.15), newer than the libc crate on some targets.
const SYS_OPEN_TREE_ATTR: i64 = 467;
const AF_VSOCK: u64 = 40;
const AT_EMPTY_PATH: u64 = 0x1000;
const TIOCSTI: u64 = 0x5412;
const TIOCLINUX: u64 = 0x541C;
const READ_IMPLIES_EXEC: u64 = 0x0040_0000;
const SHM_EXEC: u64 = 0o100000;
const S_ISUID: u64 = 0o4000;
const S_ISGID: u64 = 0o2000;
const O_CREAT: u64 = libc::O_CREAT as u64;
/// `__O_TMPFILE`, the bit of `O_TMPFILE` that is not `O_DIRECTORY`.
const O_TMPFILE_BIT: u64 = (libc::O_TMPFILE & !libc::O_DIRECTORY) as u64;
/// `fchmodat2` (Linux 6.6), newer than the libc crate on some targets.
const SYS_FCHMODAT2: i64 = 452;
const PERSONALITY_QUERY: u64 = 0xffff_ffff;
/// Namespace flags `clone` may carry (CLONE_NEWTIME is left out: in `clone`'s
/// first argument that bit belongs to the exit signal).
const CLONE_NAMESPACE_FLAGS: [u64; 7] = [
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWCGROUP as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
];

/// Whether the write-and-execute rule is part of the filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteExecute {
    /// A page may not be writable and executable at once (the default).
    Refused,
    /// `sandbox.jit` answered allow: the three write-and-execute rules are off.
    Allowed,
}

/// The calls that kill the process, by name, as `chock doctor` and the docs list them.
pub const KILLED_CALLS: [(&str, i64); 31] = [
    ("unshare", libc::SYS_unshare),
    ("setns", libc::SYS_setns),
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("pivot_root", libc::SYS_pivot_root),
    ("chroot", libc::SYS_chroot),
    ("open_tree", libc::SYS_open_tree),
    ("move_mount", libc::SYS_move_mount),
    ("fsopen", libc::SYS_fsopen),
    ("fsconfig", libc::SYS_fsconfig),
    ("fsmount", libc::SYS_fsmount),
    ("fspick", libc::SYS_fspick),
    ("mount_setattr", libc::SYS_mount_setattr),
    ("open_tree_attr", SYS_OPEN_TREE_ATTR),
    ("init_module", libc::SYS_init_module),
    ("finit_module", libc::SYS_finit_module),
    ("delete_module", libc::SYS_delete_module),
    ("kexec_load", libc::SYS_kexec_load),
    ("kexec_file_load", libc::SYS_kexec_file_load),
    ("add_key", libc::SYS_add_key),
    ("keyctl", libc::SYS_keyctl),
    ("request_key", libc::SYS_request_key),
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_readv", libc::SYS_process_vm_readv),
    ("process_vm_writev", libc::SYS_process_vm_writev),
    ("bpf", libc::SYS_bpf),
    ("userfaultfd", libc::SYS_userfaultfd),
    ("reboot", libc::SYS_reboot),
    ("syslog", libc::SYS_syslog),
    ("sethostname", libc::SYS_sethostname),
    ("open_by_handle_at", libc::SYS_open_by_handle_at),
];

fn target_arch() -> Result<TargetArch, SandboxError> {
    match std::env::consts::ARCH {
        "x86_64" => Ok(TargetArch::x86_64),
        "aarch64" => Ok(TargetArch::aarch64),
        "riscv64" => Ok(TargetArch::riscv64),
        other => Err(SandboxError::Unsupported(format!(
            "seccomp filters are built for x86_64, aarch64 and riscv64, not {other}"
        ))),
    }
}

fn condition(
    arg: u8,
    len: SeccompCmpArgLen,
    op: SeccompCmpOp,
    value: u64,
) -> Result<SeccompCondition, SandboxError> {
    SeccompCondition::new(arg, len, op, value).map_err(seccomp_error)
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, SandboxError> {
    SeccompRule::new(conditions).map_err(seccomp_error)
}

/// A rule matching when every bit of `mask` is set in a 32-bit argument.
fn bits_set(arg: u8, mask: u64) -> Result<SeccompRule, SandboxError> {
    rule(vec![condition(
        arg,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::MaskedEq(mask),
        mask,
    )?])
}

fn seccomp_error(error: impl std::fmt::Display) -> SandboxError {
    SandboxError::Seccomp(error.to_string())
}

fn compile(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    action: SeccompAction,
) -> Result<BpfProgram, SandboxError> {
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, action, target_arch()?)
        .map_err(seccomp_error)?;
    BpfProgram::try_from(filter).map_err(seccomp_error)
}

type Rules = BTreeMap<i64, Vec<SeccompRule>>;

fn kill_rules() -> Result<Rules, SandboxError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = KILLED_CALLS
        .iter()
        .map(|&(_, nr)| (nr, Vec::new()))
        .collect();
    // memfd plus execveat(AT_EMPTY_PATH) runs a program that no mount ever showed.
    rules.insert(libc::SYS_execveat, vec![bits_set(4, AT_EMPTY_PATH)?]);
    rules.insert(
        libc::SYS_socket,
        vec![rule(vec![condition(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            AF_VSOCK,
        )?])?],
    );
    // clone with a namespace flag is unshare by another name.
    let clone_rules = CLONE_NAMESPACE_FLAGS
        .iter()
        .map(|&flag| {
            rule(vec![condition(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(flag),
                flag,
            )?])
        })
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_clone, clone_rules);
    Ok(rules)
}

fn eperm_rules(write_execute: WriteExecute) -> Result<Rules, SandboxError> {
    let mut rules = setuid_rules()?;
    for nr in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        rules.insert(nr, Vec::new());
    }
    // The request number is compared as the 32 bits the kernel reads, so a
    // high bit set by the caller cannot slip past.
    let tty_injection = [TIOCSTI, TIOCLINUX]
        .iter()
        .map(|&request| {
            rule(vec![condition(
                1,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Eq,
                request,
            )?])
        })
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_ioctl, tty_injection);
    // TCP Fast Open connects inside a send, where no `connect` is seen: a
    // socket the router's direct path handed over must never be connected
    // anywhere else, so the flag is refused (programs fall back to connect).
    let fast_open = libc::MSG_FASTOPEN as u64;
    rules.insert(libc::SYS_sendto, vec![bits_set(3, fast_open)?]);
    rules.insert(libc::SYS_sendmsg, vec![bits_set(2, fast_open)?]);
    rules.insert(libc::SYS_sendmmsg, vec![bits_set(3, fast_open)?]);
    if write_execute == WriteExecute::Refused {
        let write_and_exec = (libc::PROT_WRITE | libc::PROT_EXEC) as u64;
        rules.insert(libc::SYS_mmap, vec![bits_set(2, write_and_exec)?]);
        rules.insert(libc::SYS_mprotect, vec![bits_set(2, write_and_exec)?]);
        rules.insert(libc::SYS_pkey_mprotect, vec![bits_set(2, write_and_exec)?]);
        rules.insert(
            libc::SYS_personality,
            vec![rule(vec![
                condition(
                    0,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::MaskedEq(READ_IMPLIES_EXEC),
                    READ_IMPLIES_EXEC,
                )?,
                condition(
                    0,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::Ne,
                    PERSONALITY_QUERY,
                )?,
            ])?],
        );
        rules.insert(libc::SYS_shmat, vec![bits_set(2, SHM_EXEC)?]);
    }
    Ok(rules)
}

/// The calls that give a file the set-user-ID or set-group-ID bit, as
/// systemd's `RestrictSUIDSGID=` lists them: a mode argument with either bit
/// (for the calls that create, only with `O_CREAT` or `O_TMPFILE`). The
/// workspace and the cache are the host's, and a setuid file left there runs
/// with its owner's rights for anybody on the host, which for a root caller
/// is root's. `(call, mode argument, flags argument)`.
fn setuid_rules() -> Result<BTreeMap<i64, Vec<SeccompRule>>, SandboxError> {
    let mut calls: Vec<(i64, u8, Option<u8>)> = vec![
        (libc::SYS_fchmod, 1, None),
        (libc::SYS_fchmodat, 2, None),
        (SYS_FCHMODAT2, 2, None),
        (libc::SYS_mknodat, 2, None),
        (libc::SYS_openat, 3, Some(2)),
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        (libc::SYS_chmod, 1, None),
        (libc::SYS_creat, 1, None),
        (libc::SYS_mknod, 1, None),
        (libc::SYS_open, 2, Some(1)),
    ]);
    let mut rules = BTreeMap::new();
    for (call, mode, flags) in calls {
        let mut list = Vec::new();
        for bit in [S_ISUID, S_ISGID] {
            let with_bit = condition(
                mode,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::MaskedEq(bit),
                bit,
            )?;
            match flags {
                None => list.push(rule(vec![with_bit])?),
                Some(flags) => {
                    for creates in [O_CREAT, O_TMPFILE_BIT] {
                        list.push(rule(vec![
                            with_bit.clone(),
                            condition(
                                flags,
                                SeccompCmpArgLen::Dword,
                                SeccompCmpOp::MaskedEq(creates),
                                creates,
                            )?,
                        ])?);
                    }
                }
            }
        }
        rules.insert(call, list);
    }
    Ok(rules)
}

/// clone3 hides its flags behind a pointer a filter cannot read, so it fails
/// with ENOSYS and libc falls back to clone, whose flags the kill filter sees.
/// openat2 hides its mode the same way (a set-user-ID bit could pass), so it
/// fails likewise and callers fall back to openat.
fn enosys_rules() -> Rules {
    BTreeMap::from([
        (libc::SYS_clone3, Vec::new()),
        (libc::SYS_openat2, Vec::new()),
    ])
}

/// The rule sets, strictest first, each with its answer.
fn rule_sets(write_execute: WriteExecute) -> Result<Vec<(Rules, SeccompAction)>, SandboxError> {
    Ok(vec![
        (kill_rules()?, SeccompAction::KillProcess),
        (
            eperm_rules(write_execute)?,
            SeccompAction::Errno(libc::EPERM as u32),
        ),
        (enosys_rules(), SeccompAction::Errno(libc::ENOSYS as u32)),
    ])
}

#[cfg(target_arch = "x86_64")]
fn x32_filter() -> Vec<seccompiler::sock_filter> {
    const BPF_LD_W_ABS: u16 = 0x20;
    const BPF_JMP_JGE_K: u16 = 0x05 | 0x30;
    const BPF_RET_K: u16 = 0x06;
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    let insn = |code, jt, jf, k| seccompiler::sock_filter { code, jt, jf, k };
    vec![
        // The syscall number is at offset 0 of seccomp_data.
        insn(BPF_LD_W_ABS, 0, 0, 0),
        insn(BPF_JMP_JGE_K, 0, 1, X32_SYSCALL_BIT),
        insn(BPF_RET_K, 0, 0, libc::SECCOMP_RET_KILL_PROCESS),
        insn(BPF_RET_K, 0, 0, libc::SECCOMP_RET_ALLOW),
    ]
}

/// The filters, strictest first, for one sandboxed program.
fn filters(write_execute: WriteExecute) -> Result<Vec<BpfProgram>, SandboxError> {
    let mut programs = Vec::new();
    #[cfg(target_arch = "x86_64")]
    programs.push(x32_filter());
    for (rules, action) in rule_sets(write_execute)? {
        programs.push(compile(rules, action)?);
    }
    Ok(programs)
}

/// The one program to install: [`filters`] chained, each filter's
/// `return ALLOW` rewritten as a jump to the next filter's start (the same
/// length, so no other jump moves). cBPF jumps only forward, and the jump
/// lands exactly past the filter's last instruction.
pub(crate) fn program(write_execute: WriteExecute) -> Result<BpfProgram, SandboxError> {
    Ok(chain(filters(write_execute)?))
}

/// The direct path's filter (see `net::direct`): `connect` is answered by
/// Chock through the listener this filter is installed with; every other
/// call is left to the program's own filter. Installed beside it, so the
/// strictest answer of the two still wins.
pub(crate) fn connect_notify_program() -> BpfProgram {
    const BPF_LD_W_ABS: u16 = 0x20;
    const BPF_JMP_JEQ_K: u16 = 0x05 | 0x10;
    const BPF_RET_K: u16 = 0x06;
    /// `seccomp_data`: the call's number, then the architecture.
    const NR: u32 = 0;
    const ARCH: u32 = 4;
    #[cfg(target_arch = "x86_64")]
    const AUDIT_ARCH: u32 = 0xC000_003E;
    #[cfg(target_arch = "aarch64")]
    const AUDIT_ARCH: u32 = 0xC000_00B7;
    #[cfg(target_arch = "riscv64")]
    const AUDIT_ARCH: u32 = 0xC000_00F3;
    let insn = |code, jt, jf, k| seccompiler::sock_filter { code, jt, jf, k };
    vec![
        insn(BPF_LD_W_ABS, 0, 0, ARCH),
        insn(BPF_JMP_JEQ_K, 0, 3, AUDIT_ARCH),
        insn(BPF_LD_W_ABS, 0, 0, NR),
        insn(BPF_JMP_JEQ_K, 0, 1, libc::SYS_connect as u32),
        insn(BPF_RET_K, 0, 0, libc::SECCOMP_RET_USER_NOTIF),
        insn(BPF_RET_K, 0, 0, libc::SECCOMP_RET_ALLOW),
    ]
}

/// The port dialer's program (see `publish`): an allowlist, every other
/// call kills it. It may receive a port, make an IPv4 socket, connect it,
/// wait for it, send it out and close it, and nothing else: no file can be
/// opened, no program run, no other kind of socket made.
pub(crate) fn dialer_program() -> Result<BpfProgram, SandboxError> {
    let mut allowed = vec![
        libc::SYS_recvfrom,
        libc::SYS_sendmsg,
        libc::SYS_connect,
        libc::SYS_ppoll,
        libc::SYS_getsockopt,
        libc::SYS_close,
        libc::SYS_exit,
        libc::SYS_exit_group,
        libc::SYS_rt_sigreturn,
        libc::SYS_restart_syscall,
    ];
    #[cfg(target_arch = "x86_64")]
    allowed.push(libc::SYS_poll);
    let mut rules: Rules = allowed.into_iter().map(|nr| (nr, Vec::new())).collect();
    rules.insert(
        libc::SYS_socket,
        vec![rule(vec![condition(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            libc::AF_INET as u64,
        )?])?],
    );
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::KillProcess,
        SeccompAction::Allow,
        target_arch()?,
    )
    .map_err(seccomp_error)?;
    let allowlist = BpfProgram::try_from(filter).map_err(seccomp_error)?;
    #[cfg(target_arch = "x86_64")]
    let programs = vec![x32_filter(), allowlist];
    #[cfg(not(target_arch = "x86_64"))]
    let programs = vec![allowlist];
    Ok(chain(programs))
}

/// Filters chained into one program, as [`program`] describes.
fn chain(programs: Vec<BpfProgram>) -> BpfProgram {
    const BPF_RET_K: u16 = 0x06;
    const BPF_JMP_JA: u16 = 0x05;
    let last = programs.len().saturating_sub(1);
    let mut chained = Vec::new();
    for (index, filter) in programs.into_iter().enumerate() {
        let len = filter.len();
        chained.extend(filter.into_iter().enumerate().map(|(at, mut insn)| {
            if index < last && insn.code == BPF_RET_K && insn.k == libc::SECCOMP_RET_ALLOW {
                insn = seccompiler::sock_filter {
                    code: BPF_JMP_JA,
                    jt: 0,
                    jf: 0,
                    // Past this instruction by `k`: the next filter's first.
                    k: (len - at - 1) as u32,
                };
            }
            insn
        }));
    }
    chained
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thirty_one_calls_kill_and_none_twice() {
        let mut numbers: Vec<i64> = KILLED_CALLS.iter().map(|&(_, nr)| nr).collect();
        numbers.sort_unstable();
        numbers.dedup();
        assert_eq!(numbers.len(), 31);
    }

    #[test]
    fn allowing_jit_removes_only_the_write_execute_rules() {
        let filter = |w| compile(eperm_rules(w).expect("rules"), SeccompAction::Errno(1));
        let refused = filter(WriteExecute::Refused).expect("filter");
        let allowed = filter(WriteExecute::Allowed).expect("filter");
        assert!(
            allowed.len() < refused.len(),
            "the jit filter must be shorter"
        );
        // io_uring and TIOCSTI stay in both.
        assert!(allowed.len() > 10);
    }

    #[test]
    fn every_call_that_sets_a_mode_is_filtered_for_both_bits() {
        let rules = setuid_rules().expect("rules");
        assert!(rules.contains_key(&libc::SYS_fchmodat) && rules.contains_key(&SYS_FCHMODAT2));
        assert_eq!(rules[&libc::SYS_fchmod].len(), 2);
        assert_eq!(rules[&libc::SYS_openat].len(), 4);
    }

    #[test]
    fn every_filter_compiles_and_the_chain_fits_one_program() {
        let programs = filters(WriteExecute::Refused).expect("filters");
        assert!(programs.iter().all(|p| !p.is_empty()));
        let chained = program(WriteExecute::Refused).expect("program");
        assert_eq!(chained.len(), programs.iter().map(Vec::len).sum::<usize>());
        assert!(chained.len() < 4096, "BPF_MAXINSNS");
        // Only the last filter still allows; every other allow jumps on.
        let allows = |p: &[seccompiler::sock_filter]| {
            p.iter()
                .filter(|i| i.code == 0x06 && i.k == libc::SECCOMP_RET_ALLOW)
                .count()
        };
        assert_eq!(allows(&chained), allows(programs.last().expect("last")));
    }

    /// Chained, the first filter that does not allow answers, so no call
    /// may be in two lists with two answers.
    #[test]
    fn no_call_is_in_two_lists() {
        let mut all: Vec<i64> = rule_sets(WriteExecute::Refused)
            .expect("rules")
            .into_iter()
            .flat_map(|(rules, _)| rules.into_keys())
            .collect();
        let before = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), before);
    }
}
