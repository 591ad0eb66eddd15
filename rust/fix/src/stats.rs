//! Counters of what an evaluation did (`chock eval --stats`, the
//! equivalent of C++ Nix's `NIX_SHOW_STATS`): thunks made and run,
//! environments, calls, attribute lookups and allocations.
//!
//! They are always on: each is one increment of a thread-local cell (the
//! evaluation has a thread of its own, so the counts are exactly its
//! work), cheaper than a test of whether counting was asked for. They
//! exist to tell where an evaluation's time goes without a profiler.

use std::cell::Cell;

/// What one evaluation did, counted as it ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Thunks made (deferred expressions and deferred calls).
    pub thunks_created: u64,
    /// Thunks run (the first force of each, and any re-run after a failure).
    pub thunks_forced: u64,
    /// Environments made (one per call, `let`, `with` and recursive set).
    pub envs: u64,
    /// Lambda calls (a curried `a: b: ...` given two arguments is two).
    pub lambda_calls: u64,
    /// Builtin calls.
    pub primop_calls: u64,
    /// Attribute selections in the program (each name of `a.b.c`, `?`,
    /// and variables found through `with`), as Nix's `nrLookups` counts.
    pub attr_lookups: u64,
    /// Attribute sets made (literals, `//`, builtins).
    pub sets: u64,
    /// Value allocations (lists, sets, strings, environments, thunks,
    /// closures) and their bytes, a small block's counted at the size of
    /// its class (a multiple of 8; see `thin`). The small ones are counted
    /// by the allocator as it takes them, beside the free list it reads.
    pub allocations: u64,
    pub allocated_bytes: u64,
    /// The most bytes held for values at one time (small blocks counted by
    /// the 2 MiB chunks they come from, see `memory`).
    pub peak_live_bytes: u64,
}

/// Indices of the counters in `COUNTS`.
#[derive(Clone, Copy)]
#[repr(usize)]
pub enum Counter {
    ThunksCreated,
    ThunksForced,
    Envs,
    LambdaCalls,
    PrimopCalls,
    AttrLookups,
    Sets,
    /// Blocks larger than a small block's (from mimalloc), and their
    /// bytes; the small ones are counted by `thin` as it takes them.
    Allocations,
    AllocatedBytes,
}

const COUNTERS: usize = Counter::AllocatedBytes as usize + 1;

thread_local! {
    static COUNTS: [Cell<u64>; COUNTERS] = const { [const { Cell::new(0) }; COUNTERS] };
}

/// Adds one to a counter.
#[inline(always)]
pub fn count(counter: Counter) {
    add(counter, 1);
}

/// Adds `n` to a counter.
#[inline(always)]
pub fn add(counter: Counter, n: u64) {
    COUNTS.with(|c| {
        let cell = &c[counter as usize];
        cell.set(cell.get().wrapping_add(n));
    });
}

/// The counts of this thread's evaluation so far.
pub fn snapshot() -> Stats {
    let (small_blocks, small_bytes) = crate::thin::small_blocks_taken();
    COUNTS.with(|c| {
        let get = |counter: Counter| c[counter as usize].get();
        Stats {
            thunks_created: get(Counter::ThunksCreated),
            thunks_forced: get(Counter::ThunksForced),
            envs: get(Counter::Envs),
            lambda_calls: get(Counter::LambdaCalls),
            primop_calls: get(Counter::PrimopCalls),
            attr_lookups: get(Counter::AttrLookups),
            sets: get(Counter::Sets),
            allocations: get(Counter::Allocations) + small_blocks,
            allocated_bytes: get(Counter::AllocatedBytes) + small_bytes,
            peak_live_bytes: crate::memory::peak() as u64,
        }
    })
}

impl Stats {
    /// One JSON object, the shape `NIX_SHOW_STATS` prints in spirit:
    /// grouped by what was counted, numbers only.
    pub fn to_json(&self) -> String {
        format!(
            concat!(
                "{{\"thunks\":{{\"created\":{},\"forced\":{}}},",
                "\"envs\":{},",
                "\"calls\":{{\"lambda\":{},\"primop\":{}}},",
                "\"attrLookups\":{},",
                "\"sets\":{},",
                "\"allocations\":{{\"number\":{},\"bytes\":{},\"peakLiveBytes\":{}}}}}"
            ),
            self.thunks_created,
            self.thunks_forced,
            self.envs,
            self.lambda_calls,
            self.primop_calls,
            self.attr_lookups,
            self.sets,
            self.allocations,
            self.allocated_bytes,
            self.peak_live_bytes,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_per_thread() {
        std::thread::spawn(|| {
            count(Counter::Envs);
            add(Counter::AllocatedBytes, 40);
            let s = snapshot();
            assert_eq!(s.envs, 1);
            assert_eq!(s.allocated_bytes, 40);
            assert_eq!(s.thunks_created, 0);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn an_evaluation_reports_its_counts() {
        let request = crate::Request::new(crate::Source::expr(
            "let f = x: y: x + y; s = { a = 1; b = 2; }; in f s.a s.b + f 1 2",
            std::env::temp_dir(),
        ));
        let out = crate::evaluate(&crate::EvalOptions::default(), &request).unwrap();
        assert_eq!(out.text, b"6");
        let s = out.stats;
        // Two calls of a two-argument lambda.
        assert_eq!(s.lambda_calls, 4);
        assert_eq!(s.envs, 5, "one for the let, two per call");
        assert!(s.attr_lookups >= 2);
        assert!(s.thunks_created >= 3 && s.thunks_forced >= 3);
        assert!(s.allocations > 0 && s.peak_live_bytes > 0);
    }

    #[test]
    fn json_is_one_object() {
        let s = Stats {
            thunks_created: 3,
            peak_live_bytes: 7,
            ..Stats::default()
        };
        let json = s.to_json();
        assert!(json.starts_with("{\"thunks\":{\"created\":3,\"forced\":0}"));
        assert!(json.ends_with("\"peakLiveBytes\":7}}"));
        assert_eq!(json.matches('{').count(), json.matches('}').count());
    }
}
