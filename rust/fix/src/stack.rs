//! Where the machine stack stands, for the recursion bounds of lowering and
//! evaluation (both run on the evaluation thread's large stack).

/// The current stack address. Stacks grow down on every platform fix runs
/// on, so a smaller address is deeper.
///
/// The address of a local of the caller's frame (this is always inlined):
/// one `lea`, checked on every selection, call and thunk. Nothing reads
/// the local, so it is never written; the address alone is enough to
/// compare with a limit that has a wide margin.
#[inline(always)]
pub fn address() -> usize {
    let marker = 0u8;
    std::ptr::addr_of!(marker) as usize
}

/// Asks the kernel to back the calling thread's stack below the frames in
/// use with transparent huge pages. A deep recursion walks megabytes of
/// stack again and again (9,000 nested calls hold about 5 MB): in 4 KiB
/// pages that is more pages than the TLB holds, and on a virtual machine
/// each miss walks two sets of page tables; in 2 MiB pages it is three.
/// The kernel marks thread stacks not to get huge pages unless asked
/// (since Linux 6.7), and an older or differently set kernel may refuse:
/// the advice changes only speed, so a refusal is ignored.
pub fn prefer_huge_pages() {
    let Some(low) = thread_stack_bottom() else {
        return;
    };
    let start = low.next_multiple_of(crate::memory::HUGE_PAGE);
    // Below the frames in use, so pages already faulted in stay as they are.
    let end = address() & !(crate::memory::HUGE_PAGE - 1);
    if end > start {
        // SAFETY: the range lies inside this thread's stack mapping, below
        // every frame in use; the advice changes how pages are backed,
        // never their contents.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

/// The lowest address of the calling thread's stack.
fn thread_stack_bottom() -> Option<usize> {
    let mut attr = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
    // SAFETY: pthread_getattr_np fills `attr` for the calling thread; only
    // when it succeeds is `attr` read and then destroyed, once.
    unsafe {
        if libc::pthread_getattr_np(libc::pthread_self(), attr.as_mut_ptr()) != 0 {
            return None;
        }
        let mut addr = std::ptr::null_mut();
        let mut size = 0;
        let got = libc::pthread_attr_getstack(attr.as_ptr(), &mut addr, &mut size);
        libc::pthread_attr_destroy(attr.as_mut_ptr());
        (got == 0).then_some(addr as usize)
    }
}

/// The flags `/proc/self/smaps` shows for the mapping holding `address`
/// (`hg`: huge pages asked for), or `None` where the kernel has no
/// transparent huge pages to ask for.
#[cfg(test)]
pub(crate) fn mapping_flags(address: usize) -> Option<String> {
    if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists() {
        return None;
    }
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
    let mut inside = false;
    for line in smaps.lines() {
        if let Some((range, _)) = line.split_once(' ')
            && let Some((from, to)) = range.split_once('-')
            && let (Ok(from), Ok(to)) = (
                usize::from_str_radix(from, 16),
                usize::from_str_radix(to, 16),
            )
        {
            inside = (from..to).contains(&address);
        } else if inside && let Some(flags) = line.strip_prefix("VmFlags:") {
            return Some(flags.trim().to_string());
        }
    }
    panic!("no mapping holds {address:#x}");
}

#[cfg(test)]
mod tests {
    /// The address of a frame `depth` calls below this one.
    #[inline(never)]
    fn address_below(depth: u32) -> usize {
        if depth == 0 {
            return super::address();
        }
        // Used after the call, so the frame stays.
        let here = super::address();
        std::hint::black_box(address_below(depth - 1)).min(here)
    }

    #[test]
    fn deeper_calls_stand_lower() {
        let top = super::address();
        let deep = address_below(1000);
        // A thousand frames of at least a return address each.
        assert!(
            deep + 8 * 1000 <= top,
            "top {top:#x}, 1000 calls down {deep:#x}"
        );
    }

    #[test]
    fn a_threads_stack_below_its_frames_asks_for_huge_pages() {
        std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(|| {
                let deep = super::address() - (16 << 20);
                super::prefer_huge_pages();
                if let Some(flags) = super::mapping_flags(deep) {
                    assert!(flags.split(' ').any(|f| f == "hg"), "stack flags: {flags}");
                }
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
