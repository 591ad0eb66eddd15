//! The memory bound: resident memory is sampled every few thousand steps
//! and compared with what the process held when the evaluation started.
//! Sampling the process keeps allocation itself free of bookkeeping.

/// Resident bytes of this process, from `/proc/self/statm`.
pub fn resident_bytes() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * usize::try_from(page).unwrap_or(4096))
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_resident_memory() {
        let rss = super::resident_bytes().expect("/proc/self/statm is readable on Linux");
        assert!(rss > 0);
    }
}
