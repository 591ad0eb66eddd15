//! A reference-counted header plus slice behind one thin pointer.
//!
//! `Rc<[T]>` is a fat pointer (16 bytes) and `Rc<Vec<T>>` costs two
//! allocations. Strings, lists, attribute sets and environments are the
//! evaluator's most frequent allocations, and a value must stay 16 bytes, so
//! they share this one type: a single allocation holding the count, the
//! length, a small header and the elements, addressed by an 8-byte pointer.
//! The evaluator is single-threaded, so the count is a plain `Cell`.
//!
//! The count is this module's: safe code changes it only through `clone`
//! and `drop`, so the unsafe code that relies on it (freeing a block whose
//! count reaches zero, handing out a writable slice at a count of one) is
//! all in this file. A holder that copies handles bitwise (`Value::clone`)
//! counts the copy through `Count`, whose operations are `unsafe` and
//! state what the caller must do.
//!
//! A small block (512 bytes or less: nearly every block) comes from this
//! thread's free lists and chunks, a larger one from mimalloc: evaluation
//! allocates and frees many blocks on one thread, which is what
//! thread-local free lists are built for (the system allocator spent a
//! quarter of the time here).

use std::alloc::{self, Layout};
use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr::{self, NonNull};

/// The part of a block a handle points at. A block of elements has its
/// length in the word before it; a block without elements (`Shared`:
/// thunks, closures) has none, so a thunk is 24 bytes, not 32. The
/// elements follow at `data_offset::<H, T>()`.
#[repr(C)]
struct Inner<H, T> {
    count: Cell<usize>,
    header: H,
    _elements: [T; 0],
}

/// Whether blocks of `T` carry a length word (every element type but a
/// zero-sized one, which only `Shared` uses, always with no elements).
const fn has_len<T>() -> bool {
    std::mem::size_of::<T>() != 0
}

/// Bytes before the `Inner` part: the length word, if any, padded to
/// `Inner`'s alignment (the word is the last of them, right before
/// `Inner`).
const fn prefix<H, T>() -> usize {
    let align = std::mem::align_of::<Inner<H, T>>();
    if !has_len::<T>() {
        0
    } else if align > std::mem::size_of::<usize>() {
        align
    } else {
        std::mem::size_of::<usize>()
    }
}

/// A shared, immutable header and slice in one allocation.
pub struct ThinRc<H, T> {
    ptr: NonNull<Inner<H, T>>,
    _owns: PhantomData<(H, T)>,
}

/// Blocks up to this size are kept for reuse when freed (environments,
/// thunks, closures, small sets and strings: nearly every block).
const SMALL_MAX: usize = 512;
const SMALL_CLASSES: usize = SMALL_MAX / 8;

/// Small blocks are carved from chunks of this many bytes, each mapped
/// from the kernel at an address that is a multiple of its size: one
/// transparent huge page where the kernel gives them warm (`PageChoice`),
/// so the kernel sets up 40 pages for an evaluation that holds 80 MB, not
/// 20,000 (each with its own zeroing call, page-table entry and
/// accounting: a fifth of the module cases' time was the kernel's).
const CHUNK_BYTES: usize = crate::memory::HUGE_PAGE;

/// A freed small block, linked into the list of its size class.
struct FreeBlock {
    next: *mut FreeBlock,
}

/// The start of a chunk: the chunk taken before it.
struct Chunk {
    previous: *mut Chunk,
}

/// A thread's small blocks. A block is a reused one, taken from the free
/// list of its size class (8, 16, ... 512 bytes), or a fresh one, the next
/// bytes of the current chunk. An evaluation allocates blocks of a handful
/// of sizes millions of times (one environment per call, one thunk per
/// deferred expression): popping a list or moving a pointer is a few
/// instructions, where mimalloc's malloc and free take twenty to fifty.
///
/// The chunks go back to the kernel when the thread ends, with every block
/// in them, live or not. That is sound because nothing can use a block by
/// then: a block is only reachable from its own thread (`ThinRc` is
/// neither `Send` nor `Sync`), the thread's code has returned, and no
/// thread-local holds a block (`DEFERRED` holds addresses it never follows
/// once its thread ends). What is still live then is garbage in reference
/// cycles (a recursive set, a `let` that refers to itself: the module
/// system leaves nearly all it built so), which a thread that only counted
/// references would leak; an evaluation's thread frees it all.
///
/// `SmallBlocks` has no destructor, so reaching it is one address
/// computation, with no check that it is still alive; the chunks are
/// listed in `CHUNKS`, whose destructor frees them and marks the blocks
/// gone.
struct SmallBlocks {
    heads: [Cell<*mut FreeBlock>; SMALL_CLASSES],
    /// The unused part of the current chunk.
    fresh: Cell<*mut u8>,
    end: Cell<*mut u8>,
    /// Set when the thread's chunks were freed: a block freed later (never,
    /// see above) is left where it is, as it may be inside a freed chunk.
    gone: Cell<bool>,
    /// Blocks taken per size class, for `--stats` (`small_blocks_taken`):
    /// one increment beside the free-list head this code reads anyway.
    taken: [Cell<u64>; SMALL_CLASSES],
}

/// The thread's chunks: the current one, linked to the ones before it,
/// and the helper that populates the next one ahead of need.
struct Chunks {
    current: Cell<*mut Chunk>,
    ahead: Cell<Ahead>,
    /// Chunks this thread took from its helper (for tests).
    #[cfg(test)]
    taken_ahead: Cell<usize>,
}

/// Populating a huge page means the kernel zeroing 2 MiB (and, in a
/// virtual machine, the host backing it): in the module cases a tenth to
/// a sixth of the evaluation thread's time went to `clear_page`. A thread
/// that takes a second chunk is a large evaluation, so from then on a
/// helper thread maps and populates the next chunks while the evaluation
/// uses the current one, and hands them over through a channel: at most
/// `CHUNKS_AHEAD` chunks (not counted by the memory bound until taken)
/// wait, one in the channel and one the helper offers. Two, because an
/// evaluation sometimes takes chunks in quick succession, and one that
/// finds none ready maps its own, paying the populate itself. When the
/// helper is not ready, or could not be started, the evaluation maps its
/// chunk itself as before. When the thread's chunks are freed it tells
/// the helper to stop and unmaps every chunk that still comes through the
/// channel until the helper has ended (the helper unmaps one it populated
/// after being told), so when an evaluation's thread has ended every
/// chunk it took or was given is unmapped.
#[derive(Default)]
enum Ahead {
    #[default]
    NotStarted,
    Running(Helper),
    Unavailable,
}

