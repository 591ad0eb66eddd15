//! Leaving the program with no capabilities at all.
//!
//! The first process in a new user namespace holds every capability *in that
//! namespace*. A capability there still reaches files whose owner is mapped
//! into it, and the caller's uid is mapped to itself: so when the caller is
//! root, a program keeping `CAP_DAC_OVERRIDE` could read and write every
//! root-owned file the mounts show, whatever their modes. Chock therefore
//! empties every set before the program starts, whoever the caller is:
//!
//! 1. securebits `NOROOT`, `NO_SETUID_FIXUP`, `NO_CAP_AMBIENT_RAISE` and
//!    `KEEP_CAPS`, each locked, so an `execve` as uid 0 grants nothing back
//!    and nothing in the program can unset them;
//! 2. the bounding set, one capability at a time up to the kernel's last;
//! 3. the ambient set;
//! 4. the effective, permitted and inheritable sets (`capset` with zeros).
//!
//! `PR_SET_NO_NEW_PRIVS` (set before Landlock) stops setuid and file
//! capabilities too, and every writable mount is `nosuid`.

use nix::errno::Errno;

const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
const SECBIT_NO_SETUID_FIXUP: libc::c_ulong = 1 << 2;
const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_ulong = 1 << 3;
const SECBIT_KEEP_CAPS_LOCKED: libc::c_ulong = 1 << 5;
const SECBIT_NO_CAP_AMBIENT_RAISE: libc::c_ulong = 1 << 6;
const SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED: libc::c_ulong = 1 << 7;
/// Every securebit the program ends with, all locked.
pub(crate) const SECUREBITS: libc::c_ulong = SECBIT_NOROOT
    | SECBIT_NOROOT_LOCKED
    | SECBIT_NO_SETUID_FIXUP
    | SECBIT_NO_SETUID_FIXUP_LOCKED
    | SECBIT_KEEP_CAPS_LOCKED
    | SECBIT_NO_CAP_AMBIENT_RAISE
    | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;

use crate::sys::{self, CapData};

/// Which step of dropping failed, for the error the parent prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CapStep {
    Securebits,
    Bounding,
    Ambient,
    Capset,
}

impl CapStep {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            CapStep::Securebits => "locking the securebits",
            CapStep::Bounding => "emptying the capability bounding set",
            CapStep::Ambient => "clearing the ambient capabilities",
            CapStep::Capset => "clearing the effective, permitted and inheritable capabilities",
        }
    }
}

fn prctl(option: libc::c_int, arg: libc::c_ulong) -> Result<(), Errno> {
    sys::prctl(option, arg, 0)
}

/// Drops every capability of the calling process, as described above.
/// Allocation-free: runs between `clone` and `execve`.
pub(crate) fn drop_all(last_cap: u32) -> Result<(), (CapStep, Errno)> {
    prctl(libc::PR_SET_SECUREBITS, SECUREBITS).map_err(|e| (CapStep::Securebits, e))?;
    for cap in 0..=last_cap {
        match prctl(libc::PR_CAPBSET_DROP, libc::c_ulong::from(cap)) {
            Ok(()) => {}
            // Past the kernel's last capability.
            Err(Errno::EINVAL) => break,
            Err(e) => return Err((CapStep::Bounding, e)),
        }
    }
    prctl(
        libc::PR_CAP_AMBIENT,
        libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
    )
    .map_err(|e| (CapStep::Ambient, e))?;
    sys::capset(&[CapData::default(); 2]).map_err(|e| (CapStep::Capset, e))
}

/// The kernel's highest capability number (for emptying the bounding set).
pub(crate) fn last_cap() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(63)
}

/// The capability sets of the calling process, as `capget` reports them
/// (effective, permitted, inheritable), each as 64 bits.
pub fn current() -> Result<(u64, u64, u64), Errno> {
    let data = sys::capget()?;
    let join = |lo: u32, hi: u32| u64::from(lo) | (u64::from(hi) << 32);
    Ok((
        join(data[0].effective, data[1].effective),
        join(data[0].permitted, data[1].permitted),
        join(data[0].inheritable, data[1].inheritable),
    ))
}

/// Keeps `CAP_NET_ADMIN` across the next `execve` (inheritable, then
/// ambient), for a helper that joined a user namespace and then runs a
/// host tool there: without it, a caller who is not root in that namespace
/// would start the tool with no capability at all.
pub(crate) fn keep_net_admin_across_exec() -> Result<(), Errno> {
    const CAP_NET_ADMIN: u32 = 12;
    let mut data = sys::capget()?;
    data[0].inheritable |= 1 << CAP_NET_ADMIN;
    sys::capset(&data)?;
    sys::prctl(
        libc::PR_CAP_AMBIENT,
        libc::PR_CAP_AMBIENT_RAISE as libc::c_ulong,
        libc::c_ulong::from(CAP_NET_ADMIN),
    )
}
