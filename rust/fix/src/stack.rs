//! Where the machine stack stands, for the recursion bounds of lowering and
//! evaluation (both run on the evaluation thread's large stack).

/// The current stack address. Stacks grow down on every platform fix runs
/// on, so a smaller address is deeper.
#[inline(always)]
pub fn address() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}