struct Helper {
    ready: std::sync::mpsc::Receiver<ChunkAddress>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

/// The most chunks populated ahead and not yet taken (see `Ahead`).
const CHUNKS_AHEAD: usize = 2;

/// A chunk's address, as it crosses from the helper thread: a mapping is
/// the process's, so it is owned by whichever thread holds its address.
type ChunkAddress = usize;

impl SmallBlocks {
    /// A block of `size` bytes (the largest of size class `class`); null
    /// if the kernel has no memory.
    #[inline(always)]
    fn take(&self, class: usize, size: usize) -> *mut u8 {
        let taken = &self.taken[class];
        taken.set(taken.get().wrapping_add(1));
        let head = &self.heads[class];
        let block = head.get();
        if !block.is_null() {
            // SAFETY: a listed block is free and was written as a
            // `FreeBlock` when it was listed.
            head.set(unsafe { (*block).next });
            return block.cast();
        }
        let fresh = self.fresh.get();
        if (self.end.get() as usize) - (fresh as usize) >= size {
            // SAFETY: `fresh + size` is at most `end`, inside the chunk.
            self.fresh.set(unsafe { fresh.add(size) });
            return fresh;
        }
        self.take_from_new_chunk(size)
    }

    /// Starts a new chunk (the rest of the current one, smaller than a
    /// block, stays unused) and takes a block of `size` bytes from it.
    #[cold]
    #[inline(never)]
    fn take_from_new_chunk(&self, size: usize) -> *mut u8 {
        let Ok(chunk) = CHUNKS.try_with(|chunks| chunks.take()) else {
            // The thread's chunks are gone (its thread-locals are being
            // destroyed): nothing allocates then, but a block from mimalloc
            // would be correct (it is never freed: `release` leaves small
            // blocks where they are from then on).
            // SAFETY: mi_malloc has no preconditions.
            return unsafe { libmimalloc_sys::mi_malloc(size).cast::<u8>() };
        };
        if chunk.is_null() {
            return chunk;
        }
        // SAFETY: the chunk is fresh, CHUNK_BYTES long; its first block
        // follows the `Chunk` word, and the first block and the one after
        // fit in it.
        unsafe {
            let first = chunk.add(std::mem::size_of::<Chunk>());
            self.fresh.set(first.add(size));
            self.end.set(chunk.add(CHUNK_BYTES));
            first
        }
    }
}

impl Chunks {
    /// A fresh chunk, listed (null if the kernel has no memory).
    fn take(&self) -> *mut u8 {
        // A thread's first chunk is faulted in page by page as it is
        // used: a small evaluation touches a few hundred KiB of it, less
        // than zeroing a whole huge page costs.
        let first = self.current.get().is_null();
        let chunk = if first {
            map_chunk(false)
        } else {
            self.next_whole_chunk()
        };
        if chunk.is_null() {
            return chunk;
        }
        // The chunk is held until the thread ends, whatever its blocks do.
        crate::memory::allocated(CHUNK_BYTES);
        // SAFETY: the chunk is fresh and aligned for a `Chunk`.
        unsafe {
            chunk.cast::<Chunk>().write(Chunk {
                previous: self.current.get(),
            });
        }
        self.current.set(chunk.cast());
        chunk
    }

    /// A whole chunk: the helper's, if it has one ready, or one mapped
    /// here (see `Ahead`).
    fn next_whole_chunk(&self) -> *mut u8 {
        let ahead = match self.ahead.take() {
            Ahead::NotStarted => start_helper().map_or(Ahead::Unavailable, Ahead::Running),
            started => started,
        };
        let ready = match &ahead {
            Ahead::Running(helper) => helper.ready.try_recv().ok(),
            _ => None,
        };
        self.ahead.set(ahead);
        match ready {
            Some(address) => {
                #[cfg(test)]
                self.taken_ahead.set(self.taken_ahead.get() + 1);
                address as *mut u8
            }
            None => map_chunk(true),
        }
    }
}

/// Starts the thread that populates whole chunks ahead of need (see
/// `Ahead`); `None` if no thread can be started.
fn start_helper() -> Option<Helper> {
    use std::sync::atomic::Ordering;
    // The helper offers one chunk while one more waits in the channel.
    let (hand_over, ready) = std::sync::mpsc::sync_channel::<ChunkAddress>(CHUNKS_AHEAD - 1);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopped = std::sync::Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name("fix-chunks".into())
        .stack_size(64 << 10)
        .spawn(move || {
            while !stopped.load(Ordering::Acquire) {
                let chunk = map_chunk(true);
                if chunk.is_null() {
                    return;
                }
                if stopped.load(Ordering::Acquire) || hand_over.send(chunk as ChunkAddress).is_err()
                {
                    // SAFETY: the chunk was mapped above, CHUNK_BYTES long, and
                    // was never handed over, so nothing refers to it.
                    unsafe { libc::munmap(chunk.cast(), CHUNK_BYTES) };
                    return;
                }
            }
        })
        .ok()?;
    Some(Helper {
        ready,
        stop,
        thread,
    })
}

impl Helper {
    /// Stops the helper and unmaps the chunks it populated and nobody
    /// took; returns how many came through the channel. When it returns
    /// the helper has ended.
    fn stop(self) -> usize {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        // Until the helper ends (its sender dropped), whatever it still
        // sends is unmapped here: the chunk waiting in the channel, and
        // one it was offering when told to stop.
        let mut unmapped = 0;
        for chunk in self.ready.iter() {
            // SAFETY: a chunk from the channel was mapped by the helper,
            // CHUNK_BYTES long, and handed to nobody else.
            unsafe { libc::munmap(chunk as *mut libc::c_void, CHUNK_BYTES) };
            unmapped += 1;
        }
        // The helper's work is a bounded system call or two; it never panics.
        let _ = self.thread.join();
        unmapped
    }
}

/// Whether the next whole chunk asks for a huge page or for base pages.
///
/// A huge page is the cheaper to populate while the kernel has warm ones
/// (0.2 ms for 2 MiB on the machine measured, against 0.7 ms for 512 base
/// pages). But a virtual machine whose balloon reports free memory to its
/// host (`virtio_balloon` free page reporting) hands back exactly the free
/// blocks of huge-page size, and the host must back such a block again
/// when the guest next uses it: about 5 ms per huge page, and a large
/// module-system evaluation takes 34 of them. Base pages are taken from
/// the smaller free blocks first, which are never reported, so they are
/// cold only once those run out. So a huge page that took
/// longer than `SLOW_HUGE_PAGE` to populate sends the next
/// `BASE_PAGE_RUN` chunks to base pages, and then a huge page is tried
/// again. One choice for the process: the kernel's supply of huge pages
/// is the whole process's, whichever thread populates.
struct PageChoice {
    base_pages_left: std::sync::atomic::AtomicU32,
}

/// Five times a warm huge page's populate, a fifth of a cold one's.
const SLOW_HUGE_PAGE: std::time::Duration = std::time::Duration::from_millis(1);
const BASE_PAGE_RUN: u32 = 16;

static PAGE_CHOICE: PageChoice = PageChoice::new();

impl PageChoice {
    const fn new() -> Self {
        PageChoice {
            base_pages_left: std::sync::atomic::AtomicU32::new(0),
        }
    }

