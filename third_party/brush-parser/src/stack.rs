//! A floor under the parsers' recursion (a change of Chock's, see
//! `third_party/README.md`). The tokenizer and both grammars recurse once
//! per level of nesting in the text; with a floor set, a parse whose stack
//! reaches below it fails (`TooComplex`, `TokenizerError::TooDeep`) instead
//! of overflowing the stack and aborting the process.

use std::cell::Cell;

thread_local! {
    /// The lowest stack address the parsers may reach on this thread; 0
    /// when no floor is set.
    static FLOOR: Cell<usize> = const { Cell::new(0) };
}

/// Lets the parsers on the calling thread use `bytes` of stack below the
/// caller's frame, and no more; the floor stays until set again.
#[inline(never)]
pub fn set_floor_below_here(bytes: usize) {
    let floor = address().saturating_sub(bytes);
    FLOOR.with(|f| f.set(floor));
}

/// Whether the calling frame stands below the floor set on this thread.
#[inline(always)]
pub fn exhausted() -> bool {
    address() < FLOOR.with(Cell::get)
}

/// The address of a local of the caller's frame. Stacks grow down on
/// every platform this runs on, so a smaller address is deeper.
#[inline(always)]
fn address() -> usize {
    let marker = 0u8;
    std::ptr::addr_of!(marker) as usize
}
