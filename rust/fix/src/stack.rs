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
}