    /// Whether to ask for a huge page now (else base pages, one fewer left).
    fn huge_page_next(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        self.base_pages_left
            .fetch_update(Relaxed, Relaxed, |left| left.checked_sub(1))
            .is_err()
    }

    /// A huge page was populated in `time`.
    fn huge_page_took(&self, time: std::time::Duration) {
        if time > SLOW_HUGE_PAGE {
            self.base_pages_left
                .store(BASE_PAGE_RUN, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// Maps `CHUNK_BYTES` of memory at a multiple of `CHUNK_BYTES` (null if
/// the kernel has none). A `whole` chunk is populated at once, in one huge
/// page or in base pages as `PAGE_CHOICE` says; any other is faulted in
/// page by page as it is first written (base pages even where the kernel
/// gives huge pages unasked: a small evaluation touches a few hundred KiB
/// of its first chunk, less than zeroing 2 MiB costs). All of it is
/// advice: a kernel without transparent huge pages, or set never to give
/// them, still populates the range in one call, and an older kernel that
/// refuses it faults the pages in one by one as they are first written.
fn map_chunk(whole: bool) -> *mut u8 {
    // Twice the size, so that an aligned chunk lies inside; the rest is
    // given back below.
    let reserved_bytes = 2 * CHUNK_BYTES;
    // SAFETY: a new anonymous private mapping at an address the kernel
    // picks overlaps no memory in use.
    let reserved = unsafe {
        libc::mmap(
            ptr::null_mut(),
            reserved_bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if reserved == libc::MAP_FAILED {
        return ptr::null_mut();
    }
    let start = reserved as usize;
    let chunk = start.next_multiple_of(CHUNK_BYTES);
    let head = chunk - start;
    let tail = reserved_bytes - head - CHUNK_BYTES;
    // SAFETY: the head and the tail are the parts of the mapping just made
    // that lie outside the chunk; nothing refers to them.
    unsafe {
        if head > 0 {
            libc::munmap(reserved, head);
        }
        if tail > 0 {
            libc::munmap((chunk + CHUNK_BYTES) as *mut libc::c_void, tail);
        }
    }
    let advise = |advice| {
        // SAFETY: the advice is given for the chunk alone, which is mapped
        // and whose contents none of these advices change.
        unsafe { libc::madvise(chunk as *mut libc::c_void, CHUNK_BYTES, advice) };
    };
    let huge = whole && PAGE_CHOICE.huge_page_next();
    advise(if huge {
        libc::MADV_HUGEPAGE
    } else {
        libc::MADV_NOHUGEPAGE
    });
    if whole {
        let start = std::time::Instant::now();
        advise(libc::MADV_POPULATE_WRITE);
        if huge {
            PAGE_CHOICE.huge_page_took(start.elapsed());
        }
    }
    chunk as *mut u8
}

impl Drop for Chunks {
    fn drop(&mut self) {
        // The thread has ended: no block is used again (see `SmallBlocks`).
        // `SmallBlocks` has no destructor, so it is still there to say so.
        SMALL.with(|s| {
            s.gone.set(true);
            for head in &s.heads {
                head.set(ptr::null_mut());
            }
            s.fresh.set(ptr::null_mut());
            s.end.set(ptr::null_mut());
        });
        if let Ahead::Running(helper) = self.ahead.take() {
            helper.stop();
        }
        let mut chunk = self.current.replace(ptr::null_mut());
        while !chunk.is_null() {
            // SAFETY: every listed chunk was mapped by `map_chunk`, is
            // CHUNK_BYTES long and is unmapped once; no block in it is
            // used again (see `SmallBlocks`).
            unsafe {
                let previous = (*chunk).previous;
                libc::munmap(chunk.cast(), CHUNK_BYTES);
                chunk = previous;
            }
        }
    }
}

thread_local! {
    static SMALL: SmallBlocks = const {
        SmallBlocks {
            heads: [const { Cell::new(ptr::null_mut()) }; SMALL_CLASSES],
            fresh: Cell::new(ptr::null_mut()),
            end: Cell::new(ptr::null_mut()),
            gone: Cell::new(false),
            taken: [const { Cell::new(0) }; SMALL_CLASSES],
        }
    };
    static CHUNKS: Chunks = const {
        Chunks {
            current: Cell::new(ptr::null_mut()),
            ahead: Cell::new(Ahead::NotStarted),
            #[cfg(test)]
            taken_ahead: Cell::new(0),
        }
    };
}

/// The size class of a small block: 1 to 8 bytes is class 0, 9 to 16
/// class 1, and so on (a block is never empty: it holds its count).
#[inline(always)]
fn small_class(size: usize) -> Option<usize> {
    (size <= SMALL_MAX).then(|| size.saturating_sub(1) / 8)
}

/// A block: a small one from this thread's chunks, or from mimalloc. A
/// small block has the largest size of its class, so any later request of
/// the class fits when it is reused. Blocks here are aligned to at most 8,
/// which both give (`mi_malloc` without its slower aligned entry point).
///
/// The memory bound (`crate::memory`) counts what this thread holds: a
/// large block from mimalloc while it lives, a chunk of small blocks from
/// when it is taken until the thread ends (its blocks are reused, never
/// given back), so taking or freeing a small block counts nothing.
#[inline]
fn allocate(layout: Layout) -> *mut u8 {
    debug_assert!(layout.align() <= 8);
    if let Some(class) = small_class(layout.size()) {
        let size = (class + 1) * 8;
        return SMALL.with(|s| s.take(class, size));
    }
    crate::memory::allocated(layout.size());
    crate::stats::count(crate::stats::Counter::Allocations);
    crate::stats::add(crate::stats::Counter::AllocatedBytes, layout.size() as u64);
    // SAFETY: mi_malloc has no preconditions; the size is never zero here.
    unsafe { libmimalloc_sys::mi_malloc(layout.size()).cast::<u8>() }
}

/// The small blocks this thread took, and their bytes (each block counted
/// at its size class's size).
pub(crate) fn small_blocks_taken() -> (u64, u64) {
    SMALL
        .try_with(|s| {
            s.taken
                .iter()
                .enumerate()
                .fold((0, 0), |(blocks, bytes), (class, taken)| {
                    let n = taken.get();
                    (blocks + n, bytes + n * ((class as u64 + 1) * 8))
                })
        })
        .unwrap_or_default()
}

/// Frees a block from `allocate` of `size` bytes.
///
/// # Safety
/// `ptr` must come from `allocate` with this size and not be used again.
#[inline]
unsafe fn release(ptr: *mut u8, size: usize) {
    if let Some(class) = small_class(size) {
        let block = ptr.cast::<FreeBlock>();
        SMALL.with(|s| {
            if s.gone.get() {
                return;
            }
            let head = &s.heads[class];
            // SAFETY: the block is at least 8 bytes, aligned to 8, and
            // ours alone from here on.
            unsafe { block.write(FreeBlock { next: head.get() }) };
            head.set(block);
        });
        return;
    }
    crate::memory::freed(size);
    // SAFETY: per the contract, a live block from mi_malloc.
    unsafe { libmimalloc_sys::mi_free(ptr.cast()) }
}

/// Where the elements start, from the `Inner` part. `Inner` ends in
/// `[T; 0]`, so its size is already a multiple of `T`'s alignment and the
/// elements follow directly; `layout_for` computes the same offset through
/// `Layout::extend`.
const fn data_offset<H, T>() -> usize {
    std::mem::size_of::<Inner<H, T>>()
}

/// The layout of a block of `len` elements and the offset of its elements
/// from the block's start. The length word, when there is one, comes
/// first (see `prefix`). The prefix is a multiple of `Inner`'s alignment
/// and `Inner` ends in `[T; 0]`, so the elements follow right after it;
/// the size is rounded up to the alignment. Only the multiplication and
/// the addition that depend on `len` are checked (every allocation and
/// free computes this).
#[inline(always)]
fn layout_for<H, T>(len: usize) -> (Layout, usize) {
    let align = std::mem::align_of::<Inner<H, T>>();
    let offset = prefix::<H, T>() + data_offset::<H, T>();
    let size = len
        .checked_mul(std::mem::size_of::<T>())
        .and_then(|bytes| bytes.checked_add(offset + align - 1))
        .map(|bytes| bytes & !(align - 1));
    match size.map(|size| Layout::from_size_align(size, align)) {
        Some(Ok(layout)) => (layout, offset),
        _ => alloc::handle_alloc_error(Layout::new::<Inner<H, T>>()),
    }
}

/// Frees a half-built allocation if the element iterator panics.
struct BuildGuard<H, T> {
    ptr: NonNull<Inner<H, T>>,
    written: usize,
    layout: Layout,
    offset: usize,
}

impl<H, T> BuildGuard<H, T> {
    /// Guards a block fresh from `start`, no element written yet.
    fn new(ptr: NonNull<Inner<H, T>>, layout: Layout) -> Self {
        BuildGuard {
            ptr,
            written: 0,
            layout,
            offset: data_offset::<H, T>(),
        }
    }
}

impl<H, T> Drop for BuildGuard<H, T> {
    fn drop(&mut self) {
        // SAFETY: the header and the first `written` elements were
        // initialised by `from_iter` before this guard can run.
        unsafe {
            let inner = self.ptr.as_ptr().cast::<u8>();
            ptr::drop_in_place(ptr::addr_of_mut!((*self.ptr.as_ptr()).header));
            let data = inner.add(self.offset).cast::<T>();
            ptr::drop_in_place(ptr::slice_from_raw_parts_mut(data, self.written));
            release(inner.sub(prefix::<H, T>()), self.layout.size());
        }
    }
}

impl<H, T> ThinRc<H, T> {
    /// A fresh block for `len` elements with the count, length and header
    /// written; the elements are still to be written, at the returned
    /// pointer.
    #[inline(always)]
    fn start(header: H, len: usize) -> (NonNull<Inner<H, T>>, *mut T, Layout) {
        // A block without a length word has no room to say it holds
        // elements (`Shared` never does).
        assert!(
            has_len::<T>() || len == 0,
            "ThinRc: elements of a zero-sized type"
        );
        let (layout, offset) = layout_for::<H, T>(len);
        let raw = allocate(layout);
        if raw.is_null() {
            alloc::handle_alloc_error(layout)
        }
        // SAFETY: `raw` is a fresh allocation sized for the length word (if
        // any), `Inner` and `len` elements; these writes and the data
        // pointer stay inside it.
        unsafe {
            let inner = raw.add(prefix::<H, T>()).cast::<Inner<H, T>>();
            if has_len::<T>() {
                inner.cast::<usize>().sub(1).write(len);
            }
            ptr::addr_of_mut!((*inner).count).write(Cell::new(1));
            ptr::addr_of_mut!((*inner).header).write(header);
            (
                NonNull::new_unchecked(inner),
                raw.add(offset).cast::<T>(),
                layout,
            )
        }
    }

    /// The number of elements.
    #[inline(always)]
    fn len(&self) -> usize {
        if has_len::<T>() {
            // SAFETY: a block of elements has its length in the word
            // before `Inner`, written by `start`.
            unsafe { *self.ptr.as_ptr().cast::<usize>().sub(1) }
        } else {
            0
        }
    }

    /// Builds from a header and exactly `iter.len()` elements.
    ///
    /// An iterator that yields fewer elements than it announced is a bug in
    /// the caller; it panics after freeing what was built.
    pub fn from_iter<I>(header: H, iter: I) -> Self
    where
        I: IntoIterator<Item = T>,
        I::IntoIter: ExactSizeIterator,
    {
        let iter = iter.into_iter();
        let len = iter.len();
        match Self::try_from_iter(header, len, iter.map(Ok::<T, std::convert::Infallible>)) {
            Ok(block) => block,
        }
    }

    /// Builds from a header and `len` elements, stopping at the first
    /// error: the elements written so far are dropped, the block is freed
    /// and the error comes back (a long build that is interrupted ends
    /// there, with nothing more made).
    ///
    /// An iterator that ends before `len` elements is a bug in the caller;
    /// it panics after freeing what was built.
    pub fn try_from_iter<I, E>(header: H, len: usize, items: I) -> Result<Self, E>
    where
        I: IntoIterator<Item = Result<T, E>>,
    {
        let (ptr, data, layout) = Self::start(header, len);
        let mut guard = BuildGuard::new(ptr, layout);
        for item in items.into_iter().take(len) {
            let item = item?;
            // SAFETY: `written < len`, so the slot is inside the allocation.
            unsafe { data.add(guard.written).write(item) };
            guard.written += 1;
        }
        assert_eq!(
            guard.written, len,
            "ThinRc::try_from_iter: iterator yielded fewer elements than announced"
        );
        std::mem::forget(guard);
        Ok(ThinRc {
            ptr,
            _owns: PhantomData,
        })
    }

    /// A block holding the `N` elements of `items` (no partial-build
    /// bookkeeping: moving an array in cannot fail halfway).
    #[inline]
    pub fn from_array<const N: usize>(header: H, items: [T; N]) -> Self {
        let (ptr, data, _) = Self::start(header, N);
        // SAFETY: `start` reserved room for N elements at `data`, and an
        // array is N elements laid out back to back.
        unsafe { data.cast::<[T; N]>().write(items) };
        ThinRc {
            ptr,
            _owns: PhantomData,
        }
    }

    /// A block of `len` default elements (a panic in `T::default` would
    /// leak the block, never expose it half-built).
    #[inline]
    pub fn from_default(header: H, len: usize) -> Self
    where
        T: Default,
    {
        let (ptr, data, _) = Self::start(header, len);
        for i in 0..len {
            // SAFETY: `start` reserved room for `len` elements at `data`.
            unsafe { data.add(i).write(T::default()) };
        }
        ThinRc {
            ptr,
            _owns: PhantomData,
        }
    }

    /// Builds from a header and clones of the elements of several slices,
    /// one after another (`//` copies runs of both sets this way).
    pub fn from_cloned_runs(header: H, runs: &[&[T]]) -> Self
    where
        T: Clone,
    {
        let len = runs.iter().map(|r| r.len()).sum();
        let (ptr, data, layout) = Self::start(header, len);
        let mut guard = BuildGuard::new(ptr, layout);
        for run in runs {
            for item in *run {
                // SAFETY: the runs add up to `len`, so `written < len`.
                unsafe { data.add(guard.written).write(item.clone()) };
                guard.written += 1;
            }
        }
        std::mem::forget(guard);
        ThinRc {
            ptr,
            _owns: PhantomData,
        }
    }

    /// Builds from a header and a slice of plain data, copied in one go.
    pub fn from_slice(header: H, items: &[T]) -> Self
    where
        T: Copy,
    {
        Self::from_slices(header, &[items])
    }

    /// Builds from a header and the concatenation of several slices of
    /// plain data (string concatenation), copied in one go each.
    pub fn from_slices(header: H, parts: &[&[T]]) -> Self
    where
        T: Copy,
    {
        let len = parts.iter().map(|p| p.len()).sum();
        let (ptr, mut data, _) = Self::start(header, len);
        for part in parts {
            // SAFETY: the parts add up to exactly `len` elements of a `Copy`
            // type, so every element is written and nothing needs dropping.
            unsafe {
                ptr::copy_nonoverlapping(part.as_ptr(), data, part.len());
                data = data.add(part.len());
            }
        }
        ThinRc {
            ptr,
            _owns: PhantomData,
        }
    }

    /// Builds from a header and `parts` with `sep` between each two (a
    /// string join), each copied once into the block.
    pub fn from_joined<P: AsRef<[T]>>(header: H, parts: &[P], sep: &[T]) -> Self
    where
        T: Copy,
    {
        let len = parts
            .iter()
            .try_fold(0usize, |n, p| n.checked_add(p.as_ref().len()))
            .and_then(|n| {
                sep.len()
                    .checked_mul(parts.len().saturating_sub(1))
                    .and_then(|s| n.checked_add(s))
            })
            .unwrap_or_else(|| alloc::handle_alloc_error(Layout::new::<Inner<H, T>>()));
        let (ptr, mut data, _) = Self::start(header, len);
        for (i, part) in parts.iter().enumerate() {
            let part = part.as_ref();
            // SAFETY: the parts and the `parts.len() - 1` separators add up
            // to exactly `len` elements of a `Copy` type, so every element
            // is written, inside the block, and nothing needs dropping.
            unsafe {
                if i > 0 {
                    ptr::copy_nonoverlapping(sep.as_ptr(), data, sep.len());
                    data = data.add(sep.len());
                }
                ptr::copy_nonoverlapping(part.as_ptr(), data, part.len());
                data = data.add(part.len());
            }
        }
        ThinRc {
            ptr,
            _owns: PhantomData,
        }
    }

    #[inline(always)]
    fn inner(&self) -> &Inner<H, T> {
        // SAFETY: the pointer stays valid while any `ThinRc` to it exists.
        unsafe { self.ptr.as_ref() }
    }

    pub fn header(&self) -> &H {
        &self.inner().header
    }

    /// Where the elements start (see `data_offset`).
    #[inline(always)]
    fn data(&self) -> *mut T {
        // SAFETY: the elements follow the `Inner` block inside the same
        // allocation.
        unsafe {
            self.ptr
                .as_ptr()
                .cast::<u8>()
                .add(data_offset::<H, T>())
                .cast::<T>()
        }
    }

    pub fn as_slice(&self) -> &[T] {
        // SAFETY: `len` elements were initialised right after the `Inner`
        // block by `from_iter`.
        unsafe { std::slice::from_raw_parts(self.data(), self.len()) }
    }

    /// The elements, writable, when this handle is the only reference to
    /// the block (nothing else can see a change).
    pub fn unique_slice_mut(&mut self) -> Option<&mut [T]> {
        if self.inner().count.get() != 1 {
            return None;
        }
        // SAFETY: a count of one and `&mut self` mean no other handle or
        // borrow of the block exists; the elements are initialised as in
        // `as_slice`.
        Some(unsafe { std::slice::from_raw_parts_mut(self.data(), self.len()) })
    }

    /// Whether both handles point at the same allocation.
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        a.ptr == b.ptr
    }

    /// An identity for cycle detection while printing.
    pub fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// The handle as a bare pointer that owns its reference, for a holder
    /// that packs handles into words (a thunk's state); `from_raw` turns
    /// it back into the handle.
    #[inline(always)]
    pub fn into_raw(self) -> *const () {
        let raw = self.ptr.as_ptr().cast_const().cast::<()>();
        std::mem::forget(self);
        raw
    }

    /// Takes back a handle that `into_raw` gave out.
    ///
    /// # Safety
    /// `raw` must come from `into_raw` of a `ThinRc<H, T>`, and each one is
    /// taken back once.
    #[inline(always)]
    pub unsafe fn from_raw(raw: *const ()) -> Self {
        ThinRc {
            // SAFETY: per the contract, a pointer `into_raw` took from a
            // live handle: never null.
            ptr: unsafe { NonNull::new_unchecked(raw.cast::<Inner<H, T>>().cast_mut()) },
            _owns: PhantomData,
        }
    }
}

/// Counts one more reference to a block (a count that would wrap aborts,
/// as `Rc` does).
#[inline(always)]
fn retain(count: &Cell<usize>) {
    let next = count.get().wrapping_add(1);
    if next == 0 {
        std::process::abort();
    }
    count.set(next);
}

/// The reference count of some block, whatever its types, for a holder of
/// handles of several types (`Value`, one `ThinRc` in each shared variant)
/// that copies or drops any of them the same way, without a match per
/// type. Safe to take; what it allows is `unsafe`, with the contracts
/// below, so the count cannot be broken without writing `unsafe`.
#[derive(Clone, Copy)]
pub struct Count<'r>(&'r Cell<usize>);

impl Count<'_> {
    /// Counts a handle the caller makes by copying the bits of the one this
    /// count came from.
    ///
    /// # Safety
    /// The caller then makes exactly one bitwise copy of that handle, and
    /// the copy is dropped as a handle (or forgotten through
    /// `release_shared`).
    #[inline(always)]
    pub unsafe fn retain_copy(self) {
        retain(self.0);
    }

    /// Gives up the reference of the handle this count came from when
    /// other handles remain (one decrement, nothing freed), and says
    /// whether it did; when it did not, the handle is the last and must be
    /// dropped as usual.
    ///
    /// # Safety
    /// When this returns true the caller must forget the handle (never
    /// drop it or use it again).
    #[inline(always)]
    pub unsafe fn release_shared(self) -> bool {
        let left = self.0.get();
        if left > 1 {
            self.0.set(left - 1);
            true
        } else {
            false
        }
    }
}

impl<H, T> ThinRc<H, T> {
    /// This block's count, for `Count`'s unsafe operations.
    #[inline(always)]
    pub fn count(&self) -> Count<'_> {
        Count(&self.inner().count)
    }
}

impl<H, T> Clone for ThinRc<H, T> {
    #[inline]
    fn clone(&self) -> Self {
        retain(&self.inner().count);
        ThinRc {
            ptr: self.ptr,
            _owns: PhantomData,
        }
    }
}

/// Freeing a long chain (a list of a million nested sets) recursively
/// would run out of stack. Past this nesting, frees are queued and run one
/// after another by the outermost free.
const MAX_DROP_DEPTH: u32 = 1000;

/// A free that was queued: the allocation and the function that frees it.
type Deferred = (NonNull<u8>, unsafe fn(NonNull<u8>));

/// In `DROP_STATE`, the bit that says `DEFERRED` holds anything; the
/// bits below it are the nesting of frees.
const QUEUED: u32 = 1 << 31;

thread_local! {
    /// How deep frees are nested, and whether any was queued: one cell,
    /// read and written once on each side of a free (nearly every free is
    /// the outermost one and queues nothing).
    static DROP_STATE: Cell<u32> = const { Cell::new(0) };
    static DEFERRED: std::cell::RefCell<Vec<Deferred>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl<H, T> ThinRc<H, T> {
    /// Drops the contents and frees the allocation of a block whose count
    /// reached zero.
    ///
    /// # Safety
    /// `raw` must come from a `ThinRc<H, T>` whose last handle is gone.
    unsafe fn free(raw: NonNull<u8>) {
        let inner = raw.cast::<Inner<H, T>>().as_ptr();
        // SAFETY: per the contract the block is live, initialised, and
        // unreachable from anywhere else; it starts `prefix` bytes before
        // `Inner`, with the length word when there is one.
        unsafe {
            let base = raw.as_ptr().sub(prefix::<H, T>());
            let len = if has_len::<T>() {
                raw.as_ptr().cast::<usize>().sub(1).read()
            } else {
                0
            };
            let (layout, offset) = layout_for::<H, T>(len);
            ptr::drop_in_place(ptr::addr_of_mut!((*inner).header));
            let data = base.add(offset).cast::<T>();
            ptr::drop_in_place(ptr::slice_from_raw_parts_mut(data, len));
            release(base, layout.size());
        }
    }
}

impl<H, T> Drop for ThinRc<H, T> {
    #[inline]
    fn drop(&mut self) {
        let count = &self.inner().count;
        let left = count.get() - 1;
        count.set(left);
        if left == 0 {
            // SAFETY: this was the last reference.
            unsafe { Self::drop_last(self.ptr.cast::<u8>()) };
        }
    }
}

impl<H, T> ThinRc<H, T> {
    /// Frees a block whose last reference went away (kept out of line so
    /// the common case, a count that stays above zero, inlines to three
    /// instructions).
    ///
    /// # Safety
    /// `raw` is a block of this type with no references left.
    #[inline(never)]
    unsafe fn drop_last(raw: NonNull<u8>) {
        let state = DROP_STATE.with(Cell::get);
        if state & !QUEUED >= MAX_DROP_DEPTH {
            DEFERRED.with(|d| d.borrow_mut().push((raw, Self::free)));
            DROP_STATE.with(|s| s.set(state | QUEUED));
            return;
        }
        DROP_STATE.with(|s| s.set(state + 1));
        // SAFETY: the caller hands over the last reference.
        unsafe { Self::free(raw) };
        // One deeper than `state`, and queued if a deeper free queued.
        let after = DROP_STATE.with(Cell::get);
        if after == 1 | QUEUED {
            // The outermost free runs what deeper frees queued, each one
            // starting from depth one again (the depth stays one here).
            while let Some((block, free)) = DEFERRED.with(|d| d.borrow_mut().pop()) {
                // SAFETY: queued blocks are last handles, freed exactly once.
                unsafe { free(block) };
            }
            DROP_STATE.with(|s| s.set(0));
        } else {
            DROP_STATE.with(|s| s.set(after - 1));
        }
    }
}

/// One shared value with no elements: a thin, counted box (thunks,
/// closures) from the same allocator as everything else.
pub type Shared<H> = ThinRc<H, ()>;

impl<H> ThinRc<H, ()> {
    #[inline]
    pub fn new(header: H) -> Self {
        ThinRc::from_array(header, [])
    }
}

impl<H> std::ops::Deref for ThinRc<H, ()> {
    type Target = H;
    fn deref(&self) -> &H {
        self.header()
    }
}

/// An iterator whose length is known from elsewhere (a merge whose result
/// size was counted first), so `from_iter` can build without a `Vec`.
pub struct Exact<I> {
    pub inner: I,
    pub left: usize,
}

impl<I: Iterator> Iterator for Exact<I> {
    type Item = I::Item;
    fn next(&mut self) -> Option<I::Item> {
        let item = self.inner.next()?;
        self.left = self.left.saturating_sub(1);
        Some(item)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<I: Iterator> ExactSizeIterator for Exact<I> {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    #[test]
    fn holds_header_and_elements() {
        let a = ThinRc::from_iter(7u16, vec![1u64, 2, 3]);
        assert_eq!(*a.header(), 7);
        assert_eq!(a.as_slice(), &[1, 2, 3]);
        assert_eq!(std::mem::size_of::<ThinRc<u16, u64>>(), 8);
    }

    #[test]
    fn layout_matches_std_layout() {
        // What `Layout::extend` makes of the prefix and `Inner` followed by
        // `len` elements, padded to the alignment.
        fn by_std<H, T>(len: usize) -> (Layout, usize) {
            let head = Layout::new::<Inner<H, T>>();
            let head =
                Layout::from_size_align(prefix::<H, T>() + head.size(), head.align()).unwrap();
            let (layout, offset) = head.extend(Layout::array::<T>(len).unwrap()).unwrap();
            (layout.pad_to_align(), offset)
        }
        fn check<H, T>() {
            for len in [0, 1, 2, 3, 7, 100] {
                assert_eq!(
                    layout_for::<H, T>(len),
                    by_std::<H, T>(len),
                    "{len} elements"
                );
                assert_eq!(
                    layout_for::<H, T>(len).1,
                    prefix::<H, T>() + data_offset::<H, T>()
                );
            }
        }
        check::<u8, u64>();
        check::<(), u8>();
        check::<u16, u8>();
        check::<Option<Rc<()>>, [u64; 2]>();
        check::<[u64; 3], ()>();
        #[repr(align(32))]
        struct Wide(#[allow(dead_code)] u8);
        check::<Wide, u8>();
        check::<u8, Wide>();
    }

    #[test]
    fn a_block_without_elements_has_no_length_word() {
        // count and header only: a thunk's state (24 bytes) makes 32.
        assert_eq!(layout_for::<[u64; 3], ()>(0).0.size(), 32);
        assert_eq!(layout_for::<[u64; 3], u8>(0).0.size(), 40);
        let s: Shared<[u64; 3]> = Shared::new([1, 2, 3]);
        assert_eq!(*s, [1, 2, 3]);
        assert!(s.as_slice().is_empty());
        let held = s.clone();
        drop(s);
        assert_eq!(*held, [1, 2, 3]);
    }

    #[test]
    fn copies_slices() {
        let s: ThinRc<(), u8> = ThinRc::from_slices((), &[b"ab", b"", b"cde"]);
        assert_eq!(s.as_slice(), b"abcde");
        let e: ThinRc<u32, u64> = ThinRc::from_slice(9, &[]);
        assert!(e.as_slice().is_empty());
        assert_eq!(*e.header(), 9);
    }

    #[test]
    fn a_build_stopped_by_an_error_drops_what_it_made() {
        use std::cell::Cell;
        use std::rc::Rc;
        struct Counted(Rc<Cell<usize>>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.set(self.0.get() + 1);
            }
        }
        let dropped = Rc::new(Cell::new(0));
        let made = Cell::new(0);
        let items = (0..1000).map(|i| {
            if i == 300 {
                return Err("stopped");
            }
            made.set(made.get() + 1);
            Ok(Counted(dropped.clone()))
        });
        let built =
            ThinRc::<Counted, Counted>::try_from_iter(Counted(dropped.clone()), 1000, items);
        assert_eq!(built.err(), Some("stopped"));
        assert_eq!(made.get(), 300, "nothing is made after the error");
        assert_eq!(
            dropped.get(),
            301,
            "the 300 elements and the header are dropped"
        );

        let whole = ThinRc::<(), u32>::try_from_iter((), 3, (1..=3).map(Ok::<u32, ()>));
        assert_eq!(whole.map(|b| b.as_slice().to_vec()), Ok(vec![1, 2, 3]));
    }

    #[test]
    fn joins_with_a_separator() {
        let parts: [&[u8]; 3] = [b"ab", b"", b"c"];
        let joined = ThinRc::<(), u8>::from_joined((), &parts, b", ");
        assert_eq!(joined.as_slice(), b"ab, , c");
        let none: [&[u8]; 0] = [];
        assert!(
            ThinRc::<(), u8>::from_joined((), &none, b",")
                .as_slice()
                .is_empty()
        );
        let one: [&[u8]; 1] = [b"x"];
        assert_eq!(
            ThinRc::<(), u8>::from_joined((), &one, b",").as_slice(),
            b"x"
        );
    }

    #[test]
    fn empty_and_bytes() {
        let e: ThinRc<(), u8> = ThinRc::from_iter((), Vec::new());
        assert!(e.as_slice().is_empty());
        let s: ThinRc<(), u8> = ThinRc::from_iter((), b"hello".iter().copied());
        assert_eq!(s.as_slice(), b"hello");
    }

    #[test]
    fn drops_every_element_once() {
        let tracker = Rc::new(());
        let a = ThinRc::from_iter(tracker.clone(), vec![tracker.clone(), tracker.clone()]);
        assert_eq!(Rc::strong_count(&tracker), 4);
        let b = a.clone();
        drop(a);
        assert_eq!(Rc::strong_count(&tracker), 4);
        drop(b);
        assert_eq!(Rc::strong_count(&tracker), 1);
    }

    #[test]
    fn small_blocks_are_reused_and_large_ones_are_not_listed() {
        std::thread::spawn(|| {
            let a: ThinRc<(), u64> = ThinRc::from_iter((), [1, 2]);
            let first = a.addr();
            drop(a);
            // Same size class: the block just freed comes back.
            let b: ThinRc<(), u64> = ThinRc::from_iter((), [3, 4]);
            assert_eq!(b.addr(), first);
            assert_eq!(b.as_slice(), &[3, 4]);
            // A smaller request of another class does not take it.
            let c: ThinRc<(), u8> = ThinRc::from_slice((), b"x");
            assert_ne!(c.addr(), first);
            let big: ThinRc<(), usize> = ThinRc::from_iter((), 0..64usize);
            assert_eq!(big.as_slice().iter().sum::<usize>(), 2016);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn small_blocks_come_from_aligned_chunks_that_advise_their_pages() {
        std::thread::spawn(|| {
            // The huge-page advice of the mapping holding a block:
            // `hg` (huge pages asked for), `nh` (refused), both or neither.
            let advice = |block: &ThinRc<u64, u64>| {
                crate::stack::mapping_flags(block.addr()).map(|flags| {
                    flags
                        .split(' ')
                        .filter(|f| *f == "hg" || *f == "nh")
                        .map(str::to_owned)
                        .collect::<Vec<_>>()
                })
            };
            // 32 bytes each: more than the first chunk holds.
            let blocks: Vec<ThinRc<u64, u64>> = (0..CHUNK_BYTES / 32 + 1)
                .map(|i| ThinRc::from_iter(i as u64, [1u64]))
                .collect();
            let (first, last) = (&blocks[0], &blocks[blocks.len() - 1]);
            let chunk = first.addr() & !(CHUNK_BYTES - 1);
            // The thread's first block follows its first chunk's header.
            assert_eq!(first.addr() - chunk, std::mem::size_of::<Chunk>() + 8);
            assert_ne!(last.addr() & !(CHUNK_BYTES - 1), chunk);
            // The first chunk is faulted in as used, in base pages; the
            // next ones are asked for in a huge page, or in base pages
            // while huge pages are slow (`PAGE_CHOICE`): one or the other.
            if let (Some(first), Some(last)) = (advice(first), advice(last)) {
                assert_eq!(first, ["nh"], "the first chunk's advice");
                assert!(
                    last == ["hg"] || last == ["nh"],
                    "the next chunk's advice: {last:?}"
                );
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_slow_huge_page_sends_the_next_chunks_to_base_pages() {
        let choice = PageChoice::new();
        assert!(choice.huge_page_next());
        // A warm huge page keeps the choice.
        choice.huge_page_took(std::time::Duration::from_micros(200));
        assert!(choice.huge_page_next());
        // A cold one: base pages for a run, then a huge page is tried again.
        choice.huge_page_took(std::time::Duration::from_millis(5));
        for n in 0..BASE_PAGE_RUN {
            assert!(!choice.huge_page_next(), "chunk {n} of the run");
        }
        assert!(choice.huge_page_next());
        assert!(choice.huge_page_next());
    }

    #[test]
    fn small_blocks_span_chunks_and_end_with_their_thread() {
        std::thread::spawn(|| {
            // Several chunks' worth of blocks of two sizes, all held, each
            // keeping what was written in it.
            let blocks: Vec<ThinRc<usize, u64>> = (0..3 * CHUNK_BYTES / 32)
                .map(|i| ThinRc::from_iter(i, std::iter::repeat_n(i as u64, i % 2 + 1)))
                .collect();
            for (i, b) in blocks.iter().enumerate() {
                assert_eq!(*b.header(), i);
                assert!(b.as_slice().iter().all(|&x| x == i as u64));
                assert_eq!(b.as_slice().len(), i % 2 + 1);
            }
            // Garbage nothing will free (as a reference cycle is): its
            // chunk goes back with the thread's.
            std::mem::forget(blocks[7].clone());
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_stopped_helper_leaves_no_chunk_mapped() {
        let helper = start_helper().expect("a helper thread");
        // Time to populate both chunks (a few milliseconds each, even on
        // a busy machine): one waits in the channel, the helper offers the
        // other.
        std::thread::sleep(std::time::Duration::from_secs(1));
        assert_eq!(helper.stop(), CHUNKS_AHEAD);
    }

    #[test]
    fn a_helper_populates_the_next_chunk_ahead() {
        std::thread::spawn(|| {
            // A chunk's worth of 32-byte blocks at a time, with a pause
            // after each for the helper to have the next chunk ready.
            let per_chunk = CHUNK_BYTES / 32;
            let mut blocks: Vec<ThinRc<usize, u64>> = Vec::new();
            for round in 0..6 {
                blocks.extend(
                    (0..per_chunk).map(|i| ThinRc::from_iter(round * per_chunk + i, [i as u64])),
                );
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            let from_helper = CHUNKS.with(|c| c.taken_ahead.get());
            assert!(from_helper >= 1, "chunks from the helper: {from_helper}");
            let mut chunks: Vec<usize> = blocks
                .iter()
                .map(|b| b.addr() & !(CHUNK_BYTES - 1))
                .collect();
            chunks.dedup();
            assert!(chunks.len() >= 6, "chunks used: {}", chunks.len());
            for (n, b) in blocks.iter().enumerate() {
                assert_eq!(*b.header(), n);
                assert_eq!(b.as_slice(), &[(n % per_chunk) as u64]);
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn clones_share_one_allocation() {
        let a = ThinRc::from_iter((), vec![1, 2]);
        let b = a.clone();
        assert!(ThinRc::ptr_eq(&a, &b));
        assert_eq!(a.addr(), b.addr());
    }

    #[test]
    fn dropping_a_very_long_chain_does_not_recurse() {
        // Each link holds the next; a recursive drop of a million links
        // would overflow the test thread's stack.
        struct Link {
            _next: Option<ThinRc<(), Link>>,
        }
        let mut chain: Option<ThinRc<(), Link>> = None;
        for _ in 0..1_000_000 {
            chain = Some(ThinRc::from_iter(
                (),
                [Link {
                    _next: chain.take(),
                }],
            ));
        }
        drop(chain);
    }

    #[test]
    fn panicking_iterator_frees_what_was_built() {
        let tracker = Rc::new(());
        let t2 = tracker.clone();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let items = (0..3).map(|i| {
                if i == 2 {
                    panic!("boom");
                }
                t2.clone()
            });
            ThinRc::from_iter((), items)
        }));
        assert!(result.is_err());
        drop(t2);
        assert_eq!(Rc::strong_count(&tracker), 1);
    }
}
